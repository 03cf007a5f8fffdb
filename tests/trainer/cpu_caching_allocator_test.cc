// Tests for the caching CPU allocator (trainer/cpu_caching_allocator.h): real
// LibTorch tensors, allocated through c10's CPU allocator once it is
// installed.
#include "trainer/cpu_caching_allocator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

namespace shardgnn {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

class CpuCachingAllocatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CpuCachingAllocatorOptions options;
    options.min_block_bytes = kMiB;
    options.max_cached_bytes = 64 * kMiB;
    ASSERT_TRUE(InstallCpuCachingAllocator(options));
    ASSERT_FALSE(InstallCpuCachingAllocator());  // Once per process.
  }
  // Floats for `mib` MiB.
  static int64_t Floats(double mib) {
    return static_cast<int64_t>(mib * static_cast<double>(kMiB)) / 4;
  }
};

TEST_F(CpuCachingAllocatorTest, FreedBlocksServeLaterTensorsOfSimilarSize) {
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  void* first = nullptr;
  {
    torch::Tensor t = torch::full({Floats(40)}, 2.0f);
    first = t.data_ptr();
    EXPECT_FLOAT_EQ(t.sum().item<float>(), 2.0f * Floats(40));
  }
  CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.allocations - start.allocations, 1);
  EXPECT_GE(s.cached_bytes, 40 * kMiB);
  // Made with headroom, from the system.
  EXPECT_GE(s.fresh_bytes - start.fresh_bytes, 45 * kMiB);
  EXPECT_EQ(s.in_use_bytes, start.in_use_bytes);
  {
    // The same size, then a little smaller: the same block, its old
    // contents overwritten as asked.
    torch::Tensor same = torch::zeros({Floats(40)});
    EXPECT_EQ(same.data_ptr(), first);
    EXPECT_EQ(same.sum().item<float>(), 0.0f);
  }
  {
    torch::Tensor smaller = torch::ones({Floats(32)});
    EXPECT_EQ(smaller.data_ptr(), first);
    EXPECT_FLOAT_EQ(smaller.sum().item<float>(),
                    static_cast<float>(Floats(32)));
  }
  s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.reused - start.reused, 2);
  {
    // Far smaller: a block of its own (the large one is not wasted on it).
    torch::Tensor half = torch::empty({Floats(16)});
    EXPECT_NE(half.data_ptr(), first);
  }
  // Small tensors bypass the cache.
  const int64_t allocations = GetCpuCachingAllocatorStats().allocations;
  { torch::Tensor tiny = torch::ones({256}); }
  EXPECT_EQ(GetCpuCachingAllocatorStats().allocations, allocations);
}

// A batch somewhat larger than any before (on the 200k reference graph the
// test batch that straddles the two parts samples 12% more nodes) is served
// by the block made for the smaller one: no fresh pages.
TEST_F(CpuCachingAllocatorTest, ATensorAnEighthLargerReusesTheBlock) {
  void* first = nullptr;
  {
    torch::Tensor t = torch::ones({Floats(8)});
    first = t.data_ptr();
  }
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  {
    torch::Tensor larger = torch::ones({Floats(8.9)});
    EXPECT_EQ(larger.data_ptr(), first);
    EXPECT_FLOAT_EQ(larger.sum().item<float>(),
                    static_cast<float>(Floats(8.9)));
  }
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.fresh_bytes, start.fresh_bytes);
  EXPECT_EQ(s.reused - start.reused, 1);
}

TEST_F(CpuCachingAllocatorTest, KeepsAtMostTheCapAndReleasesTheRest) {
  const int64_t released = GetCpuCachingAllocatorStats().released_bytes;
  {
    std::vector<torch::Tensor> held;
    for (int i = 0; i < 3; ++i) held.push_back(torch::ones({Floats(30)}));
    EXPECT_GE(GetCpuCachingAllocatorStats().in_use_bytes, 90 * kMiB);
  }
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_LE(s.cached_bytes, 64 * kMiB);
  EXPECT_GE(s.released_bytes - released, 30 * kMiB);
}

TEST_F(CpuCachingAllocatorTest, ThreadsAllocatingAtOnce) {
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        torch::Tensor a = torch::full({Floats(1 + (i + t) % 5)}, 1.0f);
        torch::Tensor b = a * 2;
        ASSERT_FLOAT_EQ(b[0].item<float>(), 2.0f);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.in_use_bytes, start.in_use_bytes);
  EXPECT_EQ(s.allocations - start.allocations, 4 * 200 * 2);
  EXPECT_GT(s.reused - start.reused, 4 * 200);  // Most come from the cache.
}

}  // namespace
}  // namespace shardgnn
