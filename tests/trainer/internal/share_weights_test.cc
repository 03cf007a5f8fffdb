#include "trainer/internal/share_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace shardgnn::internal {
namespace {

constexpr int64_t kOne = int64_t{1} << 20;  // The fastest rank's weight.

TEST(ShareWeightsTest, AHalfSpeedRankGetsHalfTheWeight) {
  ShareWeights shares({1, 1, 1, 1});
  shares.Update(std::vector<double>{1000, 1000, 1000, 500});
  EXPECT_EQ(shares.weights(),
            (std::vector<int64_t>{kOne, kOne, kOne, kOne / 2}));
}

TEST(ShareWeightsTest, SpeedsWithinTenPercentKeepEqualWeights) {
  ShareWeights shares({5, 1});
  shares.Update(std::vector<double>{1000, 920});
  EXPECT_EQ(shares.weights(), (std::vector<int64_t>{1, 1}));
}

// The speed kept is the mean of the measurement and the speed before: one
// fast epoch of the slow rank moves its weight half way.
TEST(ShareWeightsTest, EachMeasurementMovesTheSpeedHalfWay) {
  ShareWeights shares({1, 1});
  shares.Update(std::vector<double>{1000, 400});
  EXPECT_EQ(shares.weights()[1], std::llround(kOne * 0.4));
  shares.Update(std::vector<double>{1000, 800});
  EXPECT_DOUBLE_EQ(shares.speeds()[1], 600);
  EXPECT_EQ(shares.weights()[1], std::llround(kOne * 0.6));
}

TEST(ShareWeightsTest, AVerySlowRankKeepsAnEighth) {
  ShareWeights shares({1, 1});
  shares.Update(std::vector<double>{1000, 10});
  EXPECT_EQ(shares.weights(), (std::vector<int64_t>{kOne, kOne / 8}));
}

TEST(ShareWeightsTest, WithoutAMeasurementOfEveryRankTheWeightsStay) {
  ShareWeights shares({2, 3});
  shares.Update(std::vector<double>{1000, 0});
  EXPECT_EQ(shares.weights(), (std::vector<int64_t>{2, 3}));
  shares.Update(std::vector<double>{1000});  // Not one per rank.
  EXPECT_EQ(shares.weights(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shares.speeds()[0], 0);
}

}  // namespace
}  // namespace shardgnn::internal
