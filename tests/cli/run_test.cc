// `shardgnn run` end to end (cli/run_cmd.cc): the real binary as a child
// process, with its storage servers and trainers as its own children, on the
// bundled Cora in a temporary work dir. Failures and signals mid-run:
// run_signal_test.cc; the cluster's auth token and loopback-only ports:
// run_security_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/cli/process_table.h"
#include "tests/cli/run_fixture.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/scrape.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::AllOf;
using testing::ChildrenOf;
using testing::Describe;
using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::Lines;
using ::testing::Not;
using testing::ProcessInfo;
using testing::ReadyAddress;
using testing::ReportedTestAccuracy;
using testing::RunShardgnn;
using testing::RunTest;
using testing::StartShardgnn;
using ::testing::StartsWith;

TEST_F(RunTest, TrainsCoraEndToEndAndLeavesNoChildren) {
  const std::string out = dir_.Sub("run");
  auto run = StartShardgnn(RunArgs(out, "10"), "shardgnn run");
  ASSERT_NE(run, nullptr);
  // While it trains: 2 storage servers and 2 trainers, all its children.
  ASSERT_OK(run->WaitForLine("epoch   1/10", kRunTimeout));
  std::vector<ProcessInfo> children = ChildrenOf(run->pid(), work_dir_);
  int servers = 0, trainers = 0;
  for (const auto& c : children) {
    servers += c.cmdline.find(" serve ") != std::string::npos;
    trainers += c.cmdline.find(" train ") != std::string::npos;
  }
  EXPECT_EQ(servers, 2) << Describe(children);
  EXPECT_EQ(trainers, 2) << Describe(children);

  std::optional<int> status = run->Wait(kRunTimeout);
  std::string output = run->Tail(100000);
  ASSERT_EQ(status, 0) << output;
  for (int e = 1; e <= 10; ++e) {
    EXPECT_THAT(output, HasSubstr(absl::StrFormat("epoch %3d/10  loss ", e)))
        << output;
  }
  double reported = ReportedTestAccuracy(output);
  EXPECT_GT(reported, 0.6) << output;  // 7 classes: chance is about 0.14.

  // summary.json agrees with the printed accuracy.
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object()) << "summary.json missing or unreadable";
  EXPECT_GT(summary["test_acc"].get<double>(), 0.6);
  EXPECT_NEAR(summary["test_acc"].get<double>(), reported, 1e-4);
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["servers"].size(), 2u);
  // The 2 trainers share the machine's cores for compute.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(summary["process"]["torch_threads"].get<int>(),
            std::max(1, cores / 2));

  // metrics.jsonl: one line per epoch, in order.
  std::ifstream metrics(out + "/metrics.jsonl");
  ASSERT_TRUE(metrics.is_open()) << "metrics.jsonl missing";
  std::string line;
  int epoch = 0;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "bad metrics line: " << line;
    EXPECT_EQ(j["epoch"], ++epoch);
    EXPECT_GT(j["loss"].get<double>(), 0);
    // The storage servers' fresh pages in the epoch, asked of them (issue
    // 17); the first epoch's include their buffers' first use.
    ASSERT_TRUE(j.contains("server_minor_faults")) << line;
    EXPECT_GE(j["server_minor_faults"].get<int64_t>(), 0) << line;
    if (epoch == 1) {
      EXPECT_GT(j["server_minor_faults"].get<int64_t>(), 0);
    }
    EXPECT_GT(j["cpu_seconds"].get<double>(), 0) << line;
    ASSERT_TRUE(j.contains("server_cpu_seconds")) << line;
    EXPECT_GT(j["server_cpu_seconds"].get<double>(), 0) << line;
  }
  EXPECT_EQ(epoch, 10);
  EXPECT_GE(summary["epoch_time"]["server_minor_faults_per_step"].get<double>(),
            0.0);
  EXPECT_GT(summary["epoch_time"]["server_cpu_seconds"].get<double>(), 0.0);

  ExpectNoneLeft(children);
}

// Also: without --out each run gets its own directory under WORK_DIR/runs.
TEST_F(RunTest, SecondRunReusesDatasetAndPartition) {
  const std::vector<std::string> args = {"run", "--work-dir", work_dir_,
                                         "--epochs", "1"};
  Finished first = RunShardgnn(args);
  ASSERT_EQ(first.exit_status, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("partition of 'cora'"));
  EXPECT_THAT(first.output, Not(HasSubstr("reusing")));

  Finished second = RunShardgnn(args);
  ASSERT_EQ(second.exit_status, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("reusing dataset"));
  EXPECT_THAT(second.output, HasSubstr("reusing partition"));
  EXPECT_THAT(second.output, Not(HasSubstr("partition of 'cora'")));
  int finished_runs = 0;
  for (const auto& entry : fs::directory_iterator(work_dir_ + "/runs")) {
    finished_runs += fs::exists(entry.path() / "summary.json");
    // Each names the dataset: its directory and its summary.
    EXPECT_THAT(entry.path().filename().string(), StartsWith("cora-"));
    auto summary = ReadFileToString((entry.path() / "summary.json").string());
    ASSERT_OK(summary.status());
    const auto j = nlohmann::json::parse(*summary);
    EXPECT_EQ(j.value("dataset_name", ""), "cora");
    EXPECT_THAT(j.value("partition", ""), HasSubstr(work_dir_));
  }
  EXPECT_EQ(finished_runs, 2);
}

// A raw OGB layout of `n` nodes in dir (two classes, a ring with chords, 4
// features that follow the class), so that two of them differ in content but
// share the folder name.
void WriteToyOgb(const std::string& dir, int n) {
  std::string edges, features, labels, train, valid, test;
  int m = 0;
  for (int i = 0; i < n; ++i) {
    for (int step : {1, 2}) {
      absl::StrAppend(&edges, i, ",", (i + step) % n, "\n");
      ++m;
    }
    const int label = i % 2;
    absl::StrAppend(&features, label, ",", 1 - label, ",", (i % 3) * 0.5, ",",
                    (i % 5) * 0.25, "\n");
    absl::StrAppend(&labels, label, "\n");
    std::string& split = i % 4 == 0 ? train : i % 4 == 1 ? valid : test;
    absl::StrAppend(&split, i, "\n");
  }
  const std::pair<std::string, std::string> files[] = {
      {"raw/num-node-list.csv", absl::StrCat(n, "\n")},
      {"raw/num-edge-list.csv", absl::StrCat(m, "\n")},
      {"raw/edge.csv", edges},
      {"raw/node-feat.csv", features},
      {"raw/node-label.csv", labels},
      {"split/toy-split/train.csv", train},
      {"split/toy-split/valid.csv", valid},
      {"split/toy-split/test.csv", test}};
  for (const auto& [path, text] : files) {
    fs::create_directories(fs::path(dir + "/" + path).parent_path());
    std::ofstream(dir + "/" + path) << text;
  }
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(std::ifstream(path), nullptr,
                               /*allow_exceptions=*/false);
}

// The partition.json (under WORK_DIR/partitions) of the partition a finished
// run trained on, found by the partition_id in its summary.json.
nlohmann::json PartitionOfRun(const std::string& work_dir,
                              const std::string& run_dir) {
  const auto summary = ReadJson(run_dir + "/summary.json");
  if (!summary.is_object()) return {};
  for (const auto& entry : fs::directory_iterator(work_dir + "/partitions")) {
    auto partition = ReadJson((entry.path() / "partition.json").string());
    if (partition.is_object() &&
        partition["partition_id"] == summary["partition_id"]) {
      return partition;
    }
  }
  return {};
}

size_t EntriesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Two different datasets with the same name (both folders are called "toy")
// under one work dir: the second run imports and partitions its own data
// instead of reusing the first one's, leaves the first one's as they are, and
// a run on the first input again reuses what was made from it.
TEST_F(RunTest, SameNameOtherContentIsImportedAndPartitionedAfresh) {
  WriteToyOgb(dir_.Sub("a/toy"), 40);
  WriteToyOgb(dir_.Sub("b/toy"), 56);
  auto run_on = [&](const std::string& input, const std::string& out) {
    std::vector<std::string> args = RunArgs(out, "1");
    for (const char* a : {"--trainers", "1", "--dataset"}) args.push_back(a);
    args.push_back(input);
    return RunShardgnn(args);
  };
  Finished first = run_on(dir_.Sub("a/toy"), dir_.Sub("run-a"));
  ASSERT_EQ(first.exit_status, 0) << first.output;
  EXPECT_EQ(PartitionOfRun(work_dir_, dir_.Sub("run-a"))["num_nodes"], 40);

  Finished second = run_on(dir_.Sub("b/toy"), dir_.Sub("run-b"));
  ASSERT_EQ(second.exit_status, 0) << second.output;
  EXPECT_THAT(second.output, Not(HasSubstr("reusing dataset")));
  EXPECT_THAT(second.output, Not(HasSubstr("reusing partition")));
  // It says why it did not reuse what has the same name.
  EXPECT_THAT(second.output, HasSubstr("holds another input named 'toy'"));
  EXPECT_THAT(second.output,
              HasSubstr("holds a partition of other content named 'toy'"));
  const auto partition_b = PartitionOfRun(work_dir_, dir_.Sub("run-b"));
  EXPECT_EQ(partition_b["num_nodes"], 56);
  EXPECT_EQ(partition_b["dataset"]["name"], "toy");
  EXPECT_EQ(EntriesIn(work_dir_ + "/datasets"), 2u);
  EXPECT_EQ(EntriesIn(work_dir_ + "/partitions"), 2u);

  Finished again = run_on(dir_.Sub("a/toy"), dir_.Sub("run-a2"));
  ASSERT_EQ(again.exit_status, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("reusing dataset"));
  EXPECT_THAT(again.output, HasSubstr("reusing partition"));
  EXPECT_EQ(PartitionOfRun(work_dir_, dir_.Sub("run-a2"))["partition_id"],
            PartitionOfRun(work_dir_, dir_.Sub("run-a"))["partition_id"]);
  EXPECT_EQ(EntriesIn(work_dir_ + "/partitions"), 2u);

  // Editing an input in place is other content too.
  WriteToyOgb(dir_.Sub("a/toy"), 44);
  Finished edited = run_on(dir_.Sub("a/toy"), dir_.Sub("run-a3"));
  ASSERT_EQ(edited.exit_status, 0) << edited.output;
  EXPECT_THAT(edited.output, Not(HasSubstr("reusing")));
  EXPECT_EQ(PartitionOfRun(work_dir_, dir_.Sub("run-a3"))["num_nodes"], 44);
}

// A dataset directory made again in place (same path and name, other data)
// is partitioned again; the partition made from the earlier data stays.
TEST_F(RunTest, DatasetDirMadeAgainInPlaceIsPartitionedAfresh) {
  const std::string dataset = dir_.Sub("g");
  auto generate = [&](const char* seed) {
    Finished made = RunShardgnn({"-q", "dataset", "generate", "--nodes", "120",
                                 "--features", "4", "--classes", "2", "--name",
                                 "g", "--seed", seed, "--out", dataset});
    ASSERT_EQ(made.exit_status, 0) << made.output;
  };
  auto run_on = [&](const std::string& out) {
    std::vector<std::string> args = RunArgs(out, "1");
    for (const char* a : {"--trainers", "1", "--dataset"}) args.push_back(a);
    args.push_back(dataset);
    return RunShardgnn(args);
  };
  ASSERT_NO_FATAL_FAILURE(generate("1"));
  Finished first = run_on(dir_.Sub("run1"));
  ASSERT_EQ(first.exit_status, 0) << first.output;
  const auto partition1 = PartitionOfRun(work_dir_, dir_.Sub("run1"));

  fs::remove_all(dataset);
  ASSERT_NO_FATAL_FAILURE(generate("2"));
  Finished second = run_on(dir_.Sub("run2"));
  ASSERT_EQ(second.exit_status, 0) << second.output;
  EXPECT_THAT(second.output, Not(HasSubstr("reusing partition")));
  const auto partition2 = PartitionOfRun(work_dir_, dir_.Sub("run2"));
  ASSERT_TRUE(partition2.is_object()) << second.output;
  EXPECT_NE(partition2["dataset"]["checksum"],
            partition1["dataset"]["checksum"]);
  EXPECT_EQ(EntriesIn(work_dir_ + "/partitions"), 2u);
  // No import: the directory was a dataset already.
  EXPECT_FALSE(fs::exists(work_dir_ + "/datasets/g"));

  Finished third = run_on(dir_.Sub("run3"));
  ASSERT_EQ(third.exit_status, 0) << third.output;
  EXPECT_THAT(third.output, HasSubstr("reusing partition"));
}

// Flags for an import do not apply to a directory that is a dataset already.
TEST_F(RunTest, ImportFlagsWithADatasetDirAreRefused) {
  const std::string dataset = dir_.Sub("g");
  Finished made = RunShardgnn(
      {"-q", "dataset", "generate", "--nodes", "50", "--out", dataset});
  ASSERT_EQ(made.exit_status, 0) << made.output;
  Finished run = RunShardgnn({"run", "--work-dir", work_dir_, "--dataset",
                              dataset, "--name", "x", "--split-name", "s"});
  EXPECT_NE(run.exit_status, 0);
  ASSERT_EQ(Lines(run.output).size(), 1u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("shardgnn: error: --name, --split-name"));
  EXPECT_THAT(run.output, HasSubstr("is a dataset directory already"));
  EXPECT_FALSE(fs::exists(work_dir_));
}

// Per epoch (the last line written for it wins): the loss.
std::map<int, double> LossByEpoch(const std::string& run_dir) {
  std::map<int, double> loss;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) loss[j["epoch"].get<int>()] = j["loss"].get<double>();
  }
  return loss;
}

double SummaryTestAccuracy(const std::string& run_dir) {
  auto j = nlohmann::json::parse(std::ifstream(run_dir + "/summary.json"),
                                 nullptr, false);
  return j.is_object() ? j["test_acc"].get<double>() : -1;
}

// A run interrupted mid-way and continued with --resume ends where an
// uninterrupted run with the same seed ends.
TEST_F(RunTest, InterruptedRunResumesToTheSameResult) {
  const std::string whole = dir_.Sub("whole");
  const std::string resumed = dir_.Sub("resumed");
  Finished uninterrupted = RunShardgnn(RunArgs(whole, "8"));
  ASSERT_EQ(uninterrupted.exit_status, 0) << uninterrupted.output;

  auto run = StartShardgnn(RunArgs(resumed, "8"), "shardgnn run");
  ASSERT_NE(run, nullptr);
  ASSERT_OK(run->WaitForLine("epoch   2/8", kRunTimeout));
  run->Signal(SIGINT);
  std::optional<int> status = run->Wait(seconds(30));
  ASSERT_TRUE(status.has_value());
  if (*status == 0) GTEST_SKIP() << "the run finished before the interrupt";
  ASSERT_FALSE(fs::exists(resumed + "/summary.json"));
  const size_t epochs_before = LossByEpoch(resumed).size();
  EXPECT_GE(epochs_before, 2u);
  EXPECT_LT(epochs_before, 8u);

  std::vector<std::string> args = RunArgs(resumed, "8");
  args.push_back("--resume");
  Finished continued = RunShardgnn(args);
  ASSERT_EQ(continued.exit_status, 0) << continued.output;
  // It continues after the last checkpoint instead of starting over.
  EXPECT_THAT(continued.output, Not(HasSubstr("epoch   1/8")))
      << continued.output;
  EXPECT_THAT(continued.output, HasSubstr("epoch   8/8"));

  std::map<int, double> expected = LossByEpoch(whole);
  std::map<int, double> actual = LossByEpoch(resumed);
  ASSERT_EQ(actual.size(), 8u);
  for (const auto& [epoch, loss] : expected) {
    EXPECT_NEAR(actual[epoch], loss, 1e-4) << "epoch " << epoch;
  }
  EXPECT_NEAR(SummaryTestAccuracy(resumed), SummaryTestAccuracy(whole), 1e-6);
}

// --metrics-listen reaches every trainer of a run: each says where its
// metrics are (a free port each), and each answers with its own rank's
// figures, the gradient sync between the two included.
TEST_F(RunTest, EveryTrainerServesItsMetrics) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(
      StartTraining(&run, &children, {"--metrics-listen", "127.0.0.1:0"}));
  std::map<int, int> port_of_rank;
  const std::string marker = "shardgnn train: metrics on http://127.0.0.1:";
  for (const std::string& line : Lines(run->Tail(1000))) {
    const size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    const int rank = line.rfind("[trainer 1] ", 0) == 0 ? 1 : 0;
    port_of_rank[rank] = std::stoi(line.substr(at + marker.size()));
  }
  ASSERT_EQ(port_of_rank.size(), 2u) << run->Tail(100);
  EXPECT_NE(port_of_rank[0], port_of_rank[1]);
  for (const auto& [rank, port] : port_of_rank) {
    const std::string label = absl::StrCat("{rank=\"", rank, "\"}");
    std::map<std::string, double> s =
        testing::ParseSamples(testing::HttpGet(port));
    EXPECT_EQ(s["shardgnn_trainer_world_size" + label], 2) << rank;
    EXPECT_GT(s["shardgnn_trainer_steps_total" + label], 0) << rank;
    EXPECT_GT(s["shardgnn_trainer_sync_seconds_total" + label], 0) << rank;
    EXPECT_GT(s["shardgnn_trainer_compute_seconds_total" + label],
              s["shardgnn_trainer_sync_seconds_total" + label])
        << rank;
  }
  run->Signal(SIGINT);
  ASSERT_TRUE(run->Wait(seconds(60)).has_value());
  ExpectNoneLeft(children);
}

// Storage servers started by the test outlive the runs submitted to them.
TEST_F(RunTest, SubmitsTwiceToRunningServersAndChecksThePartition) {
  const std::string dataset = dir_.Sub("cora");
  const std::string metis = dir_.Sub("metis");
  const std::string random = dir_.Sub("random");
  Finished imported = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", dataset});
  ASSERT_EQ(imported.exit_status, 0) << imported.output;
  for (const auto& [out, method] :
       {std::pair{metis, "metis"}, std::pair{random, "random"}}) {
    Finished parted =
        RunShardgnn({"-q", "partition", "--dataset", dataset, "--parts", "2",
                     "--method", method, "--out", out});
    ASSERT_EQ(parted.exit_status, 0) << parted.output;
  }

  std::vector<std::unique_ptr<Subprocess>> servers;
  std::vector<std::string> addresses;
  for (int p = 0; p < 2; ++p) {
    servers.push_back(StartShardgnn(
        {"serve", "--partition", metis, "--part", std::to_string(p), "--listen",
         "127.0.0.1:0", "--memory"},
        absl::StrCat("server ", p)));
    ASSERT_NE(servers.back(), nullptr);
  }
  for (auto& s : servers) {
    ASSERT_OK_AND_ASSIGN(std::string line,
                         s->WaitForLine("ready on ", kRunTimeout));
    addresses.push_back(ReadyAddress(line));
  }
  const std::string list = absl::StrJoin(addresses, ",");

  // The second run names the servers in a cluster file instead.
  const std::string cluster = dir_.Sub("cluster.txt");
  std::ofstream(cluster) << "# storage servers\n"
                         << addresses[1] << "\n"
                         << addresses[0] << "  # part 0\n";
  for (const char* name : {"run1", "run2", "run3"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> args = RunArgs(dir_.Sub(name), "3");
    args.push_back(name == std::string("run1") ? "--servers" : "--cluster");
    args.push_back(name == std::string("run1") ? list : cluster);
    args.push_back("--partition");
    args.push_back(metis);
    // The servers run on this machine in memory mode: run1's trainers map
    // their feature matrices, run2's are told to fetch through calls (over
    // the servers' feature ports), run3's through gRPC calls only.
    const bool shared = name == std::string("run1");
    const bool port = name == std::string("run2");
    if (!shared) args.push_back("--no-shared-memory");
    if (name == std::string("run3")) args.push_back("--no-feature-port");
    Finished run = RunShardgnn(args);
    ASSERT_EQ(run.exit_status, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("epoch   3/3"));
    EXPECT_GT(ReportedTestAccuracy(run.output), 0.3) << run.output;
    // Cora's defaults (normalized features) are only for the bundled Cora.
    auto summary = nlohmann::json::parse(
        std::ifstream(dir_.Sub(name) + "/summary.json"), nullptr, false);
    EXPECT_THAT(summary["config"].dump(), Not(HasSubstr("normalize")));
    EXPECT_EQ(run.output.find("shared memory") != std::string::npos, shared)
        << run.output;
    const auto& remote = summary["remote"];
    EXPECT_EQ(remote["feature_bytes"].get<int64_t>() > 0, !shared) << remote;
    EXPECT_EQ(remote["shared_feature_bytes"].get<int64_t>() > 0, shared)
        << remote;
    EXPECT_EQ(remote["feature_port_parts"].get<int64_t>(), port ? 2 : 0)
        << remote;
    EXPECT_EQ(run.output.find("fetched over their servers' feature ports") !=
                  std::string::npos,
              port)
        << run.output;
    for (auto& s : servers) {
      EXPECT_EQ(s->Poll(), std::nullopt) << s->name() << " stopped";
    }
  }

  // A run naming another partition of the same data is refused before any
  // training, and the servers stay up.
  std::vector<std::string> args = RunArgs(dir_.Sub("wrong"), "3");
  for (const char* a :
       {"--servers", list.c_str(), "--partition", random.c_str()}) {
    args.push_back(a);
  }
  Finished wrong = RunShardgnn(args);
  EXPECT_NE(wrong.exit_status, 0) << wrong.output;
  EXPECT_THAT(Lines(wrong.output).back(),
              AllOf(HasSubstr("shardgnn: error:"), HasSubstr("partition")))
      << wrong.output;
  EXPECT_THAT(wrong.output, Not(HasSubstr("epoch ")));
  EXPECT_FALSE(fs::exists(dir_.Sub("wrong") + "/summary.json"));
  for (auto& s : servers) {
    EXPECT_EQ(s->Poll(), std::nullopt) << s->name() << " stopped";
    EXPECT_EQ(s->Terminate(milliseconds(10000)), 0) << s->Tail(5);
  }
}

// --shares reaches every trainer: with weights 1,3 rank 0 takes a quarter of
// every step's seeds (metrics.jsonl, rank 0's), and the run still learns.
TEST_F(RunTest, SharesGiveEachTrainerItsPartOfEveryBatch) {
  const std::string out = dir_.Sub("run");
  std::vector<std::string> args = RunArgs(out, "5");
  args.insert(args.end(), {"--shares", "1,3"});
  Finished run = RunShardgnn(args);
  ASSERT_EQ(run.exit_status, 0) << run.output;
  std::ifstream metrics(out + "/metrics.jsonl");
  int epochs = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto epoch = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(epoch.is_object()) << line;
    EXPECT_NEAR(epoch["share"].get<double>(), 0.25, 0.01) << line;
    ++epochs;
  }
  EXPECT_EQ(epochs, 5);
  EXPECT_GT(ReportedTestAccuracy(run.output), 0.5) << run.output;
}

struct BadFlag {
  std::string name;  // Test name suffix.
  std::vector<std::string> args;
  std::string mentions;  // The error line must contain this.
};

// Test logs show the case by name.
void PrintTo(const BadFlag& c, std::ostream* os) { *os << c.name; }

class RunBadFlagTest : public RunTest,
                       public ::testing::WithParamInterface<BadFlag> {};

TEST_P(RunBadFlagTest, OneErrorLineAndNoChildren) {
  std::vector<std::string> args = {"run", "--work-dir", work_dir_};
  for (const auto& a : GetParam().args) args.push_back(a);
  Finished run = RunShardgnn(args);
  EXPECT_NE(run.exit_status, 0);
  std::vector<std::string> lines = Lines(run.output);
  ASSERT_EQ(lines.size(), 1u) << run.output;
  EXPECT_THAT(lines[0], AllOf(HasSubstr("shardgnn: error:"),
                              HasSubstr(GetParam().mentions)));
  // Nothing was imported, partitioned or started.
  EXPECT_FALSE(fs::exists(work_dir_));
  ExpectNoOrphans();
}

INSTANTIATE_TEST_SUITE_P(
    Flags, RunBadFlagTest,
    ::testing::Values(
        BadFlag{"Fanouts", {"--fanouts", "10,x"}, "--fanouts '10,x'"},
        BadFlag{"Model", {"--model", "nope"}, "model 'nope'"},
        BadFlag{"Trainers", {"--trainers", "0"}, "--trainers"},
        BadFlag{"Parts", {"--parts", "0"}, "--parts"},
        BadFlag{"Epochs", {"--epochs", "0"}, "--epochs"},
        BadFlag{"Method", {"--method", "bogus"}, "method 'bogus'"},
        BadFlag{"Shares", {"--shares", "1,fast"}, "--shares '1,fast'"},
        BadFlag{"ZeroShare", {"--shares", "0,1"}, "--shares '0,1'"},
        BadFlag{"SharesPerTrainer",
                {"--trainers", "2", "--shares", "1,2,3"},
                "gives 3 weights for 2 trainers"},
        // What the flag parser refuses is one line too.
        BadFlag{"NotANumber", {"--epochs", "many"}, "--epochs = many"},
        BadFlag{"UnknownFlag", {"--bogus"}, "--bogus"},
        // Out-of-range values are refused, not taken as "the default"
        // (only the documented "unset" values are).
        BadFlag{"NegativeCache", {"--cache-mb", "-1"}, "--cache-mb"},
        BadFlag{"NegativeThreads", {"--threads", "-2"}, "--threads"},
        BadFlag{"NegativeDropout", {"--dropout", "-0.5"}, "--dropout"},
        BadFlag{
            "NegativeWeightDecay", {"--weight-decay", "-2"}, "--weight-decay"},
        BadFlag{"NegativeAverageDecay",
                {"--average-decay", "-0.1"},
                "--average-decay"},
        BadFlag{"NegativeHidden", {"--hidden", "-4"}, "--hidden"},
        // 0 is what these hold when left out (the model's default); given,
        // it is a width, head count or step size the model cannot use.
        BadFlag{"ZeroHidden", {"--hidden", "0"}, "--hidden"},
        BadFlag{"ZeroHeads", {"--heads", "0"}, "--heads"},
        BadFlag{"ZeroLr", {"--lr", "0"}, "--lr"},
        BadFlag{"NegativeLr", {"--lr", "-0.01"}, "--lr"},
        BadFlag{"ResumeWithoutOut", {"--resume"}, "--resume needs --out"},
        // TLS is for servers run does not start (its own are on loopback).
        BadFlag{"TlsWithOwnServers",
                {"--tls-ca", "/dev/null/ca.pem"},
                "--tls-ca are for --servers or --cluster"},
        BadFlag{"TokenFileMissing",
                {"--auth-token-file", "/nonexistent/token"},
                "--auth-token-file /nonexistent/token"},
        // A partition fixes the dataset, its parts and the method.
        BadFlag{"PartitionWithDataset",
                {"--partition", "p", "--dataset", "d", "--parts", "3"},
                "--partition cannot be combined with --dataset, --parts"},
        BadFlag{"PartitionWithImportFlags",
                {"--partition", "p", "--method", "random", "--name", "x",
                 "--format", "ogb", "--split-name", "s"},
                "--partition cannot be combined with --name, --format, "
                "--split-name, --method"},
        // Running servers serve their partition, from memory or disk.
        BadFlag{"ServersWithDataset",
                {"--servers", "127.0.0.1:1", "--dataset", "d", "--disk"},
                "--servers cannot be combined with --dataset, --disk"},
        BadFlag{"ClusterWithParts",
                {"--cluster", "c.txt", "--parts", "3", "--method", "random"},
                "--cluster cannot be combined with --parts, --method"}),
    [](const ::testing::TestParamInfo<BadFlag>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace shardgnn
