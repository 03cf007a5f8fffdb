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
  std::vector<int64_t> labels;
  int64_t feature_dim = 0;

  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t Degree(NodeId v) const { return indptr[v + 1] - indptr[v]; }
  // Whether u is among v's neighbors (binary search of the sorted row).
  bool HasEdge(NodeId v, NodeId u) const;
};

// Reads partition_dir's orig_ids.npy and relabels `dataset` with it. Fails
// with DATA_LOSS naming the file if the IDs are not a permutation of the
// dataset's nodes.
absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir);

}  // namespace shardgnn

#endif  // SHARDGNN_PARTITION_RELABELLED_GRAPH_H_
