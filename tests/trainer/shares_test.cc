// Shares of the batch (TrainOptions::share_weights / adapt_shares): two
// data-parallel ranks (a real c10d Gloo group) cutting every global batch by
// weight make the same updates as one trainer with the whole batch, and
// adapted shares follow the ranks' speeds.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "sampler/graph_source.h"
#include "tests/testing/status_matchers.h"
#include "tests/trainer/sbm_graph.h"
#include "tests/trainer/two_ranks.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::RunTwoRanks;
using ::shardgnn::testing::SbmGraph;

// Options whose updates do not depend on how a batch is cut: no dropout
// (its masks follow the batch), all neighbors.
TrainOptions ExactOptions() {
  TrainOptions options;
  options.model.kind = ModelKind::kSage;
  options.model.hidden = 16;
  options.model.dropout = 0.0;
  options.fanouts = {-1, -1};
  options.epochs = 4;
  options.seed = 9;
  options.batch_size = 20;
  options.average_decay = 0;
  options.min_steps_per_epoch = 1;
  return options;
}

// Unequal shares (1:3) of several global batches an epoch give the updates
// of one trainer with the whole batches: the same validation loss and
// accuracy epoch by epoch. The last global batch has one seed, so rank 0's
// part of it is empty (its gradient zero) and rank 1's weighs double.
TEST(SharesTest, UnequalSharesMatchOneTrainerWithTheWholeBatch) {
  SbmGraph graph(400, 4, 10, 3, 21);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  TrainOptions options = ExactOptions();
  TrainOptions single_options = options;
  single_options.batch_size = 2 * options.batch_size;
  ASSERT_GT(graph.splits.train.size(), 81u);
  graph.splits.train.resize(81);  // 2 global batches of 40 and one of 1.
  ASSERT_OK_AND_ASSIGN(TrainResult single,
                       Train(*source, graph.splits, single_options));
  ASSERT_EQ(single.steps_per_epoch, 3);

  TrainResult ranks[2];
  RunTwoRanks(std::chrono::seconds(30), [&](int rank, GradientSync* sync) {
    TrainOptions rank_options = options;
    rank_options.rank = rank;
    rank_options.world_size = 2;
    rank_options.share_weights = {1, 3};
    rank_options.seed = options.seed;
    // Both ranks hold the whole train split; validation and test are cut
    // between them as usual.
    TrainSplits mine = graph.splits;
    const auto half = static_cast<std::ptrdiff_t>(mine.valid.size() / 2);
    mine.valid = rank == 0
                     ? std::vector<NodeId>(graph.splits.valid.begin(),
                                           graph.splits.valid.begin() + half)
                     : std::vector<NodeId>(graph.splits.valid.begin() + half,
                                           graph.splits.valid.end());
    mine.test = mine.valid;
    absl::StatusOr<TrainResult> result =
        Train(*source, mine, rank_options, sync);
    ASSERT_OK(result);
    ranks[rank] = *std::move(result);
  });
  ASSERT_EQ(ranks[0].steps_per_epoch, single.steps_per_epoch);
  ASSERT_EQ(ranks[0].epochs.size(), single.epochs.size());
  for (size_t e = 0; e < single.epochs.size(); ++e) {
    EXPECT_NEAR(ranks[0].epochs[e].val_loss, single.epochs[e].val_loss,
                1e-4 * single.epochs[e].val_loss)
        << "epoch " << e + 1;
    EXPECT_NEAR(ranks[0].epochs[e].val_acc, single.epochs[e].val_acc, 1e-9);
    // Rank 0's parts: ShareSizes(40, {1, 3}) twice (11 each: one seed a
    // rank first), nothing of the last.
    EXPECT_DOUBLE_EQ(ranks[0].epochs[e].share, 22.0 / 81);
    EXPECT_DOUBLE_EQ(ranks[1].epochs[e].share, 59.0 / 81);
  }
  // The training losses differ (each rank's own part of the batches) while
  // the updates agree.
  EXPECT_NE(ranks[0].epochs[1].loss, ranks[1].epochs[1].loss);
}

// A rank that is slower (here: a pause after each of its steps) gets a
// smaller part of the next epochs' batches; both ranks agree on the parts.
TEST(SharesTest, AdaptedSharesFollowTheRanksSpeeds) {
  SbmGraph graph(400, 4, 10, 3, 21);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  TrainOptions options = ExactOptions();
  options.model.dropout = 0.2;
  options.fanouts = {5, 5};
  options.epochs = 3;
  options.min_steps_per_epoch = 10;
  TrainResult ranks[2];
  RunTwoRanks(std::chrono::seconds(60), [&](int rank, GradientSync* sync) {
    TrainOptions rank_options = options;
    rank_options.rank = rank;
    rank_options.world_size = 2;
    rank_options.adapt_shares = true;
    if (rank == 1) {
      rank_options.on_step = [](const StepStats&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      };
    }
    absl::StatusOr<TrainResult> result =
        Train(*source, graph.splits, rank_options, sync);
    ASSERT_OK(result);
    ranks[rank] = *std::move(result);
  });
  ASSERT_EQ(ranks[0].epochs.size(), 3u);
  EXPECT_NEAR(ranks[0].epochs[0].share, 0.5, 0.02);  // Equal at first.
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_NEAR(ranks[0].epochs[e].share + ranks[1].epochs[e].share, 1.0, 1e-9);
  }
  EXPECT_GT(ranks[0].epochs[0].seeds_per_second,
            2 * ranks[1].epochs[0].seeds_per_second);
  EXPECT_GT(ranks[0].epochs[1].share, 0.65);
  EXPECT_GT(ranks[0].epochs[2].share, 0.65);
  EXPECT_GT(ranks[0].test_acc, 0.5);
}

TEST(SharesTest, RefusedForLinkTasksAndWrongWeightCounts) {
  SbmGraph graph(100, 2, 6, 2, 3);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  TrainOptions options = ExactOptions();
  options.world_size = 2;
  options.share_weights = {1, 2, 3};
  absl::StatusOr<TrainResult> refused = Train(*source, graph.splits, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("3 share weights for 2 ranks"),
            std::string::npos)
      << refused.status();
  options.share_weights = {1, 2};
  options.task = TaskKind::kLink;
  refused = Train(*source, graph.splits, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("node tasks only"),
            std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace shardgnn
