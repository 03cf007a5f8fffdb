#include "trainer/internal/share_weights.h"

#include <algorithm>
#include <cmath>

namespace shardgnn::internal {

void ShareWeights::Update(absl::Span<const double> measured) {
  if (measured.size() != speeds_.size()) return;
  for (double m : measured) {
    if (!(m > 0)) return;  // Nothing measured (or NaN): keep the weights.
  }
  for (size_t r = 0; r < measured.size(); ++r) {
    speeds_[r] = speeds_[r] > 0 ? (speeds_[r] + measured[r]) / 2 : measured[r];
  }
  const auto [slowest, fastest] =
      std::minmax_element(speeds_.begin(), speeds_.end());
  const bool equal = *slowest >= 0.9 * *fastest;
  constexpr double kScale = 1 << 20;
  for (size_t r = 0; r < speeds_.size(); ++r) {
    weights_[r] =
        equal ? 1
              : std::llround(kScale * std::max(speeds_[r] / *fastest, 1.0 / 8));
  }
}

}  // namespace shardgnn::internal
