// End-to-end tests of `shardgnn dataset import|generate` (cli/dataset_cmd.cc),
// running the real binary as a child process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
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
using ::testing::Not;
using ::testing::StartsWith;

CommandResult Shardgnn(const testing::TempDir& tmp, const std::string& args) {
  return testing::RunShellCommand(tmp, testing::ShardgnnBinary() + " " + args);
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
  EXPECT_THAT(run.out, HasSubstr("nodes with no neighbors to aggregate from: 0 "
                                 "(train 0, valid 0, test 0)"));
  EXPECT_THAT(run.out, Not(HasSubstr("warning")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest m, ReadDatasetManifest(tmp.Sub("cora")));
  EXPECT_EQ(m.name, "cora");
}

// --edge-split makes a link prediction dataset in one step: Cora's 5278
// undirected edges dealt 85/5/10 (263 valid, 527 test), those removed from
// the graph, negatives drawn; nothing is left beside the output; a bad split
// is one line and no output.
TEST(DatasetCmdTest, ImportsWithAnEdgeSplit) {
  testing::TempDir tmp;
  const std::string input = testing::SourcePath("datasets/cora/ogb-planetoid");
  CommandResult run = Shardgnn(
      tmp, "dataset import --format ogb --undirected --input " + input +
               " --edge-split 0.85,0.05,0.10 --seed 2 --out " + tmp.Sub("lp"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr("4488 train / 263 valid / 527 test of 5278 edges"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp.Sub("lp")));
  EXPECT_EQ(d.num_edges(), 2 * 4488);
  EXPECT_EQ(d.edge_splits.at("test_neg").size(), 2u * 527);
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
    entries.push_back(e.path().filename().string());
  EXPECT_THAT(entries,
              Not(::testing::Contains(HasSubstr("before-edge-split"))));
  run = Shardgnn(tmp, "dataset import --format ogb --undirected --input " +
                          input + " --edge-split 0.9,0.2,0.1 --out " +
                          tmp.Sub("bad"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("edge split '0.9,0.2,0.1'"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("bad")));
}

// Cora's edge.csv lists each undirected edge once: without --undirected only
// one direction is kept and 123 of the 140 train nodes aggregate from nothing.
// The import still succeeds, but says so and how to fix it.
TEST(DatasetCmdTest, OneDirectionalOgbImportWarns) {
  testing::TempDir tmp;
  CommandResult run =
      Shardgnn(tmp, "-q dataset import --format ogb --input " +
                        testing::SourcePath("datasets/cora/ogb-planetoid") +
                        " --out " + tmp.Sub("cora"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("nodes 2708, edges 5278 (directed)"));
  EXPECT_THAT(run.out,
              HasSubstr("nodes with no neighbors to aggregate from: 679 "
                        "(train 123, valid "));
  EXPECT_THAT(run.out, HasSubstr("edges with their reverse stored: 0 of 5278"));
  EXPECT_THAT(run.out, HasSubstr("\n  warning: "));
  EXPECT_THAT(run.out, HasSubstr("only 0 of 5278 edges (0.0%) have their "
                                 "reverse edge stored"));
  EXPECT_THAT(run.out, HasSubstr("123 of 140 train nodes have no neighbor to "
                                 "aggregate from"));
  EXPECT_THAT(run.out, HasSubstr("import with --undirected"));
}

// A tiny OGB raw layout with one split folder per name in `splits`.
void WriteTinyOgb(const std::string& dir,
                  const std::vector<std::string>& splits) {
  testing::WriteText(dir + "/raw/num-node-list.csv", "4\n");
  testing::WriteText(dir + "/raw/num-edge-list.csv", "3\n");
  testing::WriteText(dir + "/raw/edge.csv", "0,1\n1,2\n2,3\n");
  testing::WriteText(dir + "/raw/node-feat.csv", "1,0\n0,1\n1,1\n0,0\n");
  testing::WriteText(dir + "/raw/node-label.csv", "0\n1\n0\n1\n");
  for (const std::string& name : splits) {
    testing::WriteText(dir + "/split/" + name + "/train.csv", "0\n1\n");
    testing::WriteText(dir + "/split/" + name + "/valid.csv", "2\n");
    testing::WriteText(dir + "/split/" + name + "/test.csv", "3\n");
  }
}

TEST(DatasetCmdTest, SeveralOgbSplitsNameTheSplitNameFlag) {
  testing::TempDir tmp;
  WriteTinyOgb(tmp.Sub("in"), {"a", "b"});
  CommandResult run =
      Shardgnn(tmp, "-q dataset import --format ogb --input " + tmp.Sub("in") +
                        " --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("shardgnn: error: "));
  EXPECT_THAT(run.err, HasSubstr("holds 2 split directories (a, b)"));
  EXPECT_THAT(run.err, HasSubstr("--split-name"));
  EXPECT_THAT(run.err, Not(HasSubstr("--split)")));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));

  run = Shardgnn(tmp, "-q dataset import --format ogb --split-name b --input " +
                          tmp.Sub("in") + " --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("splits: train 2 valid 1 test 1"));
}

struct ForeignFlag {
  std::string name;      // Test name suffix.
  std::string format;    // --format
  std::string args;      // Everything else but --out.
  std::string mentions;  // The error line must contain this.
};

void PrintTo(const ForeignFlag& c, std::ostream* os) { *os << c.name; }

class DatasetImportForeignFlagTest
    : public ::testing::TestWithParam<ForeignFlag> {};

// A flag that the chosen --format does not read is refused in one line naming
// it, before any work, instead of being silently ignored.
TEST_P(DatasetImportForeignFlagTest, RefusedInOneLine) {
  const ForeignFlag& c = GetParam();
  testing::TempDir tmp;
  WriteTinyOgb(tmp.Sub("ogb"), {"s"});
  testing::WriteText(tmp.Sub("linqs/g.content"), "p1 1 0 A\np2 0 1 B\n");
  testing::WriteText(tmp.Sub("linqs/g.cites"), "p1 p2\n");
  std::string args = c.args;
  for (const char* dir : {"OGB", "LINQS"}) {
    const std::string key = std::string("{") + dir + "}";
    const std::string value =
        tmp.Sub(std::string(dir) == "OGB" ? "ogb" : "linqs");
    for (size_t at; (at = args.find(key)) != std::string::npos;) {
      args.replace(at, key.size(), value);
    }
  }
  CommandResult run =
      Shardgnn(tmp, "-q dataset import --format " + c.format + " " + args +
                        " --out " + tmp.Sub("out"));
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_THAT(run.err, StartsWith("shardgnn: error: "));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr(c.mentions)) << run.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));
}

INSTANTIATE_TEST_SUITE_P(
    Flags, DatasetImportForeignFlagTest,
    ::testing::Values(
        ForeignFlag{"OgbSplit", "ogb", "--input {OGB} --split 0.5,0.25,0.25",
                    "--format ogb does not take --split (edgelist only)"},
        ForeignFlag{"LinqsMemoryLimit", "linqs",
                    "--input {LINQS} --memory-limit 1G",
                    "--format linqs does not take --memory-limit (ogb, "
                    "edgelist only)"},
        ForeignFlag{"OgbSplitHint", "ogb", "--input {OGB} --split 0.5,0.2,0.3",
                    "choose one with --split-name"},
        ForeignFlag{"OgbSeed", "ogb", "--input {OGB} --seed 3",
                    "--seed only seeds --edge-split"},
        ForeignFlag{"OgbDirected", "ogb", "--input {OGB} --directed",
                    "--directed (linqs only)"},
        ForeignFlag{"OgbLinqsFlags", "ogb",
                    "--input {OGB} --train-per-class 5 --valid 1 --test 1 "
                    "--skip-unknown-ids --content x --cites y",
                    "--content (linqs only), --cites (linqs only), "
                    "--skip-unknown-ids (linqs only), --train-per-class "
                    "(linqs only), --valid (linqs only), --test (linqs only)"},
        ForeignFlag{"OgbEdgeListFlags", "ogb",
                    "--input {OGB} --edges e --features f --labels l "
                    "--split-file train=t",
                    "--edges (edgelist only), --features (edgelist only), "
                    "--labels (edgelist only), --split-file (edgelist only)"},
        ForeignFlag{"LinqsUndirected", "linqs", "--input {LINQS} --undirected",
                    "--undirected (ogb, edgelist only)"},
        ForeignFlag{"LinqsSplitName", "linqs", "--input {LINQS} --split-name s",
                    "--split-name (ogb, ogb-hetero only)"},
        ForeignFlag{"LinqsSplit", "linqs", "--input {LINQS} --split 0.5,0.5,0",
                    "--split (edgelist only)"},
        ForeignFlag{"LinqsInputBesideFiles", "linqs",
                    "--input {LINQS} --content {LINQS}/g.content --cites "
                    "{LINQS}/g.cites",
                    "--input is not read when --content and --cites are given"},
        ForeignFlag{"EdgeListInput", "edgelist",
                    "--input {OGB} --edges e --features f --labels l",
                    "--input (ogb, linqs, ogb-hetero, hgb only)"},
        ForeignFlag{"EdgeListSplitName", "edgelist",
                    "--edges e --features f --labels l --split-name s",
                    "--split-name (ogb, ogb-hetero only)"},
        ForeignFlag{"EdgeListLinqsFlags", "edgelist",
                    "--edges e --features f --labels l --directed --valid 3",
                    "--directed (linqs only), --valid (linqs only)"},
        ForeignFlag{"OgbAddReverse", "ogb", "--input {OGB} --add-reverse",
                    "--add-reverse (ogb-hetero, hgb only)"},
        ForeignFlag{"HgbUndirected", "hgb", "--input {OGB} --undirected",
                    "--undirected (ogb, edgelist only)"},
        ForeignFlag{"OgbHeteroValidFraction", "ogb-hetero",
                    "--input {OGB} --valid-fraction 0.3",
                    "--valid-fraction (hgb only)"},
        ForeignFlag{"HgbEdgeSplit", "hgb",
                    "--input {OGB} --edge-split 0.8,0.1,0.1",
                    "--edge-split splits untyped graphs only"},
        ForeignFlag{"EdgeListSplitFileAndFractions", "edgelist",
                    "--edges e --features f --labels l --split-file train=t "
                    "--split 0.5,0.5,0",
                    "--split and --seed make a random split, which "
                    "--split-file replaces"},
        ForeignFlag{"EdgeListSplitFileAndSeed", "edgelist",
                    "--edges e --features f --labels l --split-file train=t "
                    "--seed 4",
                    "--split and --seed make a random split, which "
                    "--split-file replaces"}),
    [](const ::testing::TestParamInfo<ForeignFlag>& info) {
      return info.param.name;
    });

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
      {"amazon-computers", "nodes 13752, edges 491722",
       "features 767 (float32), classes 10",
       "splits: train 200 valid 300 test 13252"},
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

// `--format hgb` through the command line: HGB's files in, a typed dataset
// out, its types and relations in the summary (reverse relations added).
TEST(DatasetCmdTest, ImportsHgbAsATypedDataset) {
  testing::TempDir tmp;
  testing::WriteText(tmp.Sub("hgb/node.dat"),
                     "0\tann\t0\t1,0\n1\tbob\t0\t0,1\n2\tp1\t1\n"
                     "3\tp2\t1\n4\tp3\t1\n");
  testing::WriteText(tmp.Sub("hgb/link.dat"),
                     "0\t2\t0\t1.0\n0\t3\t0\t1.0\n1\t4\t0\t1.0\n"
                     "2\t3\t1\t1.0\n");
  testing::WriteText(tmp.Sub("hgb/label.dat"), "0\tann\t0\t1\n");
  testing::WriteText(tmp.Sub("hgb/label.dat.test"), "1\tbob\t0\t0\n");
  CommandResult run =
      Shardgnn(tmp,
               "dataset import --format hgb --add-reverse "
               "--valid-fraction 0 --input " +
                   tmp.Sub("hgb") + " --out " + tmp.Sub("typed"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("node types:\n    0 2, 2 features\n    1 3, "
                                 "no features"));
  EXPECT_THAT(run.out, HasSubstr("0/0/1 3"));
  EXPECT_THAT(run.out, HasSubstr("1/rev_0/0 3"));
  EXPECT_THAT(run.out, HasSubstr("splits: train 1 test 1"));
  ASSERT_OK_AND_ASSIGN(DatasetManifest m,
                       ReadDatasetManifest(tmp.Sub("typed")));
  EXPECT_TRUE(m.typed());
  EXPECT_EQ(m.target_types, std::vector<std::string>{"0"});
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

// The global -q/--quiet where users put it: before or after the subcommand.
TEST(DatasetCmdTest, QuietIsTakenBeforeOrAfterTheSubcommand) {
  testing::TempDir tmp;
  for (const std::string& args :
       {std::string("-q dataset generate"), std::string("dataset generate -q"),
        std::string("dataset generate --nodes 500 --quiet")}) {
    std::filesystem::remove_all(tmp.Sub("g"));
    CommandResult run = Shardgnn(
        tmp,
        args + " --kind sbm --avg-degree 4 --features 4 --classes 2 " +
            (args.find("--nodes") == std::string::npos ? "--nodes 500 " : "") +
            "--out " + tmp.Sub("g"));
    ASSERT_EQ(run.exit_code, 0) << args << ": " << run.err;
    EXPECT_THAT(run.err, Not(HasSubstr("generating"))) << args;
    EXPECT_THAT(run.out, HasSubstr("nodes 500")) << args;
  }
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

// --memory-limit builds the same dataset out of core (byte for byte) and says
// so; a malformed limit, or one with --edge-split (which splits in memory), is
// one error line before any work.
TEST(DatasetCmdTest, MemoryLimitImportsTheSameDatasetOutOfCore) {
  testing::TempDir tmp;
  ASSERT_EQ(Shardgnn(tmp,
                     "-q dataset generate --nodes 50 --avg-degree 4 "
                     "--features 3 --classes 2 --out " +
                         tmp.Sub("gen"))
                .exit_code,
            0);
  std::string edges;
  for (int i = 0; i < 200; ++i) {
    edges +=
        std::to_string(i * 7 % 50) + " " + std::to_string(i * 13 % 47) + "\n";
  }
  testing::WriteText(tmp.Sub("in/g.txt"), edges);
  const std::string inputs = "-q dataset import --format edgelist --edges " +
                             tmp.Sub("in/g.txt") + " --features " +
                             tmp.Sub("gen/features.npy") + " --labels " +
                             tmp.Sub("gen/labels.npy") + " --undirected";
  CommandResult mem = Shardgnn(tmp, inputs + " --out " + tmp.Sub("mem"));
  ASSERT_EQ(mem.exit_code, 0) << mem.err;
  CommandResult ext =
      Shardgnn(tmp, inputs + " --memory-limit 1GiB --out " + tmp.Sub("ext"));
  ASSERT_EQ(ext.exit_code, 0) << ext.err;
  EXPECT_THAT(ext.out, HasSubstr("CSR built out of core under --memory-limit "
                                 "1.0 GiB"));
  int compared = 0;
  for (const std::string& name : testing::Entries(tmp.Sub("mem"))) {
    EXPECT_EQ(ReadFileToString(tmp.Sub("mem/" + name)).value_or("mem"),
              ReadFileToString(tmp.Sub("ext/" + name)).value_or("ext"))
        << name;
    ++compared;
  }
  EXPECT_GE(compared, 8);  // Arrays, splits, manifest.
  for (const char* flags : {" --memory-limit 12Q", " --memory-limit 0",
                            " --memory-limit 1G --edge-split 0.8,0.1,0.1"}) {
    CommandResult bad =
        Shardgnn(tmp, inputs + flags + " --out " + tmp.Sub("bad"));
    EXPECT_EQ(bad.exit_code, 1) << flags;
    EXPECT_THAT(bad.err, StartsWith("shardgnn: error: --memory-limit"))
        << flags;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.Sub("bad")));
  }
}

// NaN features are refused in one line naming the file, node and column;
// --allow-nonfinite keeps them and the summary says how many.
TEST(DatasetCmdTest, NonFiniteFeaturesNeedAllowNonfinite) {
  testing::TempDir tmp;
  testing::WriteText(tmp.Sub("in/g.txt"), "0 1\n1 2\n");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_OK(WriteNpy<float>(tmp.Sub("in/x.npy"), {3, 2}, {0, 1, 2, nan, 4, 5}));
  ASSERT_OK(WriteNpy<int64_t>(tmp.Sub("in/y.npy"), {3}, {0, 1, 0}));
  const std::string args = "-q dataset import --format edgelist --edges " +
                           tmp.Sub("in/g.txt") + " --features " +
                           tmp.Sub("in/x.npy") + " --labels " +
                           tmp.Sub("in/y.npy") + " --out " + tmp.Sub("out");
  CommandResult run = Shardgnn(tmp, args);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("x.npy: node 1, column 2: nan is not finite"));
  EXPECT_THAT(run.err, HasSubstr("--allow-nonfinite"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("out")));
  run = Shardgnn(tmp, args + " --allow-nonfinite");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr("warning: 1 feature value is NaN or infinite"));
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
