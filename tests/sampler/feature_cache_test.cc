#include "sampler/feature_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

std::vector<float> RowsFor(absl::Span<const NodeId> ids, int64_t dim) {
  std::vector<float> rows;
  for (NodeId id : ids) {
    for (int64_t j = 0; j < dim; ++j)
      rows.push_back(static_cast<float>(id * 1000 + j));
  }
  return rows;
}

TEST(FeatureCacheTest, StaticHoldsPrefilledRowsBitExact) {
  const int64_t dim = 4;
  ASSERT_OK_AND_ASSIGN(
      auto cache, FeatureCache::Create({/*capacity_bytes=*/1000 * dim * 4, dim,
                                        CachePolicy::kStatic}));
  std::vector<NodeId> hot = {5, 9, 100, 7};
  auto rows = RowsFor(hot, dim);
  ASSERT_OK(cache->Prefill(hot, rows.data()));
  EXPECT_FALSE(cache->Prefill(hot, rows.data()).ok());  // Only once.

  std::vector<NodeId> ask = {9, 3, 7};
  std::vector<float> out(ask.size() * dim, -1.0f);
  std::vector<size_t> missing;
  cache->Lookup(ask, out.data(), &missing);
  EXPECT_EQ(missing, (std::vector<size_t>{1}));
  auto expected = RowsFor(ask, dim);
  for (size_t i : {0u, 2u}) {
    for (int64_t j = 0; j < dim; ++j)
      EXPECT_EQ(out[i * dim + j], expected[i * dim + j]);
  }
  auto stats = cache->stats();
  EXPECT_EQ(stats.hits, 2);
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.bytes_saved, 2 * dim * 4);
  EXPECT_EQ(stats.entries, 4);
}

TEST(FeatureCacheTest, StaticRespectsCapacity) {
  const int64_t dim = 8;
  ASSERT_OK_AND_ASSIGN(
      auto cache, FeatureCache::Create({/*capacity_bytes=*/64 * dim * 4, dim,
                                        CachePolicy::kStatic}));
  std::vector<NodeId> ids(1000);
  for (int i = 0; i < 1000; ++i) ids[i] = i;
  auto rows = RowsFor(ids, dim);
  ASSERT_OK(cache->Prefill(ids, rows.data()));
  EXPECT_EQ(cache->stats().entries, 64);
}

TEST(FeatureCacheTest, ClockEvictsButNeverServesWrongRows) {
  const int64_t dim = 3;
  // 32 rows over 16 shards: 2 per shard.
  ASSERT_OK_AND_ASSIGN(auto cache, FeatureCache::Create({32 * dim * 4, dim,
                                                         CachePolicy::kClock}));
  for (NodeId round = 0; round < 20; ++round) {
    std::vector<NodeId> ids;
    for (NodeId k = 0; k < 10; ++k)
      ids.push_back(1000 + k);  // Hot: asked every round.
    for (NodeId k = 0; k < 40; ++k) ids.push_back((k * 7 + round * 13) % 200);
    std::vector<float> out(ids.size() * dim, -1.0f);
    std::vector<size_t> missing;
    cache->Lookup(ids, out.data(), &missing);
    auto expected = RowsFor(ids, dim);
    size_t m = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (m < missing.size() && missing[m] == i) {
        ++m;
        continue;
      }
      for (int64_t j = 0; j < dim; ++j)
        ASSERT_EQ(out[i * dim + j], expected[i * dim + j]) << ids[i];
    }
    std::vector<NodeId> missing_ids;
    for (size_t i : missing) missing_ids.push_back(ids[i]);
    auto missing_rows = RowsFor(missing_ids, dim);
    cache->Insert(missing_ids, missing_rows.data());
    EXPECT_LE(cache->stats().entries, 32);
  }
  EXPECT_GT(cache->stats().hits, 0);
}

TEST(FeatureCacheTest, ClockKeepsReferencedEntries) {
  const int64_t dim = 1;
  // 8 rows per shard. A node read between every insert keeps its reference bit
  // set, so the CLOCK hand always passes over it and evicts one of the
  // never-read cold nodes instead (FIFO would evict it after 8 inserts).
  ASSERT_OK_AND_ASSIGN(auto cache, FeatureCache::Create({16 * 8 * dim * 4, dim,
                                                         CachePolicy::kClock}));
  NodeId hot = 12345;
  std::vector<float> row = {1.0f};
  cache->Insert({hot}, row.data());
  for (NodeId cold = 0; cold < 2000; ++cold) {
    std::vector<float> out(1);
    std::vector<size_t> missing;
    cache->Lookup({hot}, out.data(), &missing);
    ASSERT_TRUE(missing.empty())
        << "hot node evicted after " << cold << " cold inserts";
    std::vector<float> cold_row = {0.0f};
    cache->Insert({cold}, cold_row.data());
  }
}

TEST(FeatureCacheTest, ConcurrentLookupsAndInserts) {
  const int64_t dim = 16;
  ASSERT_OK_AND_ASSIGN(auto cache, FeatureCache::Create({500 * dim * 4, dim,
                                                         CachePolicy::kClock}));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 300; ++iter) {
        std::vector<NodeId> ids;
        for (int k = 0; k < 64; ++k)
          ids.push_back((iter * 31 + k * 17 + t) % 2000);
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        std::vector<float> out(ids.size() * dim);
        std::vector<size_t> missing;
        cache->Lookup(ids, out.data(), &missing);
        auto expected = RowsFor(ids, dim);
        size_t m = 0;
        for (size_t i = 0; i < ids.size(); ++i) {
          if (m < missing.size() && missing[m] == i) {
            ++m;
            continue;
          }
          if (std::memcmp(&out[i * dim], &expected[i * dim], dim * 4) != 0)
            ++wrong;
        }
        std::vector<NodeId> missing_ids;
        for (size_t i : missing) missing_ids.push_back(ids[i]);
        auto rows = RowsFor(missing_ids, dim);
        cache->Insert(missing_ids, rows.data());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache->stats().entries, cache->stats().capacity_rows);
}

TEST(FeatureCacheTest, RejectsBadOptions) {
  EXPECT_FALSE(FeatureCache::Create({100, 0, CachePolicy::kClock}).ok());
  EXPECT_FALSE(FeatureCache::Create({-1, 4, CachePolicy::kClock}).ok());
  EXPECT_FALSE(ParseCachePolicy("fifo").ok());
  EXPECT_EQ(*ParseCachePolicy("LRU"), CachePolicy::kClock);
}

}  // namespace
}  // namespace shardgnn
