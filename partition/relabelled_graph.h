// A dataset's graph in a partition's IDs: what the storage servers of that
// partition serve together, as one in-memory graph. Node v of the partition is
// node orig_ids[v] of the dataset (orig_ids.npy); row v lists v's neighbors in
// new IDs, sorted, as its shard stores them; features and labels follow the
// nodes. The in-process reference the distributed path must reproduce (tests,
// benchmarks).
#ifndef SHARDGNN_PARTITION_RELABELLED_GRAPH_H_
#define SHARDGNN_PARTITION_RELABELLED_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "datasets/dataset.h"

namespace shardgnn {

struct RelabelledGraph {
  std::vector<int64_t> indptr;
  std::vector<NodeId> indices;
  std::vector<float> features;  // num_nodes x feature_dim
  std::vector<int64_t> labels;  // num_nodes x label_columns
  int64_t feature_dim = 0;
  int64_t label_columns = 1;
  // Typed graphs: rows sorted by (relation, neighbor) as their shards store
  // them, each entry's relation, the partition's node and edge types and
  // per-part type starts (PartInfo::type_starts), and each type's feature
  // rows in the order of its nodes' local indices (parts in order, then IDs:
  // GraphSchema::FromParts).
  std::vector<int32_t> edge_types;
  std::vector<NodeType> node_types;
  std::vector<EdgeType> relations;
  std::vector<std::vector<NodeId>> type_starts;
  std::vector<std::vector<float>> type_features;

  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t Degree(NodeId v) const { return indptr[v + 1] - indptr[v]; }
  // Whether u is among v's neighbors (binary search of the sorted row;
  // untyped graphs).
  bool HasEdge(NodeId v, NodeId u) const;
};

// Reads partition_dir's orig_ids.npy (and, for a typed dataset, its
// partition.json) and relabels `dataset` with it. Fails
// with DATA_LOSS naming the file if the IDs are not a permutation of the
// dataset's nodes.
absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir);

}  // namespace shardgnn

#endif  // SHARDGNN_PARTITION_RELABELLED_GRAPH_H_
