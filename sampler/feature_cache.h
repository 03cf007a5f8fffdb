// A cache of feature rows keyed by global node ID, shaped like LevelDB's Cache:
// capacity in bytes, internal locking, the eviction policy as a choice, and
// hit/miss counters.
//
// Policies:
//   kStatic  filled once with Prefill() (the hottest remote nodes, chosen by
//   in-degree or by pre-sampling a
//            few epochs as GNNLab does) and read-only afterwards: lookups take
//            no lock.
//   kClock   filled on demand by Insert() (the rows a fetch missed); CLOCK
//   (second-chance) eviction, which
//            approximates LRU without moving entries on every hit. Sharded by
//            node ID to keep lock contention low.
// Thread-safe: any number of threads may look up and insert at once.
#ifndef SHARDGNN_SAMPLER_FEATURE_CACHE_H_
#define SHARDGNN_SAMPLER_FEATURE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"

namespace shardgnn {

enum class CachePolicy { kStatic, kClock };

// "static", "clock" (also "lru", served by CLOCK).
absl::StatusOr<CachePolicy> ParseCachePolicy(const std::string& name);

struct FeatureCacheOptions {
  int64_t capacity_bytes = 0;  // Rows held: capacity_bytes / (feature_dim * 4).
  int64_t feature_dim = 0;
  CachePolicy policy = CachePolicy::kClock;
};

struct FeatureCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytes_saved =
      0;  // Feature bytes served from the cache instead of the network.
  int64_t entries = 0;
  int64_t capacity_rows = 0;

  double hit_rate() const {
    return hits + misses == 0 ? 0.0
                              : static_cast<double>(hits) / (hits + misses);
  }
};

class FeatureCache {
 public:
  // Fails on a non-positive feature_dim or a negative capacity. A capacity
  // below one row makes a cache that holds nothing (every lookup misses).
  static absl::StatusOr<std::unique_ptr<FeatureCache>> Create(
      const FeatureCacheOptions& options);
  ~FeatureCache();
  FeatureCache(const FeatureCache&) = delete;
  FeatureCache& operator=(const FeatureCache&) = delete;

  // kStatic only, once, before any lookup: stores `ids` in the order given
  // (pass the hottest first) with their rows (ids.size() x feature_dim floats)
  // until the cache is full. Capacity is split over 16 shards by a hash of the
  // ID, so a few rows may be skipped before the cache as a whole is full. Fails
  // on a second call or a duplicate ID.
  absl::Status Prefill(absl::Span<const NodeId> ids, const float* rows);

  // For each ID: on a hit copies its row to out[i * feature_dim]; on a miss
  // appends i to *missing.
  void Lookup(absl::Span<const NodeId> ids, float* out,
              std::vector<size_t>* missing);

  // kClock: stores the row of ids[i], read from rows + i * feature_dim (or
  // from rows + at[i] * feature_dim when `at` is given), evicting as needed.
  // No-op for kStatic.
  void Insert(absl::Span<const NodeId> ids, const float* rows,
              absl::Span<const size_t> at = {});

  FeatureCacheStats stats() const;
  const FeatureCacheOptions& options() const { return options_; }

 private:
  struct Shard;
  explicit FeatureCache(const FeatureCacheOptions& options);

  FeatureCacheOptions options_;
  int64_t capacity_rows_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> prefilled_{false};
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
};

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_FEATURE_CACHE_H_
