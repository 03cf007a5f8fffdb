#include "datasets/edge_split.h"

#include <gtest/gtest.h>

#include <set>
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

}  // namespace
}  // namespace shardgnn
