#include "trainer/link_metrics.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace shardgnn {
namespace {

// By hand: positives {0.9, 0.4}, negatives {0.8, 0.1, 0.4}.
// AUC: 0.9 beats all 3; 0.4 beats 0.1 and ties 0.4 (half) = 1.5; (3 + 1.5) / 6.
// AP (scikit-learn's): thresholds 0.9 (precision 1/1, recall 1/2), 0.8, 0.4
// (precision 2/4, recall 1): 0.5 * 1 + 0.5 * 0.5 = 0.75.
TEST(LinkMetricsTest, AucAndApMatchHandComputedValues) {
  const std::vector<float> pos = {0.9f, 0.4f}, neg = {0.8f, 0.1f, 0.4f};
  EXPECT_DOUBLE_EQ(RocAuc(pos, neg), 4.5 / 6);
  EXPECT_DOUBLE_EQ(AveragePrecision(pos, neg), 0.75);
  EXPECT_DOUBLE_EQ(RocAuc({1, 2}, {0}), 1.0);
  EXPECT_DOUBLE_EQ(RocAuc({0}, {1, 2}), 0.0);
  EXPECT_DOUBLE_EQ(AveragePrecision({1, 2}, {0}), 1.0);
  // A tie of two positives and a negative at the top: precision 2/3 for both
  // (sklearn: 0.6667), then the last positive at precision 3/5.
  EXPECT_DOUBLE_EQ(AveragePrecision({1, 1, 0.5f}, {1, 0.7f}),
                   (2 * 2.0 / 3 + 3.0 / 5) / 3);
  EXPECT_EQ(RocAuc({}, {1}), -1.0);
  EXPECT_EQ(AveragePrecision({}, {1}), -1.0);
}

// Scores that carry no information give AUC near 0.5 and AP near the share
// of positives: what a model that cannot see the answer must score.
TEST(LinkMetricsTest, RandomScoresScoreChance) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> pos(20000), neg(20000);
  for (float& s : pos) s = u(rng);
  for (float& s : neg) s = u(rng);
  EXPECT_NEAR(RocAuc(pos, neg), 0.5, 0.01);
  EXPECT_NEAR(AveragePrecision(pos, neg), 0.5, 0.01);
}

// Ranks against each positive's own negatives (ties rank the positive below),
// then MRR and Hits@K: ranks 1, 3, 2 -> MRR (1 + 1/3 + 1/2) / 3, Hits@1 1/3,
// Hits@2 2/3.
TEST(LinkMetricsTest, RanksMrrAndHitsMatchHandComputedValues) {
  const std::vector<float> pos = {5, 1, 2};
  const std::vector<float> neg = {1, 2,   // Both below 5: rank 1.
                                  3, 1,   // 3 above, 1 ties: rank 3.
                                  0, 4};  // 4 above: rank 2.
  const std::vector<int64_t> ranks = PositiveRanks(pos, neg, 2);
  EXPECT_EQ(ranks, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_DOUBLE_EQ(MeanReciprocalRank(ranks), (1 + 1.0 / 3 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(HitsAt(ranks, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(HitsAt(ranks, 2), 2.0 / 3);
  EXPECT_EQ(MeanReciprocalRank({}), -1.0);
}

// Ranks against a shared negative set (OGB's ogbl-collab protocol): 0.9 beats
// every negative (rank 1); 0.5 is below 0.8 and ties 0.5 (rank 3); 0.1 is
// below 0.8, 0.5 and 0.2 (rank 4). The same ranks as PositiveRanks with each
// positive given all the negatives.
TEST(LinkMetricsTest, RanksAgainstAllNegativesMatchHandComputedValues) {
  const std::vector<float> pos = {0.9f, 0.5f, 0.1f};
  const std::vector<float> neg = {0.8f, 0.5f, 0.2f, 0.0f};
  const std::vector<int64_t> ranks = PositiveRanksAgainstAll(pos, neg);
  EXPECT_EQ(ranks, (std::vector<int64_t>{1, 3, 4}));
  std::vector<float> repeated;
  for (size_t i = 0; i < pos.size(); ++i)
    repeated.insert(repeated.end(), neg.begin(), neg.end());
  EXPECT_EQ(PositiveRanks(pos, repeated, 4), ranks);
  EXPECT_DOUBLE_EQ(MeanReciprocalRank(ranks), (1 + 1.0 / 3 + 0.25) / 3);
  EXPECT_DOUBLE_EQ(HitsAt(ranks, 3), 2.0 / 3);
  EXPECT_EQ(PositiveRanksAgainstAll(pos, {}), (std::vector<int64_t>{1, 1, 1}));
}

}  // namespace
}  // namespace shardgnn
