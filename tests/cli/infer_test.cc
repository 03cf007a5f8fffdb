// `shardgnn infer` (cli/infer_cmd.cc) as real child processes, as a user runs
// it: a run trained by `shardgnn run` against storage servers, then inference
// by two trainers against the same servers and in one process over the
// dataset: both write the same outputs in original node ID order, the run's
// exact test accuracy (--exact-test) is theirs, and stock PyTorch reproduces
// them from model.json + model.pt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::LastErrorLine;
using ::testing::Not;
using testing::ReadyAddress;
using testing::RunShardgnn;
using testing::StartShardgnn;
using testing::TempDir;

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(std::ifstream(path), nullptr, false);
}

float MaxDifference(const std::string& a, const std::string& b) {
  absl::StatusOr<NpyArray<float>> x = ReadNpy<float>(a, 2);
  absl::StatusOr<NpyArray<float>> y = ReadNpy<float>(b, 2);
  EXPECT_OK(x);
  EXPECT_OK(y);
  if (!x.ok() || !y.ok() || x->shape != y->shape) return 1e9f;
  float gap = 0;
  for (size_t i = 0; i < x->data.size(); ++i)
    gap = std::max(gap, std::abs(x->data[i] - y->data[i]));
  return gap;
}

// Whether Debian's python3-torch is there (examples/predict_with_torch.py).
bool HavePythonTorch() {
  return std::system(
             "/usr/bin/python3 -c 'import torch, numpy' "
             ">/dev/null 2>&1") == 0;
}

class InferTest : public ::testing::Test {
 protected:
  // Cora imported and partitioned (METIS, 2 parts), two servers started on
  // it, and a 2-trainer run trained against them (`run --servers`): once for
  // the suite.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    dataset_ = dir_->Sub("cora");
    partition_ = dir_->Sub("cora-2");
    run_ = dir_->Sub("run");
    servers_ = new std::vector<std::unique_ptr<Subprocess>>();
    Finished imported = RunShardgnn(
        {"-q", "dataset", "import", "--format", "ogb", "--undirected",
         "--input", testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
         dataset_});
    ASSERT_EQ(imported.exit_status, 0) << imported.output;
    Finished parted = RunShardgnn({"-q", "partition", "--dataset", dataset_,
                                   "--parts", "2", "--out", partition_});
    ASSERT_EQ(parted.exit_status, 0) << parted.output;
    std::vector<std::string> addresses;
    for (int p = 0; p < 2; ++p) {
      servers_->push_back(StartShardgnn(
          {"serve", "--partition", partition_, "--part", std::to_string(p),
           "--listen", "127.0.0.1:0", "--memory"},
          absl::StrCat("server ", p)));
      ASSERT_NE(servers_->back(), nullptr);
    }
    for (auto& s : *servers_) {
      ASSERT_OK_AND_ASSIGN(std::string line,
                           s->WaitForLine("ready on ", kRunTimeout));
      addresses.push_back(ReadyAddress(line));
    }
    servers_list_ = absl::StrJoin(addresses, ",");
    Finished run =
        RunShardgnn({"run", "--work-dir", dir_->Sub("work"), "--out", run_,
                     "--epochs", "30", "--timeout", "30", "--servers",
                     servers_list_, "--partition", partition_, "--exact-test"});
    ASSERT_EQ(run.exit_status, 0) << run.output;
  }
  static void TearDownTestSuite() {
    for (auto& s : *servers_) {
      if (s) {
        EXPECT_EQ(s->Terminate(std::chrono::seconds(10)), 0) << s->Tail(5);
      }
    }
    delete servers_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(servers_->size(), 2u);
    ASSERT_TRUE(std::filesystem::exists(run_ + "/summary.json"));
  }

  // `infer` by `world` trainers against the servers, writing to `out`.
  void InferDistributed(int world, const std::string& out,
                        std::vector<std::string> extra = {}) {
    std::vector<std::unique_ptr<Subprocess>> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> args = {
          "infer",         run_,
          "--out",         out,
          "--servers",     servers_list_,
          "--partition",   partition_,
          "--world-size",  std::to_string(world),
          "--rank",        std::to_string(r),
          "--store-file",  dir_->Sub("store-" + std::to_string(world)),
          "--timeout",     "60",
          "--chunk-nodes", "500"};
      args.insert(args.end(), extra.begin(), extra.end());
      ranks.push_back(StartShardgnn(args, absl::StrCat("infer rank ", r)));
      ASSERT_NE(ranks.back(), nullptr);
    }
    for (auto& r : ranks) {
      std::optional<int> status = r->Wait(kRunTimeout);
      ASSERT_TRUE(status.has_value()) << r->name() << " still running";
      EXPECT_EQ(*status, 0) << r->Tail(4000);
    }
  }

  static TempDir* dir_;
  static std::string dataset_, partition_, run_, servers_list_;
  static std::vector<std::unique_ptr<Subprocess>>* servers_;
};

TempDir* InferTest::dir_ = nullptr;
std::string InferTest::dataset_, InferTest::partition_, InferTest::run_,
    InferTest::servers_list_;
std::vector<std::unique_ptr<Subprocess>>* InferTest::servers_ = nullptr;

TEST_F(InferTest, TwoTrainersAgainstServersMatchOneProcessAndPyTorch) {
  ASSERT_TRUE(std::filesystem::exists(run_ + "/model.json"));
  ASSERT_TRUE(std::filesystem::exists(run_ + "/model.pt"));
  const std::string distributed = dir_->Sub("out-2");
  InferDistributed(2, distributed);
  const std::string local = dir_->Sub("out-1");
  Finished one =
      RunShardgnn({"infer", run_, "--dataset", dataset_, "--out", local});
  ASSERT_EQ(one.exit_status, 0) << one.output;
  EXPECT_THAT(one.output, AllOf(HasSubstr("infer: layer 2/2  100%"),
                                HasSubstr("nodes/s"), HasSubstr("ETA")));
  // The partition relabels nodes: equal rows mean original ID order.
  for (const char* file : {"logits.npy", "embeddings.npy"}) {
    EXPECT_LT(MaxDifference(distributed + "/" + file, local + "/" + file), 1e-4)
        << file;
  }
  const nlohmann::json a = ReadJson(distributed + "/infer.json");
  const nlohmann::json b = ReadJson(local + "/infer.json");
  EXPECT_EQ(a["world_size"], 2);
  EXPECT_EQ(a["mode"], "distributed");
  EXPECT_NEAR(a["test_acc"].get<double>(), b["test_acc"].get<double>(),
              0.0015);  // One node of 1000 may tie differently.
  // The run measured its test accuracy exactly too (--exact-test, by its two
  // trainers): the same figure from the same parameters.
  const nlohmann::json summary = ReadJson(run_ + "/summary.json");
  EXPECT_EQ(summary["test_method"], "exact");
  EXPECT_NEAR(a["test_acc"].get<double>(), summary["test_acc"].get<double>(),
              0.0015)
      << a << summary;
  EXPECT_GT(a["test_acc"].get<double>(), 0.7);
  EXPECT_EQ(std::filesystem::directory_iterator(distributed) ==
                std::filesystem::directory_iterator(),
            false);
  for (const auto& entry : std::filesystem::directory_iterator(distributed)) {
    EXPECT_THAT(entry.path().filename().string(),
                Not(HasSubstr("scratch")));  // Removed afterwards.
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp")));
  }
  if (!HavePythonTorch()) {
    GTEST_SKIP() << "python3-torch is not installed: the PyTorch check of "
                    "examples/predict_with_torch.py did not run";
  }
  SubprocessOptions python;
  python.name = "predict_with_torch.py";
  python.argv = {"/usr/bin/python3",
                 testing::SourcePath("examples/predict_with_torch.py"),
                 run_,
                 dataset_,
                 "--check",
                 distributed};
  ASSERT_OK_AND_ASSIGN(auto child, Subprocess::Start(python));
  std::optional<int> status = child->Wait(std::chrono::seconds(120));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0) << child->Tail(2000);
  EXPECT_THAT(child->Tail(2000), HasSubstr("predictions equal"));
}

// A graph with another label set than the model's (as wide features, more
// classes): inference runs, and says its accuracies compare other labels.
TEST_F(InferTest, LabelsBeyondTheModelsClassesAreSaid) {
  const std::string other = dir_->Sub("ten-classes");
  Finished made =
      RunShardgnn({"-q", "dataset", "generate", "--nodes", "600", "--features",
                   "1433", "--classes", "10", "--out", other});
  ASSERT_EQ(made.exit_status, 0) << made.output;
  const std::string out = dir_->Sub("ten-classes-out");
  Finished f = RunShardgnn({"infer", run_, "--dataset", other, "--out", out});
  ASSERT_EQ(f.exit_status, 0) << f.output;
  EXPECT_THAT(f.output, HasSubstr("beyond the model's 7 classes"));
  std::ifstream in(out + "/infer.json");
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(summary.is_object());
  EXPECT_GT(summary.value("test_labels_beyond_classes", 0), 0);
  // Cora's own labels are the model's: no warning.
  Finished own = RunShardgnn(
      {"infer", run_, "--dataset", dataset_, "--out", dir_->Sub("own")});
  ASSERT_EQ(own.exit_status, 0) << own.output;
  EXPECT_THAT(own.output, Not(HasSubstr("beyond the model's")));
}

TEST_F(InferTest, BadRequestsGetOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
    bool before_start = false;  // Refused before the model is read.
  };
  const std::string a_file = dir_->Sub("a-file");
  ASSERT_OK(WriteFileAtomic(a_file, "x"));
  const std::vector<Case> cases = {
      {{"infer", dataset_, "--dataset", dataset_, "--out", dir_->Sub("x")},
       "model.json"},
      {{"infer", run_, "--servers", servers_list_, "--out", dir_->Sub("x")},
       "--partition"},
      {{"infer", run_, "--dataset", dataset_, "--out", dir_->Sub("x"),
        "--layer", "3"},
       "embedding layer 3"},
      {{"infer", run_, "--dataset", dataset_, "--servers", servers_list_,
        "--out", dir_->Sub("x")},
       "cannot be combined"},
      {{"infer", run_, "--dataset", dataset_, "--out", dir_->Sub("x"),
        "--threads", "-2"},
       "--threads must be 0 or more",
       true},
      {{"infer", run_, "--dataset", dataset_, "--out", dir_->Sub("x"),
        "--chunk-nodes", "0"},
       "--chunk-nodes must be positive",
       true},
      {{"infer", run_, "--dataset", dataset_, "--out", a_file},
       "is not a directory",
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrJoin(c.args, " "));
    Finished f = RunShardgnn(c.args);
    EXPECT_EQ(f.exit_status, 1) << f.output;
    EXPECT_THAT(LastErrorLine(f.output), HasSubstr(c.mentions)) << f.output;
    if (c.before_start) {
      EXPECT_THAT(f.output, Not(HasSubstr("shardgnn infer:"))) << f.output;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir_->Sub("x/logits.npy")));
}

}  // namespace
}  // namespace shardgnn
