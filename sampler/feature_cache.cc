#include "sampler/feature_cache.h"

#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {
constexpr int kNumShards = 16;

size_t ShardOf(NodeId id) {
  // Node IDs of one part are contiguous; mix so that neighbors spread over
  // shards.
  auto x = static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL;
  return static_cast<size_t>(x >> 60) % kNumShards;
}
}  // namespace

absl::StatusOr<CachePolicy> ParseCachePolicy(const std::string& name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "static") return CachePolicy::kStatic;
  if (lower == "clock" || lower == "lru") return CachePolicy::kClock;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown cache policy '", name, "' (static, clock)"));
}

// One shard: a slot array of rows, an index from node ID to slot, and CLOCK
// reference bits.
struct FeatureCache::Shard {
  std::mutex mu;
  int64_t capacity = 0;  // Rows.
  std::vector<float> rows;
  std::vector<NodeId> slot_ids;
  std::vector<uint8_t> referenced;
  absl::flat_hash_map<NodeId, int64_t> index;
  int64_t hand = 0;

  // Returns the slot for a new entry, evicting by CLOCK when full. REQUIRES: mu
  // held, capacity > 0.
  int64_t TakeSlot() {
    if (static_cast<int64_t>(index.size()) < capacity)
      return static_cast<int64_t>(index.size());
    while (true) {
      int64_t slot = hand;
      hand = (hand + 1) % capacity;
      if (referenced[slot]) {
        referenced[slot] = 0;
        continue;
      }
      index.erase(slot_ids[slot]);
      return slot;
    }
  }
};

absl::StatusOr<std::unique_ptr<FeatureCache>> FeatureCache::Create(
    const FeatureCacheOptions& options) {
  if (options.feature_dim <= 0)
    return absl::InvalidArgumentError(
        "feature cache: feature_dim must be positive");
  if (options.capacity_bytes < 0)
    return absl::InvalidArgumentError("feature cache: negative capacity");
  return std::unique_ptr<FeatureCache>(new FeatureCache(options));
}

FeatureCache::FeatureCache(const FeatureCacheOptions& options)
    : options_(options),
      capacity_rows_(options.capacity_bytes / (options.feature_dim * 4)) {
  for (int s = 0; s < kNumShards; ++s) {
    auto shard = std::make_unique<Shard>();
    // Both policies use the same shards (a static cache is never evicted);
    // capacity is split evenly.
    shard->capacity =
        capacity_rows_ / kNumShards + (s < capacity_rows_ % kNumShards ? 1 : 0);
    shards_.push_back(std::move(shard));
  }
}

FeatureCache::~FeatureCache() = default;

absl::Status FeatureCache::Prefill(absl::Span<const NodeId> ids,
                                   const float* rows) {
  if (options_.policy != CachePolicy::kStatic) {
    return absl::FailedPreconditionError(
        "feature cache: Prefill is for the static policy");
  }
  if (prefilled_.load())
    return absl::FailedPreconditionError("feature cache: already prefilled");
  const int64_t dim = options_.feature_dim;
  for (size_t i = 0; i < ids.size(); ++i) {
    Shard& shard = *shards_[ShardOf(ids[i])];
    if (static_cast<int64_t>(shard.index.size()) >= shard.capacity)
      continue;  // This shard is full.
    if (shard.rows.empty())
      shard.rows.resize(static_cast<size_t>(shard.capacity * dim));
    auto [it, inserted] =
        shard.index.emplace(ids[i], static_cast<int64_t>(shard.index.size()));
    if (!inserted)
      return absl::InvalidArgumentError(
          absl::StrCat("feature cache: node ", ids[i], " given twice"));
    std::memcpy(&shard.rows[static_cast<size_t>(it->second * dim)],
                rows + i * dim, dim * sizeof(float));
  }
  prefilled_.store(true);
  return absl::OkStatus();
}

void FeatureCache::Lookup(absl::Span<const NodeId> ids, float* out,
                          std::vector<size_t>* missing) {
  const int64_t dim = options_.feature_dim;
  const bool lock_free = options_.policy == CachePolicy::kStatic;
  int64_t hits = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    Shard& shard = *shards_[ShardOf(ids[i])];
    bool hit = false;
    if (lock_free) {
      auto it = shard.index.find(ids[i]);
      if (it != shard.index.end()) {
        std::memcpy(out + i * dim,
                    &shard.rows[static_cast<size_t>(it->second * dim)],
                    dim * sizeof(float));
        hit = true;
      }
    } else {
      std::lock_guard<std::mutex> lock(shard.mu);
      auto it = shard.index.find(ids[i]);
      if (it != shard.index.end()) {
        std::memcpy(out + i * dim,
                    &shard.rows[static_cast<size_t>(it->second * dim)],
                    dim * sizeof(float));
        shard.referenced[static_cast<size_t>(it->second)] = 1;
        hit = true;
      }
    }
    if (hit) {
      ++hits;
    } else {
      missing->push_back(i);
    }
  }
  hits_ += hits;
  misses_ += static_cast<int64_t>(ids.size()) - hits;
}

void FeatureCache::Insert(absl::Span<const NodeId> ids, const float* rows,
                          absl::Span<const size_t> at) {
  if (options_.policy != CachePolicy::kClock) return;
  const int64_t dim = options_.feature_dim;
  for (size_t i = 0; i < ids.size(); ++i) {
    Shard& shard = *shards_[ShardOf(ids[i])];
    if (shard.capacity == 0) continue;
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.rows.empty()) {
      shard.rows.resize(static_cast<size_t>(shard.capacity * dim));
      shard.slot_ids.resize(static_cast<size_t>(shard.capacity));
      shard.referenced.resize(static_cast<size_t>(shard.capacity));
    }
    if (shard.index.contains(ids[i])) continue;
    int64_t slot = shard.TakeSlot();
    shard.index[ids[i]] = slot;
    shard.slot_ids[static_cast<size_t>(slot)] = ids[i];
    shard.referenced[static_cast<size_t>(slot)] = 0;
    const size_t row = at.empty() ? i : at[i];
    std::memcpy(&shard.rows[static_cast<size_t>(slot * dim)], rows + row * dim,
                dim * sizeof(float));
  }
}

FeatureCacheStats FeatureCache::stats() const {
  FeatureCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.bytes_saved = s.hits * options_.feature_dim * 4;
  s.capacity_rows = capacity_rows_;
  for (const auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard->mu);
    s.entries += static_cast<int64_t>(shard->index.size());
  }
  return s;
}

}  // namespace shardgnn
