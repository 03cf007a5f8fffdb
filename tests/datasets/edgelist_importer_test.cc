// Tests for ImportEdgeList (datasets/edgelist_importer.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/npy.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EdgeListImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    testing::WriteText(tmp_.Sub("in/g.txt"),
                       "# a comment\n0 1\n1\t2\n2,3\n3 0\n0 1\n\n");
    ASSERT_OK(WriteNpy<float>(tmp_.Sub("in/x.npy"), {4, 3},
                              {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
    ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/y.npy"), {4}, {0, 1, 1, -1}));
  }

  EdgeListImportOptions Options() {
    EdgeListImportOptions options;
    options.edges_path = tmp_.Sub("in/g.txt");
    options.features_path = tmp_.Sub("in/x.npy");
    options.labels_path = tmp_.Sub("in/y.npy");
    options.split_fractions = {0.34, 0.33, 0.33};
    options.seed = 3;
    return options;
  }

  void ExpectFailure(const EdgeListImportOptions& options,
                     const std::string& message_part) {
    absl::StatusOr<BuildSummary> s = ImportEdgeList(options, tmp_.Sub("out"));
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message_part));
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  testing::TempDir tmp_;
};

TEST_F(EdgeListImporterTest, ImportsDirectedWithRandomSplit) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.input_edges, 5);
  EXPECT_EQ(s.duplicate_edges_dropped, 1);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(d.indices, (std::vector<NodeId>{3, 0, 1, 2}));
  EXPECT_EQ(d.features[11], 11.0f);
  EXPECT_EQ(d.manifest.num_classes, 2);
  // Only the 3 labeled nodes are split, one each.
  EXPECT_EQ(d.splits["train"].size() + d.splits["valid"].size() +
                d.splits["test"].size(),
            3u);
  for (const auto& [name, nodes] : d.splits) {
    for (NodeId v : nodes) EXPECT_NE(v, 3) << name;
  }
}

// A per-class random split leaves the unlabeled node 3 out: class 0 (node 0)
// and class 1 (nodes 1, 2) each give one train node; one of class 1 is left
// for valid; the warning names both classes (fewer than 1 + 1 for class 0).
TEST_F(EdgeListImporterTest, RandomPerClassSplitLeavesUnlabeledOut) {
  EdgeListImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 1, 0};
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  ASSERT_EQ(d.splits["train"].size(), 2u);
  EXPECT_EQ(d.splits["train"][0], 0);
  EXPECT_EQ(d.splits["valid"].size(), 1u);
  EXPECT_TRUE(d.splits["test"].empty());
  EXPECT_THAT(s.warnings,
              Contains(HasSubstr("1 class has fewer than 2 (1 + 1) labeled "
                                 "nodes: class 0 (1 node)")));
  EXPECT_THAT(d.manifest.source, HasSubstr("split random:1,1 seed 0"));
}

TEST_F(EdgeListImporterTest, RandomPerClassSplitNeedsLabels) {
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/y.npy"), {4}, {-1, -1, -1, -1}));
  EdgeListImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 1, 0};
  ExpectFailure(options, "y.npy: no node is labeled");
}

TEST_F(EdgeListImporterTest, UndirectedWithSplitFiles) {
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/train.npy"), {2}, {2, 0}));
  EdgeListImportOptions options = Options();
  options.edges.undirected = true;
  options.split_paths["train"] = tmp_.Sub("in/train.npy");
  ASSERT_OK(ImportEdgeList(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.num_edges(), 8);
  EXPECT_EQ(d.splits.size(), 1u);
  EXPECT_EQ(d.splits["train"], (std::vector<NodeId>{0, 2}));
}

TEST_F(EdgeListImporterTest, MissingFile) {
  EdgeListImportOptions options = Options();
  options.labels_path = tmp_.Sub("in/none.npy");
  ExpectFailure(options, "none.npy");
}

TEST_F(EdgeListImporterTest, TruncatedGzip) {
  std::string text;
  for (int i = 0; i < 4000; ++i) text += "0 1\n";
  testing::WriteGzip(tmp_.Sub("in/g.txt.gz"), text);
  testing::Truncate(tmp_.Sub("in/g.txt.gz"), 10);
  EdgeListImportOptions options = Options();
  options.edges_path = tmp_.Sub("in/g.txt.gz");
  ExpectFailure(options, "g.txt.gz");
}

// The edges of in/g.txt (one duplicate) as PyG's edge_index [2, E] and as
// pairs [E, 2]: both import to what the text gives.
TEST_F(EdgeListImporterTest, ImportsEdgeIndexNpyInEitherOrientation) {
  ASSERT_OK_AND_ASSIGN(BuildSummary text,
                       ImportEdgeList(Options(), tmp_.Sub("text")));
  ASSERT_OK_AND_ASSIGN(Dataset expected, LoadDataset(tmp_.Sub("text")));
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/edge_index.npy"), {2, 5},
                              {0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/pairs.npy"), {5, 2},
                              {0, 1, 1, 2, 2, 3, 3, 0, 0, 1}));
  for (const char* file : {"edge_index.npy", "pairs.npy"}) {
    SCOPED_TRACE(file);
    EdgeListImportOptions options = Options();
    options.edges_path = tmp_.Sub(std::string("in/") + file);
    const std::string out = tmp_.Sub(std::string("out-") + file);
    ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportEdgeList(options, out));
    EXPECT_EQ(s.input_edges, text.input_edges);
    EXPECT_EQ(s.duplicate_edges_dropped, 1);
    ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(out));
    EXPECT_EQ(d.indptr, expected.indptr);
    EXPECT_EQ(d.indices, expected.indices);
    EXPECT_EQ(d.splits, expected.splits);
  }
}

TEST_F(EdgeListImporterTest, EdgeNpyOfInt32IsAccepted) {
  ASSERT_OK(WriteNpy<int32_t>(tmp_.Sub("in/e.npy"), {2, 2}, {0, 1, 1, 2}));
  EdgeListImportOptions options = Options();
  options.edges_path = tmp_.Sub("in/e.npy");
  ASSERT_OK(ImportEdgeList(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  // [2, 2] is edge_index: 0 -> 1 and 1 -> 2.
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(d.indices, (std::vector<NodeId>{0, 1}));
}

TEST_F(EdgeListImporterTest, EdgeNpyOfWrongShapeOrDtypeIsNamed) {
  EdgeListImportOptions options = Options();
  options.edges_path = tmp_.Sub("in/e.npy");
  ASSERT_OK(WriteNpy<int64_t>(options.edges_path, {3, 3},
                              {0, 1, 2, 1, 2, 3, 2, 3, 0}));
  ExpectFailure(options,
                "e.npy: expected an int64 edge array of shape [2, E] "
                "(edge_index) or [E, 2], found <i8 [3, 3]");
  ASSERT_OK(WriteNpy<float>(options.edges_path, {2, 2}, {0, 1, 1, 2}));
  ExpectFailure(options, "found <f4 [2, 2]");
}

TEST_F(EdgeListImporterTest, EdgeNpyIdOutOfRangeNamesTheEdge) {
  EdgeListImportOptions options = Options();
  options.edges_path = tmp_.Sub("in/e.npy");
  ASSERT_OK(WriteNpy<int64_t>(options.edges_path, {2, 3}, {0, 1, 2, 1, 4, 3}));
  ExpectFailure(options, "e.npy: edge 1 (1 -> 4) has node 4, outside [0, 4)");
}

TEST_F(EdgeListImporterTest, WrongColumnCount) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1\n1 2 0 5\n");
  ExpectFailure(Options(), "g.txt:2: expected 2 columns (src dst), found 4");
}

// A weighted edge list (src dst weight) is refused with what to do: weights
// are not used, and dropping a column silently would hide that.
TEST_F(EdgeListImporterTest, AWeightColumnIsRefusedWithAHint) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1 0.5\n1 2 0.5\n");
  ExpectFailure(Options(),
                "g.txt:1: expected 2 columns (src dst), found 3 (a weight "
                "column? edge weights are not used: keep the first two "
                "columns, e.g. awk '{print $1, $2}')");
}

TEST_F(EdgeListImporterTest, NonNumericField) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1\n1 two\n");
  ExpectFailure(Options(), "g.txt:2: \"two\" is not an integer");
}

TEST_F(EdgeListImporterTest, IdOutOfRange) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1\n-1 2\n");
  ExpectFailure(Options(), "g.txt:2: node ID -1 is outside [0, 4)");
}

TEST_F(EdgeListImporterTest, LabelFeatureCountMismatch) {
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/y.npy"), {3}, {0, 1, 1}));
  ExpectFailure(Options(), "y.npy: has 3 labels but");
}

TEST_F(EdgeListImporterTest, EmptyGraph) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "# nothing\n");
  ExpectFailure(Options(), "g.txt: the graph has no edges");
}

TEST_F(EdgeListImporterTest, SplitOutOfRange) {
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/train.npy"), {1}, {4}));
  EdgeListImportOptions options = Options();
  options.split_paths["train"] = tmp_.Sub("in/train.npy");
  ExpectFailure(options, "train.npy: entry 0 is node 4, outside [0, 4)");
}

TEST_F(EdgeListImporterTest, OutputExists) {
  std::filesystem::create_directory(tmp_.Sub("out"));
  absl::StatusOr<BuildSummary> s = ImportEdgeList(Options(), tmp_.Sub("out"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(testing::Entries(tmp_.Sub("out")), ::testing::IsEmpty());
}

TEST_F(EdgeListImporterTest, NonFiniteFeatureIsRefusedUnlessAllowed) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_OK(WriteNpy<float>(tmp_.Sub("in/x.npy"), {4, 3},
                            {0, 1, 2, 3, 4, 5, 6, 7, nan, 9, -inf, 11}));
  ExpectFailure(Options(), "x.npy: node 2, column 3: nan is not finite");
  EdgeListImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 2);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_TRUE(std::isnan(d.features[8]));
}

// NumPy's default float is float64 (np.save of most arrays): read and stored
// as float32, said in the summary.
TEST_F(EdgeListImporterTest, Float64FeaturesAreStoredAsFloat32) {
  ASSERT_OK(WriteNpy<double>(tmp_.Sub("in/x.npy"), {4, 3},
                             {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0.1}));
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(Options(), tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  ASSERT_EQ(d.features.size(), 12u);
  EXPECT_EQ(d.features[5], 5.0f);
  EXPECT_EQ(d.features[11], 0.1f);
  EXPECT_THAT(s.notes, Contains(HasSubstr("float64 converted to float32")));
}

TEST_F(EdgeListImporterTest, Float64FeaturesBeyondFloat32AreRefused) {
  ASSERT_OK(WriteNpy<double>(tmp_.Sub("in/x.npy"), {4, 3},
                             {0, 1, 2, 3, 4, 1e300, 6, 7, 8, 9, 10, 11}));
  ExpectFailure(Options(), "x.npy: node 1, column 3: 1e+300 does not fit");
}

TEST_F(EdgeListImporterTest, Float64NonFiniteFeaturesAreRefusedUnlessAllowed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_OK(WriteNpy<double>(tmp_.Sub("in/x.npy"), {4, 3},
                             {0, 1, 2, 3, 4, 5, 6, 7, nan, 9, 10, 11}));
  ExpectFailure(Options(), "x.npy: node 2, column 3: nan is not finite");
  EdgeListImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 1);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_TRUE(std::isnan(d.features[8]));
}

// PyG's masks (data.train_mask.numpy()) and int32 indices are splits too.
TEST_F(EdgeListImporterTest, SplitFilesMayBeBoolMasksOrInt32) {
  ASSERT_OK(WriteNpyRaw(tmp_.Sub("in/train.npy"), NpyDtype::kBool, {4},
                        std::vector<uint8_t>{1, 0, 1, 0}.data(), 4));
  ASSERT_OK(WriteNpy<int32_t>(tmp_.Sub("in/valid.npy"), {1}, {1}));
  EdgeListImportOptions options = Options();
  options.split_paths["train"] = tmp_.Sub("in/train.npy");
  options.split_paths["valid"] = tmp_.Sub("in/valid.npy");
  ASSERT_OK(ImportEdgeList(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.splits["train"], (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(d.splits["valid"], (std::vector<NodeId>{1}));
}

TEST_F(EdgeListImporterTest, ABoolMaskOfAnotherLengthIsRefused) {
  ASSERT_OK(WriteNpyRaw(tmp_.Sub("in/train.npy"), NpyDtype::kBool, {3},
                        std::vector<uint8_t>{1, 0, 1}.data(), 3));
  EdgeListImportOptions options = Options();
  options.split_paths["train"] = tmp_.Sub("in/train.npy");
  ExpectFailure(options, "train.npy: a mask of 3 entries, but the graph has 4");
}

// A CSV written with its column names (pandas' to_csv, the musae files).
TEST_F(EdgeListImporterTest, AHeaderLineIsSkippedAndSaid) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "id_1,id_2\n0,1\n1,2\n2,3\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportEdgeList(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.input_edges, 3);
  EXPECT_THAT(s.notes,
              Contains(HasSubstr("line 1 (\"id_1,id_2\") read as a header")));
}

TEST_F(EdgeListImporterTest, OnlyTheFirstLineMayBeAHeader) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1\nsrc dst\n");
  ExpectFailure(Options(), "g.txt:2: \"src\" is not an integer");
  testing::WriteText(tmp_.Sub("in/g.txt"), "src 1\n0 1\n");
  ExpectFailure(Options(), "g.txt:1: \"src\" is not an integer");
}

}  // namespace
}  // namespace shardgnn
