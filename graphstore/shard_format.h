// The on-disk layout of one shard: a RocksDB database written by `shardgnn
// partition` (through ShardWriter) and served by `shardgnn serve` (through
// ShardStore). Documented for users in docs/formats.md.
//
// Column families (key = 8-byte big-endian global node ID, so RocksDB's byte
// order is ID order):
//   "default"  metadata: key "meta" -> ShardMeta as JSON; key "split/<name>" ->
//   little-endian int64 array of the
//              owned node IDs in that split (sorted)
//   "adj"      node -> little-endian int64 array of neighbor global IDs
//   (sorted; the nodes it aggregates from) "feat"     node -> little-endian
//   float32 array [feature_dim] "label"    node -> little-endian int64 label
//   (-1 = unlabeled)
// Every owned node in [node_start, node_end) has one entry in "adj", "feat" and
// "label" (an isolated node has an empty "adj" value).
#ifndef SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_
#define SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/types.h"

namespace shardgnn {

inline constexpr char kShardAdjacencyCf[] = "adj";
inline constexpr char kShardFeaturesCf[] = "feat";
inline constexpr char kShardLabelsCf[] = "label";
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

  std::string ToJson() const;
  static absl::StatusOr<ShardMeta> FromJson(absl::string_view json);
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SHARD_FORMAT_H_
