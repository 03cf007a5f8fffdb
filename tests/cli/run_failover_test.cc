// `shardgnn run --replicas 2` (issue 13): storage server replicas killed
// (SIGKILL) or frozen (SIGSTOP) while the real binary trains the bundled Cora;
// the run completes, and since any replica answers a request exactly as any
// other, its final parameters equal those of the uninterrupted run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/cli/process_table.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using std::chrono::seconds;
using testing::ChildrenOf;
using testing::Describe;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using ::testing::Not;
using testing::ProcessInfo;
using testing::ServersOfPart;
using testing::StartShardgnn;
using testing::TempDir;
using testing::TrainerOfRank;

class RunFailoverTest : public ::testing::Test {
 protected:
  std::vector<std::string> Args(const std::string& out, int replicas = 2) {
    return {"run",
            "--work-dir",
            work_dir_,
            "--out",
            out,
            "--replicas",
            std::to_string(replicas),
            "--epochs",
            epochs_,
            "--patience",
            "0",
            "--timeout",
            "60"};
  }

  // Starts `shardgnn run` with `args` in *run and waits until it prints
  // `line` (an epoch's: it trains).
  void StartUntil(const std::vector<std::string>& args, const std::string& line,
                  std::unique_ptr<Subprocess>* run) {
    *run = StartShardgnn(args, "shardgnn run");
    ASSERT_NE(*run, nullptr);
    ASSERT_OK((*run)->WaitForLine(line, kRunTimeout));
  }

  // The pids of part `part`'s servers under `run`, in start order, in *pids;
  // a fatal failure unless there are `expected`.
  void Servers(const Subprocess& run, int part, size_t expected,
               std::vector<pid_t>* pids) {
    const std::vector<ProcessInfo> children = ChildrenOf(run.pid(), work_dir_);
    *pids = ServersOfPart(children, part);
    ASSERT_EQ(pids->size(), expected) << Describe(children);
  }

  // The pid of the trainer of rank `rank` under `run` (0 if none).
  pid_t Trainer(const Subprocess& run, int rank) {
    return TrainerOfRank(ChildrenOf(run.pid(), work_dir_), rank);
  }

  // The summary of a finished run, and its output in *output.
  nlohmann::json Finish(Subprocess* run, std::string* output) {
    std::optional<int> status = run->Wait(kRunTimeout);
    *output = run->Tail(100000);
    EXPECT_EQ(status, 0) << *output;
    return nlohmann::json::parse(std::ifstream(out_dir_ + "/summary.json"),
                                 nullptr,
                                 /*allow_exceptions=*/false);
  }

  // The uninterrupted run's summary.
  nlohmann::json Reference() {
    out_dir_ = dir_.Sub("reference");
    auto run = StartShardgnn(Args(out_dir_), "shardgnn run");
    EXPECT_NE(run, nullptr);
    if (run == nullptr) return {};
    std::string output;
    return Finish(run.get(), &output);
  }

  TempDir dir_;
  const std::string work_dir_ = dir_.Sub("work");
  std::string out_dir_;
  std::string epochs_ = "8";  // Of every run a test starts.
};

TEST_F(RunFailoverTest, ReplicasKilledMidRunChangeNothing) {
  const nlohmann::json reference = Reference();
  ASSERT_TRUE(reference.is_object());
  const std::string checksum = reference["parameters_checksum"];
  ASSERT_EQ(checksum.size(), 16u);

  out_dir_ = dir_.Sub("killed");
  // The killed replicas stay dead (run would start them again).
  std::vector<std::string> args = Args(out_dir_);
  args.push_back("--max-server-restarts");
  args.push_back("0");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(args, "epoch   2/8", &run));
  std::vector<pid_t> part0, part1;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 0, 2, &part0));
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 2, &part1));
  // One replica of each part, at different times; never both of one part.
  ASSERT_EQ(kill(part1[0], SIGKILL), 0);
  ASSERT_OK(run->WaitForLine("epoch   5/8", kRunTimeout));
  ASSERT_EQ(kill(part0[1], SIGKILL), 0);

  std::string output;
  const nlohmann::json summary = Finish(run.get(), &output);
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_EQ(summary["parameters_checksum"], checksum) << output;
  EXPECT_EQ(summary["test_acc"], reference["test_acc"]);
  EXPECT_EQ(summary["epochs_run"], 8);
  // The launcher said which servers died and who serves their parts.
  EXPECT_THAT(output, HasSubstr("part 1 is still served by storage server 1 "
                                "replica 1"));
  EXPECT_THAT(output, HasSubstr("part 0 is still served by storage server 0 "
                                "replica 0"));
  // Rank 0 saw calls fail over, and which replicas are down.
  EXPECT_GE(summary["remote"]["failovers"].get<int64_t>(), 1) << output;
  const auto& replicas = summary["remote"]["replicas"];
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(replicas[1][0]["up"], false);
  EXPECT_EQ(replicas[0][1]["up"], false);
  EXPECT_EQ(replicas[0][0]["up"], true);
  EXPECT_EQ(replicas[1][1]["up"], true);
}

TEST_F(RunFailoverTest, AFrozenReplicaIsLeftWithinTheCallDeadline) {
  const nlohmann::json reference = Reference();
  ASSERT_TRUE(reference.is_object());

  out_dir_ = dir_.Sub("stopped");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(Args(out_dir_), "epoch   2/8", &run));
  std::vector<pid_t> part1;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 2, &part1));
  // Alive but silent: its calls time out (5 s) and go to the other replica.
  ASSERT_EQ(kill(part1[1], SIGSTOP), 0);
  std::string output;
  const nlohmann::json summary = Finish(run.get(), &output);
  kill(part1[1], SIGCONT);  // If the launcher has not stopped it.
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_EQ(summary["parameters_checksum"], reference["parameters_checksum"])
      << output;
  EXPECT_THAT(output, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_EQ(summary["remote"]["replicas"][1][1]["up"], false) << output;
}

// With server restarts off (AKilledServerIsRestarted... has them on).
TEST_F(RunFailoverTest, BothReplicasOfAPartKilledFailTheRunNamingThem) {
  out_dir_ = dir_.Sub("dead");
  epochs_ = "1000";  // Enough to outlive the kills.
  std::vector<std::string> args = Args(out_dir_);
  args.push_back("--max-server-restarts");
  args.push_back("0");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(args, "epoch   1/1000", &run));
  std::vector<pid_t> part1;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 2, &part1));
  ASSERT_EQ(kill(part1[0], SIGKILL), 0);
  ASSERT_EQ(kill(part1[1], SIGKILL), 0);
  std::optional<int> status = run->Wait(seconds(60));
  ASSERT_TRUE(status.has_value()) << "no exit 60 s after the kills";
  EXPECT_NE(*status, 0);
  const std::string output = run->Tail(100000);
  EXPECT_THAT(testing::LastErrorLine(output),
              HasSubstr("storage server 1 replica"))
      << output;
}

// A server run started that dies is started again on its address; the
// trainers wait for it (one replica per part here) and the run ends as it
// would have.
TEST_F(RunFailoverTest, AKilledServerIsRestartedAndTheRunGoesOn) {
  const nlohmann::json reference = Reference();
  ASSERT_TRUE(reference.is_object());
  out_dir_ = dir_.Sub("server-restarted");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(Args(out_dir_, 1), "epoch   2/8", &run));
  std::vector<pid_t> part1;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 1, &part1));
  ASSERT_EQ(kill(part1[0], SIGKILL), 0);
  std::string output;
  const nlohmann::json summary = Finish(run.get(), &output);
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_EQ(summary["parameters_checksum"], reference["parameters_checksum"])
      << output;
  EXPECT_THAT(output, HasSubstr("storage server 1 ("));
  EXPECT_THAT(output, HasSubstr("restarting it on the same address"));
  ASSERT_EQ(summary["server_restarts"].size(), 1u) << output;
  EXPECT_THAT(summary["server_restarts"][0].get<std::string>(),
              HasSubstr("storage server 1"));
}

// Learned embeddings (issue 15): a killed server loses its part of the table.
// run starts it again; the trainers' next call finds no table there, so run
// restarts them from their last checkpoint, which puts every server's table
// back to that epoch's snapshot (the restarted one reads its file). In sync
// mode the run then ends exactly as the uninterrupted one.
TEST_F(RunFailoverTest, AKilledServerRollsLearnedEmbeddingsBackToACheckpoint) {
  auto args = [this](const std::string& out) {
    std::vector<std::string> a = Args(out, 1);
    for (const char* flag : {"--learn-embeddings", "8", "--embedding-sync",
                             "sync", "--trainers", "2"}) {
      a.push_back(flag);
    }
    return a;
  };
  epochs_ = "6";
  out_dir_ = dir_.Sub("embeddings-reference");
  std::unique_ptr<Subprocess> run =
      StartShardgnn(args(out_dir_), "shardgnn run");
  ASSERT_NE(run, nullptr);
  std::string output;
  const nlohmann::json reference = Finish(run.get(), &output);
  ASSERT_TRUE(reference.is_object()) << output;

  out_dir_ = dir_.Sub("embeddings-killed");
  ASSERT_NO_FATAL_FAILURE(StartUntil(args(out_dir_), "epoch   2/6", &run));
  std::vector<pid_t> part1;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 1, &part1));
  ASSERT_EQ(kill(part1[0], SIGKILL), 0);
  const nlohmann::json summary = Finish(run.get(), &output);
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_THAT(output, HasSubstr("restarting it on the same address"));
  EXPECT_THAT(output, HasSubstr("from their last checkpoint"));
  EXPECT_THAT(output, HasSubstr("resumed from the checkpoints of epoch"));
  EXPECT_EQ(summary["restarts"], 1) << output;
  EXPECT_EQ(summary["parameters_checksum"], reference["parameters_checksum"])
      << output;
  EXPECT_EQ(summary["test_acc"], reference["test_acc"]) << output;

  // Two replicas per part: each holds a copy of its part's rows (every push
  // goes to both, a pull to either). One killed mid-run is left by the
  // trainers (restarted by run, it holds no table and is not used again):
  // the run goes on from the other copy without rolling back, and ends as the
  // single-server one.
  auto replicated = [&](const std::string& out) {
    std::vector<std::string> a = args(out);
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == "--replicas") a[i + 1] = "2";
    }
    return a;
  };
  out_dir_ = dir_.Sub("embeddings-replicas");
  ASSERT_NO_FATAL_FAILURE(
      StartUntil(replicated(out_dir_), "epoch   2/6", &run));
  std::vector<pid_t> replicas;
  ASSERT_NO_FATAL_FAILURE(Servers(*run, 1, 2, &replicas));
  ASSERT_EQ(kill(replicas[1], SIGKILL), 0);
  const nlohmann::json with_replicas = Finish(run.get(), &output);
  ASSERT_TRUE(with_replicas.is_object()) << output;
  EXPECT_EQ(with_replicas["parameters_checksum"],
            reference["parameters_checksum"])
      << output;
  EXPECT_EQ(with_replicas["restarts"], 0) << output;
  EXPECT_THAT(output, Not(HasSubstr("from their last checkpoint"))) << output;
  EXPECT_THAT(output, HasSubstr("leaves the copy of part 1's rows on"))
      << output;
  EXPECT_EQ(with_replicas["embeddings"]["copies_dropped"], 1) << output;
  // A pull waiting for the step clock is not a replica failing: no replica
  // is marked down for it (which stalled such runs for --server-wait).
  EXPECT_THAT(output, Not(HasSubstr("DEADLINE_EXCEEDED: PullEmbeddings")))
      << output;
  // Snapshots of four holders, one of which stopped taking them when its
  // replica died: export reads the latest epoch of one copy of each part.
  testing::Finished exported = testing::RunShardgnn(
      {"embeddings", "export", out_dir_, "--out", dir_.Sub("replicas.npy")});
  EXPECT_EQ(exported.exit_status, 0) << exported.output;
  EXPECT_THAT(exported.output, HasSubstr("epoch 6 (step "));
  EXPECT_THAT(exported.output, HasSubstr("from 2 snapshot file(s)"));
}

// Issue 13's test: three kills over a run with 2 replicas per part, the
// killed servers started again by run, so that every replica dies once or
// more while the other serves; the run ends as it would have.
TEST_F(RunFailoverTest, ThreeReplicaKillsOverTheRunChangeNothing) {
  epochs_ = "30";  // Long enough for three kills and restarts.
  const nlohmann::json reference = Reference();
  ASSERT_TRUE(reference.is_object());
  out_dir_ = dir_.Sub("three-kills");
  auto run = StartShardgnn(Args(out_dir_), "shardgnn run");
  ASSERT_NE(run, nullptr);
  int restarts = 0;
  // The oldest replica of the part each time: part 1's first, then its
  // second (the first is now its restarted copy), then part 0's first.
  for (const auto& [epoch, part] :
       std::vector<std::pair<int, int>>{{2, 1}, {8, 1}, {14, 0}}) {
    ASSERT_OK(
        run->WaitForLine(absl::StrFormat("epoch %3d/30", epoch), kRunTimeout));
    std::vector<pid_t> pids;
    ASSERT_NO_FATAL_FAILURE(Servers(*run, part, 2, &pids));
    ASSERT_EQ(kill(*std::min_element(pids.begin(), pids.end()), SIGKILL), 0);
    ASSERT_OK(run->WaitForLine(
        absl::StrCat("(server restart ", ++restarts, ")"), kRunTimeout));
  }
  std::string output;
  const nlohmann::json summary = Finish(run.get(), &output);
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_EQ(summary["parameters_checksum"], reference["parameters_checksum"])
      << output;
  EXPECT_EQ(summary["test_acc"], reference["test_acc"]);
  EXPECT_EQ(summary["server_restarts"].size(), 3u) << output;
  EXPECT_GE(summary["remote"]["failovers"].get<int64_t>(), 1) << output;
}

// Issue 13, item 4: a trainer's death restarts the trainer group from the
// last epoch all have checkpointed, and the run ends as it would have.
TEST_F(RunFailoverTest, AKilledTrainerRestartsTheGroupAndChangesNothing) {
  const nlohmann::json reference = Reference();
  ASSERT_TRUE(reference.is_object());

  out_dir_ = dir_.Sub("restarted");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(Args(out_dir_, 1), "epoch   3/8", &run));
  const pid_t trainer = Trainer(*run, 1);
  ASSERT_GT(trainer, 0);
  ASSERT_EQ(kill(trainer, SIGKILL), 0);
  std::string output;
  const nlohmann::json summary = Finish(run.get(), &output);
  ASSERT_TRUE(summary.is_object()) << output;
  EXPECT_EQ(summary["parameters_checksum"], reference["parameters_checksum"])
      << output;
  EXPECT_EQ(summary["test_acc"], reference["test_acc"]);
  EXPECT_EQ(summary["restarts"], 1) << output;
  EXPECT_THAT(summary["restart_causes"][0]["cause"].get<std::string>(),
              HasSubstr("trainer 1 was killed by signal 9"));
  EXPECT_THAT(output, HasSubstr("restarting the 2 trainer(s) from their last "
                                "checkpoint (restart 1 of at most 3)"));
  // It resumed from a checkpoint, not from the start.
  EXPECT_THAT(output, HasSubstr("resumed from the checkpoints of epoch"))
      << output;
}

TEST_F(RunFailoverTest, MoreTrainerDeathsThanMaxRestartsFailTheRun) {
  out_dir_ = dir_.Sub("dies");
  epochs_ = "1000";
  std::vector<std::string> args = Args(out_dir_, 1);
  args.push_back("--max-restarts");
  args.push_back("1");
  std::unique_ptr<Subprocess> run;
  ASSERT_NO_FATAL_FAILURE(StartUntil(args, "epoch   1/1000", &run));
  ASSERT_EQ(kill(Trainer(*run, 1), SIGKILL), 0);
  // The new group trains from its checkpoints, then a trainer dies again.
  ASSERT_OK(run->WaitForLine("resumed from the checkpoints", kRunTimeout));
  const pid_t again = Trainer(*run, 1);
  ASSERT_GT(again, 0);
  ASSERT_EQ(kill(again, SIGKILL), 0);
  std::optional<int> status = run->Wait(seconds(60));
  ASSERT_TRUE(status.has_value()) << "no exit 60 s after the second kill";
  EXPECT_NE(*status, 0);
  const std::string output = run->Tail(100000);
  EXPECT_THAT(output, HasSubstr("(restart 1 of at most 1)")) << output;
  EXPECT_THAT(testing::LastErrorLine(output),
              HasSubstr("trainer 1 was killed by signal 9"))
      << output;
  EXPECT_THAT(output, HasSubstr("--max-restarts 1")) << output;
  EXPECT_TRUE(testing::ProcessesMentioning(work_dir_).empty());
}

}  // namespace
}  // namespace shardgnn
