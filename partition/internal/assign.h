// Assigning nodes to parts: METIS k-way with multi-constraint vertex weights,
// or a seeded balanced random deal. Internal to partition/.
#ifndef SHARDGNN_PARTITION_INTERNAL_ASSIGN_H_
#define SHARDGNN_PARTITION_INTERNAL_ASSIGN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/dataset.h"
#include "partition/partition.h"

namespace shardgnn::partition_internal {

// Part of every node, and what actually ran.
struct Assignment {
  std::vector<int32_t> part;  // [N], values in [0, K).
  PartitionMethod method = PartitionMethod::kMetis;
  std::vector<std::string> warnings;
  double symmetrize_seconds = 0;
  double assign_seconds = 0;
};

// The graph METIS wants: symmetric, no self-loops, no duplicates, int32.
struct MetisGraph {
  std::vector<int32_t> xadj;    // N+1
  std::vector<int32_t> adjncy;  // xadj[N]
};

// Builds the symmetrized graph of `indptr`/`indices` (N nodes). Fails with
// OUT_OF_RANGE if N or the adjacency length exceeds `index_limit`.
absl::StatusOr<MetisGraph> SymmetrizeForMetis(
    const std::vector<int64_t>& indptr, const std::vector<NodeId>& indices,
    int64_t index_limit);

// REQUIRES: the dataset's shape was checked; 1 <= num_parts <= N.
// `graph_built` (may be empty) is called once METIS has its own copy of the
// topology and before METIS runs: the caller may free `dataset.indices` there
// to lower the peak memory (only `dataset.indptr` is read afterwards).
absl::StatusOr<Assignment> AssignParts(
    const Dataset& dataset, const PartitionOptions& options,
    const std::function<void()>& graph_built = {});

// Random balanced deal: train nodes first, then the rest, each shuffled with
// `seed` and dealt round-robin, so every part's node and train-node counts
// differ by at most one.
std::vector<int32_t> RandomAssignment(const Dataset& dataset, int num_parts,
                                      uint64_t seed);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_ASSIGN_H_
