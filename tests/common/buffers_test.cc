#include "common/buffers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardgnn {
namespace {

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

}  // namespace
}  // namespace shardgnn
