#include "datasets/edge_split.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using Pairs = std::set<std::pair<NodeId, NodeId>>;

// n nodes; each links to the next three (mod n), both directions unless
// `directed`; node 0 has a self loop.
Dataset Ring(int64_t n, bool directed = false) {
  std::vector<std::set<NodeId>> rows(static_cast<size_t>(n));
  for (NodeId v = 0; v < n; ++v) {
    for (NodeId k = 1; k <= 3; ++k) {
      const NodeId u = (v + k) % n;
      rows[v].insert(u);  // u's message reaches v.
      if (!directed) rows[u].insert(v);
    }
  }
  rows[0].insert(0);
  Dataset d;
  d.manifest.name = "ring";
  d.manifest.directed = directed;
  d.manifest.feature_dim = 2;
  d.manifest.num_classes = 2;
  d.indptr.push_back(0);
  for (NodeId v = 0; v < n; ++v) {
    d.indices.insert(d.indices.end(), rows[v].begin(), rows[v].end());
    d.indptr.push_back(static_cast<int64_t>(d.indices.size()));
    d.features.push_back(static_cast<float>(v));
    d.features.push_back(1.0f);
    d.labels.push_back(v % 2);
  }
  d.splits["train"] = {0, 1, 2, 3};
  return d;
}

Pairs Edges(const Dataset& d) {
  Pairs out;
  for (NodeId v = 0; v < d.num_nodes(); ++v) {
    for (int64_t e = d.indptr[v]; e < d.indptr[v + 1]; ++e)
      out.emplace(d.indices[e], v);
  }
  return out;
}

Pairs PairsOf(const std::vector<NodeId>& flat) {
  Pairs out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    out.emplace(flat[i], flat[i + 1]);
  return out;
}

TEST(EdgeSplitTest, DealsEdgesRemovesTargetsAndDrawsTrueNegatives) {
  const Dataset original = Ring(200);
  const Pairs before = Edges(original);
  Dataset d = original;
  EdgeSplitOptions options{0.7, 0.1, 0.2, 3};
  ASSERT_OK_AND_ASSIGN(EdgeSplitSummary s, SplitEdges(options, &d));
  EXPECT_EQ(s.candidates, 600);  // 200 x 3 undirected pairs.
  EXPECT_EQ(s.valid, 60);
  EXPECT_EQ(s.test, 120);
  EXPECT_EQ(s.train, 420);
  EXPECT_EQ(s.self_loops_kept, 1);
  const Pairs after = Edges(d);
  EXPECT_EQ(after.size(), 2u * 420 + 1);
  EXPECT_TRUE(after.count({0, 0}));
  for (const char* name : {"train", "valid", "test"}) {
    SCOPED_TRACE(name);
    const Pairs pairs = PairsOf(d.edge_splits.at(name));
    EXPECT_EQ(static_cast<int64_t>(pairs.size()) * 2,
              static_cast<int64_t>(d.edge_splits.at(name).size()));
    for (const auto& [u, v] : pairs) {
      EXPECT_LT(u, v);
      EXPECT_TRUE(before.count({u, v}));
      // Train edges stay in both directions; valid and test edges leave in
      // both.
      const bool train = std::string(name) == "train";
      EXPECT_EQ(after.count({u, v}), train ? 1u : 0u);
      EXPECT_EQ(after.count({v, u}), train ? 1u : 0u);
    }
  }
  for (const char* name : {"valid_neg", "test_neg"}) {
    SCOPED_TRACE(name);
    const std::vector<NodeId>& flat = d.edge_splits.at(name);
    const Pairs pairs = PairsOf(flat);
    EXPECT_EQ(pairs.size() * 2, flat.size());  // No pair drawn twice.
    for (const auto& [u, v] : pairs) {
      EXPECT_NE(u, v);
      EXPECT_FALSE(before.count({u, v}));
      EXPECT_FALSE(before.count({v, u}));
    }
  }
  EXPECT_EQ(d.edge_splits.at("valid_neg").size(),
            d.edge_splits.at("valid").size());
  EXPECT_EQ(d.edge_splits.at("test_neg").size(),
            d.edge_splits.at("test").size());
  // The same seed deals the same edges; another seed others.
  Dataset again = original;
  ASSERT_OK(SplitEdges(options, &again).status());
  EXPECT_EQ(again.edge_splits, d.edge_splits);
  Dataset other = original;
  options.seed = 4;
  ASSERT_OK(SplitEdges(options, &other).status());
  EXPECT_NE(other.edge_splits.at("test"), d.edge_splits.at("test"));
}

TEST(EdgeSplitTest, DirectedEdgesAreCandidatesOneByOne) {
  Dataset d = Ring(100, /*directed=*/true);
  const Pairs before = Edges(d);
  ASSERT_OK_AND_ASSIGN(EdgeSplitSummary s,
                       SplitEdges({0.5, 0.25, 0.25, 1}, &d));
  EXPECT_EQ(s.candidates, 300);
  const Pairs after = Edges(d);
  for (const auto& [u, v] : PairsOf(d.edge_splits.at("test"))) {
    EXPECT_TRUE(before.count({u, v}));
    EXPECT_FALSE(after.count({u, v}));
  }
}

TEST(EdgeSplitTest, WrittenAndLoadedWithTheDataset) {
  testing::TempDir tmp;
  Dataset d = Ring(60);
  ASSERT_OK(WriteDataset(d, tmp.Sub("plain")));
  ASSERT_OK_AND_ASSIGN(EdgeSplitSummary s,
                       SplitDatasetEdges(tmp.Sub("plain"),
                                         {0.85, 0.05, 0.10, 0}, tmp.Sub("lp")));
  EXPECT_EQ(s.train + s.valid + s.test, s.candidates);
  ASSERT_OK_AND_ASSIGN(Dataset loaded, LoadDataset(tmp.Sub("lp")));
  EXPECT_EQ(loaded.manifest.edge_splits.at("test"), s.test);
  EXPECT_EQ(loaded.edge_splits.at("test").size(), 2u * s.test);
  EXPECT_EQ(loaded.splits, d.splits);  // Node splits as they were.
  ASSERT_OK_AND_ASSIGN(DatasetManifest plain,
                       ReadDatasetManifest(tmp.Sub("plain")));
  EXPECT_NE(DatasetContentChecksum(plain),
            DatasetContentChecksum(loaded.manifest));
  // Splitting again is refused; nothing is written.
  EXPECT_EQ(
      SplitDatasetEdges(tmp.Sub("lp"), {}, tmp.Sub("twice")).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(EdgeSplitTest, BadSplitsAreRefused) {
  for (const char* text : {"0.8,0.1", "0.8,0.1,0.2", "a,b,c", "0,0.5,0.5",
                           "-0.1,0.6,0.5", "0.8,0.1,0.1,0"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<EdgeSplitOptions> o = ParseEdgeSplit(text);
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(text), std::string::npos);
  }
  ASSERT_OK_AND_ASSIGN(EdgeSplitOptions o, ParseEdgeSplit("0.85,0.05,0.10"));
  EXPECT_DOUBLE_EQ(o.valid, 0.05);
  // Rounding keeps a train edge whenever there is one (train > 0), so only a
  // graph without edges (a self loop is no candidate) leaves none.
  Dataset tiny;
  tiny.manifest.feature_dim = 1;
  tiny.manifest.num_classes = 1;
  tiny.indptr = {0, 1, 1};
  tiny.indices = {0};
  tiny.features = {0, 0};
  tiny.labels = {0, 0};
  Dataset copy = tiny;
  absl::StatusOr<EdgeSplitSummary> none = SplitEdges({0.8, 0.1, 0.1}, &copy);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("no train edge"), std::string::npos);
  EXPECT_EQ(copy.indices, tiny.indices);  // Unchanged.
  Dataset one = tiny;
  one.indptr = {0, 1, 2};
  one.indices = {1, 0};
  ASSERT_OK_AND_ASSIGN(EdgeSplitSummary s,
                       SplitEdges({0.0001, 0.5, 0.4999}, &one));
  EXPECT_EQ(s.train, 1);
  // A complete graph has no negative pairs to draw.
  Dataset full;
  full.manifest.feature_dim = 1;
  full.manifest.num_classes = 1;
  full.indptr = {0};
  for (NodeId v = 0; v < 6; ++v) {
    for (NodeId u = 0; u < 6; ++u) {
      if (u != v) full.indices.push_back(u);
    }
    full.indptr.push_back(static_cast<int64_t>(full.indices.size()));
    full.features.push_back(0);
    full.labels.push_back(0);
  }
  EXPECT_EQ(SplitEdges({0.6, 0.2, 0.2}, &full).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A given split (OGB's split/<name>/ of edges): the pairs are kept as given,
// valid and test positives leave the graph, missing negatives are drawn.
TEST(EdgeSplitTest, GivenSplitRemovesTargetsAndDrawsMissingNegatives) {
  const Dataset original = Ring(40);
  const Pairs before = Edges(original);
  GivenEdgeSplit given;
  given.pairs["train"] = {0, 1, 2, 3, 5, 6};
  given.pairs["valid"] = {10, 11, 13, 12};  // {13, 12} given high-low.
  given.pairs["test"] = {20, 21, 22, 26};   // {22, 26} is not an edge.
  given.pairs["test_neg"] = {1, 30, 2, 31};
  Dataset d = original;
  ASSERT_OK_AND_ASSIGN(EdgeSplitSummary s, ApplyGivenEdgeSplit(given, 7, &d));
  EXPECT_EQ(s.train, 3);
  EXPECT_EQ(s.valid, 2);
  EXPECT_EQ(s.test, 2);
  EXPECT_EQ(d.edge_splits.at("train"), given.pairs["train"]);
  EXPECT_EQ(d.edge_splits.at("valid"), given.pairs["valid"]);
  EXPECT_EQ(d.edge_splits.at("test_neg"), given.pairs["test_neg"]);
  const Pairs after = Edges(d);
  // Valid and test positives that were edges leave in both directions.
  for (auto [u, v] :
       std::vector<std::pair<NodeId, NodeId>>{{10, 11}, {13, 12}, {20, 21}}) {
    EXPECT_TRUE(before.count({u, v}));
    EXPECT_FALSE(after.count({u, v}));
    EXPECT_FALSE(after.count({v, u}));
  }
  EXPECT_EQ(after.size(), before.size() - 6);
  EXPECT_EQ(s.removed_from_graph, 3);
  // Valid negatives were not given: as many as positives, no edges of the
  // graph before the split, no self loops, no repeats.
  const Pairs negatives = PairsOf(d.edge_splits.at("valid_neg"));
  EXPECT_EQ(negatives.size(), 2u);
  for (const auto& [u, v] : negatives) {
    EXPECT_NE(u, v);
    EXPECT_FALSE(before.count({u, v}));
    EXPECT_FALSE(before.count({v, u}));
  }
  // Seeded.
  Dataset again = original;
  ASSERT_OK(ApplyGivenEdgeSplit(given, 7, &again).status());
  EXPECT_EQ(again.edge_splits, d.edge_splits);
}

TEST(EdgeSplitTest, BadGivenSplitsAreRefused) {
  GivenEdgeSplit good;
  good.pairs["train"] = {0, 1};
  good.pairs["valid"] = {2, 3};
  good.pairs["test"] = {4, 5};
  struct Case {
    std::string name;
    std::function<void(GivenEdgeSplit*)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"out of range", [](GivenEdgeSplit* g) { g->pairs["test"][1] = 40; },
       "test pair 0 names node 40, outside [0, 40)"},
      {"negative id", [](GivenEdgeSplit* g) { g->pairs["valid"][0] = -1; },
       "valid pair 0 names node -1"},
      {"no train", [](GivenEdgeSplit* g) { g->pairs["train"].clear(); },
       "no train edge"},
      {"missing valid", [](GivenEdgeSplit* g) { g->pairs.erase("valid"); },
       "no valid split"},
      {"unknown name",
       [](GivenEdgeSplit* g) {
         g->pairs["extra"] = {1, 2};
       },
       "unknown edge split 'extra'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GivenEdgeSplit given = good;
    c.spoil(&given);
    Dataset d = Ring(40);
    const std::vector<NodeId> indices = d.indices;
    absl::StatusOr<EdgeSplitSummary> s = ApplyGivenEdgeSplit(given, 0, &d);
    ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.message), std::string::npos)
        << s.status();
    EXPECT_EQ(d.indices, indices);
    EXPECT_TRUE(d.edge_splits.empty());
  }
}

}  // namespace
}  // namespace shardgnn
