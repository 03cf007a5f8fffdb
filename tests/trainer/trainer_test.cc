// One trainer in one process: every model learns, the epoch schedule
// (minimum steps, patience, ties, fixed steps per epoch), feature norms, the
// sampler threads, and the errors a run ends with.
#include "trainer/trainer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sampler/graph_source.h"
#include "tests/sampler/failing_source.h"
#include "tests/testing/status_matchers.h"
#include "tests/trainer/sbm_graph.h"
#include "tests/trainer/trainer_fixture.h"
#include "trainer/internal/models.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::SbmGraph;
using ::shardgnn::testing::TrainerTest;

TEST_F(TrainerTest, EveryModelLearnsAnSbmWellAboveChance) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    SCOPED_TRACE(ModelKindName(kind));
    ASSERT_OK_AND_ASSIGN(TrainResult result,
                         Train(*source_, graph_.splits, SbmOptions(kind)));
    ASSERT_EQ(result.epochs.size(), 8u);
    EXPECT_GT(result.test_acc,
              0.8);  // Chance is 0.25.
    EXPECT_GE(result.best_val_acc, result.epochs.front().val_acc);
    EXPECT_LT(result.epochs.back().loss, result.epochs.front().loss);
    EXPECT_GT(result.epochs.front().sampled_edges, 0);
    EXPECT_EQ(result.epochs.front().steps,
              std::max<int64_t>(10, (graph_.splits.train.size() + 63) / 64));
  }
}

// A graph with few labels (Cora has 140) must not train one step per epoch:
// an epoch has at least min_steps_per_epoch steps, each a batch of distinct
// train nodes.
TEST_F(TrainerTest, SmallTrainSetsGetTheMinimumStepsPerEpoch) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 2;
  options.batch_size = 1024;
  TrainSplits splits = graph_.splits;
  splits.train.resize(40);
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source_, splits, options));
  EXPECT_EQ(result.steps_per_epoch, 10);
  EXPECT_EQ(result.epochs[0].steps, 10);
  options.min_steps_per_epoch = 3;
  ASSERT_OK_AND_ASSIGN(result, Train(*source_, splits, options));
  EXPECT_EQ(result.epochs[0].steps, 3);
  EXPECT_EQ(StepsPerEpoch(40, 1024, 10), 10);
  EXPECT_EQ(StepsPerEpoch(40000, 1024, 10), 40);
}

// The test pass's page faults, and those of its second half (its first
// batches grow buffers to its larger sizes; the rest should run in them).
TEST_F(TrainerTest, TheTestPassCountsTheFaultsOfItsSecondHalf) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 1;
  options.eval_batch_size = 16;
  ASSERT_OK_AND_ASSIGN(TrainResult result,
                       Train(*source_, graph_.splits, options));
  ASSERT_EQ(result.test_batches,
            static_cast<int64_t>((graph_.splits.test.size() + 15) / 16));
  ASSERT_GE(result.test_batches, 2);
  EXPECT_GE(result.test_second_half_minor_faults, 0);
  EXPECT_LE(result.test_second_half_minor_faults, result.test_minor_faults);
  // One batch: no second half.
  options.eval_batch_size = static_cast<int64_t>(graph_.splits.test.size() +
                                                 graph_.splits.valid.size());
  ASSERT_OK_AND_ASSIGN(result, Train(*source_, graph_.splits, options));
  EXPECT_EQ(result.test_batches, 1);
  EXPECT_EQ(result.test_second_half_minor_faults, -1);
}

TEST_F(TrainerTest, PatienceStopsWhenValidationStopsImprovingAndKeepsTheBest) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 60;
  options.patience = 2;
  ASSERT_OK_AND_ASSIGN(TrainResult result,
                       Train(*source_, graph_.splits, options));
  EXPECT_TRUE(result.stopped_early);
  ASSERT_LT(result.epochs.size(), 60u);
  EXPECT_EQ(static_cast<int>(result.epochs.size()) - result.best_epoch, 2);
  for (const EpochStats& e : result.epochs)
    EXPECT_LE(e.val_acc, result.best_val_acc);
  options.patience = 0;
  options.epochs = static_cast<int>(result.epochs.size()) + 1;
  ASSERT_OK_AND_ASSIGN(TrainResult all,
                       Train(*source_, graph_.splits, options));
  EXPECT_FALSE(all.stopped_early);
  EXPECT_EQ(all.epochs.size(), result.epochs.size() + 1);
}

// The kept epoch has the best validation accuracy and, among the epochs
// that share it, the lowest validation loss. Eight validation nodes make ties
// certain.
TEST_F(TrainerTest, TiesOfValidationAccuracyGoToTheLowerLoss) {
  TrainSplits splits = graph_.splits;
  splits.valid.resize(8);
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 12;
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source_, splits, options));
  int ties = 0;
  const EpochStats& best = result.epochs[result.best_epoch - 1];
  EXPECT_EQ(best.val_acc, result.best_val_acc);
  for (const EpochStats& e : result.epochs) {
    EXPECT_LE(e.val_acc, best.val_acc) << "epoch " << e.epoch;
    EXPECT_GT(e.val_loss, 0.0);
    if (e.val_acc == best.val_acc && e.epoch != best.epoch) {
      ++ties;
      EXPECT_GE(e.val_loss, best.val_loss) << "epoch " << e.epoch;
    }
  }
  EXPECT_GT(ties, 0) << "no tie: the test shows nothing";
}

TEST_F(TrainerTest, ANonFiniteLossFailsTheRunNamingTheEpochAndStep) {
  SbmGraph huge = graph_;
  for (float& f : huge.features) f *= 1e37f;
  ASSERT_OK_AND_ASSIGN(auto source, InMemoryGraphSource::Create(huge.arrays()));
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 3;
  absl::StatusOr<TrainResult> result = Train(*source, huge.splits, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(result.status().message())
                .find("diverged in epoch 1, step 1:"),
            std::string::npos)
      << result.status();
}

TEST_F(TrainerTest, FeatureNormIsChosenFromTheDataAndAppliedPerRow) {
  // SBM features are signed (Gaussian noise): standardised.
  ASSERT_OK_AND_ASSIGN(
      FeatureNormChoice signed_choice,
      ChooseFeatureNorm(*source_, true, FeatureNorm::kNone, 1, 4096));
  EXPECT_EQ(signed_choice.transform.norm, FeatureNorm::kStandardize);
  EXPECT_EQ(signed_choice.sampled_nodes, 1200);
  ASSERT_EQ(signed_choice.transform.shift.size(), 16u);
  // Column 0 has mean 0.7 / 4 (the class signal) and standard deviation ~1.
  EXPECT_NEAR(signed_choice.transform.shift[0], 0.7 / 4, 0.1);
  EXPECT_NEAR(signed_choice.transform.scale[0], 1.0, 0.1);
  EXPECT_LT(signed_choice.min_value, 0);

  // Non-negative inputs of every kind: binary bag of words with few
  // non-zeros per row and with most of them set, and dense real values. Each
  // row is scaled to unit L2 length, so that a row's scale depends neither
  // on its number of non-zeros nor on the data's units.
  struct Kind {
    const char* name;
    std::function<float(float)> value;
  };
  const Kind kinds[] = {
      {"sparse binary", [](float f) { return f > 1.0f ? 1.0f : 0.0f; }},
      {"dense binary", [](float f) { return f > -1.0f ? 1.0f : 0.0f; }},
      {"dense real", [](float f) { return 100.0f * std::abs(f); }},
  };
  std::unique_ptr<GraphSource> count_source;
  for (const Kind& kind : kinds) {
    SCOPED_TRACE(kind.name);
    SbmGraph counts = graph_;
    for (float& f : counts.features) f = kind.value(f);
    ASSERT_OK_AND_ASSIGN(count_source,
                         InMemoryGraphSource::Create(counts.arrays()));
    ASSERT_OK_AND_ASSIGN(
        FeatureNormChoice bag,
        ChooseFeatureNorm(*count_source, true, FeatureNorm::kNone, 1, 100));
    EXPECT_EQ(bag.transform.norm, FeatureNorm::kRowL2);
    EXPECT_EQ(bag.sampled_nodes, 100);
    EXPECT_TRUE(bag.transform.shift.empty());
    EXPECT_GE(bag.min_value, 0);
    torch::Tensor x =
        torch::from_blob(
            counts.features.data(),
            {static_cast<int64_t>(counts.features.size()) / counts.dim,
             counts.dim},
            torch::kFloat)
            .clone();
    internal::ApplyInputTransform(internal::MakeInputTransform(bag.transform),
                                  x);
    const torch::Tensor length = x.square().sum(1).sqrt();
    const torch::Tensor nonzero = (x.abs().sum(1) > 0);
    // Rows with any non-zero value have length 1; empty rows stay 0.
    EXPECT_TRUE(torch::allclose(length.masked_select(nonzero),
                                torch::ones({nonzero.sum().item<int64_t>()}),
                                1e-5, 1e-5));
    EXPECT_EQ(length.masked_select(nonzero.logical_not()).sum().item<float>(),
              0.0f);
  }

  // What is asked for is kept.
  ASSERT_OK_AND_ASSIGN(
      FeatureNormChoice none,
      ChooseFeatureNorm(*count_source, false, FeatureNorm::kNone, 1));
  EXPECT_EQ(none.transform.norm, FeatureNorm::kNone);

  // A non-finite value is refused, naming the node.
  SbmGraph bad = graph_;
  bad.features[7 * bad.dim + 3] = std::nanf("");
  ASSERT_OK_AND_ASSIGN(auto bad_source,
                       InMemoryGraphSource::Create(bad.arrays()));
  absl::StatusOr<FeatureNormChoice> refused =
      ChooseFeatureNorm(*bad_source, true, FeatureNorm::kNone, 1, 4096);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.status().message()).find("node 7 "),
            std::string::npos)
      << refused.status();

  // Standardised training: the transform reaches the model (a wrong width
  // is refused).
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 2;
  options.model.features = signed_choice.transform;
  ASSERT_OK_AND_ASSIGN(TrainResult result,
                       Train(*source_, graph_.splits, options));
  EXPECT_GT(result.test_acc, 0.5);
  options.model.features.shift.pop_back();
  EXPECT_EQ(Train(*source_, graph_.splits, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TrainerTest, SameSeedGivesTheSameRun) {
  TrainOptions options = SbmOptions(ModelKind::kGat);
  options.epochs = 2;
  ASSERT_OK_AND_ASSIGN(TrainResult a, Train(*source_, graph_.splits, options));
  ASSERT_OK_AND_ASSIGN(TrainResult b, Train(*source_, graph_.splits, options));
  options.prefetch = 0;  // Sampling on the training thread: the same run.
  ASSERT_OK_AND_ASSIGN(TrainResult d, Train(*source_, graph_.splits, options));
  options.seed = 6;
  ASSERT_OK_AND_ASSIGN(TrainResult c, Train(*source_, graph_.splits, options));
  for (int e = 0; e < 2; ++e) {
    EXPECT_EQ(a.epochs[e].loss, b.epochs[e].loss);
    EXPECT_EQ(a.epochs[e].loss, d.epochs[e].loss);
  }
  EXPECT_EQ(a.test_acc, b.test_acc);
  EXPECT_NE(a.epochs[0].loss, c.epochs[0].loss);
}

TEST_F(TrainerTest, SamplerThreadsGrowWhileStepsWaitAndLeaveResultsAlone) {
  // One sampling thread cannot keep up with the small model's steps when
  // every call takes a round trip to a far server.
  testing::SlowSource slow(source_.get(), std::chrono::milliseconds(25));
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 4;
  options.sampler_threads = 1;
  ASSERT_OK_AND_ASSIGN(TrainResult fixed, Train(slow, graph_.splits, options));
  options.max_sampler_threads = 4;
  ASSERT_OK_AND_ASSIGN(TrainResult tuned, Train(slow, graph_.splits, options));
  ASSERT_EQ(tuned.epochs.size(), 4u);
  // Epoch 1 is the warm-up; epoch 2's steps waited for batches, so epoch 3
  // runs with more threads.
  EXPECT_EQ(tuned.epochs[0].sampler_threads, 1);
  EXPECT_TRUE(tuned.epochs[0].sampler_threads_change.empty());
  EXPECT_EQ(tuned.epochs[1].sampler_threads, 1);
  EXPECT_NE(tuned.epochs[1].sampler_threads_change.find("waited"),
            std::string::npos)
      << tuned.epochs[1].sampler_threads_change;
  EXPECT_GT(tuned.epochs[2].sampler_threads, 1);
  EXPECT_GT(tuned.epochs[0].cpu_seconds, 0.0);
  EXPECT_LE(tuned.sampler_threads, 4);
  EXPECT_EQ(fixed.sampler_threads, 1);
  for (const EpochStats& e : fixed.epochs) {
    EXPECT_EQ(e.sampler_threads, 1);
    EXPECT_TRUE(e.sampler_threads_change.empty());
  }
  // The same batches, so the same run.
  for (size_t e = 0; e < 4; ++e) {
    EXPECT_EQ(tuned.epochs[e].loss, fixed.epochs[e].loss) << "epoch " << e + 1;
    EXPECT_EQ(tuned.epochs[e].val_acc, fixed.epochs[e].val_acc);
  }
  EXPECT_EQ(tuned.parameters_checksum, fixed.parameters_checksum);
  EXPECT_EQ(tuned.test_acc, fixed.test_acc);
}

// Counts the sampling calls, each delayed as a far server's.
class CountingSlowSource : public testing::SlowSource {
 public:
  using SlowSource::SlowSource;
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
    calls_.fetch_add(1);
    return SlowSource::SampleNeighbors(nodes, fanout, replace, seed, out);
  }
  int64_t calls() const { return calls_.load(); }

 private:
  mutable std::atomic<int64_t> calls_{0};
};

TEST_F(TrainerTest, TheNextEpochsBatchesAreSampledWhileAnEpochValidates) {
  // The sampling calls made between epoch 1's last step and its end
  // (validation): validation's own, and, with an epoch to come, the first
  // batches of epoch 2, so that its first step need not wait for them.
  auto calls_after_last_step = [&](int epochs) -> int64_t {
    CountingSlowSource slow(source_.get(), std::chrono::milliseconds(20));
    TrainOptions options = SbmOptions(ModelKind::kSage);
    options.epochs = epochs;
    options.sampler_threads = 1;
    int64_t at_last_step = -1;
    int64_t at_epoch_end = -1;
    options.on_step = [&](const StepStats& s) {
      if (s.epoch == 1 && s.step == s.steps) at_last_step = slow.calls();
    };
    options.on_epoch = [&](const EpochStats& e) {
      if (e.epoch == 1) at_epoch_end = slow.calls();
    };
    EXPECT_OK(Train(slow, graph_.splits, options).status());
    EXPECT_GE(at_last_step, 0);
    return at_epoch_end - at_last_step;
  };
  const int64_t last_epoch = calls_after_last_step(1);
  const int64_t more_to_come = calls_after_last_step(2);
  EXPECT_GT(last_epoch, 0);  // Validation's.
  EXPECT_GT(more_to_come, last_epoch);
}

// What on_step reports (trainer metrics: trainer/training_metrics.h) adds up
// to what the epochs report: steps, sampled edges, waits and compute; each
// step's examples are its batch's labeled seeds, and its loss is finite.
TEST_F(TrainerTest, StepFiguresAddUpToTheEpochs) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 2;
  struct Sums {
    int64_t steps = 0, examples = 0, sampled_edges = 0;
    double wait = 0, compute = 0;
  };
  std::map<int, Sums> by_epoch;
  options.on_step = [&](const StepStats& s) {
    Sums& sums = by_epoch[s.epoch];
    ++sums.steps;
    EXPECT_EQ(s.step, sums.steps);
    EXPECT_GT(s.examples, 0);
    EXPECT_LE(s.examples, options.batch_size);
    EXPECT_TRUE(std::isfinite(s.loss)) << s.loss;
    EXPECT_GE(s.wait_seconds, 0);
    EXPECT_GT(s.compute_seconds, 0);
    EXPECT_EQ(s.sync_seconds, 0);  // No gradient sync.
    sums.examples += s.examples;
    sums.sampled_edges += s.sampled_edges;
    sums.wait += s.wait_seconds;
    sums.compute += s.compute_seconds;
  };
  ASSERT_OK_AND_ASSIGN(TrainResult result,
                       Train(*source_, graph_.splits, options));
  ASSERT_EQ(result.epochs.size(), 2u);
  for (const EpochStats& e : result.epochs) {
    const Sums& sums = by_epoch[e.epoch];
    EXPECT_EQ(sums.steps, e.steps);
    EXPECT_EQ(sums.steps, result.steps_per_epoch);
    EXPECT_EQ(sums.sampled_edges, e.sampled_edges);
    EXPECT_NEAR(sums.wait, e.sample_seconds, 1e-9);
    EXPECT_NEAR(sums.compute, e.compute_seconds, 1e-9);
    // Every train node is labeled: an epoch covers the train split at least.
    EXPECT_GE(sums.examples, static_cast<int64_t>(graph_.splits.train.size()));
  }
}

TEST_F(TrainerTest, FixedStepsPerEpochPadAndTrim) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 1;
  const int64_t natural =
      static_cast<int64_t>((graph_.splits.train.size() + 63) / 64);
  for (int64_t steps : {int64_t{2}, 2 * natural + 1}) {
    options.steps_per_epoch = steps;
    ASSERT_OK_AND_ASSIGN(TrainResult result,
                         Train(*source_, graph_.splits, options));
    EXPECT_EQ(result.epochs[0].steps, steps);
  }
  options.steps_per_epoch = -1;
  EXPECT_FALSE(Train(*source_, graph_.splits, options).ok());
}

TEST_F(TrainerTest, WithoutValidationNodesTheLastEpochIsKept) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.epochs = 3;
  TrainSplits splits = graph_.splits;
  splits.valid.clear();
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source_, splits, options));
  EXPECT_EQ(result.best_epoch, 3);
  EXPECT_EQ(result.epochs.back().val_acc, -1.0);
  EXPECT_GT(result.test_acc, 0.5);
}

TEST_F(TrainerTest, ASourceFailureMidEpochEndsTheRunWithItsError) {
  for (int prefetch : {4, 0}) {
    testing::FailingSource failing(source_.get(), 7);
    TrainOptions options = SbmOptions(ModelKind::kSage);
    options.prefetch = prefetch;
    absl::StatusOr<TrainResult> result = Train(failing, graph_.splits, options);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(std::string(result.status().message()).find("server went away"),
              std::string::npos);
  }
}

TEST_F(TrainerTest, RejectsInconsistentOptions) {
  TrainOptions options = SbmOptions(ModelKind::kSage);
  options.fanouts = {5, 5, 5};
  absl::StatusOr<TrainResult> result = Train(*source_, graph_.splits, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(result.status().message()).find("3 fanouts"),
            std::string::npos);
  options = SbmOptions(ModelKind::kSage);
  options.average_decay = 1.0;
  result = Train(*source_, graph_.splits, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(result.status().message()).find("average decay"),
            std::string::npos);
  options = SbmOptions(ModelKind::kSage);
  TrainSplits bad = graph_.splits;
  bad.train.push_back(123456);
  result = Train(*source_, bad, options);
  EXPECT_FALSE(result.ok());
  EXPECT_NE(std::string(result.status().message()).find("123456"),
            std::string::npos);
}

}  // namespace
}  // namespace shardgnn
