// Each rank's rows of the symmetrized graph PT-Scotch partitions, read from
// the dataset's CSR without reading the other ranks' rows. Internal to
// partition/distributed/.
#ifndef SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_SLICE_GRAPH_H_
#define SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_SLICE_GRAPH_H_

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/dataset.h"

namespace shardgnn::partition_internal {

// Rows [begin, end) of the symmetric graph without self-loops or duplicate
// entries, neighbors as global node IDs, each row sorted.
struct SliceGraph {
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<int64_t> offsets;    // end - begin + 1, from 0.
  std::vector<int64_t> neighbors;  // offsets.back().
};

struct SliceStats {
  int64_t input_entries = 0;     // This rank's entries of indices.npy.
  bool symmetric_input = false;  // The whole input was symmetric.
  int64_t sent_reverse = 0;      // Reverse entries this rank sent to others.
};

// Collective over `comm` (R ranks): rank r reads rows [N r / R, N (r+1) / R)
// of `dataset_dir`'s indptr.npy and the matching range of indices.npy, checks
// them (offsets ascending from 0 to the manifest's edge count, neighbors in
// [0, N)), and, unless the input is symmetric already (every rank's sums of
// a hash of (u, v) and of (v, u), all-reduced, agree), sends each entry's
// reverse to the rank owning its target (MPI_Alltoallv). Fails on every rank
// with the same status if any rank fails.
absl::StatusOr<SliceGraph> ReadSymmetricSlice(const std::string& dataset_dir,
                                              const DatasetManifest& manifest,
                                              MPI_Comm comm, SliceStats* stats);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_SLICE_GRAPH_H_
