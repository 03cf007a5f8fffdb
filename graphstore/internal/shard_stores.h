// The two modes behind ShardStore::Open (graphstore/shard_store.h): memory
// mode (memory_store.cc) and disk mode (disk_store.cc), and what they share.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SHARD_STORES_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SHARD_STORES_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/sampling.h"
#include "graphstore/internal/rocks_util.h"
#include "graphstore/shard_format.h"
#include "graphstore/shard_store.h"

namespace shardgnn::internal {

// RESOURCE_EXHAUSTED: a sample past its request's bound of neighbor IDs.
inline absl::Status TooMany(int64_t total, int64_t max_neighbors) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "the sample would hold more than ", max_neighbors, " neighbor IDs (at ",
      total, " so far); use smaller batches or a smaller fanout"));
}

// The neighbors SampleTypedRow appends for a row with these relations (the
// same runs, the same skipped relations).
inline int64_t TypedSampledCount(const int32_t* relations, int64_t degree,
                                 absl::Span<const int> fanouts, bool replace) {
  int64_t total = 0;
  int64_t begin = 0;
  while (begin < degree) {
    const int32_t r = relations[begin];
    int64_t run = begin;
    while (run < degree && relations[run] == r) ++run;
    if (r >= 0 && static_cast<size_t>(r) < fanouts.size() && fanouts[r] != 0) {
      total += SampledCount(run - begin, fanouts[r], replace);
    }
    begin = run;
  }
  return total;
}

inline absl::Status TypedFeaturesRefused(const ShardMeta& meta) {
  return absl::FailedPreconditionError(absl::StrCat(
      "shard ", meta.part_id,
      " is typed: a typed shard's features are per node type (ask for the "
      "rows of one node type)"));
}

// Memory mode: reads every row of the shard into flat arrays, checking that
// each owned node has exactly one row of the right size in each column
// family (and, with verify_checksum, the content checksum).
absl::StatusOr<std::unique_ptr<ShardStore>> LoadIntoMemory(const ShardDb& shard,
                                                           ShardMeta meta,
                                                           bool verify_checksum,
                                                           bool share_features);

// Disk mode: every request a batched MultiGet through the block cache.
std::unique_ptr<ShardStore> OpenDiskStore(ShardMeta meta,
                                          std::unique_ptr<ShardDb> shard);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SHARD_STORES_H_
