// Prometheus metrics of one trainer (`train --metrics-listen`, served by
// graphstore/internal/metrics_endpoint.h): where a run is (phase, epoch,
// step), how fast it goes (step time, steps and examples per second), where
// its time goes (waiting for minibatches, compute, gradient sync), and how it
// learns (the last step's loss, the last epoch's loss and accuracies). The
// metric names and their meanings: docs/operations.md, "Trainer metrics".
//
// A TrainingMetrics is fed by the training loop's callbacks (Observe) and
// read by scrapes on another thread; each update is a few additions under a
// mutex, once a step. Nothing here is torch: the header is cheap to include.
#ifndef SHARDGNN_TRAINER_TRAINING_METRICS_H_
#define SHARDGNN_TRAINER_TRAINING_METRICS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trainer/trainer.h"

namespace shardgnn {

// Chains `observer` after whatever options->on_step already calls.
void AddStepObserver(TrainOptions* options,
                     std::function<void(const StepStats&)> observer);

class TrainingMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  // Samples carry rank="<rank>". `epochs` is the most the run trains.
  TrainingMetrics(int rank, int world_size, int epochs);

  // Points options' on_step, on_epoch and on_test_progress (chained after
  // what they already call) at this object, which must outlive the run.
  void Observe(TrainOptions* options);

  // What the callbacks report; `now` is when (tests pass their own clock).
  void Step(const StepStats& step, Clock::time_point now = Clock::now());
  void Epoch(const EpochStats& epoch);
  void Test(int64_t done, int64_t total);
  // Called when Train() returned: the phase becomes "done" or "failed".
  void Finish(bool ok);

  // Every metric now, in the text exposition format. Thread-safe.
  std::string Render(Clock::time_point now = Clock::now()) const;

  // Seconds of recent steps that the per-second rates are measured over.
  static constexpr double kRateWindowSeconds = 10.0;
  // Upper bounds of shardgnn_trainer_step_seconds' buckets (+Inf besides).
  static constexpr double kStepBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                            0.05,  0.1,    0.25,  0.5,  1,
                                            2.5,   5,      10,    30,   60};
  static constexpr int kNumBuckets = sizeof(kStepBuckets) / sizeof(double);

 private:
  struct Recent {
    Clock::time_point at;
    int64_t examples;
  };

  const int rank_;
  const int world_size_;
  const int epochs_;
  const Clock::time_point started_;
  mutable absl::Mutex mu_;
  std::string phase_ ABSL_GUARDED_BY(mu_) = "starting";
  int epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t epoch_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t epoch_steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t epoch_examples_ ABSL_GUARDED_BY(mu_) = 0;  // The current epoch's.
  // When the first step began (its wait included); unset before it.
  Clock::time_point first_step_ ABSL_GUARDED_BY(mu_);
  bool stepped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sampled_edges_ ABSL_GUARDED_BY(mu_) = 0;
  double wait_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  double compute_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  double sync_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  // Steps whose time (wait + compute) was at most each bound.
  int64_t step_buckets_[kNumBuckets] ABSL_GUARDED_BY(mu_) = {};
  double last_loss_ ABSL_GUARDED_BY(mu_) = 0;
  // Steps within kRateWindowSeconds of the last one, oldest first.
  std::deque<Recent> recent_ ABSL_GUARDED_BY(mu_);
  bool have_epoch_ ABSL_GUARDED_BY(mu_) = false;
  EpochStats last_epoch_ ABSL_GUARDED_BY(mu_);
  double last_epoch_examples_per_second_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t test_done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t test_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_TRAINING_METRICS_H_
