// Tests for the caching CPU allocator (trainer/cpu_caching_allocator.h): real
// LibTorch tensors, allocated through c10's CPU allocator once it is
// installed.
#include "trainer/cpu_caching_allocator.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

#include "common/large_buffer.h"
#include "common/sampled_neighbors.h"
#include "sampler/minibatch.h"

namespace shardgnn {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A feature buffer made before the cache is installed (std::malloc's), freed
// by a test after: it goes back to the system, not into the cache.
FloatBuffer* made_before = new FloatBuffer(size_t{3} << 20);

class CpuCachingAllocatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CpuCachingAllocatorOptions options;
    options.min_block_bytes = kMiB;
    options.max_cached_bytes = 64 * kMiB;
    ASSERT_TRUE(InstallCpuCachingAllocator(options));
    ASSERT_FALSE(InstallCpuCachingAllocator());  // Once per process.
  }
  static int64_t ThreadMinorFaults() {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_minflt;
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

// After training, a tensor larger than every free block (the test pass:
// twice the fanouts) takes the retired free blocks' pages, moved under a new
// block, and faults in only what they do not cover.
TEST_F(CpuCachingAllocatorTest, ALargerTensorTakesTheRetiredBlocksPages) {
  {
    torch::Tensor a = torch::ones({Floats(10)});  // Blocks of 12 and 14 MiB.
    torch::Tensor b = torch::ones({Floats(12)});
  }
  RetireCpuCachedBlocks();
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  ASSERT_GE(start.cached_bytes, 26 * kMiB);
  void* first = nullptr;
  {
    // 24 MiB: a block of 28, 26 of them moved from the two free blocks
    // (alone; run after the other tests, their free blocks come first: at
    // least half of it), their contents overwritten.
    const int64_t n = Floats(24);
    const int64_t faults = ThreadMinorFaults();
    torch::Tensor c = torch::empty({n}, torch::kInt32);
    first = c.data_ptr();
    const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
    int32_t* values = c.data_ptr<int32_t>();
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<int32_t>(i);
    // The moved pages are not faulted in again (a fresh block of 28 MiB:
    // 7,168 pages).
    EXPECT_LT(ThreadMinorFaults() - faults, 14 * kMiB / 4096);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += values[i];
    EXPECT_EQ(sum, n * (n - 1) / 2);
    const int64_t moved = s.moved_bytes - start.moved_bytes;
    EXPECT_GE(moved, 14 * kMiB);
    EXPECT_EQ(moved + s.fresh_bytes - start.fresh_bytes, 28 * kMiB);
    EXPECT_EQ(s.cached_bytes, start.cached_bytes - moved);
  }
  // The new block is kept and serves the next tensor of its size.
  {
    torch::Tensor again = torch::full({Floats(24)}, 3.0f);
    EXPECT_EQ(again.data_ptr(), first);
    EXPECT_FLOAT_EQ(again[Floats(24) - 1].item<float>(), 3.0f);
  }
  // Blocks not retired are only reused whole: a larger tensor is made fresh
  // (in training, the next step wants their sizes again).
  {
    torch::Tensor a = torch::ones({Floats(10)});
    torch::Tensor b = torch::ones({Floats(12)});
  }
  const CpuCachingAllocatorStats before = GetCpuCachingAllocatorStats();
  {
    torch::Tensor d = torch::ones({Floats(40)});
    EXPECT_FLOAT_EQ(d.sum().item<float>(), static_cast<float>(Floats(40)));
  }
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.moved_bytes, before.moved_bytes);
  EXPECT_GE(s.fresh_bytes - before.fresh_bytes, 40 * kMiB);
  EXPECT_EQ(s.in_use_bytes, start.in_use_bytes);
}

// A request that the retired blocks that fit do not fill takes the rest from
// the head of a larger retired block, whose tail stays cached and retired:
// nothing fresh while retired pages are left.
TEST_F(CpuCachingAllocatorTest, TheRestComesFromALargerRetiredBlocksHead) {
  {
    // Blocks of 1.75 and 9 MiB; no test before makes one of 3 to 4.5 MiB
    // (which would serve the request below whole).
    torch::Tensor a = torch::ones({Floats(1.5)});
    torch::Tensor b = torch::ones({Floats(8)});
  }
  RetireCpuCachedBlocks();
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  // 3 MiB: a block of 3.5, 1.75 of them the first block's pages and the rest
  // the head of the 9 MiB block (or of a larger retired block left by the
  // tests before).
  const int64_t n = Floats(3);
  const int64_t faults = ThreadMinorFaults();
  torch::Tensor c = torch::empty({n}, torch::kInt32);
  int32_t* values = c.data_ptr<int32_t>();
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<int32_t>(i);
  EXPECT_LT(ThreadMinorFaults() - faults, 200);  // 896 pages fresh.
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += values[i];
  EXPECT_EQ(sum, n * (n - 1) / 2);
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.fresh_bytes, start.fresh_bytes);
  EXPECT_EQ(s.moved_bytes - start.moved_bytes, 7 * kMiB / 2);
  // The larger block's tail is still cached.
  EXPECT_EQ(s.cached_bytes, start.cached_bytes - 7 * kMiB / 2);
}

// Minibatches' feature rows (common/large_buffer.h) come from the blocks
// tensors use: a freed tensor's block serves a buffer of its size, and the
// buffer's block serves a tensor again once freed.
TEST_F(CpuCachingAllocatorTest, FeatureBuffersShareTheTensorsBlocks) {
  { torch::Tensor t = torch::ones({Floats(5)}); }
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  void* rows_at = nullptr;
  {
    FloatBuffer rows(static_cast<size_t>(Floats(5)), 2.0f);
    rows_at = rows.data();
    const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
    EXPECT_EQ(s.allocations - start.allocations, 1);
    EXPECT_EQ(s.reused - start.reused, 1);
    EXPECT_EQ(s.fresh_bytes, start.fresh_bytes);
    EXPECT_GE(s.in_use_bytes - start.in_use_bytes, 5 * kMiB);
    EXPECT_FLOAT_EQ(rows.back(), 2.0f);
  }
  EXPECT_EQ(GetCpuCachingAllocatorStats().in_use_bytes, start.in_use_bytes);
  {
    torch::Tensor again = torch::zeros({Floats(5)});
    EXPECT_EQ(again.data_ptr(), rows_at);
  }
  // Small buffers and buffers std::malloc made are freed, not cached.
  { FloatBuffer small(16, 1.0f); }
  delete made_before;
  made_before = nullptr;
  const CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.in_use_bytes, start.in_use_bytes);
  EXPECT_EQ(s.cached_bytes, start.cached_bytes);
}

// The samplers' kept arrays (a sample's neighbors, a minibatch's input nodes)
// are large buffers too: a freed tensor's block serves them, and after
// RetireCpuCachedBlocks(), one grown past every free block takes the retired
// blocks' pages instead of fresh ones (the test pass after training).
TEST_F(CpuCachingAllocatorTest, SamplerArraysShareTheTensorsBlocks) {
  { torch::Tensor t = torch::ones({Floats(5)}); }
  const CpuCachingAllocatorStats start = GetCpuCachingAllocatorStats();
  SampledNeighbors sample;
  sample.neighbors.resize(static_cast<size_t>(Floats(5) / 2), 7);
  CpuCachingAllocatorStats s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.reused - start.reused, 1);
  EXPECT_EQ(s.fresh_bytes, start.fresh_bytes);
  MiniBatch batch;
  batch.input_nodes.resize(static_cast<size_t>(Floats(2) / 2));
  s = GetCpuCachingAllocatorStats();
  EXPECT_EQ(s.allocations - start.allocations, 2);
  EXPECT_GE(s.in_use_bytes - start.in_use_bytes, 7 * kMiB);
  // Grown past every free block after the blocks are retired: a block of 36
  // MiB made of their pages (a 20 MiB tensor's and the 5 MiB sample's; run
  // after the other tests, whichever of theirs are left), fresh only for
  // what they do not cover.
  { torch::Tensor t = torch::ones({Floats(20)}); }
  sample.neighbors = Int64Buffer();
  RetireCpuCachedBlocks();
  const CpuCachingAllocatorStats retired = GetCpuCachingAllocatorStats();
  sample.neighbors.resize(static_cast<size_t>(Floats(30) / 2), 1);
  s = GetCpuCachingAllocatorStats();
  const int64_t moved = s.moved_bytes - retired.moved_bytes;
  EXPECT_GT(moved, 0);
  EXPECT_EQ(moved + s.fresh_bytes - retired.fresh_bytes, 36 * kMiB);
  EXPECT_EQ(sample.neighbors.back(), 1);
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
