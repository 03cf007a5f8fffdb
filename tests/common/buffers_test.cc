#include "common/buffers.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace shardgnn {
namespace {

// Gives *pool an empty vector of each capacity, in order.
void Keep(BufferPool<std::vector<int>>* pool,
          std::initializer_list<size_t> capacities) {
  for (size_t n : capacities) {
    std::vector<int> v;
    v.reserve(n);
    pool->Give(std::move(v));
  }
}

TEST(ReserveWithHeadroomTest, GrowsByAQuarterMoreAndThenKeepsTheBuffer) {
  std::vector<float> v;
  ReserveWithHeadroom(&v, 1000);
  EXPECT_GE(v.capacity(), 1250u);
  v.resize(1000);
  const float* kept = v.data();
  // Slightly larger, and smaller: the same buffer, nothing reallocated.
  ReserveWithHeadroom(&v, 1200);
  v.resize(1200);
  EXPECT_EQ(v.data(), kept);
  ReserveWithHeadroom(&v, 10);
  EXPECT_EQ(v.data(), kept);
  EXPECT_EQ(v.size(), 1200u);  // Room only: the contents stay.

  // Beyond the headroom: a new buffer, the contents dropped.
  ReserveWithHeadroom(&v, 5000);
  EXPECT_TRUE(v.empty());
  EXPECT_GE(v.capacity(), 6250u);

  std::string s;
  ReserveWithHeadroom(&s, size_t{1} << 20);
  EXPECT_GE(s.capacity(), (size_t{5} << 20) / 4);
}

TEST(BufferPoolTest, TakeFittingGivesTheLeastBufferThatHoldsTheUse) {
  BufferPool<std::vector<int>> pool(8);
  auto capacity = [](const std::vector<int>& v) { return v.capacity(); };
  Keep(&pool, {100, 10, 1000});
  // The least that holds 50: the 100; then the least that holds 5: the 10.
  EXPECT_EQ(pool.TakeFitting(50, capacity).capacity(), 100u);
  EXPECT_EQ(pool.TakeFitting(5, capacity).capacity(), 10u);
  // None holds 5000 once the 1000 has a smaller one beside it: the smaller
  // one grows, the 1000 stays.
  Keep(&pool, {20});
  EXPECT_EQ(pool.TakeFitting(5000, capacity).capacity(), 20u);
  EXPECT_EQ(pool.TakeFitting(5000, capacity).capacity(), 1000u);
  EXPECT_EQ(pool.TakeFitting(1, capacity).capacity(), 0u);  // None kept.
}

// A small use while the small buffers are out (training's sampling answers
// while the next validation's are in flight) does not take a buffer many times
// its size: it gets one of its own, and the large buffer stays for the large
// use that comes next (which would otherwise grow a small one into megabytes
// of fresh pages).
TEST(BufferPoolTest, ASmallUseLeavesAFarLargerBufferForTheLargeUses) {
  BufferPool<std::vector<int>> pool(8);
  auto capacity = [](const std::vector<int>& v) { return v.capacity(); };
  Keep(&pool, {1000, 100});
  BufferPool<std::vector<int>>::Lease small(&pool, 80, capacity);
  EXPECT_EQ(small->capacity(), 100u);
  // Only the 1000 is kept: more than 4 times 80.
  EXPECT_EQ(pool.TakeFitting(80, capacity).capacity(), 0u);
  EXPECT_EQ(pool.TakeFitting(800, capacity).capacity(), 1000u);
  // Within 4 times: taken.
  Keep(&pool, {300});
  EXPECT_EQ(pool.TakeFitting(80, capacity).capacity(), 300u);
}

TEST(BufferPoolTest, AFittingLeaseTakesTheBufferThatHoldsItsUseAndGivesItBack) {
  BufferPool<std::vector<int>> pool(8);
  auto capacity = [](const std::vector<int>& v) { return v.capacity(); };
  Keep(&pool, {1000, 10});  // The small one on top: Take() would give it.
  {
    BufferPool<std::vector<int>>::Lease lease(&pool, 500, capacity);
    EXPECT_EQ(lease->capacity(), 1000u);
    BufferPool<std::vector<int>>::Lease other(&pool);
    EXPECT_EQ(other->capacity(), 10u);
  }
  // Both back: the least that holds 5 is the 10.
  EXPECT_EQ(pool.TakeFitting(5, capacity).capacity(), 10u);
  EXPECT_EQ(pool.TakeFitting(500, capacity).capacity(), 1000u);
}

// A hedged call's attempts: the winner's buffer is the caller's until it is
// done with it, the loser's (ending later, on another thread) goes back too.
TEST(PooledTest, GoesBackWhenDestroyedOnAnyThreadButNotOnceReleased) {
  auto pool = std::make_shared<BufferPool<std::vector<int>>>(8);
  auto make = [&](size_t n) {
    std::vector<int> v;
    v.reserve(n);
    return Pooled<std::vector<int>>(pool, std::move(v));
  };
  {
    Pooled<std::vector<int>> winner = make(100);
    std::thread loser([p = make(200)]() mutable {
      Pooled<std::vector<int>> moved = std::move(p);  // Gives nothing back.
      EXPECT_EQ(moved->capacity(), 200u);
    });
    loser.join();
    EXPECT_EQ(pool->Take().capacity(), 200u);
    EXPECT_EQ(winner->capacity(), 100u);
  }
  EXPECT_EQ(pool->Take().capacity(), 100u);
  EXPECT_EQ(pool->Take().capacity(), 0u);  // None kept.
  {
    Pooled<std::vector<int>> kept = make(300);
    std::vector<int> mine = kept.Release();
    EXPECT_EQ(mine.capacity(), 300u);
  }
  EXPECT_EQ(pool->Take().capacity(), 0u);
}

}  // namespace
}  // namespace shardgnn
