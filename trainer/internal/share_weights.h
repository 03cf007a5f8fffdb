// The weights by which data-parallel ranks cut each step's global batch
// (TrainOptions::share_weights / adapt_shares; sampler/loader.h SetShares),
// re-chosen from the ranks' measured speeds after every epoch.
//
// A rank's speed is its seeds per second over the epoch's time outside the
// gradient allreduce. One epoch's figure swings by 10-15% on a loaded or
// CPU-throttled machine, so the speed kept is the mean of the last
// measurement and the speed kept before (the first measurement as it is).
// Then every rank's weight is its speed over the fastest's, at least 1/8 (a
// rank is never starved by one bad epoch), in units of 2^-20; speeds all
// within 10% of the fastest's give equal weights instead (1 each), where the
// noise would cost more than the cut gains.
//
// Deterministic: every rank folds in the same measurements (an allreduce)
// and gets the same weights.
#ifndef SHARDGNN_TRAINER_INTERNAL_SHARE_WEIGHTS_H_
#define SHARDGNN_TRAINER_INTERNAL_SHARE_WEIGHTS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace shardgnn::internal {

class ShareWeights {
 public:
  // `initial`: one positive weight per rank.
  explicit ShareWeights(std::vector<int64_t> initial)
      : weights_(std::move(initial)), speeds_(weights_.size(), 0.0) {}

  // Folds in one epoch's speeds (seeds per second, one per rank); a rank
  // that measured nothing (<= 0) keeps every weight as it was.
  void Update(absl::Span<const double> measured);

  const std::vector<int64_t>& weights() const { return weights_; }
  // The speeds kept (0 before the first measurement).
  const std::vector<double>& speeds() const { return speeds_; }

 private:
  std::vector<int64_t> weights_;
  std::vector<double> speeds_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_SHARE_WEIGHTS_H_
