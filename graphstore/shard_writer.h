// Writes one shard as a RocksDB database by bulk loading: rows go into SST
// files with rocksdb::SstFileWriter (one per column family, keys in ascending
// order) and the files are ingested into a fresh database at the end. That is
// several times faster than Put() row by row and leaves a fully compacted
// database.
//
// Usage: Create(), AddNode() (or AddNodeRow()) for every owned node in
// ascending ID order,
// AddSplit() per split, Finish(). Until Finish() returns OK the directory is
// incomplete; callers build shards inside a StagingDir. Every RocksDB error,
// a full disk included, is returned as a status naming the file (RocksDB's
// info LOG is not written, so its failures cannot abort the process). Not
// thread-safe; distinct writers may run on distinct threads.
#ifndef SHARDGNN_GRAPHSTORE_SHARD_WRITER_H_
#define SHARDGNN_GRAPHSTORE_SHARD_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"
#include "graphstore/shard_format.h"

namespace shardgnn {

class ShardWriter {
 public:
  // `dir` must not exist yet. `meta` supplies part_id, num_parts, node range,
  // num_nodes_total, feature_dim, num_classes and partition_id (and for a
  // typed shard node_types, edge_types, type_starts; label_columns for a
  // multi-label one); Finish() fills in num_edges, split_counts and
  // content_checksum. INVALID_ARGUMENT if the typed part of `meta` is not
  // consistent (CheckShardMetaTypes).
  static absl::StatusOr<std::unique_ptr<ShardWriter>> Create(
      const std::string& dir, const ShardMeta& meta);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // REQUIRES: id is the next owned node (node_start, node_start+1, ...);
  // `features` holds feature_dim floats. An untyped row with one label.
  absl::Status AddNode(NodeId id, const NodeId* neighbors, size_t num_neighbors,
                       const float* features, int64_t label);
  // The general row: `relations` (typed shards: each neighbor's relation,
  // the row sorted by (relation, neighbor); nullptr for untyped shards),
  // `features` of the width of the node's type (typed) or feature_dim
  // (untyped; may be nullptr when the width is 0), `labels`
  // meta.label_columns values. INVALID_ARGUMENT naming the node (and the
  // entry) for an out-of-order node, relations out of [0, edge_types.size())
  // or not sorted by (relation, neighbor), relations given to an untyped
  // shard or missing for a typed one, or missing features or labels.
  // A typed node of a type without features gets an empty "feat" value.
  absl::Status AddNodeRow(NodeId id, const NodeId* neighbors,
                          size_t num_neighbors, const int32_t* relations,
                          const float* features, const int64_t* labels);
  // REQUIRES: every ID is owned; `ids` sorted ascending. Each split name at
  // most once.
  absl::Status AddSplit(const std::string& name,
                        const std::vector<NodeId>& ids);
  // Checks every owned node was added, writes the metadata, ingests the SST
  // files. Returns the final metadata.
  absl::StatusOr<ShardMeta> Finish();

 private:
  struct Impl;
  explicit ShardWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SHARD_WRITER_H_
