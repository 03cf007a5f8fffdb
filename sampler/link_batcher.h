// Minibatches of link prediction: node pairs to score, with the sampled
// neighborhoods of their endpoints.
//
// A training batch is a slice of the train edges (the positives) and, for each
// positive (u, v), `negatives` pairs (u, w) with w drawn by a NegativeSampler
// (the destination corrupted, as DGL's and PyG's samplers do). The batch's
// seeds are the pairs' distinct endpoints in first-appearance order; pairs are
// local indices of seeds (MiniBatch::pair_src, pair_dst, pair_labels). The
// positives' own edges, in both directions, are excluded from the sampled
// neighborhoods (NeighborSampler's ExcludedEdges), so that the model never
// reads the edge it is asked to predict.
//
// Randomness: negative j of positive i is drawn from
// MixSeed(MixSeed(batch_seed, kNegativeStream), i * negatives + j)'s stream,
// the neighborhoods are sampled with batch_seed: a batch is a pure function of
// its items and seed.
#ifndef SHARDGNN_SAMPLER_LINK_BATCHER_H_
#define SHARDGNN_SAMPLER_LINK_BATCHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "sampler/graph_source.h"
#include "sampler/minibatch.h"
#include "sampler/neighbor_sampler.h"

namespace shardgnn {

enum class NegativeSampling {
  kUniform,  // Every node alike.
  kDegree,   // Proportional to degree^0.75 (word2vec's unigram^0.75).
};
// "uniform", "degree" (ParseNegativeSampling reads them back).
const char* NegativeSamplingName(NegativeSampling sampling);
absl::StatusOr<NegativeSampling> ParseNegativeSampling(const std::string& name);

// Draws negative destinations. Thread-safe after Create (const).
class NegativeSampler {
 public:
  // kDegree reads every node's degree from `source` (8 bytes per node kept).
  // `known_edges` (flattened pairs u0, v0, u1, v1, ...; may be empty) are the
  // pairs a negative must never be, in either direction, when `filter` is
  // set: Draw redraws until the pair is not one of them (nor a self loop).
  static absl::StatusOr<std::unique_ptr<NegativeSampler>> Create(
      const GraphSource& source, NegativeSampling sampling,
      absl::Span<const NodeId> known_edges, bool filter);

  // A negative destination for source node `u` from the generator `state`.
  // Fails (naming u) if `max_draws` draws all hit known edges.
  absl::StatusOr<NodeId> Draw(NodeId u, uint64_t* state,
                              int max_draws = 100) const;

  int64_t num_nodes() const { return num_nodes_; }

 private:
  NegativeSampler() = default;
  NodeId DrawOne(uint64_t* state) const;

  int64_t num_nodes_ = 0;
  NegativeSampling sampling_ = NegativeSampling::kUniform;
  std::vector<double> cdf_;  // kDegree: cumulative degree^0.75.
  bool filter_ = false;
  absl::flat_hash_set<std::pair<NodeId, NodeId>> known_;
};

struct LinkBatchOptions {
  int negatives = 1;            // Per positive.
  bool exclude_targets = true;  // Off only to show what leakage does.
};

// Makes link-prediction minibatches; Make() is a loader BatchFn
// (sampler/loader.h) over indices of `edges`' pairs. Borrows everything.
class LinkBatcher {
 public:
  // `edges`: flattened positive pairs; `negatives` may be null when
  // options.negatives is 0.
  LinkBatcher(const NeighborSampler* sampler, absl::Span<const NodeId> edges,
              const NegativeSampler* negatives, LinkBatchOptions options);

  // The batch of positive pairs `items` (indices of pairs in `edges`) and
  // their negatives. Fails on an index out of range.
  absl::Status Make(absl::Span<const int64_t> items, uint64_t batch_seed,
                    MiniBatch* out) const;

 private:
  const NeighborSampler* sampler_;
  absl::Span<const NodeId> edges_;
  const NegativeSampler* negatives_;
  LinkBatchOptions options_;
};

// Samples the neighborhoods of the endpoints of the given pairs (flattened;
// `labels` one per pair) into *out, with pair_src/pair_dst/pair_labels set;
// `exclude` (may be null) as NeighborSampler::Sample. Fails on a pair naming
// a node outside [0, num_nodes).
absl::Status SamplePairs(const NeighborSampler& sampler,
                         absl::Span<const NodeId> pairs,
                         absl::Span<const float> labels, uint64_t batch_seed,
                         const ExcludedEdges* exclude, MiniBatch* out);

// Checks that every ID of the flattened pairs `pairs` (named `what` in the
// error) is a node of a graph of `num_nodes` nodes, and that they are pairs.
absl::Status CheckPairs(absl::Span<const NodeId> pairs, int64_t num_nodes,
                        const std::string& what);

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_LINK_BATCHER_H_
