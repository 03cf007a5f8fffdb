#include "graphstore/internal/slice_pool.h"

#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shardgnn::internal {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// A released slice's buffer serves the next answer that fits it: the same
// memory, not fresh pages.
TEST(SlicePoolTest, AReleasedBufferServesTheNextAnswerThatFits) {
  SlicePool pool(8 * kMiB, 4 * kMiB);
  grpc_slice first = pool.Take(kMiB);
  ASSERT_EQ(GRPC_SLICE_LENGTH(first), kMiB);
  uint8_t* memory = GRPC_SLICE_START_PTR(first);
  std::memset(memory, 7, kMiB);
  EXPECT_EQ(pool.stats().kept_bytes, 0u);
  grpc_slice_unref(first);
  EXPECT_GE(pool.stats().kept_bytes, kMiB);

  // A little larger still fits (buffers have headroom).
  grpc_slice second = pool.Take(kMiB + kMiB / 16);
  EXPECT_EQ(GRPC_SLICE_START_PTR(second), memory);
  EXPECT_EQ(GRPC_SLICE_LENGTH(second), kMiB + kMiB / 16);
  EXPECT_EQ(pool.stats().kept_bytes, 0u);
  // Twice the size does not: a new buffer.
  grpc_slice third = pool.Take(2 * kMiB);
  EXPECT_NE(GRPC_SLICE_START_PTR(third), memory);
  SlicePool::Stats stats = pool.stats();
  EXPECT_EQ(stats.reused, 1);
  EXPECT_EQ(stats.allocated, 2);
  grpc_slice_unref(second);
  grpc_slice_unref(third);
}

// The smallest kept buffer that fits is taken, so small answers do not use
// up the big buffers.
TEST(SlicePoolTest, TakesTheSmallestBufferThatFits) {
  SlicePool pool(16 * kMiB, 8 * kMiB);
  grpc_slice big = pool.Take(4 * kMiB);
  grpc_slice small = pool.Take(kMiB);
  uint8_t* small_memory = GRPC_SLICE_START_PTR(small);
  grpc_slice_unref(big);
  grpc_slice_unref(small);
  grpc_slice again = pool.Take(kMiB / 2);
  EXPECT_EQ(GRPC_SLICE_START_PTR(again), small_memory);
  grpc_slice_unref(again);
}

// Bounded: buffers over the per-buffer bound are never kept, the kept total
// stays within its bound, and Release() gives everything back.
TEST(SlicePoolTest, KeepsNoMoreThanItsBounds) {
  SlicePool pool(3 * kMiB, 2 * kMiB);
  grpc_slice huge = pool.Take(5 * kMiB);
  grpc_slice_unref(huge);
  EXPECT_EQ(pool.stats().kept_bytes, 0u);

  std::vector<grpc_slice> slices;
  for (int i = 0; i < 4; ++i) slices.push_back(pool.Take(kMiB));
  for (grpc_slice& s : slices) grpc_slice_unref(s);
  const size_t kept = pool.stats().kept_bytes;
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, 3 * kMiB);

  pool.Release();
  EXPECT_EQ(pool.stats().kept_bytes, 0u);
  // Still usable after a release.
  grpc_slice after = pool.Take(kMiB);
  EXPECT_EQ(GRPC_SLICE_LENGTH(after), kMiB);
  grpc_slice_unref(after);
}

// Slices taken and released on many threads at once (as gRPC's threads do)
// each keep their own bytes.
TEST(SlicePoolTest, ThreadsTakeAndReleaseConcurrently) {
  SlicePool pool(16 * kMiB, 4 * kMiB);
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool, &bad, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes =
            4096 + static_cast<size_t>((i * 37 + t) % 64) * 1024;
        grpc_slice s = pool.Take(bytes);
        uint8_t* p = GRPC_SLICE_START_PTR(s);
        std::memset(p, t, bytes);
        std::this_thread::yield();
        for (size_t k = 0; k < bytes; k += 512) bad[t] += p[k] != t;
        grpc_slice_unref(s);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  SlicePool::Stats stats = pool.stats();
  EXPECT_EQ(stats.reused + stats.allocated, 8 * 200);
  EXPECT_GT(stats.reused, stats.allocated);
}

// A sample's vectors come back with their capacity (empty), within the
// pool's bounds; Release() frees them.
TEST(SampleBufferPoolTest, KeepsCapacityWithinItsBounds) {
  SampleBufferPool pool(/*max_kept_bytes=*/3 * kMiB,
                        /*max_sample_bytes=*/2 * kMiB);
  SampledNeighbors sample = pool.Take();
  EXPECT_EQ(sample.neighbors.capacity(), 0u);
  sample.counts.assign(1000, 3);
  sample.neighbors.assign(100000, 7);  // 800 KB.
  const NodeId* memory = sample.neighbors.data();
  pool.Put(std::move(sample));
  EXPECT_GE(pool.kept_bytes(), 800000u);

  SampledNeighbors again = pool.Take();
  EXPECT_TRUE(again.neighbors.empty());
  EXPECT_TRUE(again.counts.empty());
  EXPECT_GE(again.neighbors.capacity(), 100000u);
  EXPECT_EQ(again.neighbors.data(), memory);
  EXPECT_EQ(pool.kept_bytes(), 0u);

  // Over the per-sample bound: not kept.
  again.neighbors.reserve(3 * kMiB / sizeof(NodeId));
  pool.Put(std::move(again));
  EXPECT_EQ(pool.kept_bytes(), 0u);

  // Over the total bound: the fourth is not kept.
  for (int i = 0; i < 4; ++i) {
    SampledNeighbors s;
    s.neighbors.reserve(kMiB / sizeof(NodeId));
    pool.Put(std::move(s));
  }
  EXPECT_EQ(pool.kept_bytes(), 3 * kMiB);
  pool.Release();
  EXPECT_EQ(pool.kept_bytes(), 0u);
}

// A call takes the kept sample with the least room that fits it (a first
// hop's small answer does not take the buffer a validation batch's last hop
// needs, which would then be made again, fresh); over the total, larger
// samples displace smaller ones.
TEST(SampleBufferPoolTest, TakesTheSmallestThatFitsAndKeepsTheLarger) {
  SampleBufferPool pool(/*max_kept_bytes=*/3 * kMiB,
                        /*max_sample_bytes=*/2 * kMiB);
  auto with_room = [](size_t neighbors) {
    SampledNeighbors s;
    s.neighbors.reserve(neighbors);
    return s;
  };
  SampledNeighbors small = with_room(100000);  // 800 KB.
  SampledNeighbors large = with_room(200000);  // 1.6 MB.
  const NodeId* small_memory = small.neighbors.data();
  const NodeId* large_memory = large.neighbors.data();
  pool.Put(std::move(large));
  pool.Put(std::move(small));  // Returned last.

  SampledNeighbors taken = pool.Take(150000);
  EXPECT_EQ(taken.neighbors.data(), large_memory);
  pool.Put(std::move(taken));
  taken = pool.Take(50000);
  EXPECT_EQ(taken.neighbors.data(), small_memory);
  pool.Put(std::move(taken));
  // None fits: new vectors, and both stay kept.
  taken = pool.Take(300000);
  EXPECT_EQ(taken.neighbors.capacity(), 0u);
  EXPECT_EQ(pool.kept_bytes(), 2400000u);

  // 1.6 + 0.8 + 1.2 MB is over 3 MiB: the 0.8 MB one makes way.
  SampledNeighbors medium = with_room(150000);
  const NodeId* medium_memory = medium.neighbors.data();
  pool.Put(std::move(medium));
  EXPECT_EQ(pool.kept_bytes(), 2800000u);
  taken = pool.Take(50000);
  EXPECT_EQ(taken.neighbors.data(), medium_memory);
  // A sample smaller than every kept one cannot displace them: not kept.
  pool.Put(std::move(taken));
  pool.Put(with_room(90000));
  EXPECT_EQ(pool.kept_bytes(), 2800000u);
}

}  // namespace
}  // namespace shardgnn::internal
