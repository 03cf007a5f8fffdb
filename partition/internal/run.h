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

// Runs the pipeline. `load_features` (may be empty) is called after the
// assignment and before the shards are written, so that the feature matrix
// need not be in memory while METIS runs; it may fill `dataset.features`
// through the caller's own (non-const) reference. `timing` must be non-null;
// its load fields are left to the caller.
absl::StatusOr<PartitionManifest> RunPartition(
    const Dataset& dataset, const std::string& out_dir,
    const PartitionOptions& options,
    const std::function<absl::Status()>& load_features,
    PartitionTiming* timing);

// Peak resident set size of this process so far, in bytes.
int64_t PeakRssBytes();

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_RUN_H_
