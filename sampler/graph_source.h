// Where a sampler gets graph structure, features and labels from.
//
// GraphSource is the seam between building minibatches (NeighborSampler, which
// only knows about local indices and blocks) and reaching the data (in memory
// here, remote storage servers in the distributed sampler). Every call is
// batched: one call per hop, one for features, one for labels, so a remote
// implementation can group the IDs by owner and send the requests concurrently.
#ifndef SHARDGNN_SAMPLER_GRAPH_SOURCE_H_
#define SHARDGNN_SAMPLER_GRAPH_SOURCE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "sampler/graph_schema.h"

namespace shardgnn {

struct Dataset;

// Graph structure, features and labels addressed by global node ID.
//
// Implementations must be safe to call from several threads at once (a
// prefetching loader samples batches in parallel). Failure (an unknown ID, an
// unreachable server) is reported as a Status that names the node or the
// server; the output is then unspecified.
class GraphSource {
 public:
  virtual ~GraphSource() = default;

  virtual int64_t num_nodes() const = 0;
  virtual int64_t feature_dim() const = 0;

  // Replaces *out with the neighbors of each node in `nodes` (duplicates
  // allowed), picked exactly as common/sampling.h's SampleNeighbors(adj(v),
  // degree(v), fanout, replace, seed, v) picks them.
  virtual absl::Status SampleNeighbors(absl::Span<const NodeId> nodes,
                                       int fanout, bool replace, uint64_t seed,
                                       SampledNeighbors* out) const = 0;

  // Writes the feature rows of `nodes` to out[i * feature_dim() ...]. REQUIRES:
  // out holds nodes.size() * feature_dim() floats.
  virtual absl::Status FetchFeatures(absl::Span<const NodeId> nodes,
                                     float* out) const = 0;
  // Writes the row of nodes[i] to out + rows[i] * feature_dim() instead (a
  // scatter into a larger matrix). INVALID_ARGUMENT unless rows.size() ==
  // nodes.size(); then ScatterFeatures does the work.
  absl::Status FetchFeaturesInto(absl::Span<const NodeId> nodes,
                                 absl::Span<const size_t> rows,
                                 float* out) const;

  // Writes the label of each node (-1 = unlabeled) to out[i]; for a
  // multi-label graph (label_columns() > 1) each node's row of
  // label_columns() values instead (0/1 per class, all -1 if unlabeled).
  // REQUIRES: out holds nodes.size() * label_columns() values.
  virtual absl::Status FetchLabels(absl::Span<const NodeId> nodes,
                                   int64_t* out) const = 0;
  // 1, or the classes of a multi-label graph.
  virtual int64_t label_columns() const { return 1; }

  // Writes the degree of each node in the whole graph (the length of its
  // neighbor list: how many nodes it aggregates from) to out[i]. Models that
  // normalise by degree (GCN) need the graph's degree, not the sampled one.
  // REQUIRES: out holds nodes.size() values.
  virtual absl::Status FetchDegrees(absl::Span<const NodeId> nodes,
                                    int64_t* out) const = 0;

  // Edge features (an untyped graph's edge_features.npy: CSR entry e's row
  // is row e); 0: the source has none.
  virtual int64_t edge_feature_dim() const { return 0; }
  // SampleNeighbors, with out->edge_ids naming each sampled neighbor's CSR
  // entry (common/sampling.h SampleNeighborPositions: the same picks).
  // UNIMPLEMENTED for a source without edge features.
  virtual absl::Status SampleNeighborsWithEdges(absl::Span<const NodeId> nodes,
                                                int fanout, bool replace,
                                                uint64_t seed,
                                                SampledNeighbors* out) const;
  // Writes the features of `edges` (CSR entries, as SampleNeighborsWithEdges
  // names them) to out[i * edge_feature_dim() ...].
  virtual absl::Status FetchEdgeFeatures(absl::Span<const int64_t> edges,
                                         float* out) const;

  // Typed (heterogeneous) graphs (sampler/graph_schema.h); an untyped source
  // has no schema and answers the two calls below UNIMPLEMENTED. A typed
  // source's feature_dim() is 0: its features are per node type.
  virtual const GraphSchema* schema() const { return nullptr; }

  // Like SampleNeighbors, relation by relation: node v's neighbors are, for
  // each relation r (in increasing r) whose destination type is v's, exactly
  // common/sampling.h's SampleNeighbors(adj_r(v), degree_r(v), fanouts[r],
  // replace, MixSeed(seed, r), v) with adj_r(v) v's neighbors of relation r;
  // out->relations gets each neighbor's r. fanouts has one entry per
  // relation: 0 samples none of it, -1 all.
  virtual absl::Status SampleTypedNeighbors(absl::Span<const NodeId> nodes,
                                            absl::Span<const int> fanouts,
                                            bool replace, uint64_t seed,
                                            SampledNeighbors* out) const;

  // Writes the feature rows of `nodes`, every one of node type `type`, to
  // out[i * F_type ...] (F_type: schema()->node_types[type].feature_dim).
  virtual absl::Status FetchTypeFeatures(int type,
                                         absl::Span<const NodeId> nodes,
                                         float* out) const;

 protected:
  // FetchFeaturesInto with rows.size() == nodes.size() checked. The default
  // fetches into a buffer and copies; sources that receive rows piecewise
  // override it to place them directly.
  virtual absl::Status ScatterFeatures(absl::Span<const NodeId> nodes,
                                       absl::Span<const size_t> rows,
                                       float* out) const;
};

// Borrowed views of a whole graph in memory: CSR adjacency (row v lists the
// neighbors v aggregates from), row-major features and labels. `features` and
// `labels` may be empty (FetchFeatures / FetchLabels then fail).
struct GraphArrays {
  absl::Span<const int64_t> indptr;  // num_nodes + 1
  absl::Span<const NodeId> indices;  // indptr.back()
  absl::Span<const float> features;  // num_nodes * feature_dim, or empty
  int64_t feature_dim = 0;
  absl::Span<const int64_t> labels;  // num_nodes * label_columns, or empty
  int64_t label_columns = 1;         // > 1: multi-label rows.
  // Typed graphs: the schema (null: untyped), each CSR entry's relation (rows
  // sorted by relation), and each node type's feature rows (row k: the
  // node of local index k, GraphSchema::LocalIndex).
  const GraphSchema* schema = nullptr;
  absl::Span<const int32_t> edge_types;
  // Untyped graphs' edge features: indices.size() x edge_feature_dim, or
  // empty.
  absl::Span<const float> edge_features;
  int64_t edge_feature_dim = 0;
  std::vector<absl::Span<const float>> type_features;
};

// A GraphSource over arrays in memory: the in-process baseline and the
// reference the distributed sampler must reproduce. It does not own the arrays;
// they must outlive it. Thread-safe (read-only).
class InMemoryGraphSource : public GraphSource {
 public:
  // Checks shapes (indptr monotone and consistent with indices, feature and
  // label sizes); indices are checked lazily when sampled.
  static absl::StatusOr<std::unique_ptr<InMemoryGraphSource>> Create(
      const GraphArrays& arrays);
  // Views over `dataset`, which must outlive the source (typed and
  // multi-label datasets too).
  static absl::StatusOr<std::unique_ptr<InMemoryGraphSource>> FromDataset(
      const Dataset& dataset);

  InMemoryGraphSource(const InMemoryGraphSource&) = delete;
  InMemoryGraphSource& operator=(const InMemoryGraphSource&) = delete;

  int64_t num_nodes() const override {
    return static_cast<int64_t>(arrays_.indptr.size()) - 1;
  }
  int64_t feature_dim() const override { return arrays_.feature_dim; }
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override;
  absl::Status FetchFeatures(absl::Span<const NodeId> nodes,
                             float* out) const override;
  absl::Status FetchLabels(absl::Span<const NodeId> nodes,
                           int64_t* out) const override;
  absl::Status FetchDegrees(absl::Span<const NodeId> nodes,
                            int64_t* out) const override;
  const GraphSchema* schema() const override { return arrays_.schema; }
  int64_t label_columns() const override { return arrays_.label_columns; }
  int64_t edge_feature_dim() const override {
    return arrays_.edge_features.empty() ? 0 : arrays_.edge_feature_dim;
  }
  absl::Status SampleNeighborsWithEdges(absl::Span<const NodeId> nodes,
                                        int fanout, bool replace, uint64_t seed,
                                        SampledNeighbors* out) const override;
  absl::Status FetchEdgeFeatures(absl::Span<const int64_t> edges,
                                 float* out) const override;
  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> nodes,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed,
                                    SampledNeighbors* out) const override;
  absl::Status FetchTypeFeatures(int type, absl::Span<const NodeId> nodes,
                                 float* out) const override;

 private:
  explicit InMemoryGraphSource(const GraphArrays& arrays) : arrays_(arrays) {}
  absl::Status CheckId(NodeId node) const;

  GraphArrays arrays_;
  std::unique_ptr<GraphSchema> owned_schema_;  // FromDataset's.
};

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_GRAPH_SOURCE_H_
