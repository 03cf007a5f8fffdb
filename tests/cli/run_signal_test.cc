// `shardgnn run` when something fails mid-run (cli/run_supervisor.h): a
// storage server or a trainer killed, a trainer stopped, the launcher killed
// outright or sent SIGINT or SIGTERM. The run stops every child and names the
// cause; no process is left behind. Server and trainer restarts are off here
// (run_failover_test.cc has them on).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "tests/cli/process_table.h"
#include "tests/cli/run_fixture.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::AllOf;
using testing::Describe;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::LastErrorLine;
using testing::Lines;
using testing::ProcessesMentioning;
using testing::ProcessInfo;
using testing::ReadyAddress;
using testing::RunTest;
using testing::ServersOfPart;
using testing::TrainerOfRank;

// With server restarts off (tests/cli/run_failover_test.cc has them on).
TEST_F(RunTest, KilledStorageServerStopsRunNamingIt) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(
      StartTraining(&run, &children, {"--max-server-restarts", "0"}));
  // Lines already printed count.
  ASSERT_OK_AND_ASSIGN(std::string ready,
                       run->WaitForLine("part 1 ready on", kRunTimeout));
  const std::string address = ReadyAddress(ready);
  const std::vector<pid_t> servers = ServersOfPart(children, 1);
  ASSERT_EQ(servers.size(), 1u) << Describe(children);
  const pid_t server = servers[0];

  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(server, SIGKILL), 0);
  std::optional<int> status = run->Wait(seconds(60));
  double elapsed = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - killed_at)
                       .count();
  ASSERT_TRUE(status.has_value()) << "no exit 60 s after the kill";
  std::string output = run->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_LT(elapsed, 60);
  // The error names the dead server.
  EXPECT_THAT(LastErrorLine(output),
              AllOf(HasSubstr("storage server 1"), HasSubstr(address)))
      << output;
  EXPECT_FALSE(fs::exists(dir_.Sub("run") + "/summary.json"));
  ExpectNoneLeft(children);
}

// The launcher killed outright cannot stop its children; they die with it
// (PR_SET_PDEATHSIG).
TEST_F(RunTest, KilledLauncherTakesItsChildrenWithIt) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(StartTraining(&run, &children));
  run->Signal(SIGKILL);
  ASSERT_EQ(run->Wait(seconds(10)), 128 + SIGKILL);
  // The kernel delivers the children's SIGKILL asynchronously: allow a
  // bounded moment for them to go.
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!ProcessesMentioning(work_dir_).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ExpectNoOrphans();
}

// Ctrl-C (SIGINT) or SIGTERM to the launcher mid-training stops every child
// and exits non-zero saying so.
class RunSignalTest : public RunTest,
                      public ::testing::WithParamInterface<int> {};

TEST_P(RunSignalTest, StopsEveryChild) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(StartTraining(&run, &children));

  auto signalled_at = std::chrono::steady_clock::now();
  run->Signal(GetParam());
  std::optional<int> status = run->Wait(seconds(30));
  ASSERT_TRUE(status.has_value()) << "no exit 30 s after the signal";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          signalled_at)
                .count(),
            15);
  std::string output = run->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_THAT(Lines(output).back(),
              HasSubstr(absl::StrCat("interrupted by signal ", GetParam())))
      << output;
  ExpectNoneLeft(children);
}

INSTANTIATE_TEST_SUITE_P(Signals, RunSignalTest,
                         ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGINT ? "Sigint"
                                                                   : "Sigterm");
                         });

// A trainer dying makes the run stop naming that trainer.
// With restarts off (tests/cli/run_failover_test.cc has them on).
TEST_F(RunTest, KilledTrainerStopsRunNamingIt) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(
      StartTraining(&run, &children, {"--max-restarts", "0"}));
  const pid_t trainer = TrainerOfRank(children, 1);
  ASSERT_GT(trainer, 0) << Describe(children);
  ASSERT_EQ(kill(trainer, SIGKILL), 0);
  std::optional<int> status = run->Wait(seconds(60));
  ASSERT_TRUE(status.has_value()) << "no exit 60 s after the kill";
  std::string output = run->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_THAT(output, HasSubstr("shardgnn: error: trainer "));
  EXPECT_THAT(output, HasSubstr("was killed by signal 9")) << output;
  EXPECT_THAT(output, HasSubstr("--max-restarts 0")) << output;
  ExpectNoneLeft(children);
}

// A trainer stopped with SIGSTOP is named within the peer timeout (the
// healthy trainer fails waiting for it), not after the collective timeout
// with the healthy trainer blamed.
TEST_F(RunTest, StoppedTrainerIsNamedWithinThePeerTimeout) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(
      StartTraining(&run, &children, {"--peer-timeout", "3"}));
  const pid_t trainer = TrainerOfRank(children, 1);
  ASSERT_GT(trainer, 0) << Describe(children);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(trainer, SIGSTOP), 0);
  std::optional<int> status = run->Wait(seconds(60));
  ASSERT_TRUE(status.has_value()) << "no exit 60 s after the stop";
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(25));
  std::string output = run->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_THAT(output, HasSubstr(absl::StrCat("trainer 1 (pid ", trainer,
                                             ") is stopped")))
      << output;
  EXPECT_THAT(output, HasSubstr("rank 1 has shown no sign of life")) << output;
  ExpectNoneLeft(children);
}

}  // namespace
}  // namespace shardgnn
