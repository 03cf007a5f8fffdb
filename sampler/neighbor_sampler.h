// Multi-hop neighbor sampling: turns a batch of seed nodes into a MiniBatch
// (blocks, input features, labels) over any GraphSource.
//
// Determinism contract (the distributed sampler reproduces it exactly, so that
// a fixed seed gives the same minibatch whether the graph is in memory or
// spread over storage servers):
//   * Hops are numbered from the seeds outward: hop 0 samples the seeds'
//   neighbors with fanouts[0] and yields
//     blocks.back(); hop h uses fanouts[h] and yields blocks[L-1-h] (the
//     DGL/PyG convention: fanouts[0] is for the seeds' hop). So fanouts [15,
//     10, 5] sample 15 neighbors per seed and 5 per node of the outermost hop.
//   * Hop h's seed is MixSeed(batch_seed, h) (common/sampling.h), and node v's
//   neighbors in hop h are exactly
//     SampleNeighbors(adj(v), degree(v), fanouts[h], replace,
//     MixSeed(batch_seed, h), v).
//   * Local indices: the seeds first, in the order given; then each hop appends
//   the nodes not seen before, in
//     first-appearance order, scanning its destinations in order and each
//     destination's sampled neighbors in the order SampleNeighbors returns
//     them. A node keeps its local index in every block.
//   * Excluded edges (link prediction's target edges): after each hop is
//   sampled, the sampled neighbors u of a destination v with (v, u) in the
//   exclusion set are dropped (before local indices are given), so neither
//   the blocks nor the input nodes reveal them. A destination keeps fewer
//   than its fanout then (DGL's exclude-after-sampling); the other nodes'
//   samples do not change.
//   * Hop h's destinations are all nodes seen before it (the frontier is
//   deduplicated), so every block's
//     destinations are a prefix of its sources and every block's sources are a
//     prefix of input_nodes.
#ifndef SHARDGNN_SAMPLER_NEIGHBOR_SAMPLER_H_
#define SHARDGNN_SAMPLER_NEIGHBOR_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "sampler/graph_source.h"
#include "sampler/minibatch.h"

namespace shardgnn {
namespace internal {
class BlockBuilder;
}  // namespace internal

struct SamplerOptions {
  // One entry per layer; fanouts[0] is the seeds' hop (see above). -1 takes all
  // neighbors.
  std::vector<int> fanouts = {15, 10, 5};
  bool replace = false;        // Sample with replacement.
  bool fetch_features = true;  // Fill MiniBatch::features for input_nodes.
  bool fetch_labels = true;    // Fill MiniBatch::labels for the seeds.
  // Fill MiniBatch::degrees for input_nodes (GCN's normalisation).
  bool fetch_degrees = false;
  // Fill each block's edge features (Block::edge_features) from the source's
  // (GraphSource::SampleNeighborsWithEdges); untyped graphs with edge
  // features only.
  bool fetch_edge_features = false;
  // Typed graphs (GraphSource::schema()): hop h samples each relation r with
  // relation_fanouts[h][r] (GraphSource::SampleTypedNeighbors); empty: every
  // relation with fanouts[h]. The blocks carry each edge's relation, and the
  // batch its input nodes' types and per-type features (MiniBatch).
  std::vector<std::vector<int>> relation_fanouts;
};

// Directed node pairs (v, u) whose edge v <- u no sample may use. Link
// prediction excludes its target edges in both directions.
using ExcludedEdges = absl::flat_hash_set<std::pair<NodeId, NodeId>>;

// Counters a sampler accumulates (for throughput figures).
struct SampleStats {
  int64_t seeds = 0;
  int64_t sampled_edges = 0;  // Sum of num_edges() over all blocks.
  int64_t input_nodes = 0;
};

// Builds minibatches from a GraphSource it does not own (the source must
// outlive the sampler). Thread-safe: Sample() keeps no state between calls, so
// several threads may sample different batches at once.
class NeighborSampler {
 public:
  // Fails if fanouts is empty or has an entry below -1, or the source is null;
  // for a typed source also if relation_fanouts is given but not one list of
  // one fanout per relation for each hop.
  static absl::StatusOr<std::unique_ptr<NeighborSampler>> Create(
      const GraphSource* source, SamplerOptions options);

  ~NeighborSampler();
  NeighborSampler(const NeighborSampler&) = delete;
  NeighborSampler& operator=(const NeighborSampler&) = delete;

  // Samples the neighborhood of `seeds` (distinct IDs) with `batch_seed`. Fails
  // on a repeated seed or on any GraphSource error (an ID out of range names
  // the ID). On success *out is overwritten (its buffers reused).
  // `exclude` (may be null or empty) names edges the sample must not use.
  absl::Status Sample(absl::Span<const NodeId> seeds, uint64_t batch_seed,
                      MiniBatch* out,
                      const ExcludedEdges* exclude = nullptr) const;
  absl::StatusOr<MiniBatch> Sample(absl::Span<const NodeId> seeds,
                                   uint64_t batch_seed) const;

  const SamplerOptions& options() const { return options_; }
  int num_layers() const { return static_cast<int>(options_.fanouts.size()); }

 private:
  NeighborSampler(const GraphSource* source, SamplerOptions options);
  absl::Status SampleWith(absl::Span<const NodeId> seeds, uint64_t batch_seed,
                          const ExcludedEdges* exclude,
                          internal::BlockBuilder* builder,
                          MiniBatch* out) const;
  // Typed graphs: each input node's type and the per-type feature rows.
  absl::Status FetchTypedInputs(MiniBatch* out) const;
  std::unique_ptr<internal::BlockBuilder> AcquireBuilder() const;
  void ReleaseBuilder(std::unique_ptr<internal::BlockBuilder> builder) const;

  const GraphSource* source_;
  SamplerOptions options_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<internal::BlockBuilder>> idle_builders_
      ABSL_GUARDED_BY(mu_);
};

// Adds `batch`'s sizes to *stats.
void AccumulateStats(const MiniBatch& batch, SampleStats* stats);

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_NEIGHBOR_SAMPLER_H_
