// Typed (heterogeneous) datasets (datasets/dataset.h, "Typed (heterogeneous)
// datasets"; datasets/typed_graph.h): BuildTypedGraph's union CSR against the
// edges given, a written dataset read back, and what validation refuses.
#include "datasets/typed_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/file_util.h"
#include "datasets/dataset.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::StatusIs;

// author (3, 2 features), paper (4, 3 features), venue (2, none):
// author -writes-> paper (with a duplicate), paper -cites-> paper (with a
// self-loop; 2-wide edge features), paper -published_in-> venue.
std::vector<NodeType> Types() {
  return {{"author", 3, 2}, {"paper", 4, 3}, {"venue", 2, 0}};
}

std::vector<RelationEdges> Relations() {
  RelationEdges writes;
  writes.src_type = "author";
  writes.relation = "writes";
  writes.dst_type = "paper";
  writes.src = {0, 1, 2, 0, 1};
  writes.dst = {0, 0, 1, 2, 0};  // (1, 0) twice.
  writes.source = "writes.txt";
  RelationEdges cites;
  cites.src_type = "paper";
  cites.relation = "cites";
  cites.dst_type = "paper";
  cites.src = {1, 2, 3, 3};
  cites.dst = {0, 0, 1, 3};  // (3, 3) a self-loop.
  cites.feature_dim = 2;
  cites.features = {10, 11, 20, 21, 30, 31, 40, 41};
  cites.source = "cites.txt";
  RelationEdges in;
  in.src_type = "paper";
  in.relation = "published_in";
  in.dst_type = "venue";
  in.src = {0, 1, 2, 3};
  in.dst = {0, 0, 1, 1};
  in.source = "venues.txt";
  return {writes, cites, in};
}

// Every CSR entry as (relation key, global source, global destination).
std::multiset<std::tuple<std::string, int64_t, int64_t>> Entries(
    const Dataset& d) {
  std::multiset<std::tuple<std::string, int64_t, int64_t>> out;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      out.insert({EdgeTypeKey(d.manifest.edge_types[d.edge_types[i]]),
                  d.indices[i], v});
    }
  }
  return out;
}

// A typed dataset with labels on papers and a split.
Dataset Built(bool add_reverse = false) {
  Dataset d;
  BuildSummary summary;
  TypedGraphOptions options;
  options.add_reverse = add_reverse;
  EXPECT_OK(BuildTypedGraph(Types(), Relations(), options, &d, &summary));
  d.manifest.name = "typed";
  d.manifest.source = "test";
  d.type_features = {
      {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {}};
  d.labels = {-1, -1, -1, 0, 1, 1, 0, -1, -1};
  d.manifest.target_types = {"paper"};
  d.splits["train"] = {3, 4};
  d.splits["test"] = {5, 6};
  return d;
}

TEST(TypedGraphTest, TheUnionCsrHoldsEveryEdgeOnceWithItsRelation) {
  Dataset d;
  BuildSummary summary;
  ASSERT_OK(BuildTypedGraph(Types(), Relations(), {}, &d, &summary));
  const DatasetManifest& m = d.manifest;
  ASSERT_EQ(m.num_nodes, 9);
  EXPECT_EQ(m.NodeTypeOffset(1), 3);
  EXPECT_EQ(m.NodeTypeOf(3), 1);
  EXPECT_EQ(m.NodeTypeOf(8), 2);
  EXPECT_EQ(m.NodeTypeOf(9), -1);
  EXPECT_EQ(summary.input_edges, 13);
  EXPECT_EQ(summary.duplicate_edges_dropped, 1);
  EXPECT_EQ(summary.self_loops_dropped, 1);
  ASSERT_EQ(m.edge_types.size(), 3u);
  EXPECT_EQ(m.edge_types[0].count, 4);
  EXPECT_EQ(m.edge_types[1].count, 3);
  EXPECT_EQ(m.edge_types[2].count, 4);
  const std::multiset<std::tuple<std::string, int64_t, int64_t>> expected = {
      {"author/writes/paper", 0, 3},      {"author/writes/paper", 1, 3},
      {"author/writes/paper", 2, 4},      {"author/writes/paper", 0, 5},
      {"paper/cites/paper", 4, 3},        {"paper/cites/paper", 5, 3},
      {"paper/cites/paper", 6, 4},        {"paper/published_in/venue", 3, 7},
      {"paper/published_in/venue", 4, 7}, {"paper/published_in/venue", 5, 8},
      {"paper/published_in/venue", 6, 8}};
  EXPECT_EQ(Entries(d), expected);
  // Edge features of cites follow its entries in CSR order: row 3 (paper 0)
  // holds sources 4 and 5 (papers 1 and 2), row 4 source 6 (paper 3).
  ASSERT_EQ(d.edge_features.size(), 3u);
  EXPECT_TRUE(d.edge_features[0].empty());
  EXPECT_EQ(d.edge_features[1], (std::vector<float>{10, 11, 20, 21, 30, 31}));
}

TEST(TypedGraphTest, AddReverseAddsRevRelationsButNotForSymmetricOnes) {
  std::vector<RelationEdges> relations = Relations();
  RelationEdges knows;  // Both ways already.
  knows.src_type = knows.dst_type = "author";
  knows.relation = "knows";
  knows.src = {0, 1};
  knows.dst = {1, 0};
  relations.push_back(knows);
  Dataset d;
  BuildSummary summary;
  TypedGraphOptions options;
  options.add_reverse = true;
  ASSERT_OK(BuildTypedGraph(Types(), relations, options, &d, &summary));
  const DatasetManifest& m = d.manifest;
  ASSERT_EQ(m.edge_types.size(), 7u);
  const int rev = m.FindEdgeType("paper", "rev_writes", "author");
  ASSERT_GE(rev, 0);
  EXPECT_EQ(m.edge_types[rev].count, 4);
  EXPECT_GE(m.FindEdgeType("paper", "rev_cites", "paper"), 0);
  EXPECT_EQ(m.FindEdgeType("author", "rev_knows", "author"), -1);
  EXPECT_THAT(summary.notes, ::testing::Contains(HasSubstr("knows")));
  // Reversed edges carry the edge's features.
  const int rev_cites = m.FindEdgeType("paper", "rev_cites", "paper");
  std::vector<float> sorted = d.edge_features[rev_cites];
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<float>{10, 11, 20, 21, 30, 31}));
  // Each entry of rev_writes reverses one of writes.
  auto entries = Entries(d);
  for (const auto& [key, u, v] : entries) {
    if (key != "paper/rev_writes/author") continue;
    EXPECT_EQ(entries.count({"author/writes/paper", v, u}), 1u) << u << v;
  }
}

TEST(TypedGraphTest, BadEdgesNameTheirRelationAndSource) {
  auto fails = [](std::vector<RelationEdges> relations) {
    Dataset d;
    BuildSummary summary;
    return BuildTypedGraph(Types(), std::move(relations), {}, &d, &summary);
  };
  std::vector<RelationEdges> relations = Relations();
  relations[0].src[2] = 3;  // Only 3 authors.
  EXPECT_THAT(fails(relations),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("writes.txt"), HasSubstr("edge 2"),
                             HasSubstr("author 3, outside [0, 3)"))));
  relations = Relations();
  relations[2].dst_type = "journal";
  EXPECT_THAT(fails(relations),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("venues.txt"), HasSubstr("journal"))));
  relations = Relations();
  relations[1].features.pop_back();
  EXPECT_THAT(fails(relations), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("cites.txt")));
  relations = Relations();
  relations.push_back(Relations()[0]);
  EXPECT_THAT(fails(relations), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("given twice")));
  relations = Relations();
  relations[0].relation = "writes/for";
  EXPECT_THAT(fails(relations), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("not a valid type name")));
}

TEST(TypedGraphTest, WrittenAndReadBackUnchanged) {
  testing::TempDir dir;
  const Dataset d = Built(/*add_reverse=*/true);
  ASSERT_OK(WriteDataset(d, dir.Sub("typed")));
  ASSERT_OK_AND_ASSIGN(Dataset back, LoadDataset(dir.Sub("typed")));
  EXPECT_EQ(back.manifest.node_types.size(), 3u);
  EXPECT_EQ(back.manifest.edge_types.size(), d.manifest.edge_types.size());
  EXPECT_EQ(back.manifest.target_types, std::vector<std::string>{"paper"});
  EXPECT_EQ(back.manifest.feature_dim, 0);
  EXPECT_EQ(back.indptr, d.indptr);
  EXPECT_EQ(back.indices, d.indices);
  EXPECT_EQ(back.edge_types, d.edge_types);
  EXPECT_EQ(back.type_features, d.type_features);
  EXPECT_EQ(back.edge_features, d.edge_features);
  EXPECT_EQ(back.labels, d.labels);
  EXPECT_EQ(back.splits, d.splits);
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("typed/features_paper.npy")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("typed/features_venue.npy")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("typed/features.npy")));
  // The content checksum sees the types.
  Dataset other = d;
  other.manifest.node_types[2].name = "journal";
  other.manifest.edge_types = d.manifest.edge_types;
  for (EdgeType& r : other.manifest.edge_types) {
    if (r.dst == "venue") r.dst = "journal";
    if (r.src == "venue") r.src = "journal";
  }
  ASSERT_OK(WriteDataset(other, dir.Sub("other")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest a,
                       ReadDatasetManifest(dir.Sub("typed")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest b,
                       ReadDatasetManifest(dir.Sub("other")));
  EXPECT_NE(DatasetContentChecksum(a), DatasetContentChecksum(b));
}

TEST(TypedGraphTest, ValidationRefusesWhatBreaksTheLayout) {
  testing::TempDir dir;
  auto refused = [&](const Dataset& d, const std::string& message) {
    absl::Status s = WriteDataset(d, dir.Sub("out"));
    EXPECT_THAT(
        s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
    EXPECT_FALSE(std::filesystem::exists(dir.Sub("out")));
  };
  Dataset d = Built();
  d.labels[0] = 1;  // An author.
  refused(d, "node 0 is labeled but of type \"author\", not a target type");
  d = Built();
  d.edge_types[0] = 2;  // published_in ends at a venue, not a paper.
  refused(d, "is of relation \"paper/published_in/venue\"");
  d = Built();
  d.type_features[1].pop_back();
  refused(d, "features_paper.npy: has 11 values, expected 4 x 3");
  d = Built();
  d.features = {1};
  refused(d, "not features.npy");
  d = Built();
  std::swap(d.indices[0], d.indices[1]);  // Row 3: (writes, 0), (writes, 1).
  refused(d, "not sorted by (relation, neighbor)");
}

TEST(TypedGraphTest, MultiLabelRowsAreSetsOrUnlabeled) {
  testing::TempDir dir;
  Dataset d = Built();
  d.manifest.multilabel = true;
  d.manifest.num_classes = 3;
  d.labels.assign(9 * 3, -1);
  for (int64_t v : {3, 4, 5, 6}) {
    for (int c = 0; c < 3; ++c) d.labels[v * 3 + c] = (v + c) % 2;
  }
  ASSERT_OK(WriteDataset(d, dir.Sub("multi")));
  ASSERT_OK_AND_ASSIGN(Dataset back, LoadDataset(dir.Sub("multi")));
  EXPECT_TRUE(back.manifest.multilabel);
  EXPECT_EQ(back.labels, d.labels);
  d.labels[3 * 3 + 1] = 2;
  EXPECT_THAT(WriteDataset(d, dir.Sub("bad")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row of node 3 is neither all 0/1 nor all "
                                 "-1")));
}

TEST(TypedGraphTest, UntypedEdgeFeaturesRoundTrip) {
  testing::TempDir dir;
  Dataset d;
  d.manifest.name = "path";
  d.manifest.feature_dim = 1;
  d.manifest.num_classes = 2;
  d.manifest.edge_feature_dim = 2;
  d.indptr = {0, 1, 2};
  d.indices = {1, 0};
  d.features = {0, 1};
  d.labels = {0, 1};
  d.edge_features = {{1, 2, 3, 4}};
  ASSERT_OK(WriteDataset(d, dir.Sub("path")));
  ASSERT_OK_AND_ASSIGN(Dataset back, LoadDataset(dir.Sub("path")));
  EXPECT_EQ(back.manifest.edge_feature_dim, 2);
  EXPECT_EQ(back.edge_features, d.edge_features);
  d.edge_features = {{1, 2, 3}};
  EXPECT_THAT(WriteDataset(d, dir.Sub("bad")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("edge_features.npy: has 3 values")));
}

}  // namespace
}  // namespace shardgnn
