#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "graphstore/internal/rocks_util.h"
#include "graphstore/internal/shard_stores.h"
#include "rocksdb/db.h"

namespace shardgnn::internal {
namespace {

// ---------------------------------------------------------------------------
// Disk mode: every request is a batched MultiGet through the block cache.

class DiskStore final : public ShardStore {
 public:
  DiskStore(ShardMeta meta, std::unique_ptr<ShardDb> shard)
      : ShardStore(std::move(meta), /*in_memory=*/false),
        shard_(std::move(shard)) {}

  BlockCacheUsage BlockCache() const override {
    // Every column family shares one cache (ShardDb::Open), so the default
    // family's properties describe it. A property RocksDB cannot read stays 0.
    uint64_t usage = 0, capacity = 0;
    BlockCacheUsage out;
    if (shard_->db()->GetIntProperty(rocksdb::DB::Properties::kBlockCacheUsage,
                                     &usage)) {
      out.bytes = static_cast<int64_t>(usage);
    }
    if (shard_->db()->GetIntProperty(
            rocksdb::DB::Properties::kBlockCacheCapacity, &capacity)) {
      out.capacity = static_cast<int64_t>(capacity);
    }
    return out;
  }

  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               int64_t max_neighbors,
                               SampledNeighbors* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    out->counts.resize(ids.size());
    out->neighbors.clear();
    out->relations.clear();
    std::vector<NodeId> scratch;
    return ForEachRow(
        shard_->adj_cf(), ids,
        [&](size_t i, const rocksdb::Slice& v) -> absl::Status {
          RETURN_IF_ERROR(CheckAdjacency(ids[i], v));
          int64_t degree = static_cast<int64_t>(v.size() / sizeof(NodeId));
          int64_t total = static_cast<int64_t>(out->neighbors.size()) +
                          SampledCount(degree, fanout, replace);
          if (total > max_neighbors) return TooMany(total, max_neighbors);
          // Values are not 8-byte aligned: copy before reading int64s.
          scratch.resize(static_cast<size_t>(degree));
          if (degree > 0) std::memcpy(scratch.data(), v.data(), v.size());
          size_t before = out->neighbors.size();
          shardgnn::SampleNeighbors(scratch.data(), degree, fanout, replace,
                                    seed, ids[i], &out->neighbors);
          out->counts[i] = static_cast<int64_t>(out->neighbors.size() - before);
          return absl::OkStatus();
        });
  }

  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> ids,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed, int64_t max_neighbors,
                                    SampledNeighbors* out) const override {
    RETURN_IF_ERROR(CheckTypedSample(ids, fanouts));
    out->counts.resize(ids.size());
    out->neighbors.clear();
    out->relations.clear();
    std::vector<NodeId> scratch;
    std::vector<int32_t> scratch_relations;
    return ForEachRowPair(
        shard_->adj_cf(), shard_->rel_cf(), ids,
        [&](size_t i, const rocksdb::Slice& v,
            const rocksdb::Slice& r) -> absl::Status {
          RETURN_IF_ERROR(CheckAdjacency(ids[i], v));
          const int64_t degree =
              static_cast<int64_t>(v.size() / sizeof(NodeId));
          if (r.size() != static_cast<size_t>(degree) * sizeof(int32_t)) {
            return BadRow(ids[i], kShardRelationsCf, r.size());
          }
          // Values are not aligned: copy before reading them.
          scratch.resize(static_cast<size_t>(degree));
          scratch_relations.resize(static_cast<size_t>(degree));
          if (degree > 0) {
            std::memcpy(scratch.data(), v.data(), v.size());
            std::memcpy(scratch_relations.data(), r.data(), r.size());
          }
          const int64_t total = static_cast<int64_t>(out->neighbors.size()) +
                                TypedSampledCount(scratch_relations.data(),
                                                  degree, fanouts, replace);
          if (total > max_neighbors) return TooMany(total, max_neighbors);
          out->counts[i] = SampleTypedRow(
              scratch.data(), scratch_relations.data(), degree, fanouts.data(),
              static_cast<int>(fanouts.size()), replace, seed, ids[i],
              &out->neighbors, &out->relations);
          return absl::OkStatus();
        });
  }

  absl::Status GetTypeFeatures(int type, absl::Span<const NodeId> ids,
                               float* out) const override {
    RETURN_IF_ERROR(CheckOfType(type, ids));
    const size_t row_bytes =
        static_cast<size_t>(
            Meta().node_types[static_cast<size_t>(type)].feature_dim) *
        sizeof(float);
    if (row_bytes == 0) return absl::OkStatus();
    return CopyFeatureRows(ids, row_bytes, out);
  }

  absl::Status GetFeatures(absl::Span<const NodeId> ids,
                           float* out) const override {
    if (Meta().typed()) return TypedFeaturesRefused(Meta());
    RETURN_IF_ERROR(CheckOwned(ids));
    const size_t row_bytes = static_cast<size_t>(Meta().feature_dim) * 4;
    return CopyFeatureRows(ids, row_bytes, out);
  }

  absl::Status GetLabels(absl::Span<const NodeId> ids,
                         int64_t* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    const size_t cols = static_cast<size_t>(Meta().label_columns);
    return ForEachRow(shard_->label_cf(), ids,
                      [&](size_t i, const rocksdb::Slice& v) -> absl::Status {
                        if (v.size() != cols * sizeof(int64_t)) {
                          return BadRow(ids[i], "label", v.size());
                        }
                        std::memcpy(out + i * cols, v.data(), v.size());
                        return absl::OkStatus();
                      });
  }

  absl::Status GetDegrees(absl::Span<const NodeId> ids,
                          int64_t* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    return ForEachRow(shard_->adj_cf(), ids,
                      [&](size_t i, const rocksdb::Slice& v) -> absl::Status {
                        RETURN_IF_ERROR(CheckAdjacency(ids[i], v));
                        out[i] =
                            static_cast<int64_t>(v.size() / sizeof(NodeId));
                        return absl::OkStatus();
                      });
  }

  absl::StatusOr<std::vector<NodeId>> GetSplit(
      absl::string_view name) const override {
    std::string value;
    std::string key = absl::StrCat(kShardSplitKeyPrefix, name);
    rocksdb::Status s = shard_->db()->Get(rocksdb::ReadOptions(),
                                          shard_->meta_cf(), key, &value);
    if (s.IsNotFound()) {
      return absl::NotFoundError(
          absl::StrCat("shard ", Meta().part_id, " has no split '", name, "'"));
    }
    RETURN_IF_ERROR(FromRocks(s, shard_->path()));
    if (value.size() % sizeof(NodeId) != 0) {
      return absl::DataLossError(absl::StrCat(shard_->path(), ": split '", name,
                                              "' has a partial ID"));
    }
    std::vector<NodeId> ids(value.size() / sizeof(NodeId));
    if (!ids.empty()) std::memcpy(ids.data(), value.data(), value.size());
    return ids;
  }

 private:
  // Rows per MultiGet: bounds the pinned memory of one batch.
  static constexpr size_t kChunk = 1024;

  absl::Status BadRow(NodeId id, absl::string_view cf, size_t size) const {
    return absl::DataLossError(absl::StrCat(shard_->path(), ": node ", id,
                                            " has a ", cf, " row of ", size,
                                            " bytes, which is the wrong size"));
  }
  absl::Status CheckAdjacency(NodeId id, const rocksdb::Slice& v) const {
    if (v.size() % sizeof(NodeId) != 0) return BadRow(id, "adj", v.size());
    return absl::OkStatus();
  }

  // Reads the row of every ID in `cf` with MultiGet, kChunk keys at a time,
  // and calls fn(index, value) in request order.
  template <typename Fn>
  absl::Status ForEachRow(rocksdb::ColumnFamilyHandle* cf,
                          absl::Span<const NodeId> ids, Fn fn) const {
    std::vector<char> key_bytes(kChunk * 8);
    std::vector<rocksdb::Slice> keys(kChunk);
    std::vector<rocksdb::PinnableSlice> values(kChunk);
    std::vector<rocksdb::Status> statuses(kChunk);
    rocksdb::ReadOptions ro;
    for (size_t begin = 0; begin < ids.size(); begin += kChunk) {
      size_t count = std::min(kChunk, ids.size() - begin);
      for (size_t j = 0; j < count; ++j) {
        EncodeNodeKey(ids[begin + j], &key_bytes[j * 8]);
        keys[j] = rocksdb::Slice(&key_bytes[j * 8], 8);
        values[j].Reset();
      }
      shard_->db()->MultiGet(ro, cf, count, keys.data(), values.data(),
                             statuses.data());
      for (size_t j = 0; j < count; ++j) {
        const NodeId id = ids[begin + j];
        if (statuses[j].IsNotFound()) {
          return absl::DataLossError(absl::StrCat(
              shard_->path(), ": node ", id, " has no row in column family '",
              cf->GetName(), "'"));
        }
        RETURN_IF_ERROR(FromRocks(
            statuses[j], absl::StrCat(shard_->path(), ": reading node ", id)));
        RETURN_IF_ERROR(fn(begin + j, values[j]));
      }
    }
    return absl::OkStatus();
  }

  // ForEachRow over two column families at once: fn(index, value in `a`,
  // value in `b`) in request order.
  template <typename Fn>
  absl::Status ForEachRowPair(rocksdb::ColumnFamilyHandle* a,
                              rocksdb::ColumnFamilyHandle* b,
                              absl::Span<const NodeId> ids, Fn fn) const {
    std::vector<char> key_bytes(kChunk * 8);
    std::vector<rocksdb::Slice> keys(kChunk);
    std::vector<rocksdb::PinnableSlice> values_a(kChunk), values_b(kChunk);
    std::vector<rocksdb::Status> statuses_a(kChunk), statuses_b(kChunk);
    rocksdb::ReadOptions ro;
    for (size_t begin = 0; begin < ids.size(); begin += kChunk) {
      size_t count = std::min(kChunk, ids.size() - begin);
      for (size_t j = 0; j < count; ++j) {
        EncodeNodeKey(ids[begin + j], &key_bytes[j * 8]);
        keys[j] = rocksdb::Slice(&key_bytes[j * 8], 8);
        values_a[j].Reset();
        values_b[j].Reset();
      }
      shard_->db()->MultiGet(ro, a, count, keys.data(), values_a.data(),
                             statuses_a.data());
      shard_->db()->MultiGet(ro, b, count, keys.data(), values_b.data(),
                             statuses_b.data());
      for (size_t j = 0; j < count; ++j) {
        const NodeId id = ids[begin + j];
        for (auto [status, cf] :
             {std::pair{&statuses_a[j], a}, std::pair{&statuses_b[j], b}}) {
          if (status->IsNotFound()) {
            return absl::DataLossError(absl::StrCat(
                shard_->path(), ": node ", id, " has no row in column family '",
                cf->GetName(), "'"));
          }
          RETURN_IF_ERROR(FromRocks(
              *status, absl::StrCat(shard_->path(), ": reading node ", id)));
        }
        RETURN_IF_ERROR(fn(begin + j, values_a[j], values_b[j]));
      }
    }
    return absl::OkStatus();
  }

  // Copies the feature rows of `ids` (row_bytes each, stored unaligned) to
  // `out` in order; DATA_LOSS naming the node for a row of another size.
  absl::Status CopyFeatureRows(absl::Span<const NodeId> ids, size_t row_bytes,
                               float* out) const {
    return ForEachRow(shard_->feat_cf(), ids,
                      [&](size_t i, const rocksdb::Slice& v) -> absl::Status {
                        if (v.size() != row_bytes) {
                          return BadRow(ids[i], kShardFeaturesCf, v.size());
                        }
                        if (row_bytes > 0) {
                          std::memcpy(
                              reinterpret_cast<char*>(out) + i * row_bytes,
                              v.data(), row_bytes);
                        }
                        return absl::OkStatus();
                      });
  }

  std::unique_ptr<ShardDb> shard_;
};

}  // namespace

std::unique_ptr<ShardStore> OpenDiskStore(ShardMeta meta,
                                          std::unique_ptr<ShardDb> shard) {
  return std::make_unique<DiskStore>(std::move(meta), std::move(shard));
}

}  // namespace shardgnn::internal
