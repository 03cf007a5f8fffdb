// Training with learned node embeddings (issue 15) end to end: Train() with
// the table on real storage servers (RemoteGraphSource, MakeRemoteRows) and in
// this process (MakeLocalRows) over the same relabelled graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "common/progress.h"
#include "datasets/generators.h"
#include "partition/partition.h"
#include "sampler/embedding_rows.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/trainer/embedding_training_fixture.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/distributed.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

using testing::ExpectError;
using ::testing::HasSubstr;
using testing::TempDir;

TEST_F(EmbeddingTrainingTest, OneTrainerSyncOnServersEqualsInProcess) {
  Build(1200, 0.8);
  const EmbeddingTableConfig config = Table(8, "equal");

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> remote_rows,
                       MakeRemoteRows(remote_.get(), config, 0, 0));
  TrainOptions o = Options();
  o.embeddings = remote_rows.get();
  ASSERT_OK_AND_ASSIGN(TrainResult distributed, Train(*remote_, splits_, o));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<EmbeddingTable> table,
                       EmbeddingTable::Create(config, 0, local_->num_nodes()));
  std::unique_ptr<LearnableRows> local_rows =
      MakeLocalRows(std::move(table), 0, 0);
  o.embeddings = local_rows.get();
  ASSERT_OK_AND_ASSIGN(TrainResult in_process, Train(*local_, splits_, o));

  // The same model and the same table, bit for bit.
  EXPECT_EQ(distributed.parameters_checksum, in_process.parameters_checksum);
  EXPECT_EQ(distributed.test_acc, in_process.test_acc);
  const int64_t steps = distributed.steps_per_epoch * o.epochs;
  ASSERT_GT(steps, 0);
  const std::vector<float> a = AllRows(*remote_rows, steps);
  const std::vector<float> b = AllRows(*local_rows, steps);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // And the table did learn: rows moved from their initial values.
  int moved = 0;
  for (int64_t v = 0; v < local_->num_nodes(); ++v) {
    if (b[static_cast<size_t>(v * 8)] != InitialEmbeddingValue(config, v, 0))
      ++moved;
  }
  EXPECT_GT(moved, local_->num_nodes() / 2);
  // Every step pushed and pulled rows.
  for (const EpochStats& e : distributed.epochs) {
    EXPECT_GT(e.embedding_rows_pulled, 0);
    EXPECT_GT(e.embedding_rows_pushed, 0);
  }
}

// Two trainers (threads with a real c10d process group), each pulling and
// pushing its own share: on the servers, and on one in-memory table the two
// share. In sync mode each step's pushes are applied together in trainer
// order (EmbeddingTableConfig::ordered), so whichever push arrives first the
// two runs are the same, bit for bit.
TEST_F(EmbeddingTrainingTest, TwoTrainersSyncOnServersMatchASharedTable) {
  Build(1200, 0.8);
  const EmbeddingTableConfig base = Table(8, "two");
  auto run_pair =
      [&](const GraphSource& source,
          const std::function<std::unique_ptr<LearnableRows>(int rank)>&
              rows_of) {
        // Entries made here: the two threads only assign to them.
        std::map<int, TrainResult> results = {{0, {}}, {1, {}}};
        std::map<int, std::vector<float>> tables = {{0, {}}};
        const int port = testing::PickFreePort();
        auto rank_main = [&](int rank) {
          DistributedOptions dist;
          dist.rank = rank;
          dist.world_size = 2;
          dist.master_port = port;
          dist.timeout = std::chrono::seconds(60);
          auto group = ProcessGroup::Connect(dist);
          ASSERT_OK(group);
          C10dGradientSync sync(group->get());
          std::unique_ptr<LearnableRows> rows = rows_of(rank);
          ASSERT_NE(rows, nullptr);
          TrainOptions o = Options();
          o.rank = rank;
          o.world_size = 2;
          o.embeddings = rows.get();
          TrainSplits mine = splits_;
          auto chunk = [&](const std::vector<NodeId>& all) {
            std::vector<NodeId> part;
            for (size_t i = static_cast<size_t>(rank); i < all.size(); i += 2)
              part.push_back(all[i]);
            return part;
          };
          mine.train = chunk(splits_.train);
          mine.valid = chunk(splits_.valid);
          mine.test = chunk(splits_.test);
          o.steps_per_epoch = 8;
          auto r = Train(source, mine, o, &sync);
          ASSERT_OK(r);
          results[rank] = *r;
          if (rank == 0) tables[0] = AllRows(*rows, 8 * o.epochs);
        };
        std::thread other(rank_main, 1);
        rank_main(0);
        other.join();
        return std::make_pair(results, tables[0]);
      };

  EmbeddingTableConfig remote_config = base;
  remote_config.num_trainers = 2;
  remote_config.ordered = true;
  auto [on_servers, server_rows] =
      run_pair(*remote_, [&](int rank) -> std::unique_ptr<LearnableRows> {
        auto rows = MakeRemoteRows(remote_.get(), remote_config, rank, 0);
        EXPECT_OK(rows.status());
        return rows.ok() ? std::move(rows).value() : nullptr;
      });
  EmbeddingTableConfig local_config = base;
  local_config.num_trainers = 2;
  local_config.ordered = true;
  std::shared_ptr<EmbeddingTable> shared =
      EmbeddingTable::Create(local_config, 0, local_->num_nodes()).value();
  auto [in_memory, memory_rows] =
      run_pair(*local_, [&](int rank) -> std::unique_ptr<LearnableRows> {
        return MakeLocalRows(shared, rank, 0);
      });

  ASSERT_EQ(on_servers.size(), 2u);
  ASSERT_EQ(in_memory.size(), 2u);
  // The two ranks of a run agree (the allreduce keeps their models equal).
  EXPECT_EQ(on_servers[0].parameters_checksum,
            on_servers[1].parameters_checksum);
  // Each step's pushes applied in trainer order on both: the same run.
  EXPECT_EQ(on_servers[0].parameters_checksum,
            in_memory[0].parameters_checksum);
  EXPECT_EQ(on_servers[0].test_acc, in_memory[0].test_acc);
  ASSERT_EQ(server_rows.size(), memory_rows.size());
  double max_diff = 0, max_moved = 0;
  for (size_t i = 0; i < server_rows.size(); ++i) {
    max_diff =
        std::max<double>(max_diff, std::abs(server_rows[i] - memory_rows[i]));
    const auto node = static_cast<NodeId>(i / 8);
    max_moved = std::max<double>(
        max_moved, std::abs(memory_rows[i] - InitialEmbeddingValue(
                                                 local_config, node,
                                                 static_cast<int64_t>(i % 8))));
  }
  EXPECT_EQ(max_diff, 0.0) << "rows moved up to " << max_moved;
  EXPECT_GT(max_moved, 0.05);
}

TEST_F(EmbeddingTrainingTest, EmbeddingsAloneLearnTheCommunities) {
  Build(2000, 0.9);
  TrainOptions o = Options();
  o.epochs = 8;
  o.ignore_features = true;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LearnableRows> rows,
      MakeRemoteRows(remote_.get(), Table(16, "alone"), 0, /*staleness=*/-1));
  o.embeddings = rows.get();
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*remote_, splits_, o));
  // 4 classes: chance is 0.25. Without features, only learned rows carry
  // the communities: the same run with the rows frozen at their random
  // initial values (a learning rate too small to move them) stays far below.
  EXPECT_GE(result.test_acc, 0.8);
  EmbeddingTableConfig frozen = Table(16, "frozen");
  frozen.lr = 1e-12;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> fixed,
                       MakeRemoteRows(remote_.get(), frozen, 0, -1));
  o.embeddings = fixed.get();
  ASSERT_OK_AND_ASSIGN(TrainResult control, Train(*remote_, splits_, o));
  EXPECT_LT(control.test_acc, result.test_acc - 0.2)
      << "learned " << result.test_acc << ", frozen " << control.test_acc;
}

// The exact test (layer-wise inference over full neighborhoods) reads the
// learned rows as the run ends: without features they carry everything, so
// it scores as the sampled test does, far above chance.
TEST_F(EmbeddingTrainingTest, ExactTestReadsTheLearnedRows) {
  Build(2000, 0.9);
  TrainOptions o = Options();
  o.epochs = 8;
  o.ignore_features = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), Table(16, "exact"), 0, 0));
  o.embeddings = rows.get();
  ASSERT_OK_AND_ASSIGN(TrainResult sampled, Train(*remote_, splits_, o));
  ASSERT_OK_AND_ASSIGN(
      rows, MakeRemoteRows(remote_.get(), Table(16, "exact-2"), 0, 0));
  o.embeddings = rows.get();
  o.exact_test = true;
  ASSERT_OK_AND_ASSIGN(TrainResult exact, Train(*remote_, splits_, o));
  // The same training (the rows' initial values do not depend on the run).
  EXPECT_EQ(exact.parameters_checksum, sampled.parameters_checksum);
  EXPECT_GE(exact.test_acc, 0.8);
  EXPECT_NEAR(exact.test_acc, sampled.test_acc, 0.05);
}

TEST_F(EmbeddingTrainingTest, BadCombinationsAreRefused) {
  Build(600, 0.8);
  TrainOptions o = Options();
  o.ignore_features = true;
  ExpectError(Train(*local_, splits_, o).status(),
              absl::StatusCode::kInvalidArgument, "needs learned embeddings");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), Table(4, "bad"), 0, 0));
  // A second trainer of the same run asking for another width.
  ExpectError(MakeRemoteRows(remote_.get(), Table(8, "bad"), 0, 0).status(),
              absl::StatusCode::kFailedPrecondition, "dim 8 != 4");
}

// Resuming (issue 15, item 5): a run stopped after epoch 2 of 4 and resumed
// from its checkpoints equals the uninterrupted run, bit for bit, with the
// table in this process and with the table on the servers, both servers
// restarted in between (they hold nothing but their snapshot files).
TEST_F(EmbeddingTrainingTest, ResumedRunEqualsUninterruptedRun) {
  Build(1000, 0.8);
  const EmbeddingTableConfig config = Table(8, "resume");
  TrainOptions o = Options();
  o.epochs = 4;
  o.checkpoint_every = 1;
  o.patience = 0;

  // Uninterrupted, in process.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<EmbeddingTable> whole_table,
                       EmbeddingTable::Create(config, 0, local_->num_nodes()));
  std::unique_ptr<LearnableRows> whole_rows =
      MakeLocalRows(std::move(whole_table), 0, 0, absl::Seconds(60),
                    tmp_.Sub("whole-snapshots"));
  o.embeddings = whole_rows.get();
  o.checkpoint_path = tmp_.Sub("whole-checkpoint.pt");
  ASSERT_OK_AND_ASSIGN(TrainResult whole, Train(*local_, splits_, o));
  const int64_t steps = whole.steps_per_epoch * o.epochs;
  const std::vector<float> whole_final = AllRows(*whole_rows, steps);
  EXPECT_GT(whole.embedding_snapshot_bytes, 0);

  // Stopped after epoch 2, resumed with a fresh table object: in process.
  {
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<EmbeddingTable> first_table,
        EmbeddingTable::Create(config, 0, local_->num_nodes()));
    std::shared_ptr<EmbeddingTable> table = std::move(first_table);
    std::unique_ptr<LearnableRows> rows = MakeLocalRows(
        table, 0, 0, absl::Seconds(60), tmp_.Sub("local-snapshots"));
    TrainOptions first = o;
    first.epochs = 2;
    first.embeddings = rows.get();
    first.checkpoint_path = tmp_.Sub("local-checkpoint.pt");
    ASSERT_OK(Train(*local_, splits_, first).status());
    // The table moves on past the checkpoint (a run killed later in epoch
    // 3): the resume must put it back.
    std::vector<float> grads(8, 1.0f);
    ASSERT_OK(rows->Push(2 * whole.steps_per_epoch, {0}, grads));
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<EmbeddingTable> second_table,
        EmbeddingTable::Create(config, 0, local_->num_nodes()));
    std::unique_ptr<LearnableRows> resumed_rows =
        MakeLocalRows(std::move(second_table), 0, 0, absl::Seconds(60),
                      tmp_.Sub("local-snapshots"));
    TrainOptions second = first;
    second.epochs = 4;
    second.resume = true;
    second.embeddings = resumed_rows.get();
    ASSERT_OK_AND_ASSIGN(TrainResult resumed, Train(*local_, splits_, second));
    EXPECT_EQ(resumed.resumed_from_epoch, 2);
    EXPECT_EQ(resumed.parameters_checksum, whole.parameters_checksum);
    EXPECT_EQ(resumed.test_acc, whole.test_acc);
    const std::vector<float> rows_now = AllRows(*resumed_rows, steps);
    ASSERT_EQ(rows_now.size(), whole_final.size());
    EXPECT_EQ(std::memcmp(rows_now.data(), whole_final.data(),
                          rows_now.size() * sizeof(float)),
              0);
  }

  // The same on the servers, restarted between the two halves.
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                         MakeRemoteRows(remote_.get(), config, 0, 0));
    TrainOptions first = o;
    first.epochs = 2;
    first.embeddings = rows.get();
    first.checkpoint_path = tmp_.Sub("remote-checkpoint.pt");
    ASSERT_OK(Train(*remote_, splits_, first).status());
    rows.reset();
    ASSERT_OK(cluster_->Restart(0));
    ASSERT_OK(cluster_->Restart(1));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> resumed_rows,
                         MakeRemoteRows(remote_.get(), config, 0, 0));
    TrainOptions second = first;
    second.epochs = 4;
    second.resume = true;
    second.embeddings = resumed_rows.get();
    ASSERT_OK_AND_ASSIGN(TrainResult resumed, Train(*remote_, splits_, second));
    EXPECT_EQ(resumed.resumed_from_epoch, 2);
    EXPECT_EQ(resumed.parameters_checksum, whole.parameters_checksum);
    EXPECT_EQ(resumed.test_acc, whole.test_acc);
    const std::vector<float> rows_now = AllRows(*resumed_rows, steps);
    ASSERT_EQ(rows_now.size(), whole_final.size());
    EXPECT_EQ(std::memcmp(rows_now.data(), whole_final.data(),
                          rows_now.size() * sizeof(float)),
              0);
  }
}

// Checkpoints of a run whose table holders keep no snapshots fail at the
// first checkpoint, saying why, rather than write checkpoints that cannot
// be resumed.
TEST_F(EmbeddingTrainingTest, CheckpointsNeedTableSnapshots) {
  Build(600, 0.8);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<EmbeddingTable> table,
      EmbeddingTable::Create(Table(4, "nosnap"), 0, local_->num_nodes()));
  std::unique_ptr<LearnableRows> rows = MakeLocalRows(std::move(table), 0, 0);
  TrainOptions o = Options();
  o.epochs = 2;
  o.checkpoint_every = 1;
  o.embeddings = rows.get();
  o.checkpoint_path = tmp_.Sub("nosnap-checkpoint.pt");
  ExpectError(Train(*local_, splits_, o).status(),
              absl::StatusCode::kFailedPrecondition,
              "has no snapshot directory");
}

}  // namespace
}  // namespace shardgnn
