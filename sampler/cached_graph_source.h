// A GraphSource decorator that serves feature rows from a FeatureCache and
// fetches only the misses from the source beneath (the storage servers), plus
// the two ways of choosing what a static cache holds.
#ifndef SHARDGNN_SAMPLER_CACHED_GRAPH_SOURCE_H_
#define SHARDGNN_SAMPLER_CACHED_GRAPH_SOURCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/feature_cache.h"
#include "sampler/graph_source.h"
#include "sampler/neighbor_sampler.h"

namespace shardgnn {

// Passes sampling, labels and typed graphs' calls through; FetchFeatures looks
// rows up in the cache, fetches the misses from `inner` in one call, and (for a
// CLOCK cache) inserts them. Rows are bit-identical to the inner source's.
// Thread-safe if `inner` is. Does not own `inner` or `cache`, which must
// outlive it.
class CachedGraphSource : public GraphSource {
 public:
  CachedGraphSource(const GraphSource* inner, FeatureCache* cache)
      : inner_(inner), cache_(cache) {}

  int64_t num_nodes() const override { return inner_->num_nodes(); }
  int64_t feature_dim() const override { return inner_->feature_dim(); }
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
    return inner_->SampleNeighbors(nodes, fanout, replace, seed, out);
  }
  absl::Status FetchFeatures(absl::Span<const NodeId> nodes,
                             float* out) const override;
  absl::Status FetchLabels(absl::Span<const NodeId> nodes,
                           int64_t* out) const override {
    return inner_->FetchLabels(nodes, out);
  }
  absl::Status FetchDegrees(absl::Span<const NodeId> nodes,
                            int64_t* out) const override {
    return inner_->FetchDegrees(nodes, out);
  }
  int64_t edge_feature_dim() const override {
    return inner_->edge_feature_dim();
  }
  absl::Status SampleNeighborsWithEdges(absl::Span<const NodeId> nodes,
                                        int fanout, bool replace, uint64_t seed,
                                        SampledNeighbors* out) const override {
    return inner_->SampleNeighborsWithEdges(nodes, fanout, replace, seed, out);
  }
  absl::Status FetchEdgeFeatures(absl::Span<const int64_t> edges,
                                 float* out) const override {
    return inner_->FetchEdgeFeatures(edges, out);
  }
  // Typed graphs pass through uncached (the cache holds one width of rows).
  const GraphSchema* schema() const override { return inner_->schema(); }
  int64_t label_columns() const override { return inner_->label_columns(); }
  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> nodes,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed,
                                    SampledNeighbors* out) const override {
    return inner_->SampleTypedNeighbors(nodes, fanouts, replace, seed, out);
  }
  absl::Status FetchTypeFeatures(int type, absl::Span<const NodeId> nodes,
                                 float* out) const override {
    return inner_->FetchTypeFeatures(type, nodes, out);
  }

 private:
  const GraphSource* inner_;
  FeatureCache* cache_;
};

// Node IDs ordered hottest first by how often they appear as input nodes when
// `sampler` samples `num_batches` batches of `batch_size` seeds drawn from
// `seeds` (GNNLab's pre-sampling). Ties go to the smaller ID. The sampler
// should not fetch features (SamplerOptions::fetch_features = false) to keep
// this cheap.
absl::StatusOr<std::vector<NodeId>> HottestByPresampling(
    const NeighborSampler& sampler, absl::Span<const NodeId> seeds,
    int num_batches, int64_t batch_size, uint64_t seed);

// Node IDs ordered by descending degree (ties to the smaller ID); degrees[i]
// belongs to node first_id + i.
std::vector<NodeId> HottestByDegree(absl::Span<const int64_t> degrees,
                                    NodeId first_id = 0);

// Fills a static cache with the hottest nodes' rows fetched from `source` (in
// batches), as many as fit.
absl::Status PrefillCache(const GraphSource& source,
                          absl::Span<const NodeId> hottest,
                          FeatureCache* cache);

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_CACHED_GRAPH_SOURCE_H_
