#include "trainer/data_parallel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "tests/trainer/sbm_graph.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

using std::chrono::milliseconds;

// Runs body(rank, sync) on two threads, each with its own process group; rank
// 0's store is on a free port.
void RunTwoRanks(const std::function<void(int, GlooDataParallel*)>& body,
                 milliseconds timeout = milliseconds(20000),
                 int64_t bucket_bytes = int64_t{25} << 20) {
  std::promise<int> port;
  std::future<int> port_ready = port.get_future();
  auto rank_main = [&](int rank) {
    DataParallelOptions options;
    options.rank = rank;
    options.world_size = 2;
    options.timeout = timeout;
    options.bucket_bytes = bucket_bytes;
    if (rank == 0) {
      options.master_port = 0;
      options.on_listening = [&](int p) { port.set_value(p); };
    } else {
      options.master_port = port_ready.get();
    }
    absl::StatusOr<std::unique_ptr<GlooDataParallel>> sync =
        GlooDataParallel::Connect(options);
    ASSERT_OK(sync);
    EXPECT_EQ((*sync)->rank(), rank);
    body(rank, sync->get());
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
}

TEST(DataParallelTest, BroadcastsParametersAndAveragesGradientsInBuckets) {
  RunTwoRanks(
      [](int rank, GlooDataParallel* sync) {
        // Three parameters with 16-byte buckets: several buckets in flight at
        // once.
        std::vector<torch::Tensor> params = {torch::full({2, 2}, rank + 1.0f),
                                             torch::full({3}, rank + 10.0f),
                                             torch::full({1}, rank + 100.0f)};
        for (auto& p : params) p.set_requires_grad(true);
        ASSERT_OK(sync->BroadcastParameters(params));
        EXPECT_TRUE(torch::equal(params[0], torch::full({2, 2}, 1.0f)));
        EXPECT_TRUE(torch::equal(params[2], torch::full({1}, 100.0f)));
        for (size_t i = 0; i < params.size(); ++i)
          params[i].mutable_grad() =
              torch::full_like(params[i], rank * 4.0f + i);
        ASSERT_OK(sync->AllreduceGradients(params));
        for (size_t i = 0; i < params.size(); ++i) {
          EXPECT_TRUE(torch::allclose(params[i].grad(),
                                      torch::full_like(params[i], 2.0f + i)))
              << i;
        }
        double counts[2] = {1.0 + rank, 10.0};
        ASSERT_OK(sync->AllreduceSum(absl::MakeSpan(counts, 2)));
        EXPECT_EQ(counts[0], 3.0);
        EXPECT_EQ(counts[1], 20.0);
        ASSERT_OK(sync->Barrier());
      },
      milliseconds(20000), 16);
}

// Two trainers with half of the batch each make the same updates as one trainer
// with the whole batch: the mean of their per-epoch losses equals the single
// trainer's loss, epoch after epoch.
TEST(DataParallelTest, TwoRanksWithHalfBatchesMatchOneRankWithTheWholeBatch) {
  testing::SbmGraph graph(400, 4, 10, 3, 21);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  TrainOptions options;
  options.model.kind = ModelKind::kSage;
  options.model.hidden = 16;
  options.model.dropout =
      0.0;  // Dropout masks would differ with the batch split.
  options.fanouts = {
      -1, -1};  // All neighbors: sampling does not depend on the batch seed.
  options.epochs = 4;
  options.seed = 9;
  TrainSplits splits = graph.splits;
  splits.train.resize(splits.train.size() / 2 * 2);
  const int64_t half = static_cast<int64_t>(splits.train.size() / 2);
  options.batch_size = 2 * half;  // One step per epoch.
  ASSERT_OK_AND_ASSIGN(TrainResult single, Train(*source, splits, options));

  TrainResult ranks[2];
  RunTwoRanks([&](int rank, GlooDataParallel* sync) {
    TrainSplits mine = splits;
    mine.train.assign(splits.train.begin() + rank * half,
                      splits.train.begin() + (rank + 1) * half);
    TrainOptions rank_options = options;
    rank_options.batch_size = half;
    rank_options.seed =
        options.seed +
        rank;  // Rank 1's own initial parameters are replaced by rank 0's.
    absl::StatusOr<TrainResult> result =
        Train(*source, mine, rank_options, sync);
    ASSERT_OK(result);
    ranks[rank] = *std::move(result);
  });
  ASSERT_EQ(ranks[0].epochs.size(), single.epochs.size());
  for (size_t e = 0; e < single.epochs.size(); ++e) {
    const double mean = (ranks[0].epochs[e].loss + ranks[1].epochs[e].loss) / 2;
    EXPECT_NEAR(mean, single.epochs[e].loss, 1e-4 * single.epochs[e].loss)
        << "epoch " << e + 1;
    EXPECT_NEAR(ranks[0].epochs[e].val_acc, single.epochs[e].val_acc, 1e-9);
    EXPECT_EQ(ranks[0].epochs[e].val_acc, ranks[1].epochs[e].val_acc);
  }
  EXPECT_NE(ranks[0].epochs[1].loss, ranks[1].epochs[1].loss);
  EXPECT_NEAR(ranks[0].test_acc, single.test_acc, 1e-9);
}

TEST(DataParallelTest, ACollectiveWithoutItsPeerTimesOutWithAnError) {
  // Rank 0 stays alive but never joins the allreduce, so rank 1 must fail by
  // its timeout, not hang.
  std::promise<void> done;
  std::shared_future<void> finished = done.get_future().share();
  RunTwoRanks(
      [&](int rank, GlooDataParallel* sync) {
        if (rank == 0) {
          finished.wait();
          return;
        }
        double value = 1.0;
        const auto start = std::chrono::steady_clock::now();
        absl::Status status = sync->AllreduceSum(absl::MakeSpan(&value, 1));
        const auto elapsed = std::chrono::steady_clock::now() - start;
        done.set_value();
        EXPECT_FALSE(status.ok());
        EXPECT_NE(std::string(status.message()).find("rank 1 of 2"),
                  std::string::npos)
            << status;
        EXPECT_GE(elapsed, milliseconds(1000));
        EXPECT_LT(elapsed, std::chrono::seconds(10));
      },
      milliseconds(1500));
}

TEST(DataParallelTest, ReadsTorchrunVariables) {
  DataParallelOptions options;
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "3", 1);
  setenv("MASTER_ADDR", "10.0.0.5", 1);
  setenv("MASTER_PORT", "1234", 1);
  ASSERT_OK(ReadTorchrunEnvironment(&options));
  EXPECT_EQ(options.rank, 1);
  EXPECT_EQ(options.world_size, 3);
  EXPECT_EQ(options.master_addr, "10.0.0.5");
  EXPECT_EQ(options.master_port, 1234);
  setenv("RANK", "3", 1);
  EXPECT_FALSE(ReadTorchrunEnvironment(&options).ok());
  setenv("RANK", "x", 1);
  absl::Status status = ReadTorchrunEnvironment(&options);
  EXPECT_NE(std::string(status.message()).find("RANK"), std::string::npos);
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(name);
}

}  // namespace
}  // namespace shardgnn
