#include "graphstore/shard_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "graphstore/internal/rocks_util.h"
#include "graphstore/internal/shard_stores.h"
#include "rocksdb/db.h"

namespace shardgnn {

absl::Status ShardStore::CheckOwned(absl::Span<const NodeId> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!Owns(ids[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", ids[i], " (position ", i, ") is not owned by shard ",
          meta_.part_id, ", which owns [", meta_.node_start, ", ",
          meta_.node_end, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ShardStore::CheckTypedSample(absl::Span<const NodeId> ids,
                                          absl::Span<const int> fanouts) const {
  if (!meta_.typed()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", meta_.part_id,
                     " is not typed: sample it without relation fanouts"));
  }
  if (fanouts.size() != meta_.edge_types.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        fanouts.size(), " relation fanouts for the ", meta_.edge_types.size(),
        " relations of shard ", meta_.part_id, " (one per relation)"));
  }
  return CheckOwned(ids);
}

absl::Status ShardStore::CheckOfType(int type,
                                     absl::Span<const NodeId> ids) const {
  if (!meta_.typed()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard ", meta_.part_id, " is not typed: it has no node type ", type));
  }
  const int num_types = static_cast<int>(meta_.node_types.size());
  if (type < 0 || type >= num_types) {
    return absl::InvalidArgumentError(
        absl::StrCat("node type ", type, " is outside [0, ", num_types, ")"));
  }
  RETURN_IF_ERROR(CheckOwned(ids));
  const NodeId begin = meta_.type_starts[static_cast<size_t>(type)];
  const NodeId end = meta_.type_starts[static_cast<size_t>(type) + 1];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < begin || ids[i] >= end) {
      const int actual = meta_.TypeOf(ids[i]);
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", ids[i], " (position ", i, ") is of type '",
          meta_.node_types[static_cast<size_t>(actual)].name, "' (", actual,
          "), not '", meta_.node_types[static_cast<size_t>(type)].name, "' (",
          type, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ShardStore::SampleTypedNeighbors(absl::Span<const NodeId>,
                                              absl::Span<const int>, bool,
                                              uint64_t, int64_t,
                                              SampledNeighbors*) const {
  return absl::UnimplementedError("this store does not sample typed shards");
}

absl::Status ShardStore::GetTypeFeatures(int, absl::Span<const NodeId>,
                                         float*) const {
  return absl::UnimplementedError(
      "this store does not serve typed shards' features");
}

absl::StatusOr<std::unique_ptr<ShardStore>> ShardStore::Open(
    const ShardStoreOptions& options) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<internal::ShardDb> shard,
      internal::ShardDb::Open(options.path, options.block_cache_bytes,
                              options.read_only));
  ASSIGN_OR_RETURN(ShardMeta meta, shard->ReadMeta());
  if (options.in_memory) {
    return internal::LoadIntoMemory(*shard, std::move(meta),
                                    options.verify_checksum,
                                    options.share_features);
  }
  return internal::OpenDiskStore(std::move(meta), std::move(shard));
}

}  // namespace shardgnn
