#include "sampler/loader.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <set>

#include "common/peak_rss.h"
#include "tests/sampler/failing_source.h"
#include "tests/sampler/test_graph.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::Create(graph_.arrays()));
    SamplerOptions options;
    options.fanouts = {5, 3};
    ASSERT_OK_AND_ASSIGN(sampler_,
                         NeighborSampler::Create(source_.get(), options));
    for (NodeId v = 0; v < 250; ++v) seeds_.push_back(v * 3);
  }

  std::vector<MiniBatch> Epoch(PrefetchLoader& loader, int64_t epoch) {
    loader.StartEpoch(epoch);
    std::vector<MiniBatch> batches;
    MiniBatch batch;
    while (true) {
      auto more = loader.Next(&batch);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      batches.push_back(batch);
    }
    return batches;
  }

  testing::TestGraph graph_{1000, 12, 7};
  std::unique_ptr<InMemoryGraphSource> source_;
  std::unique_ptr<NeighborSampler> sampler_;
  std::vector<NodeId> seeds_;
};

TEST_F(LoaderTest, PrefetchingGivesTheSameBatchesAsSynchronous) {
  LoaderOptions sync_options;
  sync_options.batch_size = 32;
  sync_options.prefetch = 0;
  sync_options.shuffle_seed = 11;
  sync_options.sample_seed = 12;
  LoaderOptions async_options = sync_options;
  async_options.prefetch = 3;
  async_options.workers = 2;
  ASSERT_OK_AND_ASSIGN(
      auto sync_loader,
      PrefetchLoader::Create(sampler_.get(), seeds_, sync_options));
  ASSERT_OK_AND_ASSIGN(
      auto async_loader,
      PrefetchLoader::Create(sampler_.get(), seeds_, async_options));
  for (int64_t epoch : {1, 2}) {
    auto a = Epoch(*sync_loader, epoch);
    auto b = Epoch(*async_loader, epoch);
    ASSERT_EQ(a.size(), 8u);  // ceil(250 / 32)
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].seeds, b[i].seeds);
      EXPECT_EQ(a[i].input_nodes, b[i].input_nodes);
      EXPECT_EQ(a[i].features, b[i].features);
    }
  }
}

TEST_F(LoaderTest, EpochVisitsEverySeedOnceInAShuffledOrder) {
  LoaderOptions options;
  options.batch_size = 64;
  options.shuffle_seed = 5;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  std::vector<NodeId> first, second;
  for (const auto& b : Epoch(*loader, 1))
    first.insert(first.end(), b.seeds.begin(), b.seeds.end());
  for (const auto& b : Epoch(*loader, 2))
    second.insert(second.end(), b.seeds.begin(), b.seeds.end());
  EXPECT_EQ(std::multiset<NodeId>(first.begin(), first.end()),
            std::multiset<NodeId>(seeds_.begin(), seeds_.end()));
  EXPECT_EQ(std::multiset<NodeId>(second.begin(), second.end()),
            std::multiset<NodeId>(seeds_.begin(), seeds_.end()));
  EXPECT_NE(first, second);
  EXPECT_NE(first, seeds_);
}

TEST_F(LoaderTest, WithoutShuffleEveryEpochVisitsTheItemsInTheirOrder) {
  LoaderOptions options;
  options.batch_size = 64;
  options.shuffle = false;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  for (int64_t epoch : {0, 3}) {
    std::vector<NodeId> seen;
    for (const auto& b : Epoch(*loader, epoch))
      seen.insert(seen.end(), b.seeds.begin(), b.seeds.end());
    EXPECT_EQ(seen, seeds_) << "epoch " << epoch;
  }
}

TEST_F(LoaderTest, BalancedBatchesDifferByAtMostOneSeed) {
  // 250 seeds in batches of at most 64: 4 batches of 62 or 63, not three of
  // 64 and a short one of 58 (issue 17: a short last batch's smaller tensors
  // took fresh memory in the test pass).
  LoaderOptions options;
  options.batch_size = 64;
  options.shuffle = false;
  options.balanced = true;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  EXPECT_EQ(loader->steps_per_epoch(), 4);
  std::vector<NodeId> seen;
  std::vector<size_t> sizes;
  for (const auto& b : Epoch(*loader, 0)) {
    seen.insert(seen.end(), b.seeds.begin(), b.seeds.end());
    sizes.push_back(b.seeds.size());
  }
  EXPECT_EQ(seen, seeds_);
  EXPECT_EQ(sizes, (std::vector<size_t>{62, 63, 62, 63}));

  // Shuffled, the same sizes, every seed once.
  options.shuffle = true;
  options.shuffle_seed = 5;
  ASSERT_OK_AND_ASSIGN(loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  seen.clear();
  sizes.clear();
  for (const auto& b : Epoch(*loader, 1)) {
    seen.insert(seen.end(), b.seeds.begin(), b.seeds.end());
    sizes.push_back(b.seeds.size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{62, 63, 62, 63}));
  EXPECT_EQ(std::set<NodeId>(seen.begin(), seen.end()),
            std::set<NodeId>(seeds_.begin(), seeds_.end()));
  EXPECT_EQ(seen.size(), seeds_.size());

  // A fixed step count pads and trims as without it.
  options.steps_per_epoch = 5;
  ASSERT_OK_AND_ASSIGN(loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  for (const auto& b : Epoch(*loader, 1)) EXPECT_EQ(b.seeds.size(), 64u);
}

TEST_F(LoaderTest, ChangingTheWorkersBetweenEpochsKeepsTheBatches) {
  LoaderOptions options;
  options.batch_size = 32;
  options.prefetch = 2;
  options.shuffle_seed = 3;
  options.sample_seed = 4;
  ASSERT_OK_AND_ASSIGN(auto one,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  ASSERT_OK_AND_ASSIGN(auto varied,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  for (int64_t epoch : {1, 2, 3}) {
    varied->set_workers(static_cast<int>(epoch));  // 1, 2, 3 threads.
    EXPECT_EQ(varied->workers(), epoch);
    auto a = Epoch(*one, epoch);
    auto b = Epoch(*varied, epoch);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].seeds, b[i].seeds);
      EXPECT_EQ(a[i].input_nodes, b[i].input_nodes);
      EXPECT_EQ(a[i].features, b[i].features);
    }
  }
  varied->set_workers(0);
  EXPECT_EQ(varied->workers(), 1);
}

TEST_F(LoaderTest, FixedStepsPadAndTrim) {
  LoaderOptions options;
  options.batch_size = 100;
  options.steps_per_epoch =
      5;  // 250 seeds fill 2.5 batches: pad to 5 full batches.
  ASSERT_OK_AND_ASSIGN(auto padded,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  auto batches = Epoch(*padded, 1);
  ASSERT_EQ(batches.size(), 5u);
  std::set<NodeId> seen;
  for (const auto& b : batches) {
    EXPECT_EQ(b.seeds.size(), 100u);
    EXPECT_EQ(std::set<NodeId>(b.seeds.begin(), b.seeds.end()).size(),
              100u);  // Distinct within a batch.
    seen.insert(b.seeds.begin(), b.seeds.end());
  }
  EXPECT_EQ(seen.size(), seeds_.size());  // Every seed still visited.

  options.steps_per_epoch =
      2;  // Trim: 2 full batches, 50 seeds skipped this epoch.
  ASSERT_OK_AND_ASSIGN(auto trimmed,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  batches = Epoch(*trimmed, 1);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].seeds.size(), 100u);
}

TEST_F(LoaderTest, BackgroundErrorReachesTheConsumer) {
  // Two hops per batch: the third batch's first hop fails.
  testing::FailingSource failing(source_.get(), 4);
  SamplerOptions sampler_options;
  sampler_options.fanouts = {5, 3};
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(&failing, sampler_options));
  LoaderOptions options;
  options.batch_size = 10;
  options.prefetch = 4;
  options.workers = 1;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler.get(), seeds_, options));
  loader->StartEpoch(1);
  MiniBatch batch;
  ASSERT_OK_AND_ASSIGN(bool more, loader->Next(&batch));
  EXPECT_TRUE(more);
  ASSERT_OK_AND_ASSIGN(more, loader->Next(&batch));
  EXPECT_TRUE(more);
  auto failed = loader->Next(&batch);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("127.0.0.1:9"),
            absl::string_view::npos);
  EXPECT_FALSE(loader->Next(&batch).ok());  // Sticky.
}

TEST_F(LoaderTest, StopsCleanlyMidEpoch) {
  LoaderOptions options;
  options.batch_size = 8;
  options.prefetch = 4;
  options.workers = 2;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  loader->StartEpoch(1);
  MiniBatch batch;
  ASSERT_OK(loader->Next(&batch));
  loader->StartEpoch(2);  // Abandons epoch 1.
  ASSERT_OK(loader->Next(&batch));
  loader->Stop();
  loader->Stop();
  EXPECT_GE(loader->stats().batches, 2);
}

// A loader over items whose batches record the kernel thread that made them.
class ThreadRecordingLoader {
 public:
  explicit ThreadRecordingLoader(int64_t items, LoaderOptions options) {
    std::vector<int64_t> all(static_cast<size_t>(items));
    std::iota(all.begin(), all.end(), 0);
    auto loader = PrefetchLoader::Create(
        [this](absl::Span<const int64_t> batch_items, uint64_t,
               MiniBatch* out) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            threads_.insert(static_cast<int64_t>(syscall(SYS_gettid)));
          }
          out->seeds.assign(batch_items.begin(), batch_items.end());
          out->input_nodes.assign(out->seeds.begin(), out->seeds.end());
          out->features.assign(batch_items.size(), 1.0f);
          return absl::OkStatus();
        },
        std::move(all), options);
    EXPECT_TRUE(loader.ok()) << loader.status();
    if (loader.ok()) loader_ = std::move(*loader);
  }

  // The items of every batch of `epoch`, in order.
  std::vector<int64_t> Epoch(int64_t epoch) {
    loader_->StartEpoch(epoch);
    std::vector<int64_t> seen;
    MiniBatch batch;
    while (true) {
      absl::StatusOr<bool> more = loader_->Next(&batch);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      seen.insert(seen.end(), batch.seeds.begin(), batch.seeds.end());
    }
    return seen;
  }

  size_t threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

  PrefetchLoader& loader() { return *loader_; }

 private:
  std::mutex mu_;
  std::set<int64_t> threads_;
  std::unique_ptr<PrefetchLoader> loader_;
};

// A fresh thread per epoch attaches to whichever malloc arena is free and
// faults in its scratch memory afresh (issue 17): the threads that made one
// epoch's batches make the next one's, through Pause() too, and only a
// changed number of threads starts new ones.
TEST(LoaderThreadsTest, TheSameThreadsServeEveryEpoch) {
  LoaderOptions options;
  options.batch_size = 4;
  options.prefetch = 2;
  options.workers = 2;
  ThreadRecordingLoader recording(200, options);
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    EXPECT_EQ(recording.Epoch(epoch).size(), 200u);
    recording.loader().Pause();
  }
  EXPECT_LE(recording.threads(), 2u);
  recording.loader().set_workers(3);
  for (int64_t epoch = 5; epoch < 8; ++epoch)
    EXPECT_EQ(recording.Epoch(epoch).size(), 200u);
  EXPECT_LE(recording.threads(), 5u);
  recording.loader().Stop();
  recording.loader().Stop();
  EXPECT_EQ(recording.Epoch(8).size(), 200u);  // Started again.
}

// An epoch paused halfway starts over whole, the same as in a fresh loader.
TEST(LoaderThreadsTest, APausedEpochStartsOverWhole) {
  LoaderOptions options;
  options.batch_size = 8;
  options.prefetch = 4;
  options.workers = 2;
  options.shuffle_seed = 9;
  ThreadRecordingLoader fresh(100, options), paused(100, options);
  paused.loader().StartEpoch(3);
  MiniBatch batch;
  ASSERT_OK(paused.loader().Next(&batch));
  paused.loader().Pause();
  paused.loader().Pause();
  EXPECT_EQ(paused.Epoch(3), fresh.Epoch(3));
}

// The global IDs of seed k's sampled neighbors (the last block's
// destination k), sorted.
std::vector<NodeId> SeedNeighbors(const MiniBatch& batch, size_t k) {
  const Block& last = batch.blocks.back();
  std::vector<NodeId> out;
  for (int64_t e = last.indptr[k]; e < last.indptr[k + 1]; ++e)
    out.push_back(batch.input_nodes[static_cast<size_t>(last.indices[e])]);
  std::sort(out.begin(), out.end());
  return out;
}

// Shares (SetShares): the ranks' batches of every step are consecutive
// slices of the lone loader's batch, sized by weight, sampled alike (each
// node's neighbors depend only on the batch seed and the node).
TEST_F(LoaderTest, SharesCutEveryGlobalBatchByWeight) {
  LoaderOptions options;
  options.batch_size = 64;  // 250 seeds: 3 full batches and one of 58.
  options.prefetch = 2;
  options.shuffle_seed = 3;
  options.sample_seed = 4;
  ASSERT_OK_AND_ASSIGN(auto lone,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  const std::vector<int64_t> weights = {1, 3, 2};
  std::vector<std::vector<MiniBatch>> ranks;
  for (int r = 0; r < 3; ++r) {
    ASSERT_OK_AND_ASSIGN(
        auto loader, PrefetchLoader::Create(sampler_.get(), seeds_, options));
    ASSERT_OK(loader->SetShares(weights, r));
    ranks.push_back(Epoch(*loader, 2));
    EXPECT_EQ(loader->ShareOf(3).global_items, 58);
    EXPECT_EQ(loader->ShareOf(0).items, ShareSizes(64, weights)[r]);
  }
  const std::vector<MiniBatch> whole = Epoch(*lone, 2);
  ASSERT_EQ(whole.size(), 4u);
  for (size_t i = 0; i < whole.size(); ++i) {
    const std::vector<int64_t> sizes =
        ShareSizes(static_cast<int64_t>(whole[i].seeds.size()), weights);
    std::vector<NodeId> joined;
    for (int r = 0; r < 3; ++r) {
      const MiniBatch& part = ranks[static_cast<size_t>(r)][i];
      ASSERT_EQ(static_cast<int64_t>(part.seeds.size()), sizes[r]);
      joined.insert(joined.end(), part.seeds.begin(), part.seeds.end());
      // Each seed's first-hop sample is the lone batch's.
      const size_t offset = joined.size() - part.seeds.size();
      for (size_t k = 0; k < part.seeds.size(); ++k) {
        EXPECT_EQ(SeedNeighbors(part, k), SeedNeighbors(whole[i], offset + k));
      }
    }
    EXPECT_EQ(joined, whole[i].seeds) << "step " << i;
  }
  // Empty weights: whole batches again, from the next epoch.
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, options));
  ASSERT_OK(loader->SetShares(weights, 1));
  ASSERT_OK(loader->SetShares({}, 0));
  EXPECT_EQ(Epoch(*loader, 2)[0].seeds, whole[0].seeds);
}

TEST(ShareSizesTest, ProportionalSummingToTheBatchAndNeverEmpty) {
  EXPECT_EQ(ShareSizes(64, {1, 3, 2}), (std::vector<int64_t>{11, 32, 21}));
  EXPECT_EQ(ShareSizes(10, {1, 1, 1}), (std::vector<int64_t>{4, 3, 3}));
  // Every rank gets a seed while there are enough, however small its weight.
  EXPECT_EQ(ShareSizes(4, {1, 1000, 1000, 1000}),
            (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(ShareSizes(2, {1, 1, 1}), (std::vector<int64_t>{1, 1, 0}));
  for (int64_t items : {4, 7, 100, 1023, 4096}) {
    const std::vector<int64_t> sizes = ShareSizes(items, {5, 1, 9, 2});
    EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), items);
    for (int64_t s : sizes) EXPECT_GE(s, 1);
  }
}

TEST_F(LoaderTest, SharesRejectBadWeightsAndRanks) {
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler_.get(), seeds_, {}));
  EXPECT_FALSE(loader->SetShares({1, 2}, 2).ok());
  EXPECT_FALSE(loader->SetShares({1, 2}, -1).ok());
  EXPECT_FALSE(loader->SetShares({1, 0}, 0).ok());
  std::vector<int64_t> many(seeds_.size() + 1, 1);
  EXPECT_FALSE(loader->SetShares(many, 0).ok());
}

TEST(LoaderOptionsTest, RejectsBadOptions) {
  testing::TestGraph graph(10, 2, 1);
  auto source = InMemoryGraphSource::Create(graph.arrays());
  ASSERT_OK(source);
  auto sampler = NeighborSampler::Create(source->get(), SamplerOptions{});
  ASSERT_OK(sampler);
  EXPECT_FALSE(
      PrefetchLoader::Create(sampler->get(), {}, LoaderOptions{}).ok());
  LoaderOptions bad;
  bad.batch_size = 0;
  EXPECT_FALSE(PrefetchLoader::Create(sampler->get(), {1, 2}, bad).ok());
}

// After the first epoch the loader's batches reuse the buffers of earlier ones
// (issue 17): wide features make a fresh batch buffer cost thousands of page
// faults, and the epochs after the first touch (almost) no fresh page.
TEST(LoaderReuseTest, EpochsAfterTheFirstTouchNoFreshMemory) {
  testing::TestGraph graph(2000, 12, 5);
  GraphArrays arrays = graph.arrays();
  const std::vector<float> wide(2000 * 2048, 0.5f);
  arrays.features = wide;
  arrays.feature_dim = 2048;  // About 8 MB of features per batch.
  ASSERT_OK_AND_ASSIGN(auto source, InMemoryGraphSource::Create(arrays));
  SamplerOptions sampling;
  sampling.fanouts = {5, 3};
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source.get(), sampling));
  std::vector<NodeId> seeds(2000);
  for (NodeId v = 0; v < 2000; ++v) seeds[v] = v;
  LoaderOptions options;
  options.batch_size = 64;
  options.prefetch = 3;
  options.workers = 2;
  ASSERT_OK_AND_ASSIGN(auto loader,
                       PrefetchLoader::Create(sampler.get(), seeds, options));
  std::vector<int64_t> faults;
  MiniBatch batch;
  for (int64_t epoch = 1; epoch <= 4; ++epoch) {
    const int64_t before = MinorFaults();
    loader->StartEpoch(epoch);
    int64_t batches = 0;
    while (true) {
      ASSERT_OK_AND_ASSIGN(bool more, loader->Next(&batch));
      if (!more) break;
      ASSERT_EQ(batch.features.size(), batch.input_nodes.size() * 2048);
      ++batches;
    }
    EXPECT_EQ(batches, 32);
    EXPECT_TRUE(batch.features.empty());  // Back in the loader's pool.
    faults.push_back(MinorFaults() - before);
  }
  // Epoch 1 allocates the pool (one batch buffer is about 1,800 pages).
  EXPECT_GT(faults[0], 3000);
  const int64_t later = faults[1] + faults[2] + faults[3];
  EXPECT_LT(later, faults[0] / 10)
      << "faults per epoch: " << faults[0] << ", " << faults[1] << ", "
      << faults[2] << ", " << faults[3];
}

}  // namespace
}  // namespace shardgnn
