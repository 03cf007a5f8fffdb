// The on-disk layout of one shard: a RocksDB database written by `shardgnn
// partition` (through ShardWriter) and served by `shardgnn serve` (through
// ShardStore). Documented for users in docs/formats.md.
//
// Column families (key = 8-byte big-endian global node ID, so RocksDB's byte
// order is ID order; values are little-endian arrays):
//   "default"  metadata: key "meta" -> ShardMeta as JSON; key "split/<name>"
//              -> int64 array of the owned node IDs in that split (sorted)
//   "adj"      node -> int64 array of neighbor global IDs (the nodes it
//              aggregates from): sorted by ID in an untyped shard, by
//              (relation, neighbor) in a typed one
//   "rel"      typed shards only: node -> int32 array, entry k the relation
//              (an index into ShardMeta::edge_types) of "adj" entry k
//   "feat"     node -> float32 array [feature_dim]; in a typed shard
//              [node_types[t].feature_dim] for a node of type t (an empty
//              value for a type without features)
//   "label"    node -> int64 array [label_columns]: one label (-1 =
//              unlabeled), or for a multi-label dataset num_classes 0/1
//              values (all -1: unlabeled)
// Every owned node in [node_start, node_end) has one entry in each node
// column family (an isolated node has empty "adj" and "rel" values).
//
// Typed (heterogeneous) shards come from typed datasets (datasets/dataset.h):
// ShardMeta lists the dataset's node and edge types, and the part's nodes of
// each type are one contiguous range (type_starts). The content checksum
// covers every column family, "rel" included. An untyped shard has no "rel"
// family and its meta JSON is what it was before types existed.
#ifndef SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_
#define SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/types.h"
#include "datasets/dataset.h"

namespace shardgnn {

inline constexpr char kShardAdjacencyCf[] = "adj";
inline constexpr char kShardFeaturesCf[] = "feat";
inline constexpr char kShardLabelsCf[] = "label";
inline constexpr char kShardRelationsCf[] = "rel";
inline constexpr char kShardMetaKey[] = "meta";
inline constexpr char kShardSplitKeyPrefix[] = "split/";
inline constexpr int kShardFormatVersion = 1;

// 8-byte big-endian encoding of a node ID (IDs are non-negative).
std::string EncodeNodeKey(NodeId id);
void EncodeNodeKey(NodeId id, char out[8]);
absl::StatusOr<NodeId> DecodeNodeKey(absl::string_view key);

// What a shard says about itself.
struct ShardMeta {
  int format_version = kShardFormatVersion;
  int part_id = 0;
  int num_parts = 1;
  NodeId node_start =
      0;  // Owned range [node_start, node_end) of relabelled global IDs.
  NodeId node_end = 0;
  int64_t num_nodes_total = 0;  // Nodes in the whole graph.
  int64_t num_edges = 0;        // Adjacency entries of the owned nodes.
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  std::map<std::string, int64_t> split_counts;  // Owned nodes per split.
  // Identifies the partition: a checksum of what determines it (dataset
  // checksum, method, seed, parts, node ranges, orig_ids), so the same input
  // and seed give the same id. Trainers check that every server has it.
  std::string partition_id;
  std::string content_checksum;  // XXH64 over every (column family, key, value)
                                 // in key order, hex.

  // Typed partitions (empty for untyped shards, whose meta JSON stays
  // byte-identical to what it was before types):
  std::vector<NodeType> node_types;  // The dataset's, in its order (global
                                     // counts, feature widths).
  std::vector<EdgeType> edge_types;  // The dataset's relations, in its order
                                     // (global counts).
  // T+1 values: this part's nodes of type t are [type_starts[t],
  // type_starts[t+1]); type_starts[0] == node_start, type_starts[T] ==
  // node_end.
  std::vector<NodeId> type_starts;
  // Values per node in the "label" column family: 1, or num_classes for a
  // multi-label dataset.
  int64_t label_columns = 1;

  bool typed() const { return !node_types.empty(); }
  // The type of an owned node (binary search over type_starts); -1 if not
  // owned or untyped.
  int TypeOf(NodeId id) const;

  // JSON writes node_types, edge_types and type_starts only for a typed
  // shard, label_columns only when it is not 1.
  std::string ToJson() const;
  // DATA_LOSS naming the problem for malformed JSON or figures that do not
  // fit together (CheckShardMetaTypes included).
  static absl::StatusOr<ShardMeta> FromJson(absl::string_view json);
};

// OK if the typed part of `meta` is consistent: valid, distinct node type
// names, counts adding up to num_nodes_total, edge types naming node types,
// type_starts of T+1 non-decreasing values from node_start to node_end with
// no more nodes of a type than its count, label_columns 1 or num_classes
// (>= 1). Untyped metas must have no edge types or type_starts.
// INVALID_ARGUMENT naming the first problem.
absl::Status CheckShardMetaTypes(const ShardMeta& meta);

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_
