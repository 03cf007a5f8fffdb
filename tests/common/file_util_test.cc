#include "common/file_util.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {
namespace fs = std::filesystem;

TEST(StagingDirTest, CommitRenamesIntoPlace) {
  testing::TempDir dir;
  std::string out = dir.Sub("out");
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(out));
    std::ofstream(JoinPath(staging->path(), "f")) << "x";
    EXPECT_FALSE(fs::exists(out));
    ASSERT_OK(staging->Commit());
  }
  EXPECT_TRUE(fs::exists(out + "/f"));
}

TEST(StagingDirTest, AbandonedLeavesNothing) {
  testing::TempDir dir;
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(dir.Sub("out")));
    std::ofstream(JoinPath(staging->path(), "f")) << "x";
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(StagingDirTest, RefusesExistingOutput) {
  testing::TempDir dir;
  fs::create_directory(dir.Sub("out"));
  auto staging = StagingDir::Create(dir.Sub("out"));
  EXPECT_EQ(staging.status().code(), absl::StatusCode::kAlreadyExists);
}

// As `mkdir -p`: `--out out/cora` works before out/ exists (the README's
// commands start that way). A parent that cannot be made is one clear error.
TEST(StagingDirTest, CreatesMissingParentDirectories) {
  testing::TempDir dir;
  const std::string out = dir.Sub("a/b/out");
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(out));
    ASSERT_OK(WriteFileAtomic(staging->path() + "/x", "1"));
    ASSERT_OK(staging->Commit());
  }
  EXPECT_TRUE(fs::exists(out + "/x"));
  ASSERT_OK(WriteFileAtomic(dir.Sub("file"), "not a directory"));
  auto blocked = StagingDir::Create(dir.Sub("file/out"));
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.status().message().find(dir.Sub("file")), std::string::npos)
      << blocked.status();
}

TEST(WriteFileAtomicTest, WritesAndReplaces) {
  testing::TempDir dir;
  ASSERT_OK(WriteFileAtomic(dir.Sub("a"), "one"));
  ASSERT_OK(WriteFileAtomic(dir.Sub("a"), "two"));
  ASSERT_OK_AND_ASSIGN(auto text, ReadFileToString(dir.Sub("a")));
  EXPECT_EQ(text, "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()),
                          fs::directory_iterator()),
            1);
}

// A secret (issue 51) is written with mode 0600 from its first byte, even
// over a temporary file a killed writer left with a wider mode.
TEST(WriteFileAtomicTest, AModeOf0600IsNeverWider) {
  testing::TempDir dir;
  const std::string stale =
      dir.Sub("secret") + ".tmp-" + std::to_string(getpid());
  std::ofstream(stale) << "left behind";
  fs::permissions(stale, fs::perms::owner_all | fs::perms::group_all |
                             fs::perms::others_all);
  ASSERT_OK(WriteFileAtomic(dir.Sub("secret"), "s3cret\n", 0600));
  EXPECT_EQ(fs::status(dir.Sub("secret")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_OK_AND_ASSIGN(auto text, ReadFileToString(dir.Sub("secret")));
  EXPECT_EQ(text, "s3cret\n");
  EXPECT_FALSE(fs::exists(stale));
}

// The PID of a process that has exited and been reaped.
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// A killed import leaves .NAME.partial-PID; the next build of the same output
// removes it if PID is dead, and leaves a live process's and other names'.
TEST(StagingDirTest, RemovesStalePartialDirsOfDeadProcesses) {
  testing::TempDir dir;
  const pid_t dead = DeadPid();
  const pid_t live = fork();
  if (live == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(live, 0);
  const std::string stale = dir.Sub(".out.partial-" + std::to_string(dead));
  const std::string busy = dir.Sub(".out.partial-" + std::to_string(live));
  const std::string other = dir.Sub(".other.partial-" + std::to_string(dead));
  const std::string odd = dir.Sub(".out.partial-12x");
  for (const std::string& d : {stale, busy, other, odd}) {
    fs::create_directories(d + "/sub");
    std::ofstream(d + "/sub/f") << "x";
  }
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(dir.Sub("out")));
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(busy + "/sub/f"));
    EXPECT_TRUE(fs::exists(other + "/sub/f"));
    EXPECT_TRUE(fs::exists(odd + "/sub/f"));
  }
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
}

}  // namespace
}  // namespace shardgnn
