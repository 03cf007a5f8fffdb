#include "trainer/internal/checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::internal {
namespace {

using ::shardgnn::testing::TempDir;

TEST(CheckpointTest, RoundTripsStateAndOptimizer) {
  TempDir tmp;
  const std::string path = tmp.Sub("run.ckpt");
  torch::Tensor w = torch::randn({3, 2}, torch::requires_grad());
  torch::optim::Adam optimizer({w}, torch::optim::AdamOptions(0.1));
  w.sum().backward();
  optimizer.step();
  CheckpointState state;
  state.epoch = 3;
  state.dropout_count = 17;
  state.parameters = {w};
  state.best = {w.detach().clone() * 2};
  state.best_val_acc = 0.5;
  state.best_epoch = 2;
  EpochStats stats;
  stats.epoch = 1;
  stats.steps = 4;
  stats.loss = 1.25;
  state.history = {stats};
  ASSERT_OK(WriteCheckpoint(path, "run A", state, optimizer));

  torch::Tensor w2 = torch::zeros({3, 2}, torch::requires_grad());
  torch::optim::Adam optimizer2({w2}, torch::optim::AdamOptions(0.1));
  CheckpointState loaded;
  loaded.parameters = {w2};
  ASSERT_OK_AND_ASSIGN(bool found,
                       ReadCheckpoint(path, "run A", &loaded, &optimizer2));
  EXPECT_TRUE(found);
  EXPECT_TRUE(torch::equal(w2, w));
  EXPECT_EQ(loaded.epoch, 3);
  EXPECT_EQ(loaded.dropout_count, 17u);
  ASSERT_EQ(loaded.best.size(), 1u);
  EXPECT_TRUE(torch::equal(loaded.best[0], w * 2));
  EXPECT_EQ(loaded.best_epoch, 2);
  ASSERT_EQ(loaded.history.size(), 1u);
  EXPECT_EQ(loaded.history[0].loss, 1.25);
  EXPECT_EQ(loaded.history[0].steps, 4);
  // The optimizer continues identically: one more step on both gives the same
  // parameters.
  w.mutable_grad() = torch::ones_like(w);
  w2.mutable_grad() = torch::ones_like(w2);
  optimizer.step();
  optimizer2.step();
  EXPECT_TRUE(torch::allclose(w, w2));
}

TEST(CheckpointTest, MissingFileIsNotAnErrorButGarbageAndOtherRunsAre) {
  TempDir tmp;
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::Adam optimizer({w});
  CheckpointState state;
  state.parameters = {w};
  ASSERT_OK_AND_ASSIGN(bool found, ReadCheckpoint(tmp.Sub("none.ckpt"), "x",
                                                  &state, &optimizer));
  EXPECT_FALSE(found);
  std::ofstream(tmp.Sub("junk.ckpt")) << "not a checkpoint";
  absl::StatusOr<bool> junk =
      ReadCheckpoint(tmp.Sub("junk.ckpt"), "x", &state, &optimizer);
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(junk.status().message()).find("junk.ckpt"),
            std::string::npos);
  ASSERT_OK(WriteCheckpoint(tmp.Sub("a.ckpt"), "run A", state, optimizer));
  absl::StatusOr<bool> other =
      ReadCheckpoint(tmp.Sub("a.ckpt"), "run B", &state, &optimizer);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(other.status().message()).find("run A"),
            std::string::npos);
}

}  // namespace
}  // namespace shardgnn::internal
