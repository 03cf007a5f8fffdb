// `shardgnn train` (cli/train_cmd.cc) as a real child process: configuration
// errors (torchrun variables, servers, partition) are one clear line naming
// what is wrong, before any connection is tried; --dataset trains Cora in one
// process and writes the run directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/testing/scrape.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "toml++/toml.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct BadTrain {
  std::string name;                        // Test name suffix.
  std::map<std::string, std::string> env;  // On top of a valid torchrun set.
  std::vector<std::string> args;           // After "train".
  std::vector<std::string> mentions;       // The error line contains each.
};

// Test logs show the case by name.
void PrintTo(const BadTrain& c, std::ostream* os) { *os << c.name; }

class TrainBadConfigTest : public ::testing::TestWithParam<BadTrain> {};

TEST_P(TrainBadConfigTest, FailsFastWithOneClearLine) {
  const BadTrain& bad = GetParam();
  SubprocessOptions options;
  options.name = "shardgnn train";
  options.argv = {testing::ShardgnnBinary(), "train"};
  for (const auto& a : bad.args) options.argv.push_back(a);
  options.env = {{"RANK", "0"},
                 {"WORLD_SIZE", "1"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", "29500"}};
  for (const auto& [k, v] : bad.env) options.env[k] = v;
  ASSERT_OK_AND_ASSIGN(auto train, Subprocess::Start(options));
  auto started = std::chrono::steady_clock::now();
  std::optional<int> status = train->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running after 60 s";
  // Nothing is contacted: a configuration error is immediate.
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count(),
      10);
  EXPECT_EQ(*status, 1);
  std::string output = train->Tail(1000);
  std::vector<std::string> lines =
      absl::StrSplit(output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << output;
  EXPECT_THAT(lines[0], HasSubstr("shardgnn: error: "));
  for (const auto& m : bad.mentions) EXPECT_THAT(lines[0], HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(
    Config, TrainBadConfigTest,
    ::testing::Values(
        BadTrain{"RankNotInteger",
                 {{"RANK", "abc"}},
                 {"--servers", "127.0.0.1:1"},
                 {"RANK", "'abc'"}},
        BadTrain{"WorldSizeNotInteger",
                 {{"WORLD_SIZE", "two"}},
                 {"--servers", "127.0.0.1:1"},
                 {"WORLD_SIZE", "'two'"}},
        BadTrain{"RankOutsideWorld",
                 {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
                 {"--servers", "127.0.0.1:1"},
                 {"rank 2", "[0, 2)"}},
        BadTrain{"MasterPortOutOfRange",
                 {{"MASTER_PORT", "99999"}},
                 {"--servers", "127.0.0.1:1"},
                 {"port 99999"}},
        BadTrain{"NoServers", {}, {}, {"no storage servers", "--servers"}},
        BadTrain{"ServerWithoutPort",
                 {},
                 {"--servers", "localhost"},
                 {"'localhost'", "HOST:PORT"}},
        BadTrain{"MissingClusterFile",
                 {},
                 {"--cluster", "/nonexistent/cluster.txt"},
                 {"/nonexistent/cluster.txt"}},
        BadTrain{"MissingPartition",
                 {},
                 {"--servers", "127.0.0.1:1", "--partition", "/nonexistent"},
                 {"/nonexistent/partition.json"}},
        BadTrain{"DatasetWithServers",
                 {},
                 {"--dataset", "/nonexistent", "--servers", "127.0.0.1:1"},
                 {"--dataset", "--servers"}},
        BadTrain{"BadFanouts",
                 {},
                 {"--servers", "127.0.0.1:1", "--fanouts", "5,0"},
                 {"--fanouts '5,0'"}},
        BadTrain{"BadFeatureNorm",
                 {},
                 {"--servers", "127.0.0.1:1", "--feature-norm", "l2"},
                 {"--feature-norm 'l2'", "auto, none, row or standardize"}},
        BadTrain{"EvalFanoutsOfAnotherDepth",
                 {},
                 {"--servers", "127.0.0.1:1", "--eval-fanouts", "20,20,20"},
                 {"--eval-fanouts '20,20,20'", "3 layers", "has 2"}},
        BadTrain{"NegativePatience",
                 {},
                 {"--servers", "127.0.0.1:1", "--patience", "-2"},
                 {"--patience"}},
        BadTrain{"NegativeEpochs",
                 {},
                 {"--servers", "127.0.0.1:1", "--epochs", "-2"},
                 {"--epochs must be at least 1"}},
        BadTrain{"NegativeStepsPerEpoch",
                 {},
                 {"--servers", "127.0.0.1:1", "--steps-per-epoch", "-2"},
                 {"--steps-per-epoch must not be negative"}},
        BadTrain{"LinkTaskWithoutPartition",
                 {},
                 {"--servers", "127.0.0.1:1", "--task", "link", "--server-wait",
                  "0"},
                 {"--task link needs --partition DIR"}},
        BadTrain{"MetricsListenNotHostPort",
                 {},
                 {"--servers", "127.0.0.1:1", "--metrics-listen", "9100"},
                 {"cannot serve metrics on '9100': not HOST:PORT"}},
        BadTrain{
            "ResumeWithoutCheckpoints",
            {},
            {"--servers", "127.0.0.1:1", "--resume", "--checkpoint-every", "0"},
            {"--resume", "--checkpoint-every 0"}}),
    [](const ::testing::TestParamInfo<BadTrain>& info) {
      return info.param.name;
    });

// Under Slurm (srun's task variables, no RANK/WORLD_SIZE) several tasks and no
// rendezvous address refuse to start with one line saying how to give one,
// before any server is contacted: never a run of several worlds of one. With
// --master-addr (or MASTER_ADDR), or with a single task, the rendezvous
// configuration passes and the next check fails instead (a missing
// partition).
TEST(TrainSlurmTest, SeveralTasksWithoutAMasterAddressRefuseToStart) {
  auto run = [](const std::string& ntasks,
                const std::vector<std::string>& extra) {
    SubprocessOptions options;
    options.name = "shardgnn train";
    options.argv = {testing::ShardgnnBinary(),
                    "train",
                    "--servers",
                    "127.0.0.1:1",
                    "--partition",
                    "/nonexistent"};
    for (const auto& a : extra) options.argv.push_back(a);
    options.env = {{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", ntasks},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NODEID", "0"},
                   {"SLURM_TASKS_PER_NODE", ntasks}};
    auto train = Subprocess::Start(options);
    EXPECT_TRUE(train.ok()) << train.status();
    if (!train.ok()) return std::make_pair(-1, std::string());
    std::optional<int> status = (*train)->Wait(std::chrono::seconds(60));
    const int code =
        status.value_or((*train)->Terminate(std::chrono::seconds(1)));
    return std::make_pair(code, (*train)->Tail(1000));
  };
  const auto started = std::chrono::steady_clock::now();
  auto [code, output] = run("2", {});
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(10));
  EXPECT_EQ(code, 1);
  std::vector<std::string> lines =
      absl::StrSplit(output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << output;
  EXPECT_THAT(lines[0],
              AllOf(HasSubstr("shardgnn: error: "), HasSubstr("SLURM_NTASKS=2"),
                    HasSubstr("MASTER_ADDR"), HasSubstr("--master-addr")));

  for (const auto& [ntasks, extra] :
       {std::make_pair(std::string("2"),
                       std::vector<std::string>{"--master-addr", "127.0.0.1"}),
        std::make_pair(std::string("1"), std::vector<std::string>{})}) {
    SCOPED_TRACE(ntasks + " tasks");
    auto [passed, passed_output] = run(ntasks, extra);
    EXPECT_NE(passed, 0);
    EXPECT_THAT(passed_output, ::testing::Not(HasSubstr("SLURM_NTASKS")));
    EXPECT_THAT(passed_output, HasSubstr("/nonexistent/partition.json"))
        << passed_output;
  }
}

// Runs `shardgnn <args>` to completion; returns its exit status and output.
std::pair<int, std::string> RunShardgnn(
    std::vector<std::string> args,
    std::map<std::string, std::string> env = {}) {
  SubprocessOptions options;
  options.name = "shardgnn";
  options.env = std::move(env);
  options.argv = {testing::ShardgnnBinary()};
  for (auto& a : args) options.argv.push_back(std::move(a));
  options.max_kept_lines = 10000;
  auto child = Subprocess::Start(std::move(options));
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {-1, ""};
  std::optional<int> status = (*child)->Wait(std::chrono::seconds(120));
  int code = status.value_or((*child)->Terminate(std::chrono::seconds(1)));
  return {code, (*child)->Tail(10000)};
}

// Imports the bundled Cora into dir/cora (with reverse edges) into *path.
void ImportCora(const testing::TempDir& dir, std::string* path) {
  *path = dir.Sub("cora");
  auto [imported, output] = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", *path});
  ASSERT_EQ(imported, 0) << output;
}

TEST(TrainInProcessTest, TrainsCoraInMemoryAndWritesTheRunDirectory) {
  testing::TempDir dir;
  const std::string out = dir.Sub("run");
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  // No torchrun variables and no servers: one process, nothing to contact.
  auto [trained, output] =
      RunShardgnn({"train", "--dataset", cora, "--epochs", "4", "--out", out,
                   "--prefetch", "2", "--sampler-threads", "1"});
  ASSERT_EQ(trained, 0) << output;
  EXPECT_THAT(output, HasSubstr("in process"));

  ASSERT_OK_AND_ASSIGN(std::string metrics,
                       ReadFileToString(out + "/metrics.jsonl"));
  EXPECT_EQ(
      std::vector<std::string>(absl::StrSplit(metrics, '\n', absl::SkipEmpty()))
          .size(),
      4u);
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(out + "/summary.json"));
  nlohmann::json summary = nlohmann::json::parse(text);
  EXPECT_EQ(summary["mode"], "in-process");
  EXPECT_EQ(summary["world_size"], 1);
  // Seven classes: chance is about 0.14.
  EXPECT_GT(summary["test_acc"].get<double>(), 0.5) << text;
  EXPECT_GT(summary["process"]["peak_rss_bytes"].get<int64_t>(), 1 << 20);
  // Compute threads default to every core, LibTorch's and OpenBLAS's alike,
  // and the process ran with idle threads sleeping (it re-executed itself
  // with that environment unless the test's environment already set it).
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(summary["process"]["torch_threads"].get<int>(), cores);
  EXPECT_EQ(summary["process"]["blas_threads"].get<int>(), cores);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  EXPECT_EQ(summary["process"]["omp_wait_policy"],
            policy != nullptr ? policy : "PASSIVE");
  const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  EXPECT_EQ(summary["process"]["openblas_thread_timeout"],
            timeout != nullptr ? timeout : "4");
  EXPECT_EQ(summary["process"]["sampler_threads"], 1);
  EXPECT_EQ(summary["process"]["prefetch"], 2);
  // Cora's input rows (1,433 features) make tensors over the cache's 256
  // KiB; after the first steps they come from kept blocks.
  const auto& cache = summary["process"]["tensor_cache"];
  EXPECT_GT(cache["fresh_bytes"].get<int64_t>(), 0) << text;
  EXPECT_GE(cache["moved_bytes"].get<int64_t>(), 0) << text;
  EXPECT_GT(cache["reused"].get<int64_t>(),
            cache["allocations"].get<int64_t>() / 2)
      << text;
  const auto& time = summary["epoch_time"];
  EXPECT_EQ(time["epochs_measured"], 3);  // The first epoch is warm-up.
  EXPECT_EQ(time["train_seeds_per_epoch"], 140);
  EXPECT_GT(time["seeds_per_second"].get<double>(), 0);
  EXPECT_GT(time["compute_seconds"].get<double>(), 0);
  EXPECT_EQ(time["allreduce_seconds"].get<double>(), 0);
  EXPECT_LE(time["step_seconds"].get<double>(),
            time["epoch_seconds"].get<double>());
}

// The defaults are resolved per model and stated in the run's first lines and
// summary.json: the feature scaling chosen from the data, the model's sizes
// and learning rate, the steps per epoch (at least 10 with Cora's 140 train
// nodes). Checkpoints follow --checkpoint-every, and their cost is reported.
TEST(TrainInProcessTest, StatesTheDefaultsItChoseAndCheckpointsAsAsked) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));

  auto [gat, gat_output] =
      RunShardgnn({"train", "--dataset", cora, "--model", "gat", "--epochs",
                   "3", "--checkpoint-every", "2", "--out", dir.Sub("gat")});
  ASSERT_EQ(gat, 0) << gat_output;
  EXPECT_THAT(gat_output,
              HasSubstr("model gat, 2 layers, hidden 8 x 8 heads, dropout "
                        "0.6, lr 0.005"));
  EXPECT_THAT(gat_output, HasSubstr("10 steps per epoch"));
  // --epochs given, --patience the model's.
  EXPECT_THAT(gat_output,
              HasSubstr("up to 3 epochs (patience 20), parameters as trained"));
  EXPECT_THAT(gat_output,
              HasSubstr("features: row-l2 (auto: non-negative features"));
  EXPECT_THAT(gat_output, HasSubstr("checkpoints: "));
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(dir.Sub("gat") + "/summary.json"));
  nlohmann::json summary = nlohmann::json::parse(text);
  EXPECT_EQ(summary["model"]["hidden"], 8);
  EXPECT_EQ(summary["model"]["heads"], 8);
  EXPECT_EQ(summary["model"]["feature_norm"], "row-l2");
  EXPECT_EQ(summary["steps_per_epoch"], 10);
  EXPECT_EQ(summary["epochs_run"], 3);
  EXPECT_EQ(summary["checkpoints"]["every_epochs"], 2);
  EXPECT_GT(summary["checkpoints"]["bytes_per_trainer"].get<int64_t>(), 0);
  EXPECT_TRUE(
      std::filesystem::exists(dir.Sub("gat") + "/checkpoints/rank-0.ckpt"));

  // Explicit flags win; no checkpoints at all with --checkpoint-every 0.
  auto [sage, sage_output] =
      RunShardgnn({"train", "--dataset", cora, "--epochs", "2", "--hidden",
                   "32", "--feature-norm", "standardize", "--checkpoint-every",
                   "0", "--out", dir.Sub("sage")});
  ASSERT_EQ(sage, 0) << sage_output;
  EXPECT_THAT(sage_output, HasSubstr("model sage, 2 layers, hidden 32,"));
  EXPECT_THAT(sage_output,
              HasSubstr("up to 2 epochs (patience 20), parameters"));
  EXPECT_THAT(sage_output, HasSubstr("features: standardize (as requested"));
  EXPECT_THAT(sage_output, ::testing::Not(HasSubstr("checkpoints: ")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("sage") + "/checkpoints"));
  ASSERT_OK_AND_ASSIGN(text,
                       ReadFileToString(dir.Sub("sage") + "/summary.json"));
  summary = nlohmann::json::parse(text);
  EXPECT_EQ(summary["model"]["feature_norm"], "standardize");
  EXPECT_EQ(summary["checkpoints"]["bytes_per_trainer"], 0);
}

// The training schedule is the model's: every model trains until 20 epochs
// bring no better validation, within a budget of 200 (GAT at half the
// learning rate, with more dropout); a flag given wins over the model's
// default. A run that the budget ends before patience runs out says so.
TEST(TrainInProcessTest, TheScheduleIsTheModels) {
  testing::TempDir dir;
  const std::string data = dir.Sub("g");
  auto [made, made_output] =
      RunShardgnn({"-q", "dataset", "generate", "--nodes", "120", "--features",
                   "4", "--classes", "2", "--seed", "1", "--out", data});
  ASSERT_EQ(made, 0) << made_output;
  auto train = [&](const std::string& name, std::vector<std::string> flags) {
    std::vector<std::string> args = {"train",      "--dataset",
                                     data,         "--checkpoint-every",
                                     "0",          "--progress-seconds",
                                     "0",          "--min-steps-per-epoch",
                                     "1",          "--out",
                                     dir.Sub(name)};
    args.insert(args.end(), flags.begin(), flags.end());
    return RunShardgnn(args);
  };
  auto summary_of = [&](const std::string& name) {
    auto text = ReadFileToString(dir.Sub(name) + "/summary.json");
    return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
  };
  // Ran until patience ran out, or to the budget, which it then reports.
  auto expect_converged = [&](const std::string& name,
                              const std::string& output) {
    nlohmann::json summary = summary_of(name);
    const int run = summary["epochs_run"].get<int>();
    const int best = summary["best_epoch"].get<int>();
    EXPECT_GT(run, 20) << output;  // At least patience epochs after the first.
    EXPECT_LE(run, 200) << output;
    if (summary["stopped_early"].get<bool>()) {
      EXPECT_EQ(run - best, 20) << output;
      EXPECT_FALSE(summary["epoch_budget_cut"].get<bool>()) << output;
    } else {
      EXPECT_EQ(run, 200) << output;
      EXPECT_TRUE(summary["epoch_budget_cut"].get<bool>()) << output;
    }
  };

  for (const char* model : {"gat", "gcn", "sage"}) {
    auto [rc, output] = train(model, {"--model", model});
    ASSERT_EQ(rc, 0) << output;
    EXPECT_THAT(output, HasSubstr("up to 200 epochs (patience 20), "));
    expect_converged(model, output);
  }
  EXPECT_THAT(std::get<1>(train("gcn2", {"--model", "gcn"})),
              HasSubstr("parameters averaged (decay 0.9)\n"));

  // The budget ends a run before patience runs out: said at the end and in
  // the summary.
  auto [cut, cut_output] = train("cut", {"--model", "sage", "--epochs", "3"});
  ASSERT_EQ(cut, 0) << cut_output;
  EXPECT_THAT(cut_output,
              HasSubstr("warning: the epoch budget ended the run after epoch 3 "
                        "while validation could still improve"));
  EXPECT_TRUE(summary_of("cut")["epoch_budget_cut"].get<bool>());

  auto [short_gat, short_output] =
      train("short", {"--model", "gat", "--epochs", "4", "--patience", "0"});
  ASSERT_EQ(short_gat, 0) << short_output;
  EXPECT_THAT(short_output, HasSubstr("up to 4 epochs, parameters"));
  EXPECT_EQ(summary_of("short")["epochs_run"], 4);
  // Without patience, only a best epoch that is the last counts as cut.
  const nlohmann::json short_summary = summary_of("short");
  EXPECT_EQ(short_summary["epoch_budget_cut"].get<bool>(),
            short_summary["best_epoch"].get<int>() == 4);

  auto [bad, bad_output] = train("bad", {"--model", "gat", "--epochs", "0"});
  EXPECT_NE(bad, 0);
  EXPECT_THAT(bad_output, HasSubstr("--epochs must be at least 1"));
}

// A run whose validation keeps rising past the former fixed budget of 20
// epochs (a small learning rate) is not stopped by patience, and the budget
// that ends it says so.
TEST(TrainInProcessTest, ARunStillImprovingIsNotStoppedAndTheBudgetSaysSo) {
  testing::TempDir dir;
  const std::string data = dir.Sub("g");
  auto [made, made_output] =
      RunShardgnn({"-q", "dataset", "generate", "--nodes", "600", "--features",
                   "8", "--classes", "4", "--seed", "1", "--out", data});
  ASSERT_EQ(made, 0) << made_output;
  auto [rc, output] =
      RunShardgnn({"train", "--dataset", data, "--lr", "0.001", "--epochs",
                   "60", "--checkpoint-every", "0", "--min-steps-per-epoch",
                   "1", "--progress-seconds", "0", "--out", dir.Sub("run")});
  ASSERT_EQ(rc, 0) << output;
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(dir.Sub("run") + "/summary.json"));
  const nlohmann::json summary = nlohmann::json::parse(text);
  EXPECT_EQ(summary["epochs_run"], 60) << output;
  EXPECT_FALSE(summary["stopped_early"].get<bool>());
  EXPECT_GT(summary["best_epoch"].get<int>(), 40) << output;
  EXPECT_TRUE(summary["epoch_budget_cut"].get<bool>());
  EXPECT_THAT(output, HasSubstr("warning: the epoch budget ended the run "
                                "after epoch 60 while validation could still "
                                "improve"));
}

// Trainers that share a machine (torchrun's LOCAL_WORLD_SIZE) share its cores;
// --threads overrides; a malformed LOCAL_WORLD_SIZE is one clear error.
// `train --out` onto a directory that holds a run refuses (its metrics would
// be appended to, its checkpoints overwritten) unless --resume continues it.
TEST(TrainInProcessTest, RefusesAnOutDirThatHoldsARunUnlessResuming) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  const std::string out = dir.Sub("run");
  auto train = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"-q", "train", "--dataset",
                                     cora, "--out", out};
    if (std::find(extra.begin(), extra.end(), "--epochs") == extra.end()) {
      extra.push_back("--epochs");
      extra.push_back("2");
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return RunShardgnn(args);
  };
  auto [first, first_output] = train({});
  ASSERT_EQ(first, 0) << first_output;
  ASSERT_OK_AND_ASSIGN(std::string metrics,
                       ReadFileToString(out + "/metrics.jsonl"));
  auto [again, again_output] = train({});
  EXPECT_NE(again, 0);
  EXPECT_THAT(again_output, HasSubstr("already holds a run")) << again_output;
  EXPECT_THAT(again_output, HasSubstr("--resume")) << again_output;
  ASSERT_OK_AND_ASSIGN(std::string after,
                       ReadFileToString(out + "/metrics.jsonl"));
  EXPECT_EQ(after, metrics) << "the refused run wrote to metrics.jsonl";
  // --resume continues it (two more epochs).
  auto [resumed, resumed_output] = train({"--resume", "--epochs", "4"});
  EXPECT_EQ(resumed, 0) << resumed_output;
}

// A damaged checkpoint (one flipped bit) is not resumed from: --resume says
// so and continues from the checkpoint before it, to the result of the run
// never stopped; both damaged is one error line naming both files.
TEST(TrainInProcessTest, ADamagedCheckpointResumesFromTheOneBefore) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  auto train = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"-q",    "train", "--dataset", cora,
                                     "--out", out,     "--seed",    "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunShardgnn(args);
  };
  auto checksum = [](const std::string& run) {
    auto text = ReadFileToString(run + "/summary.json");
    EXPECT_OK(text.status());
    return text.ok() ? nlohmann::json::parse(*text).value("parameters_checksum",
                                                          std::string("none"))
                     : std::string("none");
  };
  auto flip = [](const std::string& path, size_t where) {
    auto bytes = ReadFileToString(path);
    ASSERT_OK(bytes.status());
    std::string damaged = *bytes;
    damaged[where % damaged.size()] ^= 0x04;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
  };
  auto [whole, whole_output] = train(dir.Sub("whole"), {"--epochs", "4"});
  ASSERT_EQ(whole, 0) << whole_output;
  const std::string out = dir.Sub("run");
  auto [first, first_output] = train(out, {"--epochs", "3"});
  ASSERT_EQ(first, 0) << first_output;
  const std::string ckpt = out + "/checkpoints/rank-0.ckpt";
  ASSERT_TRUE(std::filesystem::exists(ckpt + ".prev"));
  flip(ckpt, 4321);
  auto [resumed, resumed_output] = train(out, {"--resume", "--epochs", "4"});
  ASSERT_EQ(resumed, 0) << resumed_output;
  EXPECT_THAT(resumed_output, HasSubstr("rank-0.ckpt is damaged"));
  EXPECT_THAT(resumed_output,
              HasSubstr("resuming from the checkpoint before it"));
  EXPECT_EQ(checksum(out), checksum(dir.Sub("whole")));

  // Both the checkpoint and the one before it damaged: one line, exit 1.
  flip(ckpt, 999);
  flip(ckpt + ".prev", 999);
  auto [failed, failed_output] = train(out, {"--resume", "--epochs", "5"});
  EXPECT_EQ(failed, 1) << failed_output;
  EXPECT_THAT(failed_output, HasSubstr("rank-0.ckpt is damaged"));
  EXPECT_THAT(failed_output, HasSubstr("rank-0.ckpt.prev"));
  EXPECT_THAT(failed_output, Not(HasSubstr("frame #")));
}

// Long epochs and a long final test show progress lines with the steps done,
// the rate and an ETA (here every millisecond; by default every 10 s), and
// --progress-seconds 0 turns them off.
TEST(TrainInProcessTest, LongEpochsAndTheTestShowProgress) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  auto [status, output] = RunShardgnn(
      {"train", "--dataset", cora, "--epochs", "2", "--checkpoint-every", "0",
       "--exact-test", "--progress-seconds", "0.001"});
  ASSERT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("epoch 2/2: "));
  EXPECT_THAT(output, ::testing::ContainsRegex(
                          "epoch 1/2: +[0-9]+% \\([0-9]+/10 steps, .* steps/s, "
                          "ETA [0-9]+s\\)"));
  EXPECT_THAT(output, ::testing::ContainsRegex(
                          "test: +[0-9]+% \\([0-9]+/5416 node rows"));
  auto [quiet_status, quiet] =
      RunShardgnn({"train", "--dataset", cora, "--epochs", "1",
                   "--checkpoint-every", "0", "--progress-seconds", "0"});
  ASSERT_EQ(quiet_status, 0) << quiet;
  EXPECT_THAT(quiet, Not(HasSubstr("steps/s")));
}

// A typed dataset (generated here) trains in one process with R-GCN, the
// model chosen for it, an untyped model is refused, and it trains across 2
// storage servers and 2 trainers with `run`.
TEST(TrainInProcessTest, ATypedDatasetTrainsRgcnInProcess) {
  testing::TempDir dir;
  const std::string typed = dir.Sub("typed");
  auto [made, made_output] =
      RunShardgnn({"-q", "dataset", "generate", "--kind", "hetero-sbm",
                   "--nodes", "4000", "--classes", "4", "--out", typed});
  ASSERT_EQ(made, 0) << made_output;
  auto [info, info_output] = RunShardgnn({"info", typed});
  ASSERT_EQ(info, 0) << info_output;
  EXPECT_THAT(info_output, HasSubstr("typed, 4000 nodes of 4 types"));
  EXPECT_THAT(info_output, HasSubstr("relation author/writes/paper"));
  const std::string out = dir.Sub("run");
  auto [trained, output] = RunShardgnn({"train", "--dataset", typed, "--epochs",
                                        "4", "--out", out, "--num-bases", "3"});
  ASSERT_EQ(trained, 0) << output;
  EXPECT_THAT(output, HasSubstr("model rgcn, 2 layers, hidden 64, 3 bases"));
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(out + "/summary.json"));
  nlohmann::json summary = nlohmann::json::parse(text);
  EXPECT_GT(summary["test_acc"].get<double>(), 0.6) << text;  // Chance 0.25.
  EXPECT_DOUBLE_EQ(summary["test_micro_f1"].get<double>(),
                   summary["test_acc"].get<double>());
  EXPECT_GT(summary["test_macro_f1"].get<double>(), 0.5) << text;
  EXPECT_THAT(output, HasSubstr(", macro-F1 0."));

  auto [sage, sage_output] = RunShardgnn(
      {"train", "--dataset", typed, "--epochs", "1", "--model", "sage"});
  EXPECT_NE(sage, 0);
  EXPECT_THAT(sage_output, HasSubstr("use --model rgcn"));

  // Distributed: `run` partitions it (typed shards), starts 2 storage
  // servers and 2 trainers, which choose R-GCN from the servers' types.
  const std::string dist = dir.Sub("dist");
  auto [ran, ran_output] =
      RunShardgnn({"run", "--dataset", typed, "--epochs", "4", "--out", dist,
                   "--work-dir", dir.Sub("work"), "--progress-seconds", "0"});
  ASSERT_EQ(ran, 0) << ran_output;
  EXPECT_THAT(ran_output,
              HasSubstr("model rgcn, 2 layers, hidden 64, bases: one per "
                        "relation, at most 8"));
  EXPECT_THAT(ran_output, HasSubstr("typed graph (4 node types, 8 relations)"));
  ASSERT_OK_AND_ASSIGN(std::string dist_text,
                       ReadFileToString(dist + "/summary.json"));
  nlohmann::json dist_summary = nlohmann::json::parse(dist_text);
  EXPECT_EQ(dist_summary["world_size"].get<int>(), 2) << dist_text;
  EXPECT_GT(dist_summary["test_acc"].get<double>(), 0.6) << dist_text;
  // Inference of a typed model is refused in one line, nothing written.
  auto [inferred, infer_output] = RunShardgnn(
      {"infer", dist, "--dataset", typed, "--out", dir.Sub("infer")});
  EXPECT_NE(inferred, 0);
  EXPECT_THAT(infer_output, HasSubstr("typed inference is not built yet"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("infer")));
}

// A graph with edge features trains GINE in one process; `run` refuses it
// at once (partitions hold no edge features), before any work.
TEST(TrainInProcessTest, GineTrainsOnEdgeFeaturesInOneProcess) {
  testing::TempDir dir;
  const std::string graph = dir.Sub("edges");
  auto [made, made_output] = RunShardgnn(
      {"-q", "dataset", "generate", "--kind", "sbm", "--nodes", "2000",
       "--classes", "4", "--edge-features", "4", "--out", graph});
  ASSERT_EQ(made, 0) << made_output;
  auto [trained, output] =
      RunShardgnn({"train", "--dataset", graph, "--model", "gine", "--epochs",
                   "2", "--checkpoint-every", "0"});
  ASSERT_EQ(trained, 0) << output;
  EXPECT_THAT(output, HasSubstr("model gine, 2 layers"));
  auto [ran, ran_output] = RunShardgnn({"run", "--dataset", graph, "--model",
                                        "gine", "--work-dir", dir.Sub("work")});
  EXPECT_NE(ran, 0);
  EXPECT_THAT(ran_output, HasSubstr("partitions do not hold yet"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("work/partitions")));
}

// --metrics-listen: the trainer says where its metrics are, and GET /metrics
// answers while it trains, with figures that agree with one another.
TEST(TrainInProcessTest, MetricsListenServesTheTrainersMetrics) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  SubprocessOptions options;
  options.name = "shardgnn train";
  options.argv = {testing::ShardgnnBinary(),
                  "train",
                  "--dataset",
                  cora,
                  "--epochs",
                  "40",
                  "--patience",
                  "0",
                  "--checkpoint-every",
                  "0",
                  "--metrics-listen",
                  "127.0.0.1:0"};
  ASSERT_OK_AND_ASSIGN(auto train, Subprocess::Start(options));
  const std::string prefix = "shardgnn train: metrics on http://127.0.0.1:";
  ASSERT_OK_AND_ASSIGN(std::string line,
                       train->WaitForLine(prefix, std::chrono::seconds(60)));
  ASSERT_THAT(line, ::testing::EndsWith("/metrics"));
  const int port = std::stoi(line.substr(line.find(prefix) + prefix.size()));

  // Scrapes until an epoch has finished (or the run ended).
  std::map<std::string, double> s;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string answer = testing::HttpGet(port);
    if (answer.empty()) break;  // The run is over.
    ASSERT_THAT(answer, ::testing::StartsWith("HTTP/1.1 200 OK"));
    s = testing::ParseSamples(answer);
    if (s["shardgnn_trainer_last_epoch{rank=\"0\"}"] >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(s["shardgnn_trainer_last_epoch{rank=\"0\"}"], 2)
      << "no scrape after the second epoch:\n"
      << train->Tail(20);
  const double steps = s["shardgnn_trainer_steps_total{rank=\"0\"}"];
  // Ten steps an epoch on Cora's 140 train nodes, each on all of them.
  EXPECT_EQ(s["shardgnn_trainer_epoch_steps{rank=\"0\"}"], 10);
  EXPECT_GE(steps, 20);
  EXPECT_EQ(s["shardgnn_trainer_examples_total{rank=\"0\"}"], 140 * steps);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_count{rank=\"0\"}"], steps);
  EXPECT_GT(s["shardgnn_trainer_sampled_edges_total{rank=\"0\"}"], 0);
  EXPECT_NEAR(s["shardgnn_trainer_step_seconds_sum{rank=\"0\"}"],
              s["shardgnn_trainer_wait_seconds_total{rank=\"0\"}"] +
                  s["shardgnn_trainer_compute_seconds_total{rank=\"0\"}"],
              1e-6);
  EXPECT_GT(s["shardgnn_trainer_examples_per_second{rank=\"0\"}"], 0);
  const double loss = s["shardgnn_trainer_loss{rank=\"0\"}"];
  EXPECT_GT(loss, 0);
  EXPECT_LT(loss, 10);
  EXPECT_GT(s["shardgnn_trainer_epoch_validation_accuracy{rank=\"0\"}"], 0);
  EXPECT_GT(s["process_resident_memory_bytes{rank=\"0\"}"], 1 << 20);
  std::optional<int> status = train->Wait(std::chrono::seconds(120));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0) << train->Tail(20);
}

// Flags from a TOML file (--config, a [train] section), the command line
// winning; the run directory keeps the effective configuration, which
// trains the same parameters again; a key that names no flag and a missing
// file are one error line each.
TEST(TrainInProcessTest, ConfigFileGivesFlagsAndTheRunKeepsItsOwn) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  ASSERT_OK(WriteFileAtomic(dir.Sub("t.toml"),
                            "[train]\nepochs = 2\ncheckpoint-every = 0\n"
                            "model = \"gcn\"\nlr = 0.5\n"));
  auto [status, output] =
      RunShardgnn({"train", "--dataset", cora, "--config", dir.Sub("t.toml"),
                   "--out", dir.Sub("a"), "--lr", "0.02"});
  ASSERT_EQ(status, 0) << output;
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(dir.Sub("a/summary.json")));
  nlohmann::json a = nlohmann::json::parse(text);
  EXPECT_EQ(a["model"]["kind"], "gcn");
  EXPECT_EQ(a["epochs_run"], 2);
  EXPECT_EQ(a["model"]["lr"], 0.02);  // The command line wins.
  EXPECT_EQ(a["shardgnn_version"], "0.1.0");
  // The commit the binary was built from: a checkout's (possibly with local
  // changes), "unknown" only outside one.
  const std::string commit = a["git_commit"].get<std::string>();
  if (std::filesystem::exists(testing::SourcePath(".git"))) {
    EXPECT_THAT(commit, ::testing::MatchesRegex("[0-9a-f]{12}(-dirty)?"));
  } else {
    EXPECT_EQ(commit, "unknown");
  }
  EXPECT_THAT(a["started_at"].get<std::string>(),
              ::testing::MatchesRegex("20[0-9][0-9]-.*Z"));
  ASSERT_OK_AND_ASSIGN(std::string config,
                       ReadFileToString(dir.Sub("a/config.toml")));
  EXPECT_THAT(config, HasSubstr("[train]"));
  EXPECT_THAT(config, HasSubstr("\nlr = 0.02\n"));
  EXPECT_THAT(config, Not(HasSubstr("= \"\"")));  // Unset flags left out,
  // and what they resolved to as comments: GCN's defaults.
  EXPECT_THAT(config, HasSubstr("\n# hidden = 256\n"));
  EXPECT_THAT(config, HasSubstr("\n# average-decay = 0.9\n"));
  EXPECT_THAT(config, Not(HasSubstr("# lr =")));  // Given: a flag.
  auto [again_status, again] = RunShardgnn(
      {"train", "--config", dir.Sub("a/config.toml"), "--out", dir.Sub("b")});
  ASSERT_EQ(again_status, 0) << again;
  ASSERT_OK_AND_ASSIGN(text, ReadFileToString(dir.Sub("b/summary.json")));
  EXPECT_EQ(nlohmann::json::parse(text)["parameters_checksum"],
            a["parameters_checksum"]);

  ASSERT_OK(WriteFileAtomic(dir.Sub("bad.toml"), "[train]\nepoch = 2\n"));
  for (const auto& [file, mentions] :
       {std::pair<std::string, std::string>{
            dir.Sub("bad.toml"),
            "--config " + dir.Sub("bad.toml") +
                ":2:1: unknown key 'epoch' in [train]: no such flag; did you "
                "mean 'epochs'?"},
        {dir.Sub("missing.toml"), "missing.toml"}}) {
    auto [bad_status, bad] =
        RunShardgnn({"train", "--dataset", cora, "--config", file});
    EXPECT_EQ(bad_status, 1) << bad;
    std::vector<std::string> lines =
        absl::StrSplit(bad, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 1u) << bad;
    EXPECT_THAT(lines[0],
                AllOf(HasSubstr("shardgnn: error: "), HasSubstr(mentions)));
  }
}

// config.toml holds each flag's value as one TOML value, whatever the value
// holds: a quote and newlines in --out set no other flag when --config reads
// the file back.
TEST(TrainInProcessTest, ConfigTomlKeepsEachValueWhole) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  const std::string out = dir.Sub("x\"\nlr=99.0\n#");
  auto [status, output] =
      RunShardgnn({"-q", "train", "--dataset", cora, "--epochs", "1",
                   "--checkpoint-every", "0", "--out", out});
  ASSERT_EQ(status, 0) << output;
  ASSERT_OK_AND_ASSIGN(std::string config,
                       ReadFileToString(out + "/config.toml"));
  toml::table table;
  try {
    table = toml::parse(config);
  } catch (const toml::parse_error& e) {
    FAIL() << "config.toml is not TOML: " << e << "\n" << config;
  }
  EXPECT_EQ(table["train"]["out"].value<std::string>(), out) << config;
  EXPECT_FALSE(table["train"]["lr"]) << config;

  auto [again_status, again] =
      RunShardgnn({"-q", "train", "--config", out + "/config.toml", "--out",
                   dir.Sub("again")});
  ASSERT_EQ(again_status, 0) << again;
  ASSERT_OK_AND_ASSIGN(std::string first,
                       ReadFileToString(out + "/summary.json"));
  ASSERT_OK_AND_ASSIGN(std::string second,
                       ReadFileToString(dir.Sub("again/summary.json")));
  EXPECT_EQ(nlohmann::json::parse(second)["model"]["lr"],
            nlohmann::json::parse(first)["model"]["lr"]);
}

TEST(TrainInProcessTest, ComputeThreadsShareTheMachine) {
  testing::TempDir dir;
  std::string cora;
  ASSERT_NO_FATAL_FAILURE(ImportCora(dir, &cora));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  struct Case {
    std::string name, local, threads;
    int want;
  };
  for (const Case& c :
       {Case{"local2", "2", "", std::max(1, cores / 2)},
        Case{"local2-threads1", "2", "1", 1}, Case{"localhuge", "64", "", 1}}) {
    SCOPED_TRACE(c.name);
    const std::string out = dir.Sub(c.name);
    std::vector<std::string> args = {"-q",       "train", "--dataset", cora,
                                     "--epochs", "1",     "--out",     out};
    if (!c.threads.empty()) {
      args.push_back("--threads");
      args.push_back(c.threads);
    }
    auto [code, output] = RunShardgnn(args, {{"LOCAL_WORLD_SIZE", c.local}});
    ASSERT_EQ(code, 0) << output;
    // The run's first lines say how its threads were chosen.
    EXPECT_THAT(output,
                HasSubstr(absl::StrCat("shardgnn train: ", c.want,
                                       " compute threads, 1 sampling thread")))
        << output;
    ASSERT_OK_AND_ASSIGN(std::string text,
                         ReadFileToString(out + "/summary.json"));
    nlohmann::json summary = nlohmann::json::parse(text);
    EXPECT_EQ(summary["process"]["torch_threads"].get<int>(), c.want);
    EXPECT_EQ(summary["process"]["blas_threads"].get<int>(), c.want);
    // Sampling threads: chosen from measurement (no --sampler-threads), one
    // to start; a one-epoch run is all warm-up, so no change.
    EXPECT_EQ(summary["process"]["sampler_threads_chosen"], "measured");
    EXPECT_EQ(summary["process"]["sampler_threads"], 1);
    EXPECT_TRUE(summary["process"]["sampler_threads_changes"].empty());
  }
  auto [code, output] = RunShardgnn({"-q", "train", "--dataset", cora,
                                     "--epochs", "1", "--out", dir.Sub("bad")},
                                    {{"LOCAL_WORLD_SIZE", "two"}});
  EXPECT_NE(code, 0);
  EXPECT_THAT(output, HasSubstr("LOCAL_WORLD_SIZE 'two'")) << output;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("bad") + "/summary.json"));
}

}  // namespace
}  // namespace shardgnn
