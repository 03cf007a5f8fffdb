// Self-supervised pre-training of learned rows (issue 52,
// trainer/internal/pretrain_rows.h): it lowers the link loss, is
// deterministic for a seed, computes on the storage servers' tables what it
// computes in process, and gives a featureless graph rows that classify better
// than rows trained only by the labels.
#include "trainer/internal/pretrain_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "tests/trainer/embedding_training_fixture.h"

namespace shardgnn {
namespace {

class PretrainRowsTest : public EmbeddingTrainingTest {
 protected:
  // The fixture's table with the command line's default learning rate.
  static EmbeddingTableConfig PretrainTable(int64_t dim,
                                            const std::string& run) {
    EmbeddingTableConfig c = Table(dim, run);
    c.lr = 0.01;
    return c;
  }

  std::unique_ptr<LearnableRows> LocalRows(const EmbeddingTableConfig& config) {
    auto table = EmbeddingTable::Create(config, 0, local_->num_nodes());
    EXPECT_OK(table.status());
    return MakeLocalRows(std::move(*table), 0, 0);
  }

  static internal::PretrainRowsOptions Pretrain(int epochs, uint64_t seed) {
    internal::PretrainRowsOptions o;
    o.epochs = epochs;
    o.batch_size = 128;
    o.seed = seed;
    return o;
  }
};

TEST_F(PretrainRowsTest, LowersTheLinkLossAndIsDeterministic) {
  Build(1000, 0.9);
  const EmbeddingTableConfig config = PretrainTable(16, "pretrain");
  std::unique_ptr<LearnableRows> a = LocalRows(config);
  ASSERT_OK_AND_ASSIGN(
      std::vector<internal::PretrainEpoch> first,
      internal::PretrainRows(*local_, a.get(), Pretrain(12, 1), 0, {}));
  ASSERT_EQ(first.size(), 12u);
  const int64_t steps = internal::PretrainStepsPerEpoch(1000, Pretrain(12, 1));
  EXPECT_EQ(steps, 8);  // ceil(1000 / 128).
  for (const internal::PretrainEpoch& e : first) {
    EXPECT_EQ(e.steps, steps);
    EXPECT_GT(e.pairs, 1000);
  }
  // From the loss of random rows (6 log 2: 4.16 for 5 negatives) towards
  // the floor of walks that mix within a community of 250 nodes.
  EXPECT_LT(first.back().loss, 0.98 * first.front().loss)
      << first.front().loss << " -> " << first.back().loss;

  // The same seed on a fresh table: the same losses and rows, bit for bit.
  std::unique_ptr<LearnableRows> b = LocalRows(config);
  ASSERT_OK_AND_ASSIGN(
      std::vector<internal::PretrainEpoch> again,
      internal::PretrainRows(*local_, b.get(), Pretrain(12, 1), 0, {}));
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(first[i].loss, again[i].loss) << i;
  const std::vector<float> rows_a = AllRows(*a, 12 * steps);
  const std::vector<float> rows_b = AllRows(*b, 12 * steps);
  EXPECT_EQ(
      std::memcmp(rows_a.data(), rows_b.data(), rows_a.size() * sizeof(float)),
      0);
  // Another seed walks elsewhere.
  std::unique_ptr<LearnableRows> c = LocalRows(config);
  ASSERT_OK_AND_ASSIGN(
      std::vector<internal::PretrainEpoch> other,
      internal::PretrainRows(*local_, c.get(), Pretrain(1, 2), 0, {}));
  EXPECT_NE(other[0].loss, first[0].loss);
}

TEST_F(PretrainRowsTest, OnTheServersAsInProcess) {
  Build(1000, 0.9);
  const EmbeddingTableConfig config = PretrainTable(8, "pretrain-remote");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> remote_rows,
                       MakeRemoteRows(remote_.get(), config, 0, 0));
  ASSERT_OK_AND_ASSIGN(std::vector<internal::PretrainEpoch> remote,
                       internal::PretrainRows(*remote_, remote_rows.get(),
                                              Pretrain(3, 4), 0, {}));
  std::unique_ptr<LearnableRows> local_rows = LocalRows(config);
  ASSERT_OK_AND_ASSIGN(
      std::vector<internal::PretrainEpoch> local,
      internal::PretrainRows(*local_, local_rows.get(), Pretrain(3, 4), 0, {}));
  ASSERT_EQ(remote.size(), local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    EXPECT_EQ(remote[i].loss, local[i].loss) << i;
    EXPECT_EQ(remote[i].pairs, local[i].pairs) << i;
  }
  const int64_t steps =
      3 * internal::PretrainStepsPerEpoch(1000, Pretrain(3, 4));
  const std::vector<float> a = AllRows(*remote_rows, steps);
  const std::vector<float> b = AllRows(*local_rows, steps);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

// A featureless graph with few labels: rows trained only through the labels
// reach little beyond the labelled nodes; pre-trained rows (then frozen)
// place every node by its neighborhood.
TEST_F(PretrainRowsTest, PretrainedRowsBeatLabelTrainedOnAFeaturelessGraph) {
  Build(1500, 0.9, /*train_fraction=*/0.02);
  EmbeddingTableConfig config = PretrainTable(16, "featureless");
  TrainOptions o = Options();
  o.ignore_features = true;
  o.epochs = 20;
  o.patience = 10;
  std::unique_ptr<LearnableRows> plain = LocalRows(config);
  o.embeddings = plain.get();
  ASSERT_OK_AND_ASSIGN(TrainResult without, Train(*local_, splits_, o));
  EXPECT_TRUE(without.pretrain_loss.empty());

  std::unique_ptr<LearnableRows> pre = LocalRows(config);
  o.embeddings = pre.get();
  o.pretrain_epochs = 10;
  int64_t pushed_by_pretraining = -1;
  o.on_pretrain_epoch = [&](int epoch, double, double) {
    if (epoch == 10) pushed_by_pretraining = pre->stats().rows_pushed;
  };
  ASSERT_OK_AND_ASSIGN(TrainResult with, Train(*local_, splits_, o));
  ASSERT_EQ(with.pretrain_loss.size(), 10u);
  EXPECT_LT(with.pretrain_loss.back(), with.pretrain_loss.front());
  EXPECT_GT(with.pretrain_steps, 0);
  EXPECT_GT(with.test_acc, without.test_acc + 0.1)
      << "pre-trained " << with.test_acc << ", label-trained "
      << without.test_acc;
  // Frozen rows: training pushed nothing after the pre-training's rows.
  EXPECT_GT(pushed_by_pretraining, 0);
  EXPECT_EQ(pre->stats().rows_pushed, pushed_by_pretraining);

  // Refused: without a table, and with resume.
  o.embeddings = nullptr;
  o.ignore_features = false;
  EXPECT_EQ(Train(*local_, splits_, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.embeddings = pre.get();
  o.resume = true;
  o.checkpoint_path = tmp_.Sub("ckpt");
  EXPECT_EQ(Train(*local_, splits_, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Beside features, the exact (layer-wise) test reads the frozen rows as
// training did: scaled to FrozenRowLength.
TEST_F(PretrainRowsTest, TheExactTestReadsFrozenRowsAsTrainingDid) {
  Build(1000, 0.8);
  const EmbeddingTableConfig config = PretrainTable(16, "exact");
  TrainOptions f = Options();
  f.epochs = 6;
  f.pretrain_epochs = 3;
  std::unique_ptr<LearnableRows> beside = LocalRows(config);
  f.embeddings = beside.get();
  ASSERT_OK_AND_ASSIGN(TrainResult sampled, Train(*local_, splits_, f));
  std::unique_ptr<LearnableRows> beside_exact = LocalRows(config);
  f.embeddings = beside_exact.get();
  f.exact_test = true;
  f.scratch_dir = tmp_.Sub("scratch");
  ASSERT_OK_AND_ASSIGN(TrainResult exact, Train(*local_, splits_, f));
  EXPECT_EQ(exact.parameters_checksum, sampled.parameters_checksum);
  EXPECT_NEAR(exact.test_acc, sampled.test_acc, 0.03);
}

}  // namespace
}  // namespace shardgnn
