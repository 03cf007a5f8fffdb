// Link prediction end to end as a user runs it (real child processes): a
// dataset imported with an edge split, `train --task link` in one process and
// `run --task link` with 2 storage servers and 2 trainers, summary.json and
// metrics.jsonl with the task's figures, `infer --score-pairs` scoring pairs
// from the trained model, a given OGB link split imported and trained on,
// and one clear error line for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/types/span.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "nlohmann/json.hpp"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/link_metrics.h"

namespace shardgnn {
namespace {

using testing::Finished;
using ::testing::HasSubstr;
using testing::LastErrorLine;
using ::testing::Not;
using testing::RunShardgnn;
using testing::TempDir;

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(std::ifstream(path), nullptr, false);
}

class LinkTest : public ::testing::Test {
 protected:
  // Cora with a GAE edge split (85/5/10, seed 1), once for the suite.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    dataset_ = dir_->Sub("cora-links");
    Finished imported = RunShardgnn(
        {"-q", "dataset", "import", "--format", "ogb", "--undirected",
         "--input", testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
         dataset_, "--edge-split", "0.85,0.05,0.10", "--seed", "1"});
    ASSERT_EQ(imported.exit_status, 0) << imported.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static TempDir* dir_;
  static std::string dataset_;
};
TempDir* LinkTest::dir_ = nullptr;
std::string LinkTest::dataset_;

TEST_F(LinkTest, TrainsInProcessAndScoresPairsWithInfer) {
  const std::string run = dir_->Sub("in-process");
  Finished trained =
      RunShardgnn({"train", "--dataset", dataset_, "--task", "link",
                   "--decoder", "mlp", "--epochs", "4", "--out", run});
  ASSERT_EQ(trained.exit_status, 0) << trained.output;
  EXPECT_THAT(trained.output, HasSubstr("val auc"));
  const nlohmann::json summary = ReadJson(run + "/summary.json");
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["task"], "link");
  EXPECT_GT(summary["test_auc"].get<double>(), 0.8);
  EXPECT_GT(summary["test_ap"].get<double>(), 0.75);
  for (const char* key :
       {"test_mrr", "test_hits@20", "test_hits@100", "best_valid_auc"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_FALSE(summary.contains("test_acc"));
  std::ifstream metrics(run + "/metrics.jsonl");
  std::string line;
  int epochs = 0;
  while (std::getline(metrics, line)) {
    const nlohmann::json e = nlohmann::json::parse(line);
    EXPECT_TRUE(e.contains("valid_auc") && e.contains("train_auc")) << line;
    ++epochs;
  }
  EXPECT_EQ(epochs, 4);
  const nlohmann::json model = ReadJson(run + "/model.json");
  EXPECT_EQ(model["task"], "link");
  EXPECT_EQ(model["decoder"], "mlp");

  // Score the test positives and negatives, exactly, from the model.
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> pos,
                       ReadNpy<int64_t>(dataset_ + "/edges_test.npy", 2));
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> neg,
                       ReadNpy<int64_t>(dataset_ + "/edges_test_neg.npy", 2));
  std::vector<int64_t> pairs = pos.data;
  pairs.insert(pairs.end(), neg.data.begin(), neg.data.end());
  const std::string pairs_file = dir_->Sub("pairs.npy");
  ASSERT_OK(
      WriteNpy(pairs_file, {static_cast<int64_t>(pairs.size() / 2), 2}, pairs));
  const std::string out = dir_->Sub("scores");
  Finished inferred = RunShardgnn({"infer", run, "--dataset", dataset_, "--out",
                                   out, "--score-pairs", pairs_file});
  ASSERT_EQ(inferred.exit_status, 0) << inferred.output;
  ASSERT_OK_AND_ASSIGN(NpyArray<float> scores,
                       ReadNpy<float>(out + "/scores.npy", 1));
  ASSERT_EQ(scores.data.size(), pairs.size() / 2);
  const size_t p = pos.data.size() / 2;
  const double auc = RocAuc(absl::MakeConstSpan(scores.data).subspan(0, p),
                            absl::MakeConstSpan(scores.data).subspan(p));
  // Exact scores rank the test pairs as well as the run's sampled test.
  EXPECT_NEAR(auc, summary["test_auc"].get<double>(), 0.03);
  ASSERT_OK_AND_ASSIGN(NpyArray<float> embeddings,
                       ReadNpy<float>(out + "/embeddings.npy", 2));
  EXPECT_EQ(embeddings.shape[0], 2708);
  EXPECT_FALSE(std::filesystem::exists(out + "/predictions.npy"));

  // Pairs naming a node outside the graph: one clear line, no scores.
  const std::string bad_pairs = dir_->Sub("bad-pairs.npy");
  ASSERT_OK(WriteNpy(bad_pairs, {2, 2}, std::vector<int64_t>{0, 1, 5, 99999}));
  const std::string bad_out = dir_->Sub("bad-scores");
  Finished bad = RunShardgnn({"infer", run, "--dataset", dataset_, "--out",
                              bad_out, "--score-pairs", bad_pairs});
  EXPECT_NE(bad.exit_status, 0);
  EXPECT_THAT(LastErrorLine(bad.output),
              HasSubstr("pairs to score: pair 1 names node 99999"));
  EXPECT_FALSE(std::filesystem::exists(bad_out + "/scores.npy"));
}

TEST_F(LinkTest, RunsWithTwoServersAndTwoTrainers) {
  const std::string work = dir_->Sub("work");
  Finished run =
      RunShardgnn({"run", "--dataset", dataset_, "--task", "link", "--epochs",
                   "3", "--work-dir", work, "--out", dir_->Sub("distributed")});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  const nlohmann::json summary =
      ReadJson(dir_->Sub("distributed") + "/summary.json");
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["task"], "link");
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_GT(summary["test_auc"].get<double>(), 0.8);
}

// `run --task link` on raw input (the bundled Cora when no --dataset) splits
// the edges itself at import, as `dataset import --edge-split` would (GAE's
// 85/5/10, seeded by --seed); the import is its own in the work dir, so a node
// classification run there still gets the whole graph.
TEST_F(LinkTest, RunSplitsTheEdgesOfRawInputItself) {
  const std::string work = dir_->Sub("work-raw");
  Finished run = RunShardgnn({"run", "--task", "link", "--epochs", "2",
                              "--work-dir", work, "--out", dir_->Sub("raw")});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("splitting its edges for --task link"));
  const nlohmann::json summary = ReadJson(dir_->Sub("raw") + "/summary.json");
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["task"], "link");
  EXPECT_GT(summary["test_auc"].get<double>(), 0.8);
  // The split is the one `dataset import --edge-split 0.85,0.05,0.10 --seed
  // 0` makes.
  const std::string imported = dir_->Sub("cora-links-seed0");
  Finished made = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", imported,
       "--edge-split", "0.85,0.05,0.10", "--seed", "0"});
  ASSERT_EQ(made.exit_status, 0) << made.output;
  std::vector<std::string> split_datasets;
  for (const auto& entry :
       std::filesystem::directory_iterator(work + "/datasets")) {
    if (std::filesystem::exists(entry.path() / "edges_test.npy"))
      split_datasets.push_back(entry.path().string());
  }
  ASSERT_EQ(split_datasets.size(), 1u);
  for (const char* name : {"edges_train.npy", "edges_test.npy",
                           "edges_test_neg.npy", "indices.npy"}) {
    ASSERT_OK_AND_ASSIGN(std::string ours,
                         ReadFileToString(JoinPath(split_datasets[0], name)));
    ASSERT_OK_AND_ASSIGN(std::string theirs,
                         ReadFileToString(JoinPath(imported, name)));
    EXPECT_TRUE(ours == theirs) << name;
  }
  // A node classification run in the same work dir imports the whole graph.
  Finished node = RunShardgnn({"-q", "run", "--epochs", "1", "--work-dir", work,
                               "--out", dir_->Sub("raw-node")});
  ASSERT_EQ(node.exit_status, 0) << node.output;
  EXPECT_TRUE(
      ReadJson(dir_->Sub("raw-node") + "/summary.json").contains("test_acc"));
}

// A given link split in OGB's layout (as ogbl-* datasets come: raw/edge.csv
// holds the train graph, split/<name>/ the pairs, no node labels), made from
// the suite's GAE split: imported as given (negatives kept, --seed allowed for
// the ones not given) and trained on without node labels.
TEST_F(LinkTest, ImportsAGivenOgbLinkSplitAndTrainsOnIt) {
  const std::string ogbl = dir_->Sub("ogbl-cora");
  std::filesystem::create_directories(ogbl + "/raw");
  std::filesystem::create_directories(ogbl + "/split/given");
  std::map<std::string, NpyArray<int64_t>> pairs;
  auto write_pairs = [&](const std::string& path, const std::string& name) {
    ASSERT_OK_AND_ASSIGN(
        pairs[name], ReadNpy<int64_t>(dataset_ + "/edges_" + name + ".npy", 2));
    std::ofstream out(path);
    const std::vector<int64_t>& flat = pairs[name].data;
    for (size_t i = 0; i < flat.size(); i += 2) {
      out << flat[i] << "," << flat[i + 1] << "\n";
    }
  };
  write_pairs(ogbl + "/raw/edge.csv", "train");
  for (const char* name : {"train", "valid", "test", "test_neg"}) {
    write_pairs(ogbl + "/split/given/" + name + ".csv", name);
  }
  std::ofstream(ogbl + "/raw/num-edge-list.csv")
      << pairs["train"].shape[0] << "\n";
  const std::string cora = testing::SourcePath("datasets/cora/ogb-planetoid");
  for (const char* file : {"num-node-list.csv.gz", "node-feat.csv.gz"}) {
    std::filesystem::copy_file(cora + "/raw/" + file, ogbl + "/raw/" + file);
  }
  const std::string imported = dir_->Sub("ogbl-imported");
  // --edge-split would split a split.
  Finished twice = RunShardgnn({"dataset", "import", "--format", "ogb",
                                "--undirected", "--input", ogbl, "--out",
                                imported, "--edge-split", "0.8,0.1,0.1"});
  EXPECT_NE(twice.exit_status, 0);
  EXPECT_THAT(LastErrorLine(twice.output), HasSubstr("drop --edge-split"));
  EXPECT_FALSE(std::filesystem::exists(imported));
  Finished import =
      RunShardgnn({"dataset", "import", "--format", "ogb", "--undirected",
                   "--input", ogbl, "--out", imported, "--seed", "4"});
  ASSERT_EQ(import.exit_status, 0) << import.output;
  EXPECT_THAT(import.output,
              HasSubstr("edge splits (pairs): train " +
                        std::to_string(pairs["train"].shape[0])));
  for (const char* name : {"train", "valid", "test", "test_neg"}) {
    ASSERT_OK_AND_ASSIGN(
        NpyArray<int64_t> got,
        ReadNpy<int64_t>(imported + "/edges_" + name + ".npy", 2));
    EXPECT_EQ(got.data, pairs[name].data) << name;
  }
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> drawn,
                       ReadNpy<int64_t>(imported + "/edges_valid_neg.npy", 2));
  EXPECT_EQ(drawn.shape[0], pairs["valid"].shape[0]);

  const std::string run = dir_->Sub("ogbl-run");
  Finished trained = RunShardgnn({"train", "--dataset", imported, "--task",
                                  "link", "--epochs", "4", "--out", run});
  ASSERT_EQ(trained.exit_status, 0) << trained.output;
  const nlohmann::json summary = ReadJson(run + "/summary.json");
  ASSERT_TRUE(summary.is_object());
  EXPECT_GT(summary["test_auc"].get<double>(), 0.8);
}

TEST_F(LinkTest, BadInputGetsOneClearLine) {
  // A dataset without an edge split.
  const std::string plain = dir_->Sub("cora-plain");
  Finished imported = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", plain});
  ASSERT_EQ(imported.exit_status, 0) << imported.output;
  Finished no_split = RunShardgnn(
      {"train", "--dataset", plain, "--task", "link", "--epochs", "1"});
  EXPECT_NE(no_split.exit_status, 0);
  EXPECT_THAT(LastErrorLine(no_split.output), HasSubstr("no edge split"));
  // `run --task link` over a dataset directory or partition without an edge
  // split: refused before any server starts.
  Finished run_no_split =
      RunShardgnn({"run", "--dataset", plain, "--task", "link", "--work-dir",
                   dir_->Sub("work-plain")});
  EXPECT_NE(run_no_split.exit_status, 0);
  EXPECT_THAT(LastErrorLine(run_no_split.output),
              HasSubstr("has no edge split"));
  EXPECT_THAT(run_no_split.output, Not(HasSubstr("ready on")));
  // --edge-split is for link runs over raw input.
  Finished node_split = RunShardgnn(
      {"run", "--edge-split", "0.8,0.1,0.1", "--work-dir", dir_->Sub("w2")});
  EXPECT_NE(node_split.exit_status, 0);
  EXPECT_THAT(LastErrorLine(node_split.output),
              HasSubstr("--edge-split is for --task link"));
  Finished dir_split =
      RunShardgnn({"run", "--dataset", plain, "--task", "link", "--edge-split",
                   "0.8,0.1,0.1", "--work-dir", dir_->Sub("w3")});
  EXPECT_NE(dir_split.exit_status, 0);
  EXPECT_THAT(LastErrorLine(dir_split.output),
              HasSubstr("is a dataset directory already"));
  // An edge split that leaves no train edges.
  Finished empty = RunShardgnn(
      {"dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
       dir_->Sub("no-train"), "--edge-split", "0,0.5,0.5"});
  EXPECT_NE(empty.exit_status, 0);
  EXPECT_THAT(LastErrorLine(empty.output), HasSubstr("train"));
  EXPECT_FALSE(std::filesystem::exists(dir_->Sub("no-train")));
  // Unknown task, decoder and negative sampling.
  for (const auto& [flag, value, want] :
       {std::tuple{"--task", "edges", "unknown task 'edges'"},
        std::tuple{"--decoder", "cosine", "unknown link decoder 'cosine'"},
        std::tuple{"--negative-sampling", "popular",
                   "unknown negative sampling 'popular'"}}) {
    std::vector<std::string> args = {"train", "--dataset", dataset_, flag,
                                     value,   "--epochs",  "1"};
    if (std::string(flag) != "--task") {
      args.push_back("--task");
      args.push_back("link");
    }
    Finished f = RunShardgnn(args);
    EXPECT_NE(f.exit_status, 0);
    EXPECT_THAT(LastErrorLine(f.output), HasSubstr(want));
  }
}

}  // namespace
}  // namespace shardgnn
