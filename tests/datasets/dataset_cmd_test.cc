// End-to-end tests of `shardgnn dataset import|generate` (cli/dataset_cmd.cc),
// running the real binary as a child process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/file_util.h"
#include "datasets/dataset.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult Shardgnn(const testing::TempDir& tmp, const std::string& args) {
  std::string command = testing::ShardgnnBinary() + " " + args + " >" +
                        tmp.Sub("stdout.txt") + " 2>" + tmp.Sub("stderr.txt");
  int status = std::system(command.c_str());
  CommandResult run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFileToString(tmp.Sub("stdout.txt")).value_or("");
  run.err = ReadFileToString(tmp.Sub("stderr.txt")).value_or("");
  return run;
}

TEST(DatasetCmdTest, ImportsBundledCoraOgbLayout) {
  testing::TempDir tmp;
  CommandResult run = Shardgnn(
      tmp, "dataset import --format ogb --undirected --name cora --input " +
               testing::SourcePath("datasets/cora/ogb-planetoid") + " --out " +
               tmp.Sub("cora"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("nodes 2708, edges 10556"));
  EXPECT_THAT(run.out, HasSubstr("features 1433"));
  EXPECT_THAT(run.out, HasSubstr("splits: train 140 valid 500 test 1000"));
  ASSERT_OK_AND_ASSIGN(DatasetManifest m, ReadDatasetManifest(tmp.Sub("cora")));
  EXPECT_EQ(m.name, "cora");
}

// The real graphs bundled beside Cora (datasets/README.md), each in the OGB
// raw layout with one seeded random split that the import picks by itself.
struct BundledGraph {
  std::string dir;  // Under datasets/.
  std::string counts;
  std::string features;
  std::string splits;
};

TEST(DatasetCmdTest, ImportsEveryBundledOgbGraph) {
  const BundledGraph graphs[] = {
      {"cora-ml", "nodes 2810, edges 15962",
       "features 2879 (float32), classes 7",
       "splits: train 140 valid 210 test 2460"},
      {"facebook-page-page", "nodes 22470, edges 341646",
       "features 128 (float32), classes 4",
       "splits: train 80 valid 120 test 22270"},
      {"twitch-en", "nodes 7126, edges 70648",
       "features 128 (float32), classes 2",
       "splits: train 3563 valid 1781 test 1782"},
  };
  for (const BundledGraph& g : graphs) {
    SCOPED_TRACE(g.dir);
    testing::TempDir tmp;
    CommandResult run =
        Shardgnn(tmp, "-q dataset import --format ogb --undirected --input " +
                          testing::SourcePath("datasets/" + g.dir) + " --out " +
                          tmp.Sub("d"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr(g.counts));
    EXPECT_THAT(run.out, HasSubstr(g.features));
    EXPECT_THAT(run.out, HasSubstr(g.splits));
    EXPECT_THAT(run.out, HasSubstr("duplicates 0, self-loops 0"));
    ASSERT_OK_AND_ASSIGN(DatasetManifest m, ReadDatasetManifest(tmp.Sub("d")));
    EXPECT_EQ(m.name, g.dir);
    EXPECT_THAT(m.source, HasSubstr("(split random)"));
  }
}

TEST(DatasetCmdTest, ImportsLinqsDirectory) {
  testing::TempDir tmp;
  CommandResult run =
      Shardgnn(tmp, "-q dataset import --format linqs --input " +
                        testing::SourcePath("datasets/cora/linqs") +
                        " --seed 3 --out " + tmp.Sub("c"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("nodes 2708, edges 10556"));
  EXPECT_THAT(run.out, HasSubstr("duplicates 151"));
  EXPECT_EQ(run.err, "");  // -q: no progress lines.
}

TEST(DatasetCmdTest, GeneratesAndSummarizes) {
  testing::TempDir tmp;
  CommandResult run =
      Shardgnn(tmp,
               "dataset generate --kind rmat --nodes 2000 --avg-degree 8 "
               "--features 4 --classes 3 --split 0.5,0.25,0.25 --seed 9 "
               "--out " +
                   tmp.Sub("g"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("nodes 2000"));
  EXPECT_THAT(run.out, HasSubstr("splits: train 1000 valid 500 test 500"));
  EXPECT_THAT(run.err, HasSubstr("generating edges"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp.Sub("g")));
  EXPECT_EQ(d.feature_dim(), 4);
}

TEST(DatasetCmdTest, BadInputIsOneErrorLineAndNoOutput) {
  testing::TempDir tmp;
  testing::WriteText(tmp.Sub("in/g.txt"), "0 1\n1 x\n");
  ASSERT_EQ(Shardgnn(tmp,
                     "-q dataset generate --nodes 3 --avg-degree 1 --features "
                     "2 --classes 1 --out " +
                         tmp.Sub("gen"))
                .exit_code,
            0);
  // features: a float32 [3, 2] file written by the generator above.
  std::string features = tmp.Sub("gen/features.npy");
  std::string labels = tmp.Sub("gen/labels.npy");
  CommandResult run =
      Shardgnn(tmp, "-q dataset import --format edgelist --edges " +
                        tmp.Sub("in/g.txt") + " --features " + features +
                        " --labels " + labels + " --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("shardgnn: error: "));
  EXPECT_THAT(run.err, HasSubstr("g.txt:2: \"x\" is not an integer"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));
  for (const std::string& name : testing::Entries(tmp.path())) {
    EXPECT_THAT(name, ::testing::Not(HasSubstr("partial"))) << name;
  }
}

TEST(DatasetCmdTest, ExistingOutputIsRefused) {
  testing::TempDir tmp;
  std::filesystem::create_directory(tmp.Sub("out"));
  CommandResult run =
      Shardgnn(tmp, "-q dataset generate --nodes 100 --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("output already exists"));
}

}  // namespace
}  // namespace shardgnn
