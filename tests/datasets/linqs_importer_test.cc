// Tests for ImportLinqs (datasets/linqs_importer.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

class LinqsImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    // 6 papers in classes "b" and "a"; "p2" cites "p1" twice (once reversed).
    testing::WriteText(tmp_.Sub("in/t.content"),
                       "p1\t1\t0\tb\n"
                       "p2\t0\t1\ta\n"
                       "p3\t1\t1\tb\n"
                       "p4\t0\t0\ta\n"
                       "p5\t1\t0\tb\n"
                       "p6\t0\t1\ta\n");
    testing::WriteGzip(tmp_.Sub("in/t.cites.gz"),
                       "p1\tp2\np2\tp1\np3\tp4\np5 p6\np4\tp5\np6\tp6\n");
  }

  LinqsImportOptions Options() {
    LinqsImportOptions options;
    options.content_path = tmp_.Sub("in/t.content");
    options.cites_path = tmp_.Sub("in/t.cites.gz");
    options.train_per_class = 1;
    options.num_valid = 2;
    options.num_test = 2;
    options.seed = 7;
    return options;
  }

  void ExpectFailure(const LinqsImportOptions& options,
                     const std::string& message_part) {
    absl::StatusOr<BuildSummary> s = ImportLinqs(options, tmp_.Sub("out"));
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message_part));
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  testing::TempDir tmp_;
};

TEST_F(LinqsImporterTest, ImportsTiny) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportLinqs(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.input_edges, 6);
  EXPECT_EQ(s.duplicate_edges_dropped, 1);
  EXPECT_EQ(s.self_loops_dropped, 1);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.num_nodes(), 6);
  EXPECT_EQ(d.num_edges(), 8);  // 4 distinct undirected edges.
  // Classes in sorted name order: a = 0, b = 1.
  EXPECT_EQ(d.labels, (std::vector<int64_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(d.manifest.num_classes, 2);
  EXPECT_EQ(d.features,
            (std::vector<float>{1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(d.splits["train"].size(), 2u);
  EXPECT_EQ(d.splits["valid"].size(), 2u);
  EXPECT_EQ(d.splits["test"].size(), 2u);
  // One training node per class.
  EXPECT_NE(d.labels[d.splits["train"][0]], d.labels[d.splits["train"][1]]);
  EXPECT_THAT(d.manifest.source, HasSubstr("0=a, 1=b"));
}

TEST_F(LinqsImporterTest, SplitIsSeeded) {
  ASSERT_OK(ImportLinqs(Options(), tmp_.Sub("a")));
  ASSERT_OK(ImportLinqs(Options(), tmp_.Sub("b")));
  ASSERT_OK_AND_ASSIGN(Dataset a, LoadDataset(tmp_.Sub("a")));
  ASSERT_OK_AND_ASSIGN(Dataset b, LoadDataset(tmp_.Sub("b")));
  EXPECT_EQ(a.splits, b.splits);
}

// --split random:N,M replaces the Planetoid-style split: per class of 3
// papers, 1 train and 1 valid, the third test.
TEST_F(LinqsImporterTest, RandomPerClassSplit) {
  LinqsImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 1, 5};
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportLinqs(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  for (const char* name : {"train", "valid", "test"}) {
    ASSERT_EQ(d.splits[name].size(), 2u) << name;
    EXPECT_NE(d.labels[d.splits[name][0]], d.labels[d.splits[name][1]]);
  }
  EXPECT_THAT(d.manifest.source, HasSubstr("split random:1,1 seed 5"));
  EXPECT_THAT(s.notes, Contains(HasSubstr("split random:1,1 seed 5")));
}

TEST_F(LinqsImporterTest, BundledCora) {
  LinqsImportOptions options;
  options.content_path =
      testing::SourcePath("datasets/cora/linqs/cora.content.gz");
  options.cites_path = testing::SourcePath("datasets/cora/linqs/cora.cites.gz");
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportLinqs(options, tmp_.Sub("cora")));
  EXPECT_EQ(s.manifest.name, "cora");
  EXPECT_EQ(s.manifest.num_nodes, 2708);
  EXPECT_EQ(s.manifest.num_edges, 10556);
  EXPECT_EQ(s.manifest.feature_dim, 1433);
  EXPECT_EQ(s.manifest.num_classes, 7);
  EXPECT_EQ(s.manifest.splits.at("train"), 140);
  EXPECT_EQ(s.manifest.splits.at("valid"), 500);
  EXPECT_EQ(s.manifest.splits.at("test"), 1000);
  EXPECT_EQ(s.input_edges, 5429);
  EXPECT_EQ(s.duplicate_edges_dropped, 5429 - 5278);
  EXPECT_EQ(s.self_loops_dropped, 0);
}

TEST_F(LinqsImporterTest, MissingFile) {
  LinqsImportOptions options = Options();
  options.cites_path = tmp_.Sub("in/nope.cites");
  ExpectFailure(options, "nope.cites: file not found");
}

TEST_F(LinqsImporterTest, TruncatedGzip) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "p1\tp2\n";
  testing::WriteGzip(tmp_.Sub("in/t.cites.gz"), text);
  testing::Truncate(tmp_.Sub("in/t.cites.gz"), 12);
  ExpectFailure(Options(), "t.cites.gz");
}

TEST_F(LinqsImporterTest, WrongColumnCount) {
  testing::WriteText(tmp_.Sub("in/t.content"), "p1\t1\t0\tb\np2\t0\ta\n");
  ExpectFailure(Options(), "t.content:2: expected 4 columns");
}

TEST_F(LinqsImporterTest, NonNumericFeature) {
  testing::WriteText(tmp_.Sub("in/t.content"), "p1\t1\t0\tb\np2\t0\tq\ta\n");
  ExpectFailure(Options(), "t.content:2: column 3: \"q\" is not a number");
}

TEST_F(LinqsImporterTest, NonFiniteFeatureIsRefusedUnlessAllowed) {
  testing::WriteText(tmp_.Sub("in/t.content"),
                     "p1\t1\t0\tb\n"
                     "p2\t0\t1\ta\n"
                     "p3\t1\tinf\tb\n"
                     "p4\t0\t0\ta\n"
                     "p5\t1\t0\tb\n"
                     "p6\t0\t1\ta\n");
  ExpectFailure(Options(), "t.content:3: node 2, column 3: inf is not finite");
  LinqsImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportLinqs(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 1);
}

TEST_F(LinqsImporterTest, UnknownId) {
  testing::WriteGzip(tmp_.Sub("in/t.cites.gz"), "p1\tp2\np9\tp1\n");
  ExpectFailure(Options(), "t.cites.gz:2: paper id \"p9\"");
  LinqsImportOptions options = Options();
  options.skip_unknown_ids = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportLinqs(options, tmp_.Sub("out")));
  EXPECT_EQ(s.unknown_ids_dropped, 1);
}

TEST_F(LinqsImporterTest, DuplicatePaperId) {
  testing::WriteText(tmp_.Sub("in/t.content"), "p1\t1\tb\np1\t0\ta\n");
  ExpectFailure(Options(), "t.content:2: paper id \"p1\" appears twice");
}

TEST_F(LinqsImporterTest, EmptyGraph) {
  testing::WriteText(tmp_.Sub("in/t.content"), "");
  ExpectFailure(Options(), "t.content: the graph has no nodes");
}

TEST_F(LinqsImporterTest, SplitTooLarge) {
  LinqsImportOptions options = Options();
  options.train_per_class = 4;
  ExpectFailure(options, "fewer than the 4 training nodes per class");
}

TEST_F(LinqsImporterTest, OutputExists) {
  std::filesystem::create_directory(tmp_.Sub("out"));
  absl::StatusOr<BuildSummary> s = ImportLinqs(Options(), tmp_.Sub("out"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(testing::Entries(tmp_.Sub("out")), ::testing::IsEmpty());
}

}  // namespace
}  // namespace shardgnn
