// What the ranks of `partition --distributed` share: statuses agreed on by
// every rank, so that a failure on one rank makes all of them stop at the
// same point with the same error instead of leaving the others waiting in a
// collective. Internal to partition/distributed/.
#ifndef SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_MPI_UTIL_H_
#define SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_MPI_UTIL_H_

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardgnn::partition_internal {

// Collective. OK on every rank if `local` is OK on every rank; otherwise the
// status of the lowest failing rank, on every rank (its message prefixed
// with "rank R: " when R > 0 and there are several ranks).
absl::Status AgreeOnStatus(const absl::Status& local, MPI_Comm comm);

// Collective: `root`'s string on every rank.
std::string BroadcastString(const std::string& value, int root, MPI_Comm comm);

// The first node of each rank and N: rank r owns [offsets[r], offsets[r+1]),
// offsets[r] = floor(N * r / R).
std::vector<int64_t> RankOffsets(int64_t num_nodes, int num_ranks);

// The rank owning node `v` under `offsets`.
int OwnerRank(const std::vector<int64_t>& offsets, int64_t v);

// Collective: waits for every rank to reach this point, polling a
// non-blocking barrier with short sleeps so that waiting ranks leave the CPU
// to the rank still working (OpenMPI's blocking calls spin).
void IdleBarrier(MPI_Comm comm);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_MPI_UTIL_H_
