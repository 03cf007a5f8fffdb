#include "sampler/neighbor_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include "common/sampling.h"
#include "tests/sampler/check_minibatch.h"
#include "tests/sampler/test_graph.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using testing::TestGraph;

class NeighborSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto source = InMemoryGraphSource::Create(graph_.arrays());
    ASSERT_OK(source);
    source_ = std::move(source).value();
  }
  std::unique_ptr<NeighborSampler> MakeSampler(std::vector<int> fanouts,
                                               bool replace) {
    SamplerOptions options;
    options.fanouts = std::move(fanouts);
    options.replace = replace;
    auto sampler = NeighborSampler::Create(source_.get(), options);
    EXPECT_OK(sampler);
    return sampler.ok() ? std::move(sampler).value() : nullptr;
  }
  std::vector<NodeId> Seeds() const { return {5, 17, 3, 999, 42, 0, 600}; }

  TestGraph graph_{1000, 30, 7};
  std::unique_ptr<InMemoryGraphSource> source_;
};

void CheckBatch(const TestGraph& graph, const MiniBatch& batch,
                const std::vector<int>& fanouts, bool replace) {
  testing::CheckMiniBatch(graph, batch, fanouts, replace);
}

TEST_F(NeighborSamplerTest, BlocksAreConsistentWithoutReplacement) {
  std::vector<int> fanouts = {5, 3, 2};
  auto sampler = MakeSampler(fanouts, false);
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(Seeds(), 123));
  CheckBatch(graph_, batch, fanouts, false);
  EXPECT_GT(batch.input_nodes.size(), batch.seeds.size() * 3);
}

TEST_F(NeighborSamplerTest,
       BlocksAreConsistentWithReplacementAndFullNeighborhoods) {
  for (bool replace : {true, false}) {
    std::vector<int> fanouts = {-1, 40, 4};
    auto sampler = MakeSampler(fanouts, replace);
    ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(Seeds(), 9));
    CheckBatch(graph_, batch, fanouts, replace);
  }
}

TEST_F(NeighborSamplerTest, FollowsTheDeterminismContract) {
  // Hop h of node v is exactly SampleNeighbors(adj(v), deg, fanouts[h],
  // replace, MixSeed(seed, h), v), and new nodes get local indices in
  // first-appearance order.
  std::vector<int> fanouts = {4, 3};
  auto sampler = MakeSampler(fanouts, false);
  const uint64_t seed = 77;
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(Seeds(), seed));
  std::vector<NodeId> expected_nodes = Seeds();
  for (int h = 0; h < 2; ++h) {
    const Block& block = batch.blocks[1 - h];
    const size_t num_dst = expected_nodes.size();
    ASSERT_EQ(block.num_dst, static_cast<int64_t>(num_dst));
    for (size_t i = 0; i < num_dst; ++i) {
      const NodeId v = expected_nodes[i];
      Int64Buffer want;
      SampleNeighbors(graph_.indices.data() + graph_.indptr[v],
                      graph_.Degree(v), fanouts[h], false, MixSeed(seed, h), v,
                      &want);
      std::vector<NodeId> got;
      for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e)
        got.push_back(batch.input_nodes[block.indices[e]]);
      EXPECT_EQ(got, std::vector<NodeId>(want.begin(), want.end()))
          << "hop " << h << " node " << v;
      for (NodeId u : want) {
        if (std::find(expected_nodes.begin(), expected_nodes.end(), u) ==
            expected_nodes.end())
          expected_nodes.push_back(u);
      }
    }
  }
  EXPECT_EQ(
      std::vector<NodeId>(batch.input_nodes.begin(), batch.input_nodes.end()),
      expected_nodes);
}

TEST_F(NeighborSamplerTest, SameSeedSameBatchDifferentSeedDifferentBatch) {
  auto sampler = MakeSampler({6, 4}, false);
  ASSERT_OK_AND_ASSIGN(MiniBatch a, sampler->Sample(Seeds(), 1));
  ASSERT_OK_AND_ASSIGN(MiniBatch b, sampler->Sample(Seeds(), 1));
  ASSERT_OK_AND_ASSIGN(MiniBatch c, sampler->Sample(Seeds(), 2));
  EXPECT_EQ(a.input_nodes, b.input_nodes);
  for (size_t l = 0; l < a.blocks.size(); ++l) {
    EXPECT_EQ(a.blocks[l].indptr, b.blocks[l].indptr);
    EXPECT_EQ(a.blocks[l].indices, b.blocks[l].indices);
  }
  EXPECT_EQ(a.features, b.features);
  EXPECT_NE(a.input_nodes, c.input_nodes);
}

TEST_F(NeighborSamplerTest, RejectsBadInput) {
  auto sampler = MakeSampler({2}, false);
  absl::StatusOr<MiniBatch> repeated =
      sampler->Sample(std::vector<NodeId>{1, 2, 1}, 0);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(repeated.status().message()).find("seed node 1"),
            std::string::npos);
  absl::StatusOr<MiniBatch> out_of_range =
      sampler->Sample(std::vector<NodeId>{1, 5000}, 0);
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(out_of_range.status().message()).find("5000"),
            std::string::npos);
  SamplerOptions bad;
  bad.fanouts = {};
  EXPECT_FALSE(NeighborSampler::Create(source_.get(), bad).ok());
  bad.fanouts = {3, -2};
  EXPECT_FALSE(NeighborSampler::Create(source_.get(), bad).ok());
}

// Single-threaded throughput on a 200k-node random graph (average degree about
// 20), fanouts [15, 10, 5], batch 1024. Slow to set up; run with
// --gtest_also_run_disabled_tests.
TEST(NeighborSamplerThroughput, DISABLED_RandomGraph200k) {
  TestGraph graph(200000, 40, 1);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  SamplerOptions options;
  options.fanouts = {15, 10, 5};
  options.fetch_features = false;
  options.fetch_labels = false;
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source.get(), options));
  std::vector<NodeId> order(graph.indptr.size() - 1);
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<NodeId>((i * 7919) % order.size());
  for (int threads : {1, 2}) {
    // Thread t samples batches t, t + threads, ... with the one shared sampler.
    std::vector<SampleStats> stats(threads);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        MiniBatch batch;
        for (size_t begin = 1024 * t; begin + 1024 <= order.size();
             begin += 1024 * threads) {
          EXPECT_OK(sampler->Sample(
              absl::MakeConstSpan(order).subspan(begin, 1024), begin, &batch));
          AccumulateStats(batch, &stats[t]);
        }
      });
    }
    for (auto& w : workers) w.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    SampleStats total;
    for (const SampleStats& s : stats) {
      total.seeds += s.seeds;
      total.sampled_edges += s.sampled_edges;
      total.input_nodes += s.input_nodes;
    }
    std::printf(
        "{\"threads\": %d, \"nodes\": 200000, \"edges\": %zu, \"fanouts\": "
        "[15,10,5], \"batch\": 1024, "
        "\"seconds\": %.3f, \"seeds_per_s\": %.0f, \"sampled_edges_per_s\": "
        "%.0f, \"input_nodes_per_batch\": "
        "%.0f}\n",
        threads, graph.indices.size(), seconds, total.seeds / seconds,
        total.sampled_edges / seconds,
        1024.0 * total.input_nodes / total.seeds);
    EXPECT_GT(total.sampled_edges, 0);
  }
}

}  // namespace
}  // namespace shardgnn
