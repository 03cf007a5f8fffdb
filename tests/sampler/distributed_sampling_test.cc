// The distributed sampler end to end: NeighborSampler over RemoteGraphSource
// (optionally behind a feature cache, optionally fed through the
// PrefetchLoader) against the in-process sampler over the same relabelled
// graph, with real servers on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <tuple>

#include "common/progress.h"
#include "common/sampling.h"
#include "partition/partition.h"
#include "sampler/cached_graph_source.h"
#include "sampler/feature_cache.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/check_minibatch.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::RelabelledGraph;
using testing::TempDir;
using testing::TestCluster;

constexpr int64_t kNodes = 1500;
constexpr int64_t kDim = 8;
const std::vector<int> kFanouts = {15, 10, 5};

class DistributedSamplingTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    Build(std::get<0>(GetParam()), std::get<1>(GetParam()));
  }

  void Build(int parts, bool in_memory,
             RemoteGraphSourceOptions remote_options = {}) {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(dataset_, testing::MakeRmatDataset(
                                       tmp_.Sub("rmat"), kNodes, 12, kDim, 9));
    PartitionOptions options;
    options.num_parts = parts;
    ASSERT_OK(PartitionInMemory(dataset_, tmp_.Sub("part"), options).status());
    ASSERT_OK_AND_ASSIGN(
        graph_, testing::RelabelForPartition(dataset_, tmp_.Sub("part")));
    ASSERT_OK_AND_ASSIGN(cluster_,
                         TestCluster::Start(tmp_.Sub("part"), in_memory));
    remote_options.connect_timeout = absl::Seconds(10);
    ASSERT_OK_AND_ASSIGN(remote_, RemoteGraphSource::Connect(
                                      cluster_->addresses(), remote_options));
    ASSERT_OK_AND_ASSIGN(local_, InMemoryGraphSource::Create(graph_.arrays()));
  }

  std::unique_ptr<NeighborSampler> Sampler(const GraphSource* source,
                                           bool replace = false) {
    SamplerOptions options;
    options.fanouts = kFanouts;
    options.replace = replace;
    auto sampler = NeighborSampler::Create(source, options);
    EXPECT_OK(sampler);
    return sampler.ok() ? std::move(sampler).value() : nullptr;
  }

  // Batch b's seeds: 64 distinct nodes spread over every part.
  std::vector<NodeId> Seeds(int b) const {
    std::vector<NodeId> seeds;
    for (int i = 0; i < 64; ++i) seeds.push_back((b * 131 + i * 23) % kNodes);
    return seeds;
  }

  // Every structural property of a minibatch, checked against the graph.
  void CheckBatch(const MiniBatch& batch, bool replace) {
    testing::CheckMiniBatch(graph_, batch, kFanouts, replace);
  }

  TempDir tmp_;
  Dataset dataset_;
  RelabelledGraph graph_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<InMemoryGraphSource> local_;
};

void ExpectSameBatch(const MiniBatch& a, const MiniBatch& b) {
  EXPECT_EQ(a.seeds, b.seeds);
  EXPECT_EQ(a.input_nodes, b.input_nodes);
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t l = 0; l < a.blocks.size(); ++l) {
    EXPECT_EQ(a.blocks[l].num_src, b.blocks[l].num_src) << "layer " << l;
    EXPECT_EQ(a.blocks[l].num_dst, b.blocks[l].num_dst) << "layer " << l;
    EXPECT_EQ(a.blocks[l].indptr, b.blocks[l].indptr) << "layer " << l;
    EXPECT_EQ(a.blocks[l].indices, b.blocks[l].indices) << "layer " << l;
  }
  EXPECT_EQ(a.feature_dim, b.feature_dim);
  ASSERT_EQ(a.features.size(), b.features.size());
  EXPECT_EQ(std::memcmp(a.features.data(), b.features.data(),
                        a.features.size() * sizeof(float)),
            0);
  EXPECT_EQ(a.labels, b.labels);
}

TEST_P(DistributedSamplingTest, SameMiniBatchAsInProcessForAFixedSeed) {
  for (bool replace : {false, true}) {
    auto distributed = Sampler(remote_.get(), replace);
    auto in_process = Sampler(local_.get(), replace);
    ASSERT_NE(distributed, nullptr);
    ASSERT_NE(in_process, nullptr);
    for (int b = 0; b < 3; ++b) {
      const uint64_t seed = 40 + b;
      ASSERT_OK_AND_ASSIGN(MiniBatch got, distributed->Sample(Seeds(b), seed));
      ASSERT_OK_AND_ASSIGN(MiniBatch want, in_process->Sample(Seeds(b), seed));
      ExpectSameBatch(got, want);
      CheckBatch(got, replace);
      EXPECT_GT(got.blocks.front().num_edges(), 0);
    }
  }
}

TEST_P(DistributedSamplingTest, CachedFeaturesAreBitIdentical) {
  auto uncached = Sampler(remote_.get());
  std::vector<MiniBatch> want;
  for (int b = 0; b < 4; ++b) {
    ASSERT_OK_AND_ASSIGN(MiniBatch batch, uncached->Sample(Seeds(b), b));
    want.push_back(std::move(batch));
  }
  // Memory-mode servers lend their features through shared memory, disk-mode
  // ones answer calls: count both.
  auto fetched = [this] {
    const RemoteStats s = remote_->stats();
    return s.feature_bytes + s.shared_feature_bytes;
  };
  const int64_t uncached_bytes = fetched();

  // Static, pre-filled by pre-sampling; CLOCK small enough to evict.
  SamplerOptions presample_options;
  presample_options.fanouts = kFanouts;
  presample_options.fetch_features = false;
  presample_options.fetch_labels = false;
  ASSERT_OK_AND_ASSIGN(auto presampler, NeighborSampler::Create(
                                            remote_.get(), presample_options));
  std::vector<NodeId> all(kNodes);
  for (NodeId v = 0; v < kNodes; ++v) all[v] = v;
  ASSERT_OK_AND_ASSIGN(std::vector<NodeId> hottest,
                       HottestByPresampling(*presampler, all, 4, 64, 3));
  const int64_t row_bytes = kDim * sizeof(float);
  for (CachePolicy policy : {CachePolicy::kStatic, CachePolicy::kClock}) {
    ASSERT_OK_AND_ASSIGN(
        auto cache,
        FeatureCache::Create({kNodes / 4 * row_bytes, kDim, policy}));
    if (policy == CachePolicy::kStatic) {
      ASSERT_OK(PrefillCache(*remote_, hottest, cache.get()));
    }
    CachedGraphSource cached(remote_.get(), cache.get());
    auto sampler = Sampler(&cached);
    const int64_t before = fetched();
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (int b = 0; b < 4; ++b) {
        ASSERT_OK_AND_ASSIGN(MiniBatch got, sampler->Sample(Seeds(b), b));
        ExpectSameBatch(got, want[b]);
      }
    }
    const FeatureCacheStats stats = cache->stats();
    EXPECT_GT(stats.hits, 0);
    EXPECT_GT(stats.misses, 0);
    EXPECT_LE(stats.entries, stats.capacity_rows);
    // Two epochs through the cache fetch less than two without it.
    EXPECT_LT(fetched() - before, 2 * uncached_bytes);
    EXPECT_EQ(fetched() - before + stats.bytes_saved, 2 * uncached_bytes);
  }
}

// A whole epoch through the prefetching loader (2 workers, recycled batch
// buffers) over the servers equals the in-process loader's, batch for batch.
TEST_P(DistributedSamplingTest, LoaderEpochMatchesInProcess) {
  auto distributed = Sampler(remote_.get());
  auto in_process = Sampler(local_.get());
  std::vector<NodeId> seeds(kNodes / 2);
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = 2 * i + 1;
  LoaderOptions options;
  options.batch_size = 50;
  options.shuffle_seed = 3;
  options.sample_seed = 4;
  options.prefetch = 0;
  ASSERT_OK_AND_ASSIGN(
      auto reference, PrefetchLoader::Create(in_process.get(), seeds, options));
  options.prefetch = 4;
  options.workers = 2;
  ASSERT_OK_AND_ASSIGN(
      auto loader, PrefetchLoader::Create(distributed.get(), seeds, options));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    reference->StartEpoch(epoch);
    loader->StartEpoch(epoch);
    MiniBatch got, want;
    int64_t batches = 0;
    while (true) {
      ASSERT_OK_AND_ASSIGN(bool more_want, reference->Next(&want));
      ASSERT_OK_AND_ASSIGN(bool more_got, loader->Next(&got));
      ASSERT_EQ(more_got, more_want);
      if (!more_got) break;
      ExpectSameBatch(got, want);
      ++batches;
    }
    EXPECT_EQ(batches, loader->steps_per_epoch());
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, DistributedSamplingTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) +
                                  "Servers" +
                                  (std::get<1>(info.param) ? "Memory" : "Disk");
                         });

// A server shut down mid-epoch: the loader reports it, naming the server,
// within the client's deadline.
class ServerLossTest : public DistributedSamplingTest {
 protected:
  void SetUp() override {}
};

TEST_F(ServerLossTest, LoaderNamesAKilledServerWithinTheDeadline) {
  RemoteGraphSourceOptions options;
  options.client.call_timeout = absl::Seconds(2);
  options.client.max_attempts = 2;
  options.client.initial_backoff = absl::Milliseconds(20);
  options.client.max_backoff = absl::Milliseconds(100);
  Build(2, /*in_memory=*/true, options);
  auto sampler = Sampler(remote_.get());
  std::vector<NodeId> seeds(kNodes);
  for (NodeId v = 0; v < kNodes; ++v) seeds[v] = v;
  LoaderOptions loader_options;
  loader_options.batch_size = 8;  // 188 steps: the epoch outlives the kill.
  loader_options.prefetch = 4;
  loader_options.workers = 2;
  loader_options.max_wait = std::chrono::seconds(60);
  ASSERT_OK_AND_ASSIGN(auto loader, PrefetchLoader::Create(sampler.get(), seeds,
                                                           loader_options));
  loader->StartEpoch(0);
  MiniBatch batch;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(bool more, loader->Next(&batch));
    ASSERT_TRUE(more);
  }
  const std::string killed = cluster_->server(1).address();
  const absl::Time start = absl::Now();
  cluster_->server(1).Shutdown(absl::Now());
  absl::Status error;
  int64_t after = 0;
  while (true) {
    absl::StatusOr<bool> more = loader->Next(&batch);
    if (!more.ok()) {
      error = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "the epoch ended without an error";
    ++after;
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(std::string(error.message()), HasSubstr(killed));
  EXPECT_LE(after, loader_options.prefetch + loader_options.workers)
      << "only batches finished before the kill are handed out";
  // Within the client's deadline: every attempt timed out, plus backoff.
  EXPECT_LE(took, options.client.max_attempts * options.client.call_timeout +
                      options.client.max_backoff)
      << error;
  std::printf("after the kill: %lld batches, then in %s: %s\n",
              static_cast<long long>(after), absl::FormatDuration(took).c_str(),
              std::string(error.message()).c_str());
  // The error is sticky and Stop() returns.
  EXPECT_FALSE(loader->Next(&batch).ok());
  loader->Stop();
}

}  // namespace
}  // namespace shardgnn
