// The partitioning pipeline shared by PartitionDataset and PartitionInMemory.
// Internal to partition/.
#ifndef SHARDGNN_PARTITION_INTERNAL_RUN_H_
#define SHARDGNN_PARTITION_INTERNAL_RUN_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "datasets/dataset.h"
#include "partition/partition.h"

namespace shardgnn::partition_internal {

// Checks what partitioning relies on not to read out of bounds: CSR offsets,
// neighbor IDs, array sizes, sorted in-range splits. Errors name the array.
absl::Status CheckDatasetShape(const Dataset& dataset);

// Ways for a caller that can reload parts of the dataset from disk to keep
// them out of memory while METIS runs (METIS's own working memory is the
// peak of the whole pipeline). Both may be empty.
struct PipelineHooks {
  // Called once METIS holds its own copy of the graph: may free
  // `dataset.indices` through the caller's own (non-const) reference.
  std::function<void()> release_topology;
  // Called right after the assignment: must restore what release_topology
  // freed and may fill `dataset.features`.
  std::function<absl::Status()> load_rest;
};

// Runs the pipeline on `dataset`, whose shape CheckDatasetShape verifies
// first (features and indices are re-checked after `hooks.load_rest`).
// `timing` must be non-null; its load fields are left to the caller.
absl::StatusOr<PartitionManifest> RunPartition(const Dataset& dataset,
                                               const std::string& out_dir,
                                               const PartitionOptions& options,
                                               const PipelineHooks& hooks,
                                               PartitionTiming* timing);

// Peak resident set size of this process so far, in bytes.
int64_t PeakRssBytes();

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_RUN_H_
