// Tests for ImportHgb (datasets/hgb_importer.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// 4 authors (IDs 0-3, 3 features), 3 papers (4-6, 2 features), 2 venues
// (7-8, none). Papers 4 and 5 are listed out of order; names have spaces.
constexpr char kNodes[] =
    "0\tAlice Smith\t0\t1,0,0.5\n"
    "1\tBob\t0\t0,1,0\n"
    "2\tCarol\t0\t0.25,0,1\n"
    "3\tDan\t0\t1,1,1\n"
    "5\tpaper b\t1\t0,2\n"
    "4\tpaper a\t1\t1,0\n"
    "6\tpaper c\t1\t3,3\n"
    "7\tKDD\t2\n"
    "8\tWWW\t2\n";

struct Edge {
  int64_t src;
  int64_t dst;
  int link_type;
  float weight;
};

// Link type 0: author -> paper, 1: paper -> venue, 2: paper -> paper
// (weighted).
constexpr Edge kEdges[] = {
    {0, 4, 0, 1},   {1, 4, 0, 1}, {1, 5, 0, 1}, {2, 6, 0, 1},
    {3, 6, 0, 1},   {4, 7, 1, 1}, {5, 7, 1, 1}, {6, 8, 1, 1},
    {4, 5, 2, 0.5}, {6, 4, 2, 2}, {5, 6, 2, 1},
};

std::string LinkText() {
  std::string text;
  for (const Edge& e : kEdges) {
    text += std::to_string(e.src) + "\t" + std::to_string(e.dst) + "\t" +
            std::to_string(e.link_type) + "\t" + std::to_string(e.weight) +
            "\n";
  }
  return text;
}

class HgbImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    Write("node.dat", kNodes);
    Write("link.dat", LinkText());
    Write("label.dat", "0\tAlice Smith\t0\t1\n1\tBob\t0\t0\n2\tCarol\t0\t1\n");
    Write("label.dat.test", "3\tDan\t0\t0\n");
    Write("meta.dat",
          "{\n \"Node Total\": 9,\n \"Node Type_0\": 4,\n \"Node Type_1\": "
          "3,\n \"Node Type_2\": 2,\n \"Edge Total\": 11,\n \"Label "
          "Class_0_Type_0\": 2\n}\n");
  }

  void Write(const std::string& name, const std::string& text) {
    testing::WriteText(tmp_.Sub("in/" + name), text);
  }

  HgbImportOptions Options() {
    HgbImportOptions options;
    options.input_dir = tmp_.Sub("in");
    options.valid_fraction = 0.34;  // 1 of label.dat's 3 nodes.
    options.seed = 5;
    return options;
  }

  void ExpectFailure(const std::string& message_part) {
    absl::StatusOr<BuildSummary> s = ImportHgb(Options(), tmp_.Sub("out"));
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message_part));
    EXPECT_EQ(std::string(s.status().message()).find('\n'), std::string::npos);
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  testing::TempDir tmp_;
};

TEST_F(HgbImporterTest, ImportsTypesFeaturesAndEdges) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportHgb(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.input_edges, 11);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  const DatasetManifest& m = d.manifest;
  EXPECT_EQ(m.name, "in");
  ASSERT_EQ(m.node_types.size(), 3u);
  const int64_t counts[] = {4, 3, 2};
  const int64_t widths[] = {3, 2, 0};
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(m.node_types[t].name, std::to_string(t));
    EXPECT_EQ(m.node_types[t].count, counts[t]);
    EXPECT_EQ(m.node_types[t].feature_dim, widths[t]);
  }
  EXPECT_EQ(d.num_nodes(), 9);
  EXPECT_EQ(d.num_edges(), 11);

  // Features per type, in ID order (paper 4's line came after paper 5's).
  ASSERT_EQ(d.type_features.size(), 3u);
  EXPECT_EQ(d.type_features[0],
            (std::vector<float>{1, 0, 0.5, 0, 1, 0, 0.25, 0, 1, 1, 1, 1}));
  EXPECT_EQ(d.type_features[1], (std::vector<float>{1, 0, 0, 2, 3, 3}));
  EXPECT_TRUE(d.type_features[2].empty());

  // A relation per link type, named by its number.
  const int rel[] = {m.FindEdgeType("0", "0", "1"),
                     m.FindEdgeType("1", "1", "2"),
                     m.FindEdgeType("1", "2", "1")};
  ASSERT_EQ(m.edge_types.size(), 3u);
  const int64_t rel_counts[] = {5, 3, 3};
  for (int k = 0; k < 3; ++k) {
    ASSERT_GE(rel[k], 0) << "link type " << k;
    EXPECT_EQ(m.edge_types[rel[k]].count, rel_counts[k]);
  }
  // Every input edge exactly once: entry src in row dst, of its relation.
  for (const Edge& e : kEdges) {
    int found = 0;
    for (int64_t i = d.indptr[e.dst]; i < d.indptr[e.dst + 1]; ++i) {
      if (d.indices[i] == e.src && d.edge_types[i] == rel[e.link_type]) {
        ++found;
      }
    }
    EXPECT_EQ(found, 1) << e.src << " -> " << e.dst;
  }

  // Only link type 2 has weights other than 1: its 1-wide edge feature, in
  // CSR order (row 4 from 6, row 5 from 4, row 6 from 5).
  EXPECT_EQ(m.edge_types[rel[0]].feature_dim, 0);
  EXPECT_EQ(m.edge_types[rel[1]].feature_dim, 0);
  EXPECT_EQ(m.edge_types[rel[2]].feature_dim, 1);
  ASSERT_EQ(d.edge_features.size(), 3u);  // One matrix per relation.
  EXPECT_TRUE(d.edge_features[rel[0]].empty());
  EXPECT_TRUE(d.edge_features[rel[1]].empty());
  EXPECT_EQ(d.edge_features[rel[2]], (std::vector<float>{2, 0.5, 1}));
  std::map<std::pair<int64_t, int64_t>, float> weight;
  for (const Edge& e : kEdges) weight[{e.src, e.dst}] = e.weight;
  std::vector<float> in_csr_order;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      if (d.edge_types[i] == rel[2]) {
        in_csr_order.push_back(weight[{d.indices[i], v}]);
      }
    }
  }
  EXPECT_EQ(d.edge_features[rel[2]], in_csr_order);
}

TEST_F(HgbImporterTest, LabelsAndSplits) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportHgb(Options(), tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_FALSE(d.manifest.multilabel);
  EXPECT_EQ(d.manifest.num_classes, 2);
  EXPECT_THAT(d.manifest.target_types, ElementsAre("0"));
  EXPECT_EQ(d.labels, (std::vector<int64_t>{1, 0, 1, 0, -1, -1, -1, -1, -1}));
  ASSERT_EQ(d.splits.count("train"), 1u);
  ASSERT_EQ(d.splits.count("valid"), 1u);
  EXPECT_EQ(d.splits["train"].size(), 2u);
  EXPECT_EQ(d.splits["valid"].size(), 1u);
  std::vector<NodeId> train_valid = d.splits["train"];
  train_valid.insert(train_valid.end(), d.splits["valid"].begin(),
                     d.splits["valid"].end());
  EXPECT_THAT(train_valid, UnorderedElementsAre(0, 1, 2));
  EXPECT_TRUE(
      std::is_sorted(d.splits["train"].begin(), d.splits["train"].end()));
  EXPECT_THAT(d.splits["test"], ElementsAre(3));
  EXPECT_EQ(s.manifest.splits.at("test"), 1);
}

TEST_F(HgbImporterTest, SplitIsSeeded) {
  // 20 labeled authors, so that seeds give different splits.
  std::string nodes, labels;
  for (int i = 0; i < 20; ++i) {
    nodes += std::to_string(i) + "\ta" + std::to_string(i) + "\t0\t1\n";
    labels += std::to_string(i) + "\ta\t0\t" + std::to_string(i % 3) + "\n";
  }
  nodes += "20\tp\t1\n";
  Write("node.dat", nodes);
  Write("link.dat", "0\t20\t0\t1\n");
  Write("label.dat", labels);
  Write("meta.dat", "");
  std::remove(tmp_.Sub("in/label.dat.test").c_str());
  HgbImportOptions options = Options();
  options.valid_fraction = 0.25;
  ASSERT_OK(ImportHgb(options, tmp_.Sub("a")));
  ASSERT_OK(ImportHgb(options, tmp_.Sub("b")));
  options.seed = 6;
  ASSERT_OK(ImportHgb(options, tmp_.Sub("c")));
  ASSERT_OK_AND_ASSIGN(Dataset a, LoadDataset(tmp_.Sub("a")));
  ASSERT_OK_AND_ASSIGN(Dataset b, LoadDataset(tmp_.Sub("b")));
  ASSERT_OK_AND_ASSIGN(Dataset c, LoadDataset(tmp_.Sub("c")));
  EXPECT_EQ(a.splits, b.splits);
  EXPECT_NE(a.splits, c.splits);
  EXPECT_EQ(a.splits["valid"].size(), 5u);
  EXPECT_EQ(a.splits["train"].size(), 15u);
  EXPECT_EQ(a.splits.count("test"), 0u);  // No label.dat.test.
}

// --split random:N,M draws over label.dat and label.dat.test together (authors
// 0-3: classes 1, 0, 1, 0): one train and one test node per class.
TEST_F(HgbImporterTest, RandomPerClassSplit) {
  HgbImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 0, 2};
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportHgb(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  ASSERT_EQ(d.splits["train"].size(), 2u);
  EXPECT_TRUE(d.splits["valid"].empty());
  ASSERT_EQ(d.splits["test"].size(), 2u);
  EXPECT_NE(d.labels[d.splits["train"][0]], d.labels[d.splits["train"][1]]);
  EXPECT_NE(d.labels[d.splits["test"][0]], d.labels[d.splits["test"][1]]);
  EXPECT_THAT(d.manifest.source,
              HasSubstr("split random:1,0 seed 2 over label.dat and "
                        "label.dat.test"));
  EXPECT_THAT(s.notes, ::testing::Contains(HasSubstr("(2 classes)")));
}

TEST_F(HgbImporterTest, RandomPerClassSplitRefusesMultiLabel) {
  Write("label.dat", "0\tAlice Smith\t0\t1,0\n1\tBob\t0\t0\n");
  HgbImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 0, 0};
  absl::StatusOr<BuildSummary> s = ImportHgb(options, tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("label.dat: multi-label"));
  EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
}

TEST_F(HgbImporterTest, AddReverseAndGzip) {
  std::remove(tmp_.Sub("in/link.dat").c_str());
  testing::WriteGzip(tmp_.Sub("in/link.dat.gz"), LinkText());
  HgbImportOptions options = Options();
  options.add_reverse = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportHgb(options, tmp_.Sub("out")));
  EXPECT_EQ(s.manifest.num_edges, 22);
  EXPECT_EQ(s.manifest.edge_types.size(), 6u);
  EXPECT_GE(s.manifest.FindEdgeType("1", "rev_0", "0"), 0);
  EXPECT_EQ(s.non_loop_edges, 22);
  EXPECT_EQ(s.reciprocated_edges, 22);
  EXPECT_EQ(s.max_degree, 5);  // Paper 4: authors 0, 1, papers 5, 6, venue 7.
  ASSERT_OK(LoadDataset(tmp_.Sub("out")).status());
}

TEST_F(HgbImporterTest, MultiLabel) {
  // IMDB-like: movies 0-3 (2 features), keywords 4-5.
  Write("node.dat",
        "0\tm0\t0\t1,2\n1\tm1\t0\t3,4\n2\tm2\t0\t5,6\n3\tm3\t0\t7,8\n"
        "4\tk0\t1\n5\tk1\t1\n");
  Write("link.dat", "0\t4\t0\t1\n1\t5\t0\t1\n4\t0\t1\t1\n5\t1\t1\t1\n");
  Write("label.dat", "0\tm0\t0\t0,2\n1\tm1\t0\t1\n2\tm2\t0\t2,1,0\n");
  Write("label.dat.test", "3\tm3\t0\t0\n");
  Write("meta.dat", "Node Type_0: 4\nTotal nodes: 6\nsomething else\n");
  ASSERT_OK(ImportHgb(Options(), tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_TRUE(d.manifest.multilabel);
  EXPECT_EQ(d.manifest.num_classes, 3);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{
                          1,
                          0,
                          1,  //
                          0,
                          1,
                          0,  //
                          1,
                          1,
                          1,  //
                          1,
                          0,
                          0,  //
                          -1,
                          -1,
                          -1,  //
                          -1,
                          -1,
                          -1,
                      }));
  EXPECT_THAT(d.splits["test"], ElementsAre(3));
}

TEST_F(HgbImporterTest, UnknownNodeIdInLinks) {
  Write("link.dat", "0\t4\t0\t1\n0\t99\t0\t1\n");
  ExpectFailure("link.dat:2: node ID 99 is not in");
}

TEST_F(HgbImporterTest, NonNumericId) {
  Write("link.dat", "0\t4\t0\t1\nx4\t5\t0\t1\n");
  ExpectFailure("link.dat:2: \"x4\" is not a node ID");
  SetUp();
  Write("node.dat", std::string("0\ta\t0\t1,0,0\nabc\tb\t0\t1,0,0\n"));
  ExpectFailure("node.dat:2: \"abc\" is not a node ID");
}

TEST_F(HgbImporterTest, FeatureWidthMismatch) {
  Write("node.dat", "0\ta\t0\t1,0,0\n1\tb\t0\t1,0\n2\tc\t1\n");
  ExpectFailure("node.dat:2: node type 0 has 2 features here but 3 on line 1");
}

TEST_F(HgbImporterTest, LabelOfAnotherType) {
  Write("label.dat", "0\ta\t0\t1\n4\tpaper a\t1\t0\n");
  ExpectFailure(
      "label.dat:2: node 4 is of type 1, but the labels are on type 0");
  SetUp();
  Write("label.dat", "0\ta\t0\t1\n5\tpaper b\t0\t0\n");
  ExpectFailure("label.dat:2: node 5 is of type 1 in");
}

TEST_F(HgbImporterTest, LabeledTwice) {
  Write("label.dat.test", "3\tDan\t0\t0\n1\tBob\t0\t1\n");
  ExpectFailure("label.dat.test:2: node 1 is labeled twice (also at");
}

TEST_F(HgbImporterTest, LinkTypeMixingNodeTypes) {
  Write("link.dat", "0\t4\t0\t1\n1\t5\t0\t1\n4\t7\t0\t1\n");
  ExpectFailure(
      "link.dat:3: link type 0 joins node types 1 -> 2 here but 0 -> 1 on "
      "line 1");
}

TEST_F(HgbImporterTest, TypesNotContiguous) {
  Write("node.dat", "0\ta\t0\n1\tp\t1\n2\tb\t0\n");
  ExpectFailure("node.dat:3: node ID 2 is of type 0 after IDs of type 1");
  SetUp();
  Write("node.dat", "0\ta\t0\n1\tp\t2\n");
  ExpectFailure("node.dat:2: node ID 1 is of type 2 after IDs of type 0");
  SetUp();
  Write("node.dat", "0\ta\t0\n2\tp\t0\n");
  ExpectFailure("node.dat:2: node ID 2 is outside [0, 2)");
}

TEST_F(HgbImporterTest, MetaCountMismatch) {
  Write("meta.dat", "{\n \"Node Total\": 9,\n \"Node Type_1\": 4,\n}\n");
  ExpectFailure("meta.dat:3: says 4 nodes of type 1, ");
}

TEST_F(HgbImporterTest, MissingNodeFile) {
  std::remove(tmp_.Sub("in/node.dat").c_str());
  ExpectFailure("node.dat: file not found");
}

TEST_F(HgbImporterTest, NonFiniteFeatureIsRefusedUnlessAllowed) {
  std::string nodes = kNodes;
  nodes.replace(nodes.find("0,1,0"), 5, "0,nan,0");
  Write("node.dat", nodes);
  ExpectFailure("node.dat:2: node 1, column 2: nan is not finite");
  HgbImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, ImportHgb(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 1);
}

TEST_F(HgbImporterTest, OutputMustNotExist) {
  testing::WriteText(tmp_.Sub("out/x"), "");
  absl::StatusOr<BuildSummary> s = ImportHgb(Options(), tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("already exists"));
}

}  // namespace
}  // namespace shardgnn
