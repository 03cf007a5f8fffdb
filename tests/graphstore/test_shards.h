// A small random graph with features, labels and splits, and a helper that
// writes it as contiguous-range shards with ShardWriter: the fixture for the
// graphstore tests (independent of the real partitioner).
#ifndef SHARDGNN_TESTS_GRAPHSTORE_TEST_SHARDS_H_
#define SHARDGNN_TESTS_GRAPHSTORE_TEST_SHARDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "graphstore/shard_format.h"

namespace shardgnn::testing {

struct TestGraph {
  int64_t num_nodes = 0;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  std::vector<int64_t> offsets;   // CSR [num_nodes + 1]
  std::vector<NodeId> neighbors;  // Sorted, distinct per node.
  std::vector<float> features;    // [num_nodes, feature_dim]
  std::vector<int64_t> labels;    // -1 = unlabeled
  std::vector<NodeId> train, valid;

  absl::Span<const NodeId> Neighbors(NodeId v) const {
    return absl::MakeConstSpan(neighbors.data() + offsets[v],
                               offsets[v + 1] - offsets[v]);
  }
  const float* Row(NodeId v) const { return features.data() + v * feature_dim; }
};

// Node 0 is isolated, node 1 is a hub (degree ~num_nodes/2), the rest have
// degree 0..40. Deterministic for a seed.
TestGraph MakeTestGraph(int64_t num_nodes, int64_t feature_dim,
                        uint64_t seed = 1);

// Writes part p of `num_parts` equal contiguous ranges to dir/part-p for
// every p. Returns the shard metadata in part order.
absl::StatusOr<std::vector<ShardMeta>> WriteTestShards(const TestGraph& graph,
                                                       int num_parts,
                                                       const std::string& dir);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_GRAPHSTORE_TEST_SHARDS_H_
