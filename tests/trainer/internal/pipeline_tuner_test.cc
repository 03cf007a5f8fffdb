#include "trainer/internal/pipeline_tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace shardgnn::internal {
namespace {

PipelineEpoch Epoch(double step, double wait, double sample) {
  PipelineEpoch e;
  e.steps = 20;
  e.step_seconds = step;
  e.wait_seconds = wait;
  e.sample_seconds = sample;
  return e;
}

// The first epoch is a warm-up: however long it waited, nothing changes.
void WarmUp(PipelineTuner& tuner) {
  const int before = tuner.threads();
  EXPECT_EQ(tuner.Observe(Epoch(10, 9, 90)), before);
  EXPECT_TRUE(tuner.reason().empty());
}

TEST(PipelineTunerTest, FixedWhenMinEqualsMax) {
  PipelineTuner tuner(2, 2);
  EXPECT_FALSE(tuner.automatic());
  EXPECT_EQ(tuner.threads(), 2);
  EXPECT_EQ(tuner.Observe(Epoch(10, 5, 20)), 2);
  EXPECT_TRUE(tuner.reason().empty());
}

TEST(PipelineTunerTest, StaysWhileTheStepsHardlyWait) {
  PipelineTuner tuner(1, 4);
  EXPECT_TRUE(tuner.automatic());
  WarmUp(tuner);
  EXPECT_EQ(tuner.Observe(Epoch(10, 0.4, 3)), 1);  // 4% < 5%.
  EXPECT_EQ(tuner.Observe(Epoch(10, 0.0, 9)), 1);
  EXPECT_TRUE(tuner.reason().empty());
}

TEST(PipelineTunerTest, GrowsByTheSamplingTimePerComputeSecond) {
  PipelineTuner tuner(1, 8);
  WarmUp(tuner);
  // Sampling took 27 thread-seconds for 6 s of compute: 5 threads keep up.
  EXPECT_EQ(tuner.Observe(Epoch(10, 4, 27)), 5);
  EXPECT_NE(tuner.reason().find("40.0%"), std::string::npos) << tuner.reason();
  // It helped (40% -> 2%): kept, and no further growth below 5%.
  EXPECT_EQ(tuner.Observe(Epoch(6.2, 0.12, 27)), 5);
  EXPECT_EQ(tuner.Observe(Epoch(6.2, 0.12, 27)), 5);
}

TEST(PipelineTunerTest, AtLeastOneMoreAndNeverAboveTheShare) {
  PipelineTuner tuner(1, 3);
  WarmUp(tuner);
  EXPECT_EQ(tuner.Observe(Epoch(10, 1, 0.5)), 2);   // Estimate 1: one more.
  EXPECT_EQ(tuner.Observe(Epoch(10, 0.6, 40)), 3);  // Helped; 5 capped to 3.
  EXPECT_EQ(tuner.Observe(Epoch(10, 0.3, 40)), 3);  // Helped; at the cap.
  EXPECT_EQ(tuner.Observe(Epoch(10, 2, 40)), 3);
}

TEST(PipelineTunerTest, TakesThreadsBackThatDidNotHelpAndSettles) {
  PipelineTuner tuner(1, 4);
  WarmUp(tuner);
  EXPECT_EQ(tuner.Observe(Epoch(10, 2, 9)), 2);
  // 20% -> 18%: the cores were busy; back to 1 for good.
  EXPECT_EQ(tuner.Observe(Epoch(10, 1.8, 9)), 1);
  EXPECT_NE(tuner.reason().find("back to 1"), std::string::npos)
      << tuner.reason();
  EXPECT_EQ(tuner.Observe(Epoch(10, 3, 9)), 1);
  EXPECT_TRUE(tuner.reason().empty());
}

TEST(PipelineTunerTest, IgnoresEmptyOrBrokenFigures) {
  PipelineTuner tuner(1, 4);
  WarmUp(tuner);
  EXPECT_EQ(tuner.Observe(Epoch(0, 0, 0)), 1);
  PipelineEpoch none = Epoch(10, 5, 5);
  none.steps = 0;
  EXPECT_EQ(tuner.Observe(none), 1);
  EXPECT_EQ(tuner.Observe(Epoch(10, std::nan(""), 5)), 1);
  // Waiting longer than the step (clock skew) counts as 100%.
  EXPECT_EQ(tuner.Observe(Epoch(1, 3, 0)), 2);
}

}  // namespace
}  // namespace shardgnn::internal
