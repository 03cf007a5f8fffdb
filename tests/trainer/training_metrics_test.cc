// A trainer's Prometheus metrics (trainer/training_metrics.h) from steps,
// epochs and test progress fed by hand with a clock of the test's own: the
// counters, the step-time histogram, the rates over the last 10 s, the phase,
// and how AddStepObserver and Observe chain the run's other callbacks.
#include "trainer/training_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "tests/testing/scrape.h"

namespace shardgnn {
namespace {

using Clock = TrainingMetrics::Clock;
using std::chrono::milliseconds;

StepStats MakeStep(int epoch, int64_t step, int64_t steps, double wait,
                   double compute, double loss = 0.5) {
  StepStats s;
  s.epoch = epoch;
  s.step = step;
  s.steps = steps;
  s.examples = 100;
  s.sampled_edges = 1000;
  s.wait_seconds = wait;
  s.compute_seconds = compute;
  s.sync_seconds = compute / 4;
  s.loss = loss;
  return s;
}

// The phase whose sample is 1 (and that exactly one is).
std::string Phase(const std::map<std::string, double>& samples) {
  std::string phase;
  int ones = 0;
  for (const char* p :
       {"starting", "training", "validating", "testing", "done", "failed"}) {
    const std::string key =
        std::string("shardgnn_trainer_phase{rank=\"3\",phase=\"") + p + "\"}";
    auto it = samples.find(key);
    EXPECT_NE(it, samples.end()) << key;
    if (it != samples.end() && it->second == 1) {
      phase = p;
      ++ones;
    }
  }
  EXPECT_EQ(ones, 1);
  return phase;
}

TEST(TrainingMetricsTest, CountsStepsAndTheirTimes) {
  TrainingMetrics metrics(/*rank=*/3, /*world_size=*/4, /*epochs=*/5);
  const Clock::time_point t0 = Clock::now();
  auto before = testing::ParseSamples(metrics.Render(t0));
  EXPECT_EQ(Phase(before), "starting");
  EXPECT_EQ(before["shardgnn_trainer_steps_total{rank=\"3\"}"], 0);
  EXPECT_EQ(before["shardgnn_trainer_world_size{rank=\"3\"}"], 4);
  EXPECT_EQ(before["shardgnn_trainer_epochs{rank=\"3\"}"], 5);
  EXPECT_EQ(before.count("shardgnn_trainer_loss{rank=\"3\"}"), 0u)
      << "no loss before a step";

  // Steps of 3 ms, 30 ms and 3 s (wait + compute).
  metrics.Step(MakeStep(1, 1, 4, 0.001, 0.002), t0 + milliseconds(3));
  metrics.Step(MakeStep(1, 2, 4, 0.010, 0.020), t0 + milliseconds(33));
  metrics.Step(MakeStep(1, 3, 4, 1.0, 2.0, 0.25), t0 + milliseconds(3033));
  auto s = testing::ParseSamples(metrics.Render(t0 + milliseconds(3033)));
  EXPECT_EQ(Phase(s), "training");
  EXPECT_EQ(s["shardgnn_trainer_epoch{rank=\"3\"}"], 1);
  EXPECT_EQ(s["shardgnn_trainer_epoch_step{rank=\"3\"}"], 3);
  EXPECT_EQ(s["shardgnn_trainer_epoch_steps{rank=\"3\"}"], 4);
  EXPECT_EQ(s["shardgnn_trainer_steps_total{rank=\"3\"}"], 3);
  EXPECT_EQ(s["shardgnn_trainer_examples_total{rank=\"3\"}"], 300);
  EXPECT_EQ(s["shardgnn_trainer_sampled_edges_total{rank=\"3\"}"], 3000);
  EXPECT_NEAR(s["shardgnn_trainer_wait_seconds_total{rank=\"3\"}"], 1.011,
              1e-12);
  EXPECT_NEAR(s["shardgnn_trainer_compute_seconds_total{rank=\"3\"}"], 2.022,
              1e-12);
  EXPECT_NEAR(s["shardgnn_trainer_sync_seconds_total{rank=\"3\"}"], 2.022 / 4,
              1e-12);
  EXPECT_EQ(s["shardgnn_trainer_loss{rank=\"3\"}"], 0.25);
  // Cumulative buckets.
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"0.001\"}"],
            0);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"0.005\"}"],
            1);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"0.05\"}"],
            2);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"2.5\"}"],
            2);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"5\"}"], 3);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_bucket{rank=\"3\",le=\"+Inf\"}"],
            3);
  EXPECT_EQ(s["shardgnn_trainer_step_seconds_count{rank=\"3\"}"], 3);
  EXPECT_NEAR(s["shardgnn_trainer_step_seconds_sum{rank=\"3\"}"], 3.033, 1e-12);
  // The first step began at t0: 3 steps and 300 examples in 3.033 s.
  EXPECT_NEAR(s["shardgnn_trainer_steps_per_second{rank=\"3\"}"], 3 / 3.033,
              1e-6);
  EXPECT_NEAR(s["shardgnn_trainer_examples_per_second{rank=\"3\"}"],
              300 / 3.033, 1e-4);

  // The epoch's last step: validation follows.
  metrics.Step(MakeStep(1, 4, 4, 0, 0.001, NAN), t0 + milliseconds(3034));
  s = testing::ParseSamples(metrics.Render(t0 + milliseconds(3034)));
  EXPECT_EQ(Phase(s), "validating");
  EXPECT_TRUE(std::isnan(s["shardgnn_trainer_loss{rank=\"3\"}"]))
      << "a batch without labels has no loss";
}

TEST(TrainingMetricsTest, RatesCoverTheLastTenSeconds) {
  TrainingMetrics metrics(3, 1, 100);
  const Clock::time_point t0 = Clock::now();
  // A step of 100 examples every second for 30 s, then 20 s of nothing
  // (a long validation).
  for (int i = 1; i <= 30; ++i)
    metrics.Step(MakeStep(1, i, 100, 0.5, 0.5), t0 + std::chrono::seconds(i));
  auto s = testing::ParseSamples(metrics.Render(t0 + std::chrono::seconds(30)));
  // Steps 21..30 end within the last 10 s.
  EXPECT_NEAR(s["shardgnn_trainer_steps_per_second{rank=\"3\"}"], 1.0, 1e-9);
  EXPECT_NEAR(s["shardgnn_trainer_examples_per_second{rank=\"3\"}"], 100.0,
              1e-9);
  s = testing::ParseSamples(metrics.Render(t0 + std::chrono::seconds(35)));
  EXPECT_NEAR(s["shardgnn_trainer_steps_per_second{rank=\"3\"}"], 0.5, 1e-9);
  s = testing::ParseSamples(metrics.Render(t0 + std::chrono::seconds(50)));
  EXPECT_EQ(s["shardgnn_trainer_steps_per_second{rank=\"3\"}"], 0);
  EXPECT_EQ(s["shardgnn_trainer_steps_total{rank=\"3\"}"], 30)
      << "the counters keep every step";
}

TEST(TrainingMetricsTest, EpochsAndTheTestAndTheEnd) {
  TrainingMetrics metrics(3, 2, 2);
  const Clock::time_point t0 = Clock::now();
  metrics.Step(MakeStep(1, 1, 2, 0.1, 0.1), t0);
  metrics.Step(MakeStep(1, 2, 2, 0.1, 0.1), t0);
  EpochStats e;
  e.epoch = 1;
  e.loss = 0.75;
  e.train_acc = 0.5;
  e.val_acc = 0.625;
  e.val_score = 0.625;
  e.epoch_seconds = 4;
  metrics.Epoch(e);
  auto s = testing::ParseSamples(metrics.Render(t0));
  EXPECT_EQ(s["shardgnn_trainer_last_epoch{rank=\"3\"}"], 1);
  EXPECT_EQ(s["shardgnn_trainer_epoch_loss{rank=\"3\"}"], 0.75);
  EXPECT_EQ(s["shardgnn_trainer_epoch_train_accuracy{rank=\"3\"}"], 0.5);
  EXPECT_EQ(s["shardgnn_trainer_epoch_validation_accuracy{rank=\"3\"}"], 0.625);
  EXPECT_EQ(s["shardgnn_trainer_epoch_seconds{rank=\"3\"}"], 4);
  // 200 examples in the epoch's 4 s.
  EXPECT_EQ(s["shardgnn_trainer_epoch_examples_per_second{rank=\"3\"}"], 50);
  EXPECT_EQ(s.count("shardgnn_trainer_test_done{rank=\"3\"}"), 0u);

  // The next epoch counts its own examples.
  metrics.Step(MakeStep(2, 1, 2, 0.1, 0.1), t0);
  e.epoch = 2;
  e.val_acc = -1;  // No validation split: no validation figures.
  e.val_score = -1;
  metrics.Epoch(e);
  s = testing::ParseSamples(metrics.Render(t0));
  EXPECT_EQ(s["shardgnn_trainer_epoch_examples_per_second{rank=\"3\"}"], 25);
  EXPECT_EQ(s.count("shardgnn_trainer_epoch_validation_accuracy{rank=\"3\"}"),
            0u);

  metrics.Test(3, 8);
  s = testing::ParseSamples(metrics.Render(t0));
  EXPECT_EQ(Phase(s), "testing");
  EXPECT_EQ(s["shardgnn_trainer_test_done{rank=\"3\"}"], 3);
  EXPECT_EQ(s["shardgnn_trainer_test_total{rank=\"3\"}"], 8);
  metrics.Finish(true);
  EXPECT_EQ(Phase(testing::ParseSamples(metrics.Render(t0))), "done");
  metrics.Finish(false);
  EXPECT_EQ(Phase(testing::ParseSamples(metrics.Render(t0))), "failed");
}

TEST(TrainingMetricsTest, ObserveChainsTheRunsOtherCallbacks) {
  TrainOptions options;
  int steps_seen = 0, epochs_seen = 0, tests_seen = 0, second_observer = 0;
  options.on_step = [&](const StepStats&) { ++steps_seen; };
  options.on_epoch = [&](const EpochStats&) { ++epochs_seen; };
  options.on_test_progress = [&](int64_t, int64_t) { ++tests_seen; };
  TrainingMetrics metrics(3, 1, 1);
  metrics.Observe(&options);
  AddStepObserver(&options, [&](const StepStats&) { ++second_observer; });
  options.on_step(MakeStep(1, 1, 1, 0, 0));
  options.on_epoch(EpochStats{});
  options.on_test_progress(1, 2);
  EXPECT_EQ(steps_seen, 1);
  EXPECT_EQ(epochs_seen, 1);
  EXPECT_EQ(tests_seen, 1);
  EXPECT_EQ(second_observer, 1);
  auto s = testing::ParseSamples(metrics.Render());
  EXPECT_EQ(s["shardgnn_trainer_steps_total{rank=\"3\"}"], 1);
  EXPECT_EQ(s["shardgnn_trainer_test_total{rank=\"3\"}"], 2);

  // Observing options without callbacks works too.
  TrainOptions bare;
  metrics.Observe(&bare);
  bare.on_step(MakeStep(1, 1, 1, 0, 0));
  bare.on_epoch(EpochStats{});
  bare.on_test_progress(2, 2);
  EXPECT_EQ(testing::ParseSamples(
                metrics.Render())["shardgnn_trainer_steps_total{rank=\"3\"}"],
            2);
}

}  // namespace
}  // namespace shardgnn
