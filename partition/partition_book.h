// The partition manifest (partition.json) and the partition book built from it.
//
// After partitioning, node IDs are relabelled so that part p owns the
// contiguous range [node_ranges[p], node_ranges[p+1]). The partition book
// answers "which part owns node v" with a binary search over those K+1
// offsets; the sampler and the trainer use it to route requests. This header
// is deliberately free of RocksDB and METIS so that any layer can include it.
// Server addresses are attached by the sampler layer, not stored here.
#ifndef SHARDGNN_PARTITION_PARTITION_BOOK_H_
#define SHARDGNN_PARTITION_PARTITION_BOOK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/types.h"
#include "datasets/dataset.h"
#include "graphstore/shard_format.h"

namespace shardgnn {

inline constexpr char kPartitionManifestFile[] = "partition.json";
inline constexpr char kPartitionTimingFile[] = "timing.json";
inline constexpr char kOrigIdsFile[] = "orig_ids.npy";
inline constexpr char kPartitionFormat[] = "shardgnn-partition";
inline constexpr int kPartitionFormatVersion = 1;

// "part-<p>": the shard directory of part p inside a partition directory.
std::string PartDirName(int part);

// What partition.json records about one part.
struct PartInfo {
  int part = 0;
  std::string dir;    // Relative to the partition directory ("part-0").
  int64_t nodes = 0;  // Owned nodes.
  int64_t edges = 0;  // Adjacency entries of the owned nodes.
  int64_t cut_edges =
      0;  // Of those, entries whose neighbor is in another part.
  std::map<std::string, int64_t> split_counts;  // Owned nodes per split.
  std::string content_checksum;  // ShardMeta::content_checksum of the shard.
  // Typed partitions: T+1 IDs, the part's nodes of node type t are
  // [type_starts[t], type_starts[t+1]) (its range, grouped by type).
  std::vector<NodeId> type_starts;
};

// How evenly one quantity (nodes, train nodes, edges) is spread over parts.
struct BalanceFigure {
  int64_t max = 0;  // Largest per-part count.
  double avg = 0;   // Total / parts.
  // max / avg; 1.0 is perfect balance (and the value for an all-zero count).
  double Imbalance() const { return avg > 0 ? max / avg : 1.0; }
};

// Everything partition.json holds. Serialized deterministically: the same
// partition gives byte-identical JSON. Timings live in timing.json instead.
struct PartitionManifest {
  int format_version = kPartitionFormatVersion;
  std::string dataset_name;
  // XXH64 over the dataset's content (topology, features, labels, splits).
  std::string dataset_checksum;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // Adjacency entries (an undirected edge counts 2).
  bool directed = false;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  std::map<std::string, int64_t> splits;  // Split name -> node count.

  int num_parts = 1;
  std::string method;            // "metis" or "random" (what actually ran).
  std::string requested_method;  // What was asked for (differs on fallback).
  uint64_t seed = 0;
  std::string partition_id;
  std::vector<NodeId> node_ranges;  // K+1 offsets, node_ranges[0] == 0.
  std::string orig_ids_checksum;    // XXH64 of orig_ids.npy.
  std::vector<PartInfo> parts;

  int64_t edge_cut = 0;          // Adjacency entries crossing parts.
  double edge_cut_fraction = 0;  // edge_cut / num_edges.
  // "nodes", "train_nodes", "edges" -> spread over parts.
  std::map<std::string, BalanceFigure> balance;
  std::vector<std::string> warnings;  // E.g. a METIS fallback, said once.
  // Link prediction: the dataset's edge splits, relabelled, in
  // edges_<name>.npy (int64 [pairs, 2]) beside this manifest: name -> pairs
  // and the file's XXH64. Trainers of a link task read them from here.
  std::map<std::string, int64_t> edge_splits;
  std::map<std::string, std::string> edge_split_checksums;
  // Typed partitions (issue 50): the dataset's node types and relations
  // (global counts), in its order; each part's nodes are grouped by type
  // (PartInfo::type_starts). Empty for untyped partitions.
  std::vector<NodeType> node_types;
  std::vector<EdgeType> edge_types;
  // Labels are rows of num_classes 0/1 values (multi-label targets).
  bool multilabel = false;

  bool typed() const { return !node_types.empty(); }

  std::string ToJson() const;
  // Fails with a message naming what is missing or inconsistent.
  static absl::StatusOr<PartitionManifest> FromJson(absl::string_view json);
};

// Reads edge split `name` of the partition at `dir` (flattened pairs u0, v0,
// u1, v1, ... in relabelled IDs), checking its size and checksum against
// `manifest` and every ID against the graph. NOT_FOUND (saying how to make
// one) for a partition without that split.
absl::StatusOr<std::vector<NodeId>> ReadPartitionEdgeSplit(
    const std::string& dir, const PartitionManifest& manifest,
    const std::string& name);

// Reads and checks <dir>/partition.json. Errors name the file.
absl::StatusOr<PartitionManifest> ReadPartitionManifest(const std::string& dir);

// Whether the shard whose metadata is `meta` is part `part` of `manifest`'s
// partition: the same partition id, number of parts, node range, graph sizes
// and (when the manifest has one) content checksum. FAILED_PRECONDITION
// naming the first difference (a shard copied from another partition, or a
// part directory renamed).
absl::Status CheckShardOfPartition(const PartitionManifest& manifest,
                                   const ShardMeta& meta, int part);

// A half-open range [start, end) of relabelled node IDs.
struct NodeRange {
  NodeId start = 0;
  NodeId end = 0;
  int64_t size() const { return end - start; }
};

// A node's owner by binary search over K+1 offsets. Immutable after
// construction, so safe to share between threads. Cheap to copy (K+1 ints).
class PartitionBook {
 public:
  // `node_ranges` must start at 0, be non-decreasing and hold at least two
  // values (K >= 1). Empty parts (equal neighbors) are allowed.
  static absl::StatusOr<PartitionBook> Create(std::vector<NodeId> node_ranges);
  static absl::StatusOr<PartitionBook> FromManifest(
      const PartitionManifest& manifest);

  // The part owning `id`, or -1 if id is outside [0, num_nodes()).
  int Owner(NodeId id) const;
  // REQUIRES: 0 <= part < num_parts().
  NodeRange Range(int part) const {
    return {node_ranges_[part], node_ranges_[part + 1]};
  }
  int num_parts() const { return static_cast<int>(node_ranges_.size()) - 1; }
  int64_t num_nodes() const { return node_ranges_.back(); }
  const std::vector<NodeId>& node_ranges() const { return node_ranges_; }

 private:
  explicit PartitionBook(std::vector<NodeId> node_ranges)
      : node_ranges_(std::move(node_ranges)) {}
  std::vector<NodeId> node_ranges_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_PARTITION_PARTITION_BOOK_H_
