// Tests for ImportOgb (datasets/ogb_importer.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/summary.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::WriteGzip;
using testing::WriteText;

class OgbImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    in_ = tmp_.Sub("in");
    // 5 nodes, edges 0-1, 1-2, 2-3, 3-4, a duplicate 1-0 and a self-loop.
    WriteGzip(in_ + "/raw/num-node-list.csv.gz", "5\n");
    WriteGzip(in_ + "/raw/num-edge-list.csv.gz", "6\n");
    WriteGzip(in_ + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n1,0\n2,2\n");
    WriteGzip(in_ + "/raw/node-feat.csv.gz", "0.5,1\n1,2\n2,3\n3,4\n4,-5.25\n");
    WriteText(in_ + "/raw/node-label.csv", "0\n1\n0\nnan\n2\n");
    WriteGzip(in_ + "/split/s/train.csv.gz", "1\n0\n");
    WriteGzip(in_ + "/split/s/valid.csv.gz", "2\n");
    WriteGzip(in_ + "/split/s/test.csv.gz", "4\n");
  }

  OgbImportOptions Options(bool undirected = true) {
    OgbImportOptions options;
    options.input_dir = in_;
    options.edges.undirected = undirected;
    return options;
  }

  // Runs an import expected to fail; checks the message and that nothing
  // was left beside the output.
  void ExpectFailure(const std::string& message_part) {
    absl::StatusOr<BuildSummary> s = ImportOgb(Options(), tmp_.Sub("out"));
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message_part));
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  testing::TempDir tmp_;
  std::string in_;
};

// --split random:N,M replaces split/, which may be absent; the unlabeled node
// 3 is in no split. Labels 0, 1, 0, -1, 2: class 0 gives one node to train
// and one to valid, classes 1 and 2 their one node to train.
TEST_F(OgbImporterTest, RandomPerClassSplitWithoutSplitFolder) {
  std::filesystem::remove_all(in_ + "/split");
  OgbImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 1, 9};
  ASSERT_OK_AND_ASSIGN(bool edges, OgbSplitHoldsEdges(options));
  EXPECT_FALSE(edges);
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  ASSERT_EQ(d.splits["train"].size(), 3u);
  ASSERT_EQ(d.splits["valid"].size(), 1u);
  EXPECT_EQ(d.labels[d.splits["valid"][0]], 0);
  EXPECT_THAT(d.splits["test"], IsEmpty());
  for (const auto& [name, nodes] : d.splits) {
    for (NodeId v : nodes) EXPECT_NE(v, 3) << name;
  }
  EXPECT_THAT(d.manifest.source, HasSubstr("(split random:1,1 seed 9)"));
  EXPECT_THAT(s.warnings, ::testing::Contains(
                              HasSubstr("class 1 (1 node), class 2 (1 node)")));
}

TEST_F(OgbImporterTest, RandomPerClassSplitNeedsLabels) {
  std::filesystem::remove(in_ + "/raw/node-label.csv");
  OgbImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 1, 0};
  EXPECT_THAT(ImportOgb(options, tmp_.Sub("out")),
              testing::StatusIs(absl::StatusCode::kNotFound,
                                HasSubstr("needs node labels")));
  WriteText(in_ + "/raw/node-label.csv", "nan\nnan\nnan\nnan\nnan\n");
  EXPECT_THAT(ImportOgb(options, tmp_.Sub("out")),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("no node is labeled")));
  EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
}

TEST_F(OgbImporterTest, ImportsTinyUndirected) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.duplicate_edges_dropped, 1);
  EXPECT_EQ(s.self_loops_dropped, 1);
  EXPECT_EQ(s.input_edges, 6);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 1, 3, 5, 7, 8}));
  EXPECT_EQ(d.indices, (std::vector<NodeId>{1, 0, 2, 1, 3, 2, 4, 3}));
  EXPECT_EQ(d.feature_dim(), 2);
  EXPECT_FLOAT_EQ(d.features[9], -5.25f);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{0, 1, 0, -1, 2}));
  EXPECT_EQ(d.manifest.num_classes, 3);
  EXPECT_FALSE(d.manifest.directed);
  EXPECT_EQ(d.manifest.name, "in");
  EXPECT_EQ(d.splits["train"], (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(d.splits["test"], (std::vector<NodeId>{4}));
}

// raw/edge-feat.csv rows follow their edges into the CSR: both entries of an
// undirected edge carry its row, a duplicate keeps the first edge's row, a
// dropped self-loop's row goes with it.
TEST_F(OgbImporterTest, EdgeFeaturesFollowTheirEdges) {
  // Edge i's features: (i, 10 i).
  WriteGzip(in_ + "/raw/edge-feat.csv.gz",
            "0,0\n1,10\n2,20\n3,30\n4,40\n5,50\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(Options(), tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.manifest.edge_feature_dim, 2);
  ASSERT_EQ(d.edge_features.size(), 1u);
  // CSR (as ImportsTinyUndirected): row 0 {1}, row 1 {0, 2}, row 2 {1, 3},
  // row 3 {2, 4}, row 4 {3}; edges 0-1 (edge 0; its duplicate 1,0 is edge 4),
  // 1-2 (1), 2-3 (2), 3-4 (3).
  const std::vector<int> edge_of_entry = {0, 0, 1, 1, 2, 2, 3, 3};
  ASSERT_EQ(d.edge_features[0].size(), 2 * edge_of_entry.size());
  for (size_t e = 0; e < edge_of_entry.size(); ++e) {
    EXPECT_EQ(d.edge_features[0][2 * e], edge_of_entry[e]) << "entry " << e;
    EXPECT_EQ(d.edge_features[0][2 * e + 1], 10 * edge_of_entry[e]);
  }
  EXPECT_THAT(absl::StrJoin(s.notes, "\n"), HasSubstr("edge features: 2"));
  // A row short: one clear error, nothing left behind.
  std::filesystem::remove_all(tmp_.Sub("out"));
  WriteGzip(in_ + "/raw/edge-feat.csv.gz", "0,0\n1,10\n2,20\n3,30\n4,40\n");
  ExpectFailure("has 5 feature rows but the graph has 6 edges");
}

TEST_F(OgbImporterTest, DirectedKeepsOrientationAndSelfLoopOnRequest) {
  OgbImportOptions options = Options(/*undirected=*/false);
  options.edges.keep_self_loops = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(options, tmp_.Sub("out")));
  EXPECT_EQ(s.self_loops_dropped, 0);
  EXPECT_EQ(s.duplicate_edges_dropped, 0);  // 1,0 is not 0,1 when directed.
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  // Row v lists the sources of edges into v.
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(d.indices, (std::vector<NodeId>{1, 0, 1, 2, 2, 3}));
  EXPECT_TRUE(d.manifest.directed);
}

// Undirected: every stored edge has its reverse, nothing to warn about.
TEST_F(OgbImporterTest, CountsNodesWithoutNeighbors) {
  // Node 4 keeps no edge.
  WriteGzip(in_ + "/raw/num-edge-list.csv.gz", "3\n");
  WriteGzip(in_ + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.nodes_without_neighbors, 1);
  EXPECT_EQ(s.split_nodes_without_neighbors,
            (std::map<std::string, int64_t>{
                {"test", 1}, {"train", 0}, {"valid", 0}}));
  EXPECT_EQ(s.non_loop_edges, 6);
  EXPECT_EQ(s.reciprocated_edges, 6);
  EXPECT_THAT(s.warnings, IsEmpty());
  EXPECT_THAT(FormatSummary(s),
              HasSubstr("nodes with no neighbors to aggregate from: 1 "
                        "(train 0, valid 0, test 1)"));
}

// Without --undirected, an input that lists each undirected edge once keeps
// one direction: the summary says how many edges have their reverse and warns.
TEST_F(OgbImporterTest, WarnsWhenFewEdgesHaveTheirReverse) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(Options(/*undirected=*/false),
                                                 tmp_.Sub("out")));
  // Stored: 0->1 and 1->0 (a pair), 1->2, 2->3, 3->4.
  EXPECT_EQ(s.non_loop_edges, 5);
  EXPECT_EQ(s.reciprocated_edges, 2);
  EXPECT_EQ(s.nodes_without_neighbors, 0);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("only 2 of 5 edges (40.0%) have their "
                                       "reverse edge stored"));
  EXPECT_THAT(s.warnings[0], HasSubstr("--undirected"));
  EXPECT_THAT(FormatSummary(s), HasSubstr("\n  warning: "));
}

TEST_F(OgbImporterTest, WarnsWhenTrainNodesHaveNoNeighbors) {
  // Every edge comes with its reverse, but the train nodes 0 and 1 have none.
  WriteGzip(in_ + "/raw/num-edge-list.csv.gz", "4\n");
  WriteGzip(in_ + "/raw/edge.csv.gz", "2,3\n3,2\n3,4\n4,3\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(Options(/*undirected=*/false),
                                                 tmp_.Sub("out")));
  EXPECT_EQ(s.reciprocated_edges, 4);
  EXPECT_EQ(s.nodes_without_neighbors, 2);
  EXPECT_EQ(s.split_nodes_without_neighbors.at("train"), 2);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0],
              HasSubstr("2 of 2 train nodes have no neighbor to aggregate "
                        "from"));
}

TEST_F(OgbImporterTest, BundledCoraWithPublicSplit) {
  OgbImportOptions options;
  options.input_dir = testing::SourcePath("datasets/cora/ogb-planetoid");
  options.edges.undirected = true;
  options.name = "cora";
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(options, tmp_.Sub("cora")));
  EXPECT_EQ(s.manifest.num_nodes, 2708);
  EXPECT_EQ(s.manifest.num_edges, 10556);
  EXPECT_EQ(s.manifest.feature_dim, 1433);
  EXPECT_EQ(s.manifest.num_classes, 7);
  EXPECT_EQ(s.manifest.splits.at("train"), 140);
  EXPECT_EQ(s.manifest.splits.at("valid"), 500);
  EXPECT_EQ(s.manifest.splits.at("test"), 1000);
  EXPECT_EQ(s.duplicate_edges_dropped, 0);
  EXPECT_EQ(s.self_loops_dropped, 0);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("cora")));
  EXPECT_EQ(d.num_edges(), 10556);
}

TEST_F(OgbImporterTest, MissingFile) {
  std::filesystem::remove(in_ + "/raw/edge.csv.gz");
  ExpectFailure("raw/edge.csv.gz: file not found");
}

TEST_F(OgbImporterTest, TruncatedGzip) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "1.25,2.5\n";
  WriteGzip(in_ + "/raw/node-feat.csv.gz", text);
  testing::Truncate(in_ + "/raw/node-feat.csv.gz", 20);
  ExpectFailure("node-feat.csv.gz");
}

TEST_F(OgbImporterTest, WrongColumnCount) {
  WriteGzip(in_ + "/raw/edge.csv.gz", "0,1\n1,2,7\n2,3\n3,4\n1,0\n2,2\n");
  ExpectFailure("edge.csv.gz:2: expected 2 columns");
}

TEST_F(OgbImporterTest, WrongFeatureColumnCount) {
  WriteGzip(in_ + "/raw/node-feat.csv.gz", "0,1\n1,2\n2\n3,4\n4,5\n");
  ExpectFailure("node-feat.csv.gz:3: expected 2 feature columns");
}

TEST_F(OgbImporterTest, NonNumericField) {
  WriteGzip(in_ + "/raw/node-feat.csv.gz", "0,1\n1,2\n2,x3\n3,4\n4,5\n");
  ExpectFailure("node-feat.csv.gz:3: column 2: \"x3\" is not a number");
}

// NaN and infinite features train to a NaN loss: refused, naming the file,
// the line, the node and the column, unless allowed (then counted and kept).
TEST_F(OgbImporterTest, NonFiniteFeatureIsRefusedUnlessAllowed) {
  WriteGzip(in_ + "/raw/node-feat.csv.gz", "0,1\n1,2\n2,nan\n3,4\n-inf,5\n");
  ExpectFailure("node-feat.csv.gz:3: node 2, column 2: nan is not finite");
  OgbImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 2);
  EXPECT_THAT(s.warnings, ::testing::Contains(HasSubstr("2 feature values")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_TRUE(std::isnan(d.features[5]));
  EXPECT_TRUE(std::isinf(d.features[8]));
}

TEST_F(OgbImporterTest, NonNumericEdge) {
  WriteGzip(in_ + "/raw/edge.csv.gz", "0,1\n1,b\n2,3\n3,4\n1,0\n2,2\n");
  ExpectFailure("edge.csv.gz:2: \"b\" is not an integer");
}

TEST_F(OgbImporterTest, IdOutOfRange) {
  WriteGzip(in_ + "/raw/edge.csv.gz", "0,1\n1,2\n2,5\n3,4\n1,0\n2,2\n");
  ExpectFailure("edge.csv.gz:3: node ID 5 is outside [0, 5)");
}

TEST_F(OgbImporterTest, SplitIdOutOfRange) {
  WriteGzip(in_ + "/split/s/test.csv.gz", "4\n9\n");
  ExpectFailure("test.csv.gz:2: node index 9 is outside [0, 5)");
}

TEST_F(OgbImporterTest, LabelCountMismatch) {
  WriteText(in_ + "/raw/node-label.csv", "0\n1\n0\n");
  ExpectFailure("node-label.csv: has 3 labels but the graph has 5 nodes");
}

TEST_F(OgbImporterTest, FeatureCountMismatch) {
  WriteGzip(in_ + "/raw/node-feat.csv.gz", "0,1\n1,2\n");
  ExpectFailure("node-feat.csv.gz: has 2 feature rows but the graph has 5");
}

TEST_F(OgbImporterTest, EdgeCountMismatch) {
  WriteGzip(in_ + "/raw/num-edge-list.csv.gz", "7\n");
  ExpectFailure("edge.csv.gz: has 6 edges but");
}

TEST_F(OgbImporterTest, EmptyGraph) {
  WriteGzip(in_ + "/raw/num-node-list.csv.gz", "0\n");
  ExpectFailure("num-node-list.csv.gz: the graph has no nodes");
}

TEST_F(OgbImporterTest, NoEdges) {
  WriteGzip(in_ + "/raw/num-edge-list.csv.gz", "0\n");
  WriteGzip(in_ + "/raw/edge.csv.gz", "");
  ExpectFailure("edge.csv.gz: the graph has no edges");
}

TEST_F(OgbImporterTest, OutputExists) {
  std::filesystem::create_directory(tmp_.Sub("out"));
  absl::StatusOr<BuildSummary> s = ImportOgb(Options(), tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("out"));
  EXPECT_THAT(testing::Entries(tmp_.Sub("out")), IsEmpty());
}

TEST_F(OgbImporterTest, AmbiguousSplit) {
  WriteGzip(in_ + "/split/other/train.csv.gz", "1\n");
  // Names the folders and the flag that chooses one (`--split` is the
  // edge-list importer's fractions).
  ExpectFailure("holds 2 split directories (other, s)");
  ExpectFailure("name one with --split-name");
  OgbImportOptions options = Options();
  options.split = "s";
  EXPECT_OK(ImportOgb(options, tmp_.Sub("out")));
}

// An ogbl-style split: pairs, no node labels; valid and test positives leave
// the graph, the given negatives are kept and the missing ones drawn.
TEST_F(OgbImporterTest, LinkPredictionSplit) {
  std::filesystem::remove(in_ + "/raw/node-label.csv");
  std::filesystem::remove_all(in_ + "/split/s");
  WriteGzip(in_ + "/split/e/train.csv.gz", "0,1\n1,2\n");
  WriteGzip(in_ + "/split/e/valid.csv.gz", "3,2\n");
  WriteGzip(in_ + "/split/e/test.csv.gz", "3,4\n0,4\n");
  WriteText(in_ + "/split/e/test_neg.csv", "0,3\n1,4\n");
  OgbImportOptions options = Options();
  options.seed = 5;
  ASSERT_OK_AND_ASSIGN(bool edges, OgbSplitHoldsEdges(options));
  EXPECT_TRUE(edges);
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportOgb(options, tmp_.Sub("out")));
  EXPECT_THAT(testing::Entries(tmp_.path()),
              ::testing::UnorderedElementsAre("in", "out"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  // 0-1 and 1-2 stay; 2-3 (valid) and 3-4 (test) leave in both directions;
  // 0-4 was no edge.
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 1, 3, 4, 4, 4}));
  EXPECT_EQ(d.indices, (std::vector<NodeId>{1, 0, 2, 1}));
  EXPECT_EQ(d.labels, (std::vector<int64_t>(5, -1)));
  EXPECT_EQ(d.manifest.num_classes, 0);
  EXPECT_THAT(d.splits, IsEmpty());
  EXPECT_EQ(d.edge_splits.at("train"), (std::vector<NodeId>{0, 1, 1, 2}));
  EXPECT_EQ(d.edge_splits.at("valid"), (std::vector<NodeId>{3, 2}));
  EXPECT_EQ(d.edge_splits.at("test"), (std::vector<NodeId>{3, 4, 0, 4}));
  EXPECT_EQ(d.edge_splits.at("test_neg"), (std::vector<NodeId>{0, 3, 1, 4}));
  ASSERT_EQ(d.edge_splits.at("valid_neg").size(), 2u);
  EXPECT_EQ(d.manifest.edge_splits.at("valid_neg"), 1);
  EXPECT_EQ(s.manifest.edge_splits.at("test"), 2);
  EXPECT_EQ(s.nodes_without_neighbors, 2);
  EXPECT_THAT(FormatSummary(s),
              HasSubstr("edge splits (pairs): train 2 valid 1 test 2 "
                        "valid_neg 1 test_neg 2"));
  EXPECT_THAT(s.notes, ::testing::Contains(HasSubstr(
                           "2 valid and test edges removed from the graph")));
}

TEST_F(OgbImporterTest, LinkPredictionSplitErrorsNameTheFile) {
  std::filesystem::remove_all(in_ + "/split/s");
  WriteGzip(in_ + "/split/e/train.csv.gz", "0,1\n");
  WriteGzip(in_ + "/split/e/valid.csv.gz", "3,2\n");
  WriteGzip(in_ + "/split/e/test.csv.gz", "3,4\n0,9\n");
  ExpectFailure("test.csv.gz");
  WriteGzip(in_ + "/split/e/test.csv.gz", "3,4\n");
  std::filesystem::remove(in_ + "/split/e/valid.csv.gz");
  ExpectFailure("valid.csv.gz");
}

}  // namespace
}  // namespace shardgnn
