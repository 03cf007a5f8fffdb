// Reading a contiguous range of a one-dimensional .npy array without reading
// the rest of the file: each MPI rank of `partition --distributed` reads only
// its own rows of the dataset's CSR. Internal to partition/distributed/.
#ifndef SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_NPY_SLICE_H_
#define SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_NPY_SLICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shardgnn::partition_internal {

// Reads elements [begin, end) of the 1-D int64 array at `path`, whose length
// must be `expected_length`. The header is validated as ReadNpyHeader does
// (magic, dtype, order, and a file long enough for the shape it declares).
// Errors name the file: a missing or short file, another dtype or shape, a
// range outside [0, expected_length].
absl::StatusOr<std::vector<int64_t>> ReadInt64Slice(const std::string& path,
                                                    int64_t expected_length,
                                                    int64_t begin, int64_t end);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_DISTRIBUTED_INTERNAL_NPY_SLICE_H_
