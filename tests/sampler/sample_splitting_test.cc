// RemoteGraphSource splits SampleNeighbors calls that a server would refuse
// for their size (serve --max-sampled-per-call): chunks under its own bound
// when the fanout is known, halves on RESOURCE_EXHAUSTED otherwise. Real
// servers with a small cap against uncapped ones over the same partition:
// the minibatches must be identical.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "graphstore/client.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "partition/partition.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr int64_t kNodes = 1500;
constexpr int64_t kDim = 8;
constexpr int kParts = 2;

// One server per part, each with `options` (max_sampled_per_call above all).
struct Servers {
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;
  ~Servers() {
    for (auto& s : servers) s->Shutdown(absl::Now());
  }
};

absl::Status Serve(const std::string& partition_dir,
                   GraphStoreServerOptions options, Servers* out) {
  options.num_threads = 2;
  for (int p = 0; p < kParts; ++p) {
    ShardStoreOptions store_options;
    store_options.path = JoinPath(partition_dir, PartDirName(p));
    store_options.in_memory = true;
    auto store = ShardStore::Open(store_options);
    if (!store.ok()) return store.status();
    auto server = GraphStoreServer::Start(
        std::shared_ptr<const ShardStore>(std::move(*store)), options);
    if (!server.ok()) return server.status();
    out->addresses.push_back((*server)->address());
    out->servers.push_back(std::move(*server));
  }
  return absl::OkStatus();
}

class SampleSplittingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(dataset_, testing::MakeRmatDataset(
                                       tmp_.Sub("rmat"), kNodes, 12, kDim, 9));
    PartitionOptions options;
    options.num_parts = kParts;
    ASSERT_OK(PartitionInMemory(dataset_, tmp_.Sub("part"), options).status());
    ASSERT_OK_AND_ASSIGN(
        graph_, testing::RelabelForPartition(dataset_, tmp_.Sub("part")));
    for (NodeId v = 0; v < kNodes; ++v) {
      if (graph_.Degree(v) > graph_.Degree(hub_)) hub_ = v;
    }
    ASSERT_OK(Serve(tmp_.Sub("part"), {}, &uncapped_));
    ASSERT_OK_AND_ASSIGN(reference_, Connect(uncapped_, {}));
  }

  absl::StatusOr<std::unique_ptr<RemoteGraphSource>> Connect(
      const Servers& servers, RemoteGraphSourceOptions options) {
    options.connect_timeout = absl::Seconds(10);
    options.client.max_attempts = 1;
    return RemoteGraphSource::Connect(servers.addresses, options);
  }

  // Servers that answer at most `cap` sampled neighbors per call.
  void StartCapped(int64_t cap) {
    GraphStoreServerOptions options;
    options.max_sampled_per_call = cap;
    ASSERT_OK(Serve(tmp_.Sub("part"), options, &capped_));
  }

  // Calls refused by the capped servers (sampling errors, on either path).
  int64_t Refusals() {
    int64_t errors = 0;
    for (const std::string& address : capped_.addresses) {
      auto client = GraphStoreClient::Connect(address);
      EXPECT_OK(client);
      if (!client.ok()) continue;
      auto stats = (*client)->Stats();
      EXPECT_OK(stats);
      if (!stats.ok()) continue;
      for (const auto& m : stats->methods) {
        // Samples come over the feature port, or gRPC without it.
        if (m.method == "SampleNeighbors" || m.method == "FeaturePortSample") {
          errors += m.errors;
        }
      }
    }
    return errors;
  }

  // Many seeds over both parts (their exact neighborhoods exceed the cap).
  std::vector<NodeId> Seeds() const {
    std::vector<NodeId> seeds;
    for (NodeId v = 0; v < kNodes; v += 7) seeds.push_back(v);
    if (std::find(seeds.begin(), seeds.end(), hub_) == seeds.end()) {
      seeds.push_back(hub_);
    }
    return seeds;
  }

  void ExpectSameBatches(const RemoteGraphSource& source,
                         const std::vector<int>& fanouts, bool replace) {
    SamplerOptions options;
    options.fanouts = fanouts;
    options.replace = replace;
    ASSERT_OK_AND_ASSIGN(auto got, NeighborSampler::Create(&source, options));
    ASSERT_OK_AND_ASSIGN(auto want,
                         NeighborSampler::Create(reference_.get(), options));
    for (uint64_t seed : {3, 4}) {
      ASSERT_OK_AND_ASSIGN(MiniBatch a, got->Sample(Seeds(), seed));
      ASSERT_OK_AND_ASSIGN(MiniBatch b, want->Sample(Seeds(), seed));
      EXPECT_EQ(a.input_nodes, b.input_nodes);
      ASSERT_EQ(a.blocks.size(), b.blocks.size());
      for (size_t l = 0; l < a.blocks.size(); ++l) {
        EXPECT_EQ(a.blocks[l].indptr, b.blocks[l].indptr) << "layer " << l;
        EXPECT_EQ(a.blocks[l].indices, b.blocks[l].indices) << "layer " << l;
      }
      EXPECT_EQ(a.features, b.features);
      EXPECT_EQ(a.labels, b.labels);
    }
  }

  TempDir tmp_;
  Dataset dataset_;
  testing::RelabelledGraph graph_;
  NodeId hub_ = 0;
  Servers uncapped_, capped_;
  std::unique_ptr<RemoteGraphSource> reference_;
};

TEST_F(SampleSplittingTest, ExactSamplingIsSplitUntilItFitsTheServersCap) {
  const int64_t cap = graph_.Degree(hub_) + 3;
  ASSERT_LT(cap, static_cast<int64_t>(graph_.indices.size()) / 8)
      << "the cap must bind";
  StartCapped(cap);
  ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, {}));
  ExpectSameBatches(*source, {-1, -1}, false);
  EXPECT_GT(Refusals(), 0) << "the servers never refused a call";
  // One call straight to the source: the same CSR as the uncapped servers.
  const std::vector<NodeId> seeds = Seeds();
  SampledNeighbors got, want;
  ASSERT_OK(source->SampleNeighbors(seeds, -1, false, 11, &got));
  ASSERT_OK(reference_->SampleNeighbors(seeds, -1, false, 11, &want));
  EXPECT_EQ(got.counts, want.counts);
  EXPECT_EQ(got.neighbors, want.neighbors);
}

TEST_F(SampleSplittingTest, KnownFanoutIsSplitUnderTheClientsBound) {
  StartCapped(64);
  RemoteGraphSourceOptions options;
  options.max_sampled_per_call = 64;
  ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, options));
  for (bool replace : {false, true}) {
    ExpectSameBatches(*source, {15, 10}, replace);
  }
  // Chunks of 64 / 15 = 4 seeds: never refused.
  EXPECT_EQ(Refusals(), 0);
  EXPECT_GT(source->stats().requests, reference_->stats().requests * 4);
}

TEST_F(SampleSplittingTest, KnownFanoutOverALowerServerCapIsSplitOnRefusal) {
  StartCapped(100);
  ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, {}));
  for (bool replace : {true, false}) {
    ExpectSameBatches(*source, {25, 10}, replace);
  }
  EXPECT_GT(Refusals(), 0);
}

TEST_F(SampleSplittingTest, IdsPerCallAreBounded) {
  StartCapped(int64_t{8} << 20);
  RemoteGraphSourceOptions options;
  options.max_ids_per_call = 16;
  ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, options));
  ExpectSameBatches(*source, {-1, 5}, false);
  EXPECT_EQ(Refusals(), 0);
  EXPECT_GT(source->stats().requests, reference_->stats().requests * 4);
}

// Features (over the feature port and over gRPC), labels and degrees of more
// nodes than one call may carry (serve's cap on IDs per call) come in chunks.
TEST_F(SampleSplittingTest, FeatureLabelAndDegreeFetchesAreSplit) {
  GraphStoreServerOptions server_options;
  server_options.max_ids_per_call = 50;
  ASSERT_OK(Serve(tmp_.Sub("part"), server_options, &capped_));
  std::vector<NodeId> all(kNodes);
  for (NodeId v = 0; v < kNodes; ++v) all[v] = (v * 7) % kNodes;  // Mixed.
  std::vector<float> want(all.size() * kDim);
  ASSERT_OK(reference_->FetchFeatures(all, want.data()));
  std::vector<int64_t> want_labels(all.size()), want_degrees(all.size());
  ASSERT_OK(reference_->FetchLabels(all, want_labels.data()));
  ASSERT_OK(reference_->FetchDegrees(all, want_degrees.data()));
  for (bool feature_port : {true, false}) {
    RemoteGraphSourceOptions options;
    options.max_ids_per_call = 50;
    options.use_shared_memory = false;
    options.client.use_feature_port = feature_port;
    ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, options));
    ASSERT_EQ(source->uses_feature_port(0), feature_port);
    std::vector<float> got(all.size() * kDim, -1.0f);
    ASSERT_OK(source->FetchFeatures(all, got.data()));
    EXPECT_EQ(got, want) << "feature port " << feature_port;
    std::vector<int64_t> labels(all.size(), -7), degrees(all.size(), -7);
    ASSERT_OK(source->FetchLabels(all, labels.data()));
    ASSERT_OK(source->FetchDegrees(all, degrees.data()));
    EXPECT_EQ(labels, want_labels);
    EXPECT_EQ(degrees, want_degrees);
    // Each of the 1500 nodes in calls of at most 50.
    EXPECT_GE(source->stats().requests, 3 * kNodes / 50);
  }
}

TEST_F(SampleSplittingTest, OneNodeOverTheCapIsAClearError) {
  StartCapped(graph_.Degree(hub_) - 1);
  ASSERT_OK_AND_ASSIGN(auto source, Connect(capped_, {}));
  std::vector<NodeId> seeds = Seeds();
  SampledNeighbors out;
  absl::Status s = source->SampleNeighbors(seeds, -1, false, 1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  std::printf("%s\n", s.ToString().c_str());
  const int part = source->book().Owner(hub_);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("node ", hub_, " alone")));
  EXPECT_THAT(std::string(s.message()), HasSubstr("--max-sampled-per-call"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(source->address(part)));
  // A finite fanout under the cap is still fine.
  EXPECT_OK(source->SampleNeighbors(seeds, 10, false, 1, &out));
}

}  // namespace
}  // namespace shardgnn
