// Partitioning across MPI ranks with PT-Scotch:
//   mpirun -np R shardgnn partition --distributed --dataset DIR --parts K
//       --out OUT
//
// Each rank reads only its slice of the dataset's CSR (rows [N r / R,
// N (r+1) / R) of indptr.npy and the matching range of indices.npy), the
// ranks symmetrize the graph between them (reverse entries sent to their
// owners; self-loops and duplicates dropped), PT-Scotch partitions it in
// parallel (SCOTCH_dgraphPart, balance strategy under the imbalance
// tolerance), and the part vector is gathered on rank 0, which then writes the
// partition exactly as `shardgnn partition` does (partition.h), with method
// "ptscotch". PT-Scotch balances one weight per vertex: every node weighs 1,
// so parts have balanced node counts; train nodes and edges are not balance
// constraints as with METIS (their spread is in partition.json's balance).
//
// First path: rank 0 loads the whole dataset to write the shards; moving
// nodes, edges, features and labels to the rank that writes their part is not
// done yet. The dataset directory must hold the same files on every rank's
// host (checked by the manifest's checksums of indptr.npy and indices.npy).
#ifndef SHARDGNN_PARTITION_DISTRIBUTED_DISTRIBUTED_PARTITION_H_
#define SHARDGNN_PARTITION_DISTRIBUTED_DISTRIBUTED_PARTITION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "partition/partition.h"

namespace shardgnn {

struct DistributedPartitionResult {
  // The same on every rank: OK, or the first failing rank's error.
  absl::Status status;
  int rank = 0;
  int num_ranks = 1;
  // Rank 0, on success: what partition.json says, and the stage timings
  // (symmetrize: reading the slices and symmetrizing; assign: PT-Scotch and
  // the gather).
  PartitionManifest manifest;
  PartitionTiming timing;
  // Rank 0, on success: each rank's peak RSS (bytes) when the assignment was
  // gathered, before rank 0 loaded the dataset to write the shards.
  std::vector<int64_t> peak_rss_per_rank;
};

// Collective over MPI_COMM_WORLD: every rank calls it with the same
// arguments. Initializes MPI if it is not yet (and then finalizes it before
// returning), so a process calls it at most once. Run without mpirun, it is
// one rank doing all the work. `options.method` is ignored (the method is
// ptscotch). Errors (the same on every rank): a missing or corrupt dataset, K
// < 1 or K > N, an existing output (nothing is left behind), datasets that
// differ between ranks, a PT-Scotch failure.
DistributedPartitionResult PartitionDistributed(
    const std::string& dataset_dir, const std::string& out_dir,
    const PartitionOptions& options);

}  // namespace shardgnn

#endif  // SHARDGNN_PARTITION_DISTRIBUTED_DISTRIBUTED_PARTITION_H_
