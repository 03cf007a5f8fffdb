// Turns sampled neighbor lists into message-flow blocks with local indices.
// Knows nothing about where the neighbors came from (in memory or remote), so
// every sampler builds identical blocks from identical samples.
#ifndef SHARDGNN_SAMPLER_INTERNAL_BLOCK_BUILDER_H_
#define SHARDGNN_SAMPLER_INTERNAL_BLOCK_BUILDER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "sampler/minibatch.h"

namespace shardgnn::internal {

// Assigns local indices to global IDs in first-appearance order and records
// each hop as a Block.
//
// Usage: Reset(seeds); then per hop, sample the neighbors of frontier() and
// call AddHop(). A node keeps the same local index in every block, so each
// block's sources are a prefix of nodes(). For graphs of up to kDenseMapLimit
// nodes the global-to-local map is a flat array (about 4 bytes per graph node,
// kept between batches, only touched entries reset), otherwise a hash map. Not
// thread-safe; reusable.
class BlockBuilder {
 public:
  static constexpr int64_t kDenseMapLimit = int64_t{1} << 25;

  // `num_nodes`: IDs must lie in [0, num_nodes).
  explicit BlockBuilder(int64_t num_nodes);

  // Starts a minibatch whose first destinations are `seeds`. Fails if a seed
  // repeats or is out of range.
  absl::Status Reset(absl::Span<const NodeId> seeds);

  // The destinations of the next hop: every node seen so far, in local-index
  // order.
  absl::Span<const NodeId> frontier() const { return nodes_; }

  // Adds the block whose destinations are the current frontier: destination i
  // aggregates from the local indices of neighbors[offset_i .. offset_i +
  // counts[i]). New sources are appended in first-appearance order. Fails
  // (naming the ID) if a neighbor is out of range, or if counts do not match
  // the frontier and neighbors.
  absl::Status AddHop(absl::Span<const int64_t> counts,
                      absl::Span<const NodeId> neighbors, Block* block);
  // The same for a typed hop: `relations` (one per neighbor) become the
  // block's relations.
  absl::Status AddTypedHop(absl::Span<const int64_t> counts,
                           absl::Span<const NodeId> neighbors,
                           absl::Span<const int32_t> relations, Block* block);

  // Every node seen, in local-index order (the input nodes once all hops are
  // added).
  const Int64Buffer& nodes() const { return nodes_; }

  // Scratch for a hop's sampled neighbors, kept with the builder (which the
  // sampler pools) so that its memory serves batch after batch.
  SampledNeighbors& hop_sample() { return hop_sample_; }

 private:
  void Clear();
  int64_t LocalIndex(NodeId node);

  int64_t num_nodes_;
  bool dense_;
  std::vector<int32_t> dense_map_;  // -1 = not seen; used when dense_
  absl::flat_hash_map<NodeId, int64_t> hash_map_;
  Int64Buffer nodes_;
  SampledNeighbors hop_sample_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_BLOCK_BUILDER_H_
