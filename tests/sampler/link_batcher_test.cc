#include "sampler/link_batcher.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "common/sampling.h"
#include "sampler/graph_source.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

// An undirected graph in memory from an edge list, with 2-wide features.
struct Graph {
  std::vector<int64_t> indptr;
  std::vector<NodeId> indices;
  std::vector<float> features;
  std::set<std::pair<NodeId, NodeId>> edges;  // Both directions.
  std::unique_ptr<InMemoryGraphSource> source;

  Graph(int64_t n, const std::vector<std::pair<NodeId, NodeId>>& list) {
    std::vector<std::vector<NodeId>> adj(static_cast<size_t>(n));
    for (auto [u, v] : list) {
      if (!edges.insert({u, v}).second) continue;
      edges.insert({v, u});
      adj[u].push_back(v);
      adj[v].push_back(u);
    }
    indptr.push_back(0);
    for (const auto& row : adj) {
      indices.insert(indices.end(), row.begin(), row.end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
    }
    features.assign(static_cast<size_t>(2 * n), 1.0f);
    GraphArrays a;
    a.indptr = indptr;
    a.indices = indices;
    a.features = features;
    a.feature_dim = 2;
    source = InMemoryGraphSource::Create(a).value();
  }
};

// A ring of n nodes with chords v -- v + 7.
std::vector<std::pair<NodeId, NodeId>> RingWithChords(int64_t n) {
  std::vector<std::pair<NodeId, NodeId>> list;
  for (NodeId v = 0; v < n; ++v) {
    list.push_back({v, (v + 1) % n});
    list.push_back({v, (v + 7) % n});
  }
  return list;
}

// Every message edge (destination, source) of the batch's blocks, as global
// IDs.
std::set<std::pair<NodeId, NodeId>> MessageEdges(const MiniBatch& batch) {
  std::set<std::pair<NodeId, NodeId>> out;
  for (const Block& b : batch.blocks) {
    for (int64_t i = 0; i < b.num_dst; ++i) {
      for (int64_t k = b.indptr[i]; k < b.indptr[i + 1]; ++k)
        out.insert({batch.input_nodes[i], batch.input_nodes[b.indices[k]]});
    }
  }
  return out;
}

std::unique_ptr<NeighborSampler> AllNeighbors(const GraphSource* source) {
  SamplerOptions options;
  options.fanouts = {-1, -1};
  options.fetch_labels = false;
  return NeighborSampler::Create(source, options).value();
}

TEST(LinkBatcherTest, TargetEdgesAreExcludedInBothDirections) {
  Graph g(40, RingWithChords(40));
  auto sampler = AllNeighbors(g.source.get());
  const std::vector<NodeId> train = {0, 1, 10, 17, 5, 6};
  ASSERT_OK_AND_ASSIGN(
      auto negatives,
      NegativeSampler::Create(*g.source, NegativeSampling::kUniform, {},
                              /*filter=*/false));
  LinkBatchOptions options;
  options.negatives = 2;
  LinkBatcher batcher(sampler.get(), train, negatives.get(), options);
  MiniBatch batch;
  ASSERT_OK(batcher.Make({0, 1}, 7, &batch));
  const auto edges = MessageEdges(batch);
  for (auto [u, v] :
       {std::pair<NodeId, NodeId>{0, 1}, {1, 0}, {10, 17}, {17, 10}}) {
    EXPECT_EQ(edges.count({u, v}), 0u) << u << " <- " << v;
  }
  // The endpoints' other edges stay: 0's ring neighbor 39 and chord 7.
  EXPECT_EQ(edges.count({0, 39}), 1u);
  EXPECT_EQ(edges.count({0, 7}), 1u);

  // Without exclusion the model would read the targets (the control).
  options.exclude_targets = false;
  LinkBatcher leaky(sampler.get(), train, negatives.get(), options);
  ASSERT_OK(leaky.Make({0, 1}, 7, &batch));
  EXPECT_EQ(MessageEdges(batch).count({0, 1}), 1u);
  EXPECT_EQ(MessageEdges(batch).count({17, 10}), 1u);
}

TEST(LinkBatcherTest, PairsNameTheirEndpointsAndNegativesFollowPositives) {
  Graph g(40, RingWithChords(40));
  auto sampler = AllNeighbors(g.source.get());
  const std::vector<NodeId> train = {0, 1, 10, 17, 5, 6};
  ASSERT_OK_AND_ASSIGN(auto negatives,
                       NegativeSampler::Create(
                           *g.source, NegativeSampling::kUniform, {}, false));
  LinkBatchOptions options;
  options.negatives = 3;
  LinkBatcher batcher(sampler.get(), train, negatives.get(), options);
  MiniBatch batch;
  ASSERT_OK(batcher.Make({2, 0}, 11, &batch));
  ASSERT_EQ(batch.pair_src.size(), 2u * 4);
  ASSERT_EQ(batch.pair_labels.size(), 2u * 4);
  EXPECT_EQ(batch.seeds[batch.pair_src[0]], 5);
  EXPECT_EQ(batch.seeds[batch.pair_dst[0]], 6);
  EXPECT_EQ(batch.seeds[batch.pair_src[1]], 0);
  EXPECT_EQ(batch.seeds[batch.pair_dst[1]], 1);
  for (size_t i = 0; i < batch.pair_labels.size(); ++i) {
    EXPECT_EQ(batch.pair_labels[i], i < 2 ? 1.0f : 0.0f);
    // A negative corrupts its positive's destination: same source.
    if (i >= 2) {
      EXPECT_EQ(batch.seeds[batch.pair_src[i]], i < 5 ? 5 : 0);
    }
  }
  // Seeds are distinct.
  std::set<NodeId> seeds(batch.seeds.begin(), batch.seeds.end());
  EXPECT_EQ(seeds.size(), batch.seeds.size());

  // The same items and seed give the same batch.
  MiniBatch again;
  ASSERT_OK(batcher.Make({2, 0}, 11, &again));
  EXPECT_EQ(again.seeds, batch.seeds);
  EXPECT_EQ(again.input_nodes, batch.input_nodes);
  EXPECT_EQ(again.pair_dst, batch.pair_dst);
  EXPECT_FALSE(batcher.Make({3}, 11, &again).ok());  // Only 3 edges.
}

// A dense graph: each node adjacent to half of the others.
std::vector<std::pair<NodeId, NodeId>> Dense(int64_t n) {
  std::vector<std::pair<NodeId, NodeId>> list;
  for (NodeId u = 0; u < n; ++u)
    for (NodeId v = u + 1; v < n; ++v)
      if ((u + v) % 2 == 1) list.push_back({u, v});
  return list;
}

TEST(NegativeSamplerTest, FilteredNegativesAreNeverKnownEdgesNorSelfLoops) {
  Graph g(30, Dense(30));
  std::vector<NodeId> known;
  for (auto [u, v] : Dense(30)) {
    known.push_back(u);
    known.push_back(v);
  }
  ASSERT_OK_AND_ASSIGN(auto filtered, NegativeSampler::Create(
                                          *g.source, NegativeSampling::kUniform,
                                          known, /*filter=*/true));
  ASSERT_OK_AND_ASSIGN(
      auto unfiltered,
      NegativeSampler::Create(*g.source, NegativeSampling::kUniform, known,
                              /*filter=*/false));
  int unfiltered_hits = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    const NodeId u = static_cast<NodeId>(i % 30);
    uint64_t state = MixSeed(5, i);
    ASSERT_OK_AND_ASSIGN(NodeId w, filtered->Draw(u, &state));
    EXPECT_NE(w, u);
    EXPECT_EQ(g.edges.count({u, w}), 0u) << u << " " << w;
    state = MixSeed(5, i);
    ASSERT_OK_AND_ASSIGN(NodeId x, unfiltered->Draw(u, &state));
    unfiltered_hits += g.edges.count({u, x}) > 0;
  }
  // Unfiltered, about half of the draws are edges: the check above can fail.
  EXPECT_GT(unfiltered_hits, 1000);
}

TEST(NegativeSamplerTest, AFullyConnectedNodeGetsAClearError) {
  // Node 0 is adjacent to every other node: no negative exists for it.
  std::vector<std::pair<NodeId, NodeId>> star;
  std::vector<NodeId> known;
  for (NodeId v = 1; v < 10; ++v) {
    star.push_back({0, v});
    known.push_back(0);
    known.push_back(v);
  }
  Graph g(10, star);
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NegativeSampler::Create(
                           *g.source, NegativeSampling::kUniform, known, true));
  uint64_t state = 1;
  absl::StatusOr<NodeId> w = sampler->Draw(0, &state);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("node 0"),
            std::string::npos);
}

TEST(NegativeSamplerTest, DegreeSamplingFollowsDegreeToTheThreeQuarters) {
  // A star: the center has degree 99, each leaf 1.
  std::vector<std::pair<NodeId, NodeId>> star;
  for (NodeId v = 1; v < 100; ++v) star.push_back({0, v});
  Graph g(100, star);
  ASSERT_OK_AND_ASSIGN(
      auto sampler,
      NegativeSampler::Create(*g.source, NegativeSampling::kDegree, {}, false));
  int center = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    uint64_t state = MixSeed(3, static_cast<uint64_t>(i));
    ASSERT_OK_AND_ASSIGN(NodeId w, sampler->Draw(50, &state));
    center += w == 0;
  }
  const double expected = std::pow(99.0, 0.75) / (std::pow(99.0, 0.75) + 99);
  EXPECT_NEAR(static_cast<double>(center) / draws, expected, 0.02);
  // Uniform would give the center 1 %.
  EXPECT_GT(expected, 0.2);
}

TEST(LinkPairsTest, PairsOutsideTheGraphAreRejectedByName) {
  const std::vector<NodeId> pairs = {0, 1, 2, 99};
  absl::Status s = CheckPairs(pairs, 50, "test edges");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("test edges: pair 1 names node 99"),
            std::string::npos)
      << s;
  EXPECT_FALSE(CheckPairs({0, 1, 2}, 50, "x").ok());  // Not pairs.
  EXPECT_OK(CheckPairs({0, 1, 2, 49}, 50, "x"));
}

}  // namespace
}  // namespace shardgnn
