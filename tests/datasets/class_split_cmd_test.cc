// End-to-end tests of `shardgnn dataset import ... --split random:N,M
// --split-seed S` (cli/dataset_cmd.cc, datasets/class_split.h), running the
// real binary as a child process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/npy.h"
#include "datasets/dataset.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/shell_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::CommandResult;

using ::testing::HasSubstr;
using ::testing::StartsWith;

CommandResult Shardgnn(const testing::TempDir& tmp, const std::string& args) {
  return testing::RunShellCommand(tmp,
                                  testing::ShardgnnBinary() + " -q " + args);
}

std::string CoraMlImport(const testing::TempDir& tmp, const std::string& out,
                         int seed) {
  return "dataset import --format ogb --input " +
         testing::SourcePath("datasets/cora-ml") +
         " --undirected --split random:20,30 --split-seed " +
         std::to_string(seed) + " --out " + tmp.Sub(out);
}

std::map<int64_t, int64_t> PerClass(const std::vector<NodeId>& nodes,
                                    const std::vector<int64_t>& labels) {
  std::map<int64_t, int64_t> counts;
  for (NodeId v : nodes) ++counts[labels[v]];
  return counts;
}

// The bundled Cora-ML (7 classes, every node labeled), split as Shchur et al.
// do: 20 train and 30 valid per class, the other labeled nodes test; the same
// seed gives byte-identical split files, another seed other ones.
TEST(ClassSplitCmdTest, CoraMlTwentyThirtyPerClass) {
  testing::TempDir tmp;
  CommandResult run = Shardgnn(tmp, CoraMlImport(tmp, "a", 4));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("splits: train 140 valid 210 test 2460"));
  EXPECT_THAT(run.out,
              HasSubstr("split random:20,30 seed 4: 20 train and 30 valid "
                        "nodes per class (7 classes), the other 2460 labeled "
                        "nodes test"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp.Sub("a")));
  EXPECT_EQ(d.manifest.num_classes, 7);
  std::map<int64_t, int64_t> train = PerClass(d.splits["train"], d.labels);
  std::map<int64_t, int64_t> valid = PerClass(d.splits["valid"], d.labels);
  ASSERT_EQ(train.size(), 7u);
  ASSERT_EQ(valid.size(), 7u);
  for (int64_t c = 0; c < 7; ++c) {
    EXPECT_EQ(train[c], 20) << c;
    EXPECT_EQ(valid[c], 30) << c;
  }
  int64_t labeled = 0;
  for (int64_t label : d.labels) labeled += label >= 0;
  EXPECT_EQ(d.splits["test"].size(), static_cast<size_t>(labeled - 140 - 210));
  std::vector<NodeId> all;
  for (const char* name : {"train", "valid", "test"}) {
    all.insert(all.end(), d.splits[name].begin(), d.splits[name].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_THAT(d.manifest.source, HasSubstr("(split random:20,30 seed 4)"));

  run = Shardgnn(tmp, CoraMlImport(tmp, "b", 4));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = Shardgnn(tmp, CoraMlImport(tmp, "c", 5));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* name : {"train", "valid", "test"}) {
    const std::string file = SplitFileName(name);
    ASSERT_OK_AND_ASSIGN(std::string a, ReadFileToString(tmp.Sub("a/" + file)));
    ASSERT_OK_AND_ASSIGN(std::string b, ReadFileToString(tmp.Sub("b/" + file)));
    ASSERT_OK_AND_ASSIGN(std::string c, ReadFileToString(tmp.Sub("c/" + file)));
    EXPECT_EQ(a, b) << name;
    EXPECT_NE(a, c) << name;
  }
}

// A small edge list: 3 nodes of class 0, 1 of class 1, 2 unlabeled.
void WriteEdgeList(const testing::TempDir& tmp,
                   const std::vector<int64_t>& labels) {
  testing::WriteText(tmp.Sub("in/g.txt"), "0 1\n1 2\n2 3\n3 4\n4 5\n");
  ASSERT_OK(WriteNpy<float>(tmp.Sub("in/x.npy"), {6, 1}, {0, 1, 2, 3, 4, 5}));
  ASSERT_OK(WriteNpy<int64_t>(tmp.Sub("in/y.npy"), {6}, labels));
}

std::string EdgeListArgs(const testing::TempDir& tmp) {
  return "dataset import --format edgelist --edges " + tmp.Sub("in/g.txt") +
         " --features " + tmp.Sub("in/x.npy") + " --labels " +
         tmp.Sub("in/y.npy");
}

// The edge list takes both forms of --split; a class smaller than N + M is
// warned about in one line naming it and its count.
TEST(ClassSplitCmdTest, EdgeListTakesRandomAndFractions) {
  testing::TempDir tmp;
  WriteEdgeList(tmp, {0, -1, 0, 1, -1, 0});
  CommandResult run = Shardgnn(tmp, EdgeListArgs(tmp) +
                                        " --split random:1,1 --split-seed 2 "
                                        "--out " +
                                        tmp.Sub("r"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("splits: train 2 valid 1 test 1"));
  EXPECT_THAT(run.out,
              HasSubstr("warning: 1 class has fewer than 2 (1 + 1) labeled "
                        "nodes: class 1 (1 node); each got up to 1 train"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp.Sub("r")));
  for (const auto& [name, nodes] : d.splits) {
    for (NodeId v : nodes) EXPECT_GE(d.labels[v], 0) << name << " " << v;
  }
  run = Shardgnn(tmp, EdgeListArgs(tmp) +
                          " --split 0.5,0.25,0.25 --seed 1 "
                          "--out " +
                          tmp.Sub("f"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("splits: train 2 valid 1 test 1"));
}

// LINQS and HGB read it too (the importers' own tests check the splits).
TEST(ClassSplitCmdTest, LinqsTakesIt) {
  testing::TempDir tmp;
  testing::WriteText(tmp.Sub("in/t.content"),
                     "p1 1 0 a\np2 0 1 a\np3 1 1 b\np4 0 0 b\n");
  testing::WriteText(tmp.Sub("in/t.cites"), "p1 p2\np2 p3\np3 p4\n");
  CommandResult run =
      Shardgnn(tmp, "dataset import --format linqs --input " + tmp.Sub("in") +
                        " --split random:1,0 --out " + tmp.Sub("out"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("splits: train 2 valid 0 test 2"));
}

struct BadSplit {
  std::string name;      // Test name suffix.
  std::string args;      // After the edge list's flags, before --out.
  std::string mentions;  // The error line must contain this.
  std::vector<int64_t> labels = {0, -1, 0, 1, -1, 0};
};

void PrintTo(const BadSplit& c, std::ostream* os) { *os << c.name; }

class ClassSplitFlagErrorTest : public ::testing::TestWithParam<BadSplit> {};

// Every bad --split random:N,M, and every flag it conflicts with, is one
// error line and no output.
TEST_P(ClassSplitFlagErrorTest, OneLineAndNoOutput) {
  const BadSplit& c = GetParam();
  testing::TempDir tmp;
  WriteEdgeList(tmp, c.labels);
  CommandResult run = Shardgnn(
      tmp, EdgeListArgs(tmp) + " " + c.args + " --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_THAT(run.err, StartsWith("shardgnn: error: "));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr(c.mentions)) << run.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));
}

INSTANTIATE_TEST_SUITE_P(
    Flags, ClassSplitFlagErrorTest,
    ::testing::Values(
        BadSplit{"MissingM", "--split random:20",
                 "--split 'random:20': M is missing (expected random:N,M"},
        BadSplit{"NegativeN", "--split random:-1,3",
                 "--split 'random:-1,3': N must be at least 1"},
        BadSplit{"ZeroN", "--split random:0,3", "N must be at least 1"},
        BadSplit{"NotNumbers", "--split random:a,b",
                 "--split 'random:a,b': 'a' is not an integer"},
        BadSplit{"NoLabels",
                 "--split random:1,1",
                 "y.npy: no node is labeled: a per-class split needs labels",
                 {-1, -1, -1, -1, -1, -1}},
        BadSplit{"SeedWithoutRandom", "--split-seed 3",
                 "--split-seed seeds --split random:N,M only"},
        BadSplit{"SeedInstead", "--split random:1,1 --seed 3",
                 "--split random:N,M is seeded by --split-seed"},
        BadSplit{"SplitFile", "--split random:1,1 --split-file train=t.npy",
                 "--split-file replaces"}));

// Flags of other formats: the folder's split, the Planetoid-style split and
// HGB's validation fraction are replaced by --split random:N,M, so giving
// both is refused.
TEST(ClassSplitCmdTest, RefusesFlagsItReplaces) {
  testing::TempDir tmp;
  struct Case {
    std::string args;
    std::string mentions;
  };
  const std::string cora_ml = testing::SourcePath("datasets/cora-ml");
  const std::string cora_linqs = testing::SourcePath("datasets/cora/linqs");
  for (const Case& c : std::vector<Case>{
           {"--format ogb --input " + cora_ml +
                " --split random:20,30 --split-name random",
            "--format ogb: --split random:N,M replaces the split that "
            "--split-name would shape"},
           {"--format linqs --input " + cora_linqs +
                " --split random:20,30 --train-per-class 5 --valid 10",
            "--train-per-class, --valid would shape"},
           {"--format hgb --input " + tmp.Sub("none") +
                " --split random:1,0 --valid-fraction 0.5",
            "--valid-fraction would shape"},
           {"--format ogb --input " + cora_ml + " --split 0.1,0.1,0.8",
            "its --split takes random:N,M only"},
       }) {
    CommandResult run =
        Shardgnn(tmp, "dataset import " + c.args + " --out " + tmp.Sub("out"));
    EXPECT_EQ(run.exit_code, 1) << c.args;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_THAT(run.err, HasSubstr(c.mentions)) << c.args;
    EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));
  }
}

}  // namespace
}  // namespace shardgnn
