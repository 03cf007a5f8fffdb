// Hedged requests (issue 13, item 2): two storage servers per part on
// loopback. Part 0's first replica is a real `shardgnn serve` child process
// that a test stops with SIGSTOP (alive, connected, silent); the others are
// real servers in this process. With hedging on, a call stuck on the stopped
// replica is sent again to the other one after the hedge delay, so batches
// keep coming in far less than a call deadline; without it, the call waits
// for its deadline before it fails over. Hedging must never change a result:
// every minibatch equals the in-process sampler's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "common/progress.h"
#include "common/subprocess.h"
#include "partition/partition.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::TempDir;

constexpr int64_t kNodes = 1500;
constexpr int kParts = 2;
const std::vector<int> kFanouts = {10, 5};
// The clients' call deadline (the default).
constexpr absl::Duration kCallDeadline = absl::Seconds(5);

class HedgingTest : public ::testing::TestWithParam<testing::FeaturePath> {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(
        testing::PartitionedRmat rmat,
        testing::MakePartitionedRmat(tmp_.path(), kNodes, kParts, 5));
    graph_ = std::move(rmat.graph);
    local_ = std::move(rmat.local);
    train_size_ = rmat.dataset.splits["train"].size();
    // Part 0, replica 0: the child process.
    child_ = testing::StartShardgnn(
        {"serve", "--partition", tmp_.Sub("part"), "--part", "0", "--listen",
         "127.0.0.1:0", "--memory", "--threads", "2"},
        "server 0 replica 0");
    ASSERT_NE(child_, nullptr);
    ASSERT_OK_AND_ASSIGN(
        std::string ready,
        child_->WaitForLine("ready on ", std::chrono::seconds(60)));
    addresses_.push_back(testing::ReadyAddress(ready));
    for (int p = 0; p < kParts; ++p) {
      for (int r = p == 0 ? 1 : 0; r < 2; ++r) {
        ASSERT_OK_AND_ASSIGN(auto server,
                             testing::ServePart(tmp_.Sub("part"), p, true));
        addresses_.push_back(server->address());
        servers_.push_back(std::move(server));
      }
    }
  }

  void TearDown() override {
    if (child_ != nullptr) child_->Terminate(std::chrono::seconds(5));
    remote_.reset();  // Its probers and outstanding hedges first.
    for (auto& s : servers_) s->Shutdown(absl::Now());
  }

  // Until no replica of any part has an attempt running (at most 10 s).
  void WaitForNoAttemptInFlight() {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (true) {
      int running = 0;
      for (int p = 0; p < kParts; ++p) {
        for (const internal::ReplicaState& r : remote_->replicas(p)) {
          running += r.in_flight;
        }
      }
      if (running == 0) return;
      ASSERT_LT(absl::Now(), end) << running << " attempts still running";
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

  // hedge_after zero and !adaptive: hedging off.
  void Connect(absl::Duration hedge_after, bool adaptive = false) {
    RemoteGraphSourceOptions options;
    options.connect_timeout = absl::Seconds(10);
    options.client.call_timeout = kCallDeadline;
    options.client.max_attempts = 2;
    options.client.initial_backoff = absl::Milliseconds(20);
    options.probe_interval = absl::Milliseconds(100);
    options.hedge_after = hedge_after;
    options.hedge_adaptive = adaptive;
    testing::UseFeaturePath(GetParam(), &options);
    ASSERT_OK_AND_ASSIGN(remote_,
                         RemoteGraphSource::Connect(addresses_, options));
    ASSERT_EQ(remote_->uses_feature_port(0),
              GetParam() == testing::FeaturePath::kFeaturePort);
    remote_sampler_ = Sampler(remote_.get());
    local_sampler_ = Sampler(local_.get());
  }

  std::unique_ptr<NeighborSampler> Sampler(const GraphSource* source) {
    SamplerOptions options;
    options.fanouts = kFanouts;
    auto sampler = NeighborSampler::Create(source, options);
    EXPECT_OK(sampler);
    return sampler.ok() ? std::move(sampler).value() : nullptr;
  }

  // Batch b's seeds: 64 nodes over both parts.
  static std::vector<NodeId> Seeds(int b) {
    std::vector<NodeId> seeds;
    for (int i = 0; i < 64; ++i) seeds.push_back((b * 131 + i * 23) % kNodes);
    return seeds;
  }

  // Batch b from the servers equals the in-process one; returns how long
  // the remote batch took.
  absl::Duration ExpectSameBatch(int b) {
    const uint64_t seed = 1000 + b;
    const absl::Time start = absl::Now();
    auto got = remote_sampler_->Sample(Seeds(b), seed);
    const absl::Duration took = absl::Now() - start;
    EXPECT_OK(got);
    auto want = local_sampler_->Sample(Seeds(b), seed);
    EXPECT_OK(want);
    if (!got.ok() || !want.ok()) return took;
    EXPECT_EQ(got->input_nodes, want->input_nodes) << "batch " << b;
    EXPECT_EQ(got->blocks.size(), want->blocks.size());
    for (size_t l = 0; l < got->blocks.size() && l < want->blocks.size(); ++l) {
      EXPECT_EQ(got->blocks[l].indices, want->blocks[l].indices)
          << "batch " << b;
    }
    EXPECT_EQ(got->features.size(), want->features.size());
    if (got->features.size() == want->features.size()) {
      EXPECT_EQ(std::memcmp(got->features.data(), want->features.data(),
                            got->features.size() * sizeof(float)),
                0)
          << "batch " << b;
    }
    EXPECT_EQ(got->labels, want->labels) << "batch " << b;
    return took;
  }

  // Out-degrees and the train split from the servers equal the graph's.
  void ExpectSameDegreesAndSplit() {
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> degrees,
                         remote_->FetchAllDegrees());
    ASSERT_EQ(degrees.size(), static_cast<size_t>(kNodes));
    for (NodeId v = 0; v < kNodes; ++v) {
      ASSERT_EQ(degrees[v], graph_.indptr[v + 1] - graph_.indptr[v]) << v;
    }
    // The split in new IDs: as many nodes as the dataset's, sorted, unique.
    ASSERT_OK_AND_ASSIGN(std::vector<NodeId> train,
                         remote_->FetchSplit("train"));
    EXPECT_EQ(train.size(), train_size_);
    EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
    EXPECT_EQ(std::adjacent_find(train.begin(), train.end()), train.end());
  }

  TempDir tmp_;
  testing::RelabelledGraph graph_;
  size_t train_size_ = 0;
  std::unique_ptr<InMemoryGraphSource> local_;
  std::unique_ptr<Subprocess> child_;
  std::vector<std::unique_ptr<GraphStoreServer>> servers_;
  std::vector<std::string> addresses_;  // Part 0's child first.
  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<NeighborSampler> remote_sampler_, local_sampler_;
};

// Nearly every call is hedged (after 1 us): both replicas answer, and the
// results are those of the in-process sampler all the same.
TEST_P(HedgingTest, HedgingNeverChangesResults) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::Microseconds(1)));
  for (int b = 0; b < 16; ++b) ExpectSameBatch(b);
  ASSERT_NO_FATAL_FAILURE(ExpectSameDegreesAndSplit());
  const RemoteStats stats = remote_->stats();
  EXPECT_GT(stats.hedges_sent, 0);
  EXPECT_LE(stats.hedges_won, stats.hedges_sent);
  EXPECT_EQ(stats.failovers, 0);
  for (int p = 0; p < kParts; ++p) {
    for (const internal::ReplicaState& r : remote_->replicas(p)) {
      EXPECT_TRUE(r.up) << r.address << ": " << r.last_error;
    }
  }
}

TEST_P(HedgingTest, AdaptiveHedgingNeverChangesResults) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration(), /*adaptive=*/true));
  for (int b = 0; b < 16; ++b) ExpectSameBatch(b);
  ASSERT_NO_FATAL_FAILURE(ExpectSameDegreesAndSplit());
  EXPECT_EQ(remote_->stats().failovers, 0);
}

// A stopped replica: each call stuck on it is answered by the other replica
// after the hedge delay, far within the call deadline. Destroying the source
// while the stuck attempt still runs waits for it (at most a call deadline)
// and does not crash.
TEST_P(HedgingTest, AStoppedReplicaIsHedgedAround) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::Milliseconds(50)));
  ExpectSameBatch(0);
  ASSERT_NO_FATAL_FAILURE(WaitForNoAttemptInFlight());  // As below.
  child_->Signal(SIGSTOP);
  for (int b = 1; b < 12; ++b) {
    EXPECT_LT(ExpectSameBatch(b), kCallDeadline / 2) << "batch " << b;
  }
  const RemoteStats stats = remote_->stats();
  EXPECT_GT(stats.hedges_won, 0);
  EXPECT_GE(stats.hedges_sent, stats.hedges_won);
  const absl::Time start = absl::Now();
  remote_.reset();
  EXPECT_LT(absl::Now() - start, kCallDeadline + absl::Seconds(2));
}

TEST_P(HedgingTest, AdaptiveHedgingAroundAStoppedReplica) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration(), /*adaptive=*/true));
  // Enough answered calls for a p95 of each part's latency.
  for (int b = 0; b < 10; ++b) ExpectSameBatch(b);
  // Hedged calls of those batches may leave their losing attempts running.
  // One still running on the replica when it stops stays in flight there
  // until its deadline, so every later call picks the other (fewest in
  // flight) and none is left to hedge (seen on a loaded machine).
  ASSERT_NO_FATAL_FAILURE(WaitForNoAttemptInFlight());
  child_->Signal(SIGSTOP);
  for (int b = 10; b < 20; ++b) {
    EXPECT_LT(ExpectSameBatch(b), kCallDeadline / 2) << "batch " << b;
  }
  EXPECT_GT(remote_->stats().hedges_won, 0);
}

// The same stopped replica without hedging: the first call to it waits for
// its deadline, then fails over.
TEST_P(HedgingTest, WithoutHedgingAStoppedReplicaCostsACallDeadline) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration()));
  child_->Signal(SIGSTOP);
  // Ties go round the replicas, starting with the first (the child): the
  // first batch's first call to part 0 goes to it.
  EXPECT_GE(ExpectSameBatch(0), kCallDeadline - absl::Milliseconds(500));
  const RemoteStats stats = remote_->stats();
  EXPECT_GE(stats.failovers, 1);
  EXPECT_EQ(stats.hedges_sent, 0);
  EXPECT_FALSE(remote_->replicas(0)[0].up);
}

INSTANTIATE_TEST_SUITE_P(FeaturePaths, HedgingTest,
                         ::testing::Values(testing::FeaturePath::kSharedMemory,
                                           testing::FeaturePath::kFeaturePort,
                                           testing::FeaturePath::kGrpc),
                         [](const auto& info) {
                           return testing::FeaturePathName(info.param);
                         });

}  // namespace
}  // namespace shardgnn
