#include "common/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace shardgnn {
namespace {

std::vector<NodeId> Range(int64_t n) {
  std::vector<NodeId> v(n);
  std::iota(v.begin(), v.end(), 100);
  return v;
}

TEST(SamplingTest, AllNeighborsWhenDegreeAtMostFanout) {
  auto nbrs = Range(5);
  Int64Buffer out;
  SampleNeighbors(nbrs.data(), 5, 10, false, 1, 7, &out);
  EXPECT_EQ(std::vector<NodeId>(out.begin(), out.end()), nbrs);
  out.clear();
  SampleNeighbors(nbrs.data(), 5, -1, false, 1, 7, &out);
  EXPECT_EQ(std::vector<NodeId>(out.begin(), out.end()), nbrs);
}

TEST(SamplingTest, DistinctWithoutReplacement) {
  for (int fanout : {1, 10, 64, 65, 200}) {
    auto nbrs = Range(300);
    Int64Buffer out;
    SampleNeighbors(nbrs.data(), 300, fanout, false, 42, 3, &out);
    ASSERT_EQ(static_cast<int>(out.size()), fanout);
    EXPECT_EQ(std::set<NodeId>(out.begin(), out.end()).size(), out.size())
        << fanout;
    for (NodeId v : out) EXPECT_TRUE(v >= 100 && v < 400);
    EXPECT_EQ(SampledCount(300, fanout, false), fanout);
  }
}

TEST(SamplingTest, DeterministicPerSeedAndNode) {
  auto nbrs = Range(1000);
  Int64Buffer a, b, c;
  SampleNeighbors(nbrs.data(), 1000, 10, false, 9, 5, &a);
  SampleNeighbors(nbrs.data(), 1000, 10, false, 9, 5, &b);
  SampleNeighbors(nbrs.data(), 1000, 10, false, 10, 5, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplingTest, WithReplacementDrawsFanout) {
  auto nbrs = Range(3);
  Int64Buffer out;
  SampleNeighbors(nbrs.data(), 3, 10, true, 1, 1, &out);
  EXPECT_EQ(out.size(), 10u);
  out.clear();
  SampleNeighbors(nbrs.data(), 0, 10, true, 1, 1, &out);
  EXPECT_TRUE(out.empty());
}

// Every neighbor of a degree-50 node is picked with probability 10/50; a
// chi-square test over many seeds (49 degrees of freedom; 99.9% critical value
// about 85.4) catches a biased kernel.
TEST(SamplingTest, UniformChiSquare) {
  const int degree = 50, fanout = 10, trials = 20000;
  auto nbrs = Range(degree);
  std::vector<int64_t> counts(degree, 0);
  Int64Buffer out;
  for (int t = 0; t < trials; ++t) {
    out.clear();
    SampleNeighbors(nbrs.data(), degree, fanout, false,
                    static_cast<uint64_t>(t), 77, &out);
    for (NodeId v : out) ++counts[v - 100];
  }
  double expected = static_cast<double>(trials) * fanout / degree;
  double chi2 = 0;
  for (int64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 85.4);
}

}  // namespace
}  // namespace shardgnn
