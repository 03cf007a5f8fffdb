// Accuracy on real data: GraphSAGE on the bundled Cora within the published
// range, and two slow checks run by hand (--gtest_also_run_disabled_tests):
// SAGE against an MLP on a 100k-node SBM, and the 5-seed Cora table.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/generators.h"
#include "datasets/importers.h"
#include "sampler/graph_source.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::SourcePath;
using ::shardgnn::testing::TempDir;

// Issue 5's SBM check: on a generated 100k-node SBM, SAGE beats an MLP on the
// same features by well over 10 points. Slow; run with
// --gtest_also_run_disabled_tests.
TEST(SbmTest, DISABLED_SageBeatsMlpOn100kNodes) {
  Progress::SetQuietByDefault(true);
  TempDir tmp;
  GeneratorOptions generate;
  generate.num_nodes = 100000;
  generate.seed = 1;
  ASSERT_OK(GenerateDataset(generate, tmp.Sub("sbm")).status());
  ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(tmp.Sub("sbm")));
  ASSERT_OK_AND_ASSIGN(auto source, InMemoryGraphSource::FromDataset(dataset));
  TrainSplits splits;
  splits.train = dataset.splits.at("train");
  splits.valid = dataset.splits.at("valid");
  splits.test = dataset.splits.at("test");
  double acc[2];
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kMlp}) {
    TrainOptions options;
    options.model.kind = kind;
    options.model.hidden = 128;
    options.model.dropout = 0.2;
    options.fanouts = kind == ModelKind::kMlp ? std::vector<int>{0, 0}
                                              : std::vector<int>{10, 10};
    options.eval_fanouts = options.fanouts;
    options.batch_size = 1024;
    options.epochs = 5;
    options.seed = 1;
    ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source, splits, options));
    double seconds = 0;
    for (const EpochStats& e : result.epochs) seconds += e.epoch_seconds;
    std::printf(
        "{\"model\": \"%s\", \"test_acc\": %.4f, \"train_seconds\": %.1f}\n",
        ModelKindName(kind), result.test_acc, seconds);
    acc[kind == ModelKind::kMlp] = result.test_acc;
  }
  EXPECT_GT(acc[0], acc[1] + 0.10);
}

// Cora (public Planetoid split) imported once from the bundled copy.
class CoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Progress::SetQuietByDefault(true);
    tmp_ = new TempDir();
    OgbImportOptions import;
    import.input_dir = SourcePath("datasets/cora/ogb-planetoid");
    import.edges.undirected = true;
    import.name = "cora";
    const std::string dir = tmp_->Sub("cora");
    absl::Status status = ImportOgb(import, dir).status();
    absl::StatusOr<Dataset> dataset =
        status.ok() ? LoadDataset(dir) : absl::StatusOr<Dataset>(status);
    if (dataset.ok()) cora_ = new Dataset(*std::move(dataset));
    status_ = new absl::Status(dataset.status());
  }
  static void TearDownTestSuite() {
    delete cora_;
    delete status_;
    delete tmp_;
  }
  void SetUp() override {
    ASSERT_OK(*status_);
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::FromDataset(*cora_));
    splits_.train = cora_->splits.at("train");
    splits_.valid = cora_->splits.at("valid");
    splits_.test = cora_->splits.at("test");
  }

  static TrainOptions CoraOptions(ModelKind kind, uint64_t seed) {
    TrainOptions options;
    options.model.kind = kind;
    options.model.features.norm = FeatureNorm::kRow;
    options.seed = seed;
    options.fanouts = {10, 10};
    options.batch_size = 32;
    options.epochs = 20;
    options.lr = 0.01;
    options.weight_decay = 5e-4;
    switch (kind) {
      case ModelKind::kSage:
        options.model.hidden = 64;
        options.model.dropout = 0.5;
        break;
      case ModelKind::kGcn:
        options.model.hidden = 64;
        options.model.dropout = 0.5;
        break;
      case ModelKind::kGat:
        options.model.hidden = 8;
        options.model.heads = 8;
        options.model.dropout = 0.6;
        options.model.attn_dropout = 0.6;
        options.lr = 0.005;
        options.epochs = 40;
        break;
      case ModelKind::kMlp:   // The baseline: SAGE's sizes.
      case ModelKind::kRgcn:  // Typed graphs only (typed_training_test).
      case ModelKind::kHeteroSage:
      case ModelKind::kGine:    // Edge features (edge_feature_training_test).
      case ModelKind::kScript:  // A module (script_model_test).
        options.model.hidden = 64;
        options.model.dropout = 0.5;
        break;
    }
    return options;
  }

  static TempDir* tmp_;
  static Dataset* cora_;
  static absl::Status* status_;
  std::unique_ptr<InMemoryGraphSource> source_;
  TrainSplits splits_;
};

TempDir* CoraTest::tmp_ = nullptr;
Dataset* CoraTest::cora_ = nullptr;
absl::Status* CoraTest::status_ = nullptr;

TEST_F(CoraTest, GraphSageReachesPublishedAccuracyRange) {
  TrainOptions options = CoraOptions(ModelKind::kSage, 1);
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source_, splits_, options));
  EXPECT_GT(result.test_acc,
            0.70);  // Chance is 1/7; published GraphSAGE is about 0.79.
}

// The accuracy table (5 seeds per model). Slow; run with
// --gtest_also_run_disabled_tests.
TEST_F(CoraTest, DISABLED_FiveSeedAccuracy) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    double sum = 0.0, seconds = 0.0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      TrainOptions options = CoraOptions(kind, seed);
      ASSERT_OK_AND_ASSIGN(TrainResult result,
                           Train(*source_, splits_, options));
      std::printf("%s seed %d: test %.4f (best epoch %d, val %.4f)\n",
                  ModelKindName(kind), static_cast<int>(seed), result.test_acc,
                  result.best_epoch, result.best_val_acc);
      sum += result.test_acc;
      for (const EpochStats& e : result.epochs) seconds += e.epoch_seconds;
    }
    std::printf(
        "{\"model\": \"%s\", \"mean_test_acc\": %.4f, \"seconds_per_run\": "
        "%.2f}\n",
        ModelKindName(kind), sum / 5, seconds / 5);
  }
}

}  // namespace
}  // namespace shardgnn
