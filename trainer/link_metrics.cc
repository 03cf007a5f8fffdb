#include "trainer/link_metrics.h"

#include <algorithm>
#include <utility>

namespace shardgnn {
namespace {

// (score, is_positive), sorted by descending score.
std::vector<std::pair<float, bool>> Sorted(absl::Span<const float> positive,
                                           absl::Span<const float> negative) {
  std::vector<std::pair<float, bool>> all;
  all.reserve(positive.size() + negative.size());
  for (float s : positive) all.emplace_back(s, true);
  for (float s : negative) all.emplace_back(s, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return !a.second && b.second;
  });
  return all;
}

}  // namespace

double RocAuc(absl::Span<const float> positive,
              absl::Span<const float> negative) {
  if (positive.empty() || negative.empty()) return -1.0;
  const auto all = Sorted(positive, negative);
  // Walk from the lowest score up: each positive beats the negatives below
  // it, and half of those tied with it.
  double wins = 0.0;
  int64_t negatives_below = 0;
  size_t i = all.size();
  while (i > 0) {
    size_t j = i;  // The tied group [k, i).
    while (j > 0 && all[j - 1].first == all[i - 1].first) --j;
    int64_t pos = 0, neg = 0;
    for (size_t k = j; k < i; ++k) (all[k].second ? pos : neg) += 1;
    wins += static_cast<double>(pos) * (static_cast<double>(negatives_below) +
                                        0.5 * static_cast<double>(neg));
    negatives_below += neg;
    i = j;
  }
  return wins / (static_cast<double>(positive.size()) *
                 static_cast<double>(negative.size()));
}

double AveragePrecision(absl::Span<const float> positive,
                        absl::Span<const float> negative) {
  if (positive.empty()) return -1.0;
  const auto all = Sorted(positive, negative);
  // scikit-learn's average_precision_score: one threshold per distinct score,
  // the precision there weighted by the positives it adds.
  double sum = 0.0;
  int64_t tp = 0, fp = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    int64_t pos = 0;
    for (; j < all.size() && all[j].first == all[i].first; ++j) {
      (all[j].second ? tp : fp) += 1;
      pos += all[j].second;
    }
    sum += static_cast<double>(pos) * static_cast<double>(tp) /
           static_cast<double>(tp + fp);
    i = j;
  }
  return sum / static_cast<double>(positive.size());
}

std::vector<int64_t> PositiveRanks(absl::Span<const float> positive,
                                   absl::Span<const float> negative,
                                   int64_t per_positive) {
  std::vector<int64_t> ranks(positive.size(), 1);
  for (size_t i = 0; i < positive.size(); ++i) {
    for (int64_t j = 0; j < per_positive; ++j) {
      if (negative[i * static_cast<size_t>(per_positive) + j] >= positive[i])
        ++ranks[i];
    }
  }
  return ranks;
}

std::vector<int64_t> PositiveRanksAgainstAll(absl::Span<const float> positive,
                                             absl::Span<const float> negative) {
  std::vector<float> sorted(negative.begin(), negative.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> ranks(positive.size());
  for (size_t i = 0; i < positive.size(); ++i) {
    // Negatives scoring at least as high: those from the first >= positive.
    const auto at_least =
        sorted.end() -
        std::lower_bound(sorted.begin(), sorted.end(), positive[i]);
    ranks[i] = 1 + static_cast<int64_t>(at_least);
  }
  return ranks;
}

double MeanReciprocalRank(absl::Span<const int64_t> ranks) {
  if (ranks.empty()) return -1.0;
  double sum = 0.0;
  for (int64_t r : ranks) sum += 1.0 / static_cast<double>(r);
  return sum / static_cast<double>(ranks.size());
}

double HitsAt(absl::Span<const int64_t> ranks, int64_t k) {
  if (ranks.empty()) return -1.0;
  int64_t hits = 0;
  for (int64_t r : ranks) hits += r <= k;
  return static_cast<double>(hits) / static_cast<double>(ranks.size());
}

}  // namespace shardgnn
