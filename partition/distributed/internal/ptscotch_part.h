// PT-Scotch's k-way partitioning of a graph distributed by rows over MPI
// ranks. Internal to partition/distributed/.
#ifndef SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_PTSCOTCH_PART_H_
#define SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_PTSCOTCH_PART_H_

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/distributed/internal/slice_graph.h"

namespace shardgnn::partition_internal {

struct PtScotchOptions {
  int num_parts = 2;
  // Allowed max/avg part weight; PT-Scotch's kbalval is tolerance - 1.
  double tolerance = 1.05;
  uint64_t seed = 0;
  bool heartbeat = false;  // Print "still running" lines (rank 0).
};

// Collective over `comm`: partitions the graph whose rows `slice` holds on
// this rank (every rank passes its own; the slices cover [0, num_nodes) in
// rank order) into `num_parts` parts with SCOTCH_dgraphPart under a
// SCOTCH_STRATBALANCE strategy, every vertex of weight 1 (PT-Scotch balances
// one weight per vertex), in a deterministic Scotch context running the
// host's hardware threads divided among the ranks on it: the same input, seed,
// rank count and threads per rank give the same parts. Returns the part of
// each of this rank's rows.
// `slice` is freed once PT-Scotch has its own copy. Fails on every rank with
// the same status if any rank fails, or if N or the entry count exceeds
// SCOTCH_Num (32-bit in Debian's default build).
absl::StatusOr<std::vector<int32_t>> PtScotchPart(
    SliceGraph slice, int64_t num_nodes, const PtScotchOptions& options,
    MPI_Comm comm);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_PTSCOTCH_PART_H_
