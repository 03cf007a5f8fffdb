#include "trainer/internal/pipeline_tuner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shardgnn::internal {
namespace {

std::string Percent(double fraction) {
  return absl::StrFormat("%.1f%%", 100.0 * fraction);
}

}  // namespace

PipelineTuner::PipelineTuner(int min_threads, int max_threads,
                             double grow_above)
    : min_(std::max(1, min_threads)),
      max_(std::max(std::max(1, min_threads), max_threads)),
      grow_above_(grow_above),
      threads_(min_) {}

int PipelineTuner::Observe(const PipelineEpoch& epoch) {
  reason_.clear();
  if (!warmed_up_) {
    warmed_up_ = true;
    return threads_;
  }
  if (!automatic() || settled_ || epoch.steps <= 0 ||
      !(epoch.step_seconds > 0) || !std::isfinite(epoch.wait_seconds)) {
    return threads_;
  }
  const double waiting =
      std::clamp(epoch.wait_seconds / epoch.step_seconds, 0.0, 1.0);
  if (before_growth_ >= 0) {
    // The last epoch ran with more threads: keep them only if they helped.
    const double before = before_growth_;
    const int grown = threads_;
    before_growth_ = -1;
    if (waiting > 0.75 * before) {
      threads_ = threads_before_growth_;
      settled_ = true;
      reason_ = absl::StrCat("waiting ", Percent(before), " -> ",
                             Percent(waiting), " of the step with ", grown,
                             ": the cores are busy, back to ", threads_);
      return threads_;
    }
  }
  if (waiting > grow_above_ && threads_ < max_) {
    // Threads that make a batch per compute step between them.
    const double compute = epoch.step_seconds - epoch.wait_seconds;
    int want = threads_ + 1;
    if (compute > 0 && epoch.sample_seconds > 0) {
      const double needed = std::ceil(epoch.sample_seconds / compute);
      if (needed > want)
        want = static_cast<int>(std::min<double>(needed, max_));
    }
    before_growth_ = waiting;
    threads_before_growth_ = threads_;
    threads_ = std::min(want, max_);
    reason_ =
        absl::StrCat("the steps waited ", Percent(waiting),
                     " of their time for batches: ", threads_before_growth_,
                     " -> ", threads_);
  }
  return threads_;
}

}  // namespace shardgnn::internal
