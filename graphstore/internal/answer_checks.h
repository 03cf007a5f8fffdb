// The client's checks of a storage server's answers (docs/architecture.md,
// "Client": trainers do not trust servers). Every answer is checked before
// anyone indexes with it: Info() for consistency, and later answers against
// what Info() reported (ShardBounds). Each check returns OK or DATA_LOSS
// saying what is wrong; the client prefixes the server's address and the
// method. Pure functions, thread-safe.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_ANSWER_CHECKS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_ANSWER_CHECKS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "graphstore/shard_format.h"
#include "proto/graphstore.pb.h"

namespace shardgnn::internal {

// The parts of a server's Info() that its later answers are checked against.
struct ShardBounds {
  bool known = false;  // False until Info() has succeeded.
  NodeId node_start = 0;
  NodeId node_end = 0;
  int64_t num_nodes_total = 0;
  int64_t num_edges = 0;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  int64_t label_columns = 1;  // Values per ID in a GetLabels answer.
  // Typed shards: the relations' count and each node type's row width
  // (empty for untyped shards).
  int64_t num_relations = 0;
  std::vector<int64_t> type_feature_dims;
};

// The bounds a checked Info() answer (read into `meta`) sets.
ShardBounds BoundsOf(const ShardMeta& meta);

// What is wrong with an Info answer, or OK. A row of features must fit in a
// message, which also keeps row sizes far from overflowing. The typed part
// (node and edge types, type_starts, label_columns) is checked once read
// into a ShardMeta: CheckTypedInfo.
absl::Status CheckInfo(const proto::InfoResponse& r, int64_t max_message_bytes);

// What is wrong with the typed part of an Info answer read into `meta`
// (CheckShardMetaTypes, and every type's row fitting in a message), or OK.
absl::Status CheckTypedInfo(const ShardMeta& meta, int64_t max_message_bytes);

// Checks a SampleNeighbors answer for `ids`: every count within [0, fanout]
// (or, for all neighbors, the shard's adjacency entries), the counts adding
// up to the neighbors received (summed so that they cannot overflow), and
// every neighbor a node of the graph.
absl::Status CheckSample(absl::Span<const NodeId> ids, int fanout,
                         const SampledNeighbors& s, const ShardBounds& b);

// Checks a typed SampleNeighbors answer for `ids` and `fanouts` (one per
// relation): as CheckSample, and one relation per neighbor, each in
// [0, fanouts.size()) (and the shard's relations) with a non-zero fanout, at
// most fanouts[r] neighbors of relation r per node when fanouts[r] >= 0.
absl::Status CheckTypedSample(absl::Span<const NodeId> ids,
                              absl::Span<const int> fanouts,
                              const SampledNeighbors& s, const ShardBounds& b);

// The feature_dim of a GetFeatures answer: within [0, max_message_bytes] and
// the one Info() reported.
absl::Status CheckFeatureDim(int64_t feature_dim, int64_t max_message_bytes,
                             const ShardBounds& b);

// Labels of `ids`: each within [-1, num_classes) (-1: unlabeled); with
// b.label_columns > 1 (multi-label), label_columns values per ID, each row
// all 0/1 or all -1.
absl::Status CheckLabels(absl::Span<const NodeId> ids,
                         const std::vector<int64_t>& labels,
                         const ShardBounds& b);

// Degrees of `ids`: each within [0, the shard's adjacency entries] (a node's
// degree is its adjacency row).
absl::Status CheckDegrees(absl::Span<const NodeId> ids,
                          const std::vector<int64_t>& degrees,
                          const ShardBounds& b);

// The split `name`: sorted nodes the server owns.
absl::Status CheckSplit(absl::string_view name,
                        const std::vector<NodeId>& nodes, const ShardBounds& b);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_ANSWER_CHECKS_H_
