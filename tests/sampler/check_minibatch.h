// One check of every structural property of a sampled minibatch against the
// graph it was sampled from, for the in-process and the distributed sampler
// tests alike.
#ifndef SHARDGNN_TESTS_SAMPLER_CHECK_MINIBATCH_H_
#define SHARDGNN_TESTS_SAMPLER_CHECK_MINIBATCH_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "common/sampling.h"
#include "sampler/minibatch.h"

namespace shardgnn::testing {

// Graph: Degree(v), HasEdge(v, u), features (row-major, feature_dim wide) and
// labels indexed by node ID. `fanouts` are the sampler's, seed layer first.
template <typename Graph>
void CheckMiniBatch(const Graph& graph, const MiniBatch& batch,
                    const std::vector<int>& fanouts, bool replace) {
  const int layers = static_cast<int>(fanouts.size());
  ASSERT_EQ(batch.blocks.size(), fanouts.size());
  // Input nodes are unique and start with the seeds.
  std::set<NodeId> unique(batch.input_nodes.begin(), batch.input_nodes.end());
  EXPECT_EQ(unique.size(), batch.input_nodes.size());
  ASSERT_GE(batch.input_nodes.size(), batch.seeds.size());
  EXPECT_TRUE(std::equal(batch.seeds.begin(), batch.seeds.end(),
                         batch.input_nodes.begin()));
  EXPECT_EQ(batch.blocks.back().num_dst,
            static_cast<int64_t>(batch.seeds.size()));
  EXPECT_EQ(batch.blocks.front().num_src,
            static_cast<int64_t>(batch.input_nodes.size()));
  for (int l = 0; l < layers; ++l) {
    const Block& block = batch.blocks[l];
    const int fanout = fanouts[layers - 1 - l];
    ASSERT_EQ(block.indptr.size(), static_cast<size_t>(block.num_dst + 1));
    EXPECT_LE(block.num_dst, block.num_src);
    EXPECT_EQ(block.indptr.back(), block.num_edges());
    // The next layer's sources are this layer's destinations (a prefix).
    if (l + 1 < layers) {
      EXPECT_EQ(block.num_dst, batch.blocks[l + 1].num_src);
    }
    for (int64_t i = 0; i < block.num_dst; ++i) {
      const NodeId dst = batch.input_nodes[i];
      EXPECT_EQ(block.indptr[i + 1] - block.indptr[i],
                SampledCount(graph.Degree(dst), fanout, replace))
          << "dst " << dst << " layer " << l;
      std::set<NodeId> seen;
      for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e) {
        ASSERT_GE(block.indices[e], 0);
        ASSERT_LT(block.indices[e], block.num_src);
        const NodeId src = batch.input_nodes[block.indices[e]];
        ASSERT_TRUE(graph.HasEdge(dst, src)) << dst << " -> " << src;
        if (!replace) {
          EXPECT_TRUE(seen.insert(src).second)
              << "duplicate neighbor " << src << " of " << dst;
        }
      }
    }
  }
  // Features (bit-exact) and labels belong to the right nodes.
  const int64_t dim = graph.feature_dim;
  ASSERT_EQ(batch.feature_dim, dim);
  ASSERT_EQ(batch.features.size(), batch.input_nodes.size() * dim);
  for (size_t i = 0; i < batch.input_nodes.size(); ++i) {
    ASSERT_EQ(std::memcmp(&batch.features[i * dim],
                          &graph.features[batch.input_nodes[i] * dim],
                          dim * sizeof(float)),
              0)
        << "features of node " << batch.input_nodes[i];
  }
  ASSERT_EQ(batch.labels.size(), batch.seeds.size());
  for (size_t i = 0; i < batch.seeds.size(); ++i)
    EXPECT_EQ(batch.labels[i], graph.labels[batch.seeds[i]]);
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_SAMPLER_CHECK_MINIBATCH_H_
