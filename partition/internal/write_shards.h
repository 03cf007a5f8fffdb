// Writing every part's shard, several at a time. Internal to partition/.
#ifndef SHARDGNN_PARTITION_INTERNAL_WRITE_SHARDS_H_
#define SHARDGNN_PARTITION_INTERNAL_WRITE_SHARDS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/dataset.h"
#include "graphstore/shard_format.h"
#include "partition/internal/relabel.h"

namespace shardgnn::partition_internal {

// Writes <dir>/part-<p> for every part: each owned node in new-ID order with
// its neighbors mapped to new IDs and sorted, its feature row and label, and
// the owned members of every split. Runs up to `num_threads` writers at once;
// the first error wins and stops the rest. Returns each shard's final
// metadata (with content_checksum), indexed by part.
absl::StatusOr<std::vector<ShardMeta>> WriteShards(
    const Dataset& dataset, const Relabeling& relabeling,
    const std::map<std::string, std::vector<NodeId>>& new_splits,
    const std::string& dir, const std::string& partition_id, int num_threads);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_WRITE_SHARDS_H_
