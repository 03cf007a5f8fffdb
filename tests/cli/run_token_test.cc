// The auth token `shardgnn run` generates for its servers and trainers
// (cli/run_cmd.cc, GeneratedToken): a run killed outright (SIGKILL) cannot
// remove its token file, so the next run in the same work dir does, while a
// live run's token file is left alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::kRunTimeout;
using testing::StartShardgnn;
using testing::TempDir;

// The token files in `dir`.
std::vector<std::string> TokenFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".auth-token-", 0) == 0) files.push_back(name);
  }
  return files;
}

// A pid that no process has now: a child that exited and was reaped.
pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(RunTokenTest, AKilledRunsTokenIsRemovedByTheNextRun) {
  TempDir dir;
  const std::string work = dir.Sub("work");
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{"run",   "--work-dir", work,
                                    "--out", out,          "--epochs",
                                    "1000",  "--timeout",  "30"};
  };
  // A run killed outright mid-training leaves its token behind.
  auto killed = StartShardgnn(args(dir.Sub("killed")), "shardgnn run");
  ASSERT_NE(killed, nullptr);
  ASSERT_OK(killed->WaitForLine("epoch   1/1000", kRunTimeout));
  ASSERT_EQ(TokenFiles(work).size(), 1u);
  const std::string left = TokenFiles(work)[0];
  killed->Signal(SIGKILL);
  ASSERT_EQ(killed->Wait(seconds(10)), 128 + SIGKILL);
  // Its children die with it (parent-death signal): give them a moment.
  std::this_thread::sleep_for(seconds(1));
  ASSERT_TRUE(fs::exists(work + "/" + left));

  // A token of a live process (this test's), which must be kept, and one of a
  // process gone.
  const std::string live = ".auth-token-" + std::to_string(getpid()) + "-aa";
  const std::string gone = ".auth-token-" + std::to_string(DeadPid()) + "-bb";
  std::ofstream(work + "/" + live) << "x";
  std::ofstream(work + "/" + gone) << "x";

  auto next = StartShardgnn(args(dir.Sub("next")), "shardgnn run");
  ASSERT_NE(next, nullptr);
  ASSERT_OK(next->WaitForLine("epoch   1/1000", kRunTimeout));
  std::vector<std::string> now = TokenFiles(work);
  EXPECT_THAT(now, ::testing::Not(::testing::Contains(left)));
  EXPECT_THAT(now, ::testing::Not(::testing::Contains(gone)));
  EXPECT_THAT(now, ::testing::Contains(live));
  EXPECT_EQ(now.size(), 2u);  // The live one and the new run's own.
  next->Signal(SIGTERM);
  ASSERT_TRUE(next->Wait(seconds(30)).has_value());
  // A run that ends (here by SIGTERM) removes its own.
  EXPECT_THAT(TokenFiles(work), ::testing::ElementsAre(live));
}

}  // namespace
}  // namespace shardgnn
