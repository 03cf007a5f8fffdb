#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "common/shared_memory.h"
#include "common/status.h"
#include "graphstore/internal/rocks_util.h"
#include "graphstore/internal/shard_stores.h"
#include "rocksdb/db.h"

namespace shardgnn::internal {
namespace {

// ---------------------------------------------------------------------------
// Memory mode: CSR adjacency (and relations), a dense feature matrix (one
// per node type) and a label array.

// The dense feature matrix of memory mode: in a shared region (header words:
// node_start, rows, feature_dim) when co-located processes may map it, else
// in ordinary memory. Written through `data` while loading; Publish() then
// seals the region, and it is read-only from then on.
struct FeatureMatrix {
  std::unique_ptr<SharedRegion> region;
  std::vector<float> owned;
  float* data = nullptr;

  // Seals the shared region once the rows are written (no process can
  // change or truncate it after that) and points `data` at its read-only
  // mapping. If the kernel refuses the seals, the rows move to private memory
  // and nothing is offered: an unsealed region could be rewritten by any
  // process of the user. Fails only if the region can no longer be mapped.
  absl::Status Publish() {
    if (region == nullptr) return absl::OkStatus();
    absl::Status sealed = region->Seal();
    if (!sealed.ok() && region->payload() == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the shared feature matrix: ", sealed.message()));
    }
    data = reinterpret_cast<float*>(region->payload());
    if (sealed.ok()) return absl::OkStatus();
    owned.assign(data, data + region->payload_bytes() / sizeof(float));
    data = owned.data();
    region.reset();
    return absl::OkStatus();
  }

  static FeatureMatrix Allocate(const ShardMeta& meta, bool shared) {
    FeatureMatrix m;
    const int64_t rows = meta.node_end - meta.node_start;
    const uint64_t floats =
        static_cast<uint64_t>(rows) * static_cast<uint64_t>(meta.feature_dim);
    if (shared) {
      const int64_t words[3] = {meta.node_start, rows, meta.feature_dim};
      auto region =
          SharedRegion::Create(absl::StrCat("shardgnn-features-", meta.part_id),
                               floats * sizeof(float), words);
      if (region.ok()) {
        m.region = std::move(*region);
        m.data = reinterpret_cast<float*>(m.region->payload());
        return m;
      }
      // No memfd here (an old kernel, a sandbox): serve from private memory.
    }
    m.owned.resize(floats);
    m.data = m.owned.data();
    return m;
  }
};

class MemoryStore final : public ShardStore {
 public:
  MemoryStore(ShardMeta meta, std::vector<int64_t> offsets,
              std::vector<NodeId> adjacency, std::vector<int32_t> relations,
              FeatureMatrix features,
              std::vector<std::vector<float>> type_features,
              std::vector<int64_t> labels,
              std::map<std::string, std::vector<NodeId>> splits)
      : ShardStore(std::move(meta), /*in_memory=*/true),
        offsets_(std::move(offsets)),
        adjacency_(std::move(adjacency)),
        relations_(std::move(relations)),
        features_(std::move(features)),
        type_features_(std::move(type_features)),
        labels_(std::move(labels)),
        splits_(std::move(splits)) {}

  std::optional<SharedRegionRef> SharedFeatures() const override {
    if (features_.region == nullptr) return std::nullopt;
    return features_.region->Ref();
  }

  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               int64_t max_neighbors,
                               SampledNeighbors* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    int64_t total = 0;
    for (NodeId id : ids) {
      total += SampledCount(Degree(id), fanout, replace);
    }
    if (total > max_neighbors) return TooMany(total, max_neighbors);
    out->counts.resize(ids.size());
    out->neighbors.clear();
    out->relations.clear();
    if (out->neighbors.capacity() < static_cast<size_t>(total)) {
      // With headroom: the server keeps these buffers for later samples
      // (graphstore/internal/slice_pool.h), a little larger or smaller.
      out->neighbors.reserve(static_cast<size_t>(total + total / 8));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      size_t before = out->neighbors.size();
      int64_t local = ids[i] - Meta().node_start;
      shardgnn::SampleNeighbors(adjacency_.data() + offsets_[local],
                                Degree(ids[i]), fanout, replace, seed, ids[i],
                                &out->neighbors);
      out->counts[i] = static_cast<int64_t>(out->neighbors.size() - before);
    }
    return absl::OkStatus();
  }

  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> ids,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed, int64_t max_neighbors,
                                    SampledNeighbors* out) const override {
    RETURN_IF_ERROR(CheckTypedSample(ids, fanouts));
    int64_t total = 0;
    for (NodeId id : ids) {
      const size_t local = static_cast<size_t>(id - Meta().node_start);
      total += TypedSampledCount(relations_.data() + offsets_[local],
                                 Degree(id), fanouts, replace);
    }
    if (total > max_neighbors) return TooMany(total, max_neighbors);
    out->counts.resize(ids.size());
    out->neighbors.clear();
    out->relations.clear();
    if (out->neighbors.capacity() < static_cast<size_t>(total)) {
      out->neighbors.reserve(static_cast<size_t>(total + total / 8));
    }
    out->relations.reserve(static_cast<size_t>(total));
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t local = static_cast<size_t>(ids[i] - Meta().node_start);
      out->counts[i] = SampleTypedRow(
          adjacency_.data() + offsets_[local],
          relations_.data() + offsets_[local], Degree(ids[i]), fanouts.data(),
          static_cast<int>(fanouts.size()), replace, seed, ids[i],
          &out->neighbors, &out->relations);
    }
    return absl::OkStatus();
  }

  absl::Status GetTypeFeatures(int type, absl::Span<const NodeId> ids,
                               float* out) const override {
    RETURN_IF_ERROR(CheckOfType(type, ids));
    const size_t t = static_cast<size_t>(type);
    const size_t dim = static_cast<size_t>(Meta().node_types[t].feature_dim);
    if (dim == 0) return absl::OkStatus();
    const float* rows = type_features_[t].data();
    char* dst = reinterpret_cast<char*>(out);  // May be unaligned.
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t local = static_cast<size_t>(ids[i] - Meta().type_starts[t]);
      std::memcpy(dst + i * dim * sizeof(float), rows + local * dim,
                  dim * sizeof(float));
    }
    return absl::OkStatus();
  }

  absl::Status GetFeatures(absl::Span<const NodeId> ids,
                           float* out) const override {
    if (Meta().typed()) return TypedFeaturesRefused(Meta());
    RETURN_IF_ERROR(CheckOwned(ids));
    const size_t dim = static_cast<size_t>(Meta().feature_dim);
    char* dst = reinterpret_cast<char*>(out);  // May be unaligned.
    for (size_t i = 0; i < ids.size(); ++i) {
      // Random rows miss the cache: start loading a few rows ahead.
      if (i + kPrefetchRows < ids.size()) {
        const float* ahead =
            features_.data +
            static_cast<size_t>(ids[i + kPrefetchRows] - Meta().node_start) *
                dim;
        for (size_t b = 0; b < dim * sizeof(float); b += 64) {
          __builtin_prefetch(reinterpret_cast<const char*>(ahead) + b);
        }
      }
      size_t local = static_cast<size_t>(ids[i] - Meta().node_start);
      std::memcpy(dst + i * dim * sizeof(float), features_.data + local * dim,
                  dim * sizeof(float));
    }
    return absl::OkStatus();
  }

  absl::Status GetLabels(absl::Span<const NodeId> ids,
                         int64_t* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    const size_t cols = static_cast<size_t>(Meta().label_columns);
    if (cols == 1) {
      for (size_t i = 0; i < ids.size(); ++i) {
        out[i] = labels_[static_cast<size_t>(ids[i] - Meta().node_start)];
      }
      return absl::OkStatus();
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t local = static_cast<size_t>(ids[i] - Meta().node_start);
      std::memcpy(out + i * cols, labels_.data() + local * cols,
                  cols * sizeof(int64_t));
    }
    return absl::OkStatus();
  }

  absl::Status GetDegrees(absl::Span<const NodeId> ids,
                          int64_t* out) const override {
    RETURN_IF_ERROR(CheckOwned(ids));
    for (size_t i = 0; i < ids.size(); ++i) out[i] = Degree(ids[i]);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<NodeId>> GetSplit(
      absl::string_view name) const override {
    auto it = splits_.find(std::string(name));
    if (it == splits_.end()) {
      return absl::NotFoundError(
          absl::StrCat("shard ", Meta().part_id, " has no split '", name, "'"));
    }
    return it->second;
  }

 private:
  int64_t Degree(NodeId id) const {
    size_t local = static_cast<size_t>(id - Meta().node_start);
    return offsets_[local + 1] - offsets_[local];
  }

  static constexpr size_t kPrefetchRows = 4;

  std::vector<int64_t> offsets_;  // [num_owned + 1]
  std::vector<NodeId> adjacency_;
  std::vector<int32_t> relations_;  // Typed: adjacency_[k]'s relation.
  FeatureMatrix features_;          // Untyped: [num_owned, feature_dim]
  // Typed: per node type t, [its owned nodes, node_types[t].feature_dim].
  std::vector<std::vector<float>> type_features_;
  std::vector<int64_t> labels_;  // [num_owned, label_columns]
  std::map<std::string, std::vector<NodeId>> splits_;
};

// Hashes one row the way ShardWriter does (see shard_writer.cc).
void HashRow(Checksum* checksum, char cf, const rocksdb::Slice& key,
             const rocksdb::Slice& value) {
  uint64_t len = value.size();
  checksum->Update(&cf, 1);
  checksum->Update(key.data(), key.size());
  checksum->Update(&len, sizeof(len));
  checksum->Update(value.data(), value.size());
}

}  // namespace

// Reads every row of the shard into a MemoryStore, checking that each owned
// node has exactly one row of the right size in each column family.
absl::StatusOr<std::unique_ptr<ShardStore>> LoadIntoMemory(
    const ShardDb& shard, ShardMeta meta, bool verify_checksum,
    bool share_features) {
  const std::string& path = shard.path();
  const int64_t n = meta.node_end - meta.node_start;
  const bool typed = meta.typed();
  const size_t dim = typed ? 0 : static_cast<size_t>(meta.feature_dim);
  const size_t label_cols = static_cast<size_t>(meta.label_columns);
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1, 0);
  std::vector<NodeId> adjacency;
  adjacency.reserve(static_cast<size_t>(std::max<int64_t>(meta.num_edges, 0)));
  std::vector<int32_t> relations;
  if (typed) relations.reserve(adjacency.capacity());
  // A typed shard's features are per type, never shared (not built yet).
  FeatureMatrix features =
      typed ? FeatureMatrix() : FeatureMatrix::Allocate(meta, share_features);
  std::vector<std::vector<float>> type_features(meta.node_types.size());
  for (size_t t = 0; t < type_features.size(); ++t) {
    type_features[t].resize(
        static_cast<size_t>(meta.type_starts[t + 1] - meta.type_starts[t]) *
        static_cast<size_t>(meta.node_types[t].feature_dim));
  }
  std::vector<int64_t> labels(static_cast<size_t>(n) * label_cols);

  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = 4 << 20;
  std::unique_ptr<rocksdb::Iterator> adj(
      shard.db()->NewIterator(ro, shard.adj_cf()));
  std::unique_ptr<rocksdb::Iterator> feat(
      shard.db()->NewIterator(ro, shard.feat_cf()));
  std::unique_ptr<rocksdb::Iterator> lab(
      shard.db()->NewIterator(ro, shard.label_cf()));
  std::unique_ptr<rocksdb::Iterator> rel;
  std::vector<std::pair<rocksdb::Iterator*, const char*>> families = {
      {adj.get(), kShardAdjacencyCf},
      {feat.get(), kShardFeaturesCf},
      {lab.get(), kShardLabelsCf}};
  if (typed) {
    rel.reset(shard.db()->NewIterator(ro, shard.rel_cf()));
    families.emplace_back(rel.get(), kShardRelationsCf);
  }
  for (auto& [it, cf] : families) it->SeekToFirst();
  Checksum checksum;
  Progress progress(absl::StrCat("loading shard ", meta.part_id), n, "nodes");
  char key[8];
  int type = 0;
  for (int64_t local = 0; local < n; ++local) {
    const NodeId id = meta.node_start + local;
    EncodeNodeKey(id, key);
    rocksdb::Slice want(key, 8);
    for (auto& [it, cf] : families) {
      if (!it->Valid() || it->key() != want) {
        RETURN_IF_ERROR(FromRocks(it->status(), path));
        return absl::DataLossError(absl::StrCat(
            path, ": node ", id, " has no row in column family '", cf, "'"));
      }
    }
    if (typed) {
      while (id >= meta.type_starts[static_cast<size_t>(type) + 1]) ++type;
    }
    const size_t row_floats =
        typed ? static_cast<size_t>(
                    meta.node_types[static_cast<size_t>(type)].feature_dim)
              : dim;
    rocksdb::Slice a = adj->value(), f = feat->value(), l = lab->value();
    const size_t degree = a.size() / sizeof(NodeId);
    rocksdb::Slice r = typed ? rel->value() : rocksdb::Slice();
    if (a.size() % sizeof(NodeId) != 0 ||
        f.size() != row_floats * sizeof(float) ||
        l.size() != label_cols * sizeof(int64_t) ||
        (typed && r.size() != degree * sizeof(int32_t))) {
      return absl::DataLossError(absl::StrCat(
          path, ": node ", id, " has a row of the wrong size (adj ", a.size(),
          ", feat ", f.size(), ", label ", l.size(),
          typed ? absl::StrCat(", rel ", r.size()) : "", " bytes)"));
    }
    size_t old = adjacency.size();
    adjacency.resize(old + degree);
    if (degree > 0) std::memcpy(adjacency.data() + old, a.data(), a.size());
    if (typed) {
      relations.resize(old + degree);
      if (degree > 0) std::memcpy(relations.data() + old, r.data(), r.size());
    }
    offsets[static_cast<size_t>(local) + 1] =
        static_cast<int64_t>(old + degree);
    if (typed) {
      if (row_floats > 0) {
        const size_t row = static_cast<size_t>(
            id - meta.type_starts[static_cast<size_t>(type)]);
        std::memcpy(
            type_features[static_cast<size_t>(type)].data() + row * row_floats,
            f.data(), f.size());
      }
    } else if (dim > 0) {
      std::memcpy(features.data + local * dim, f.data(), f.size());
    }
    std::memcpy(&labels[static_cast<size_t>(local) * label_cols], l.data(),
                l.size());
    if (verify_checksum) {
      HashRow(&checksum, 'a', want, a);
      HashRow(&checksum, 'f', want, f);
      HashRow(&checksum, 'l', want, l);
      if (typed) HashRow(&checksum, 'r', want, r);
    }
    for (auto& [it, cf] : families) it->Next();
    progress.Update(local + 1);
  }
  for (auto& [it, cf] : families) {
    RETURN_IF_ERROR(FromRocks(it->status(), path));
    if (it->Valid()) {
      return absl::DataLossError(absl::StrCat(
          path, ": column family '", cf, "' has rows beyond the owned range"));
    }
  }

  std::map<std::string, std::vector<NodeId>> splits;
  std::unique_ptr<rocksdb::Iterator> misc(
      shard.db()->NewIterator(ro, shard.meta_cf()));
  const std::string prefix = kShardSplitKeyPrefix;
  for (misc->Seek(prefix); misc->Valid() && misc->key().starts_with(prefix);
       misc->Next()) {
    rocksdb::Slice v = misc->value();
    if (v.size() % sizeof(NodeId) != 0) {
      return absl::DataLossError(absl::StrCat(
          path, ": split row '", misc->key().ToString(), "' has a partial ID"));
    }
    std::vector<NodeId> ids(v.size() / sizeof(NodeId));
    if (!ids.empty()) std::memcpy(ids.data(), v.data(), v.size());
    splits[misc->key().ToString().substr(prefix.size())] = std::move(ids);
    if (verify_checksum) HashRow(&checksum, 's', misc->key(), v);
  }
  RETURN_IF_ERROR(FromRocks(misc->status(), path));
  progress.Done();

  if (verify_checksum && checksum.Hex() != meta.content_checksum) {
    return absl::DataLossError(absl::StrCat(
        path, ": content checksum mismatch (stored ", meta.content_checksum,
        ", computed ", checksum.Hex(), "): the shard is damaged"));
  }
  RETURN_IF_ERROR(features.Publish());
  return std::unique_ptr<ShardStore>(new MemoryStore(
      std::move(meta), std::move(offsets), std::move(adjacency),
      std::move(relations), std::move(features), std::move(type_features),
      std::move(labels), std::move(splits)));
}

}  // namespace shardgnn::internal
