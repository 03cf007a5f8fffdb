// Replicas and failover (issue 13): two real storage servers per part on
// loopback, replicas shut down and restarted while a sampler runs against
// them. A node's sample depends only on (seed, node), so whichever replica
// answers, every minibatch must equal the in-process sampler's. Every test
// runs on each of the three feature paths: the first replica's shared memory
// (mapped, and still read after that server dies), the servers' feature
// ports, and gRPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "common/file_util.h"
#include "common/progress.h"
#include "graphstore/shard_format.h"
#include "graphstore/shard_store.h"
#include "partition/partition.h"
#include "partition/partition_book.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::TempDir;

constexpr int64_t kNodes = 1500;
constexpr int kParts = 2;
constexpr int kReplicas = 2;
const std::vector<int> kFanouts = {10, 5};

class ReplicaFailoverTest
    : public ::testing::TestWithParam<testing::FeaturePath> {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(
        testing::PartitionedRmat rmat,
        testing::MakePartitionedRmat(tmp_.path(), kNodes, kParts, 5));
    graph_ = std::move(rmat.graph);
    local_ = std::move(rmat.local);
    servers_.resize(kParts);
    for (int p = 0; p < kParts; ++p) {
      for (int r = 0; r < kReplicas; ++r) {
        ASSERT_OK_AND_ASSIGN(auto server,
                             testing::ServePart(tmp_.Sub("part"), p, true));
        servers_[p].push_back(std::move(server));
      }
    }
  }

  void TearDown() override {
    remote_.reset();  // Its probers first.
    for (auto& part : servers_) {
      for (auto& s : part) {
        if (s != nullptr) s->Shutdown(absl::Now());
      }
    }
  }

  // Connects to the live servers and, first, to `dead` (addresses where
  // nothing answers).
  absl::Status TryConnect(absl::Duration server_wait,
                          const std::vector<std::string>& dead = {}) {
    RemoteGraphSourceOptions options;
    options.connect_timeout = connect_timeout_;
    options.spare_replica_wait = absl::Seconds(1);
    options.client.call_timeout = absl::Seconds(2);
    options.client.max_attempts = 2;
    options.client.initial_backoff = absl::Milliseconds(20);
    options.server_wait = server_wait;
    options.probe_interval = absl::Milliseconds(100);
    testing::UseFeaturePath(GetParam(), &options);
    std::vector<std::string> addresses = dead;
    for (auto& part : servers_) {
      for (auto& s : part) {
        if (s != nullptr) addresses.push_back(s->address());
      }
    }
    auto remote = RemoteGraphSource::Connect(addresses, options);
    if (!remote.ok()) return remote.status();
    remote_ = std::move(remote).value();
    return absl::OkStatus();
  }

  void Connect(absl::Duration server_wait = absl::ZeroDuration(),
               const std::vector<std::string>& dead = {}) {
    ASSERT_OK(TryConnect(server_wait, dead));
    for (int p = 0; p < kParts; ++p) {
      ASSERT_EQ(remote_->reads_shared_memory(p),
                GetParam() == testing::FeaturePath::kSharedMemory);
      ASSERT_EQ(remote_->uses_feature_port(p),
                GetParam() == testing::FeaturePath::kFeaturePort);
    }
  }

  // Feature bytes went the way the parameter says.
  void ExpectFeaturePath() {
    const RemoteStats stats = remote_->stats();
    if (GetParam() == testing::FeaturePath::kSharedMemory) {
      EXPECT_GT(stats.shared_feature_bytes, 0);
      EXPECT_EQ(stats.feature_bytes, 0);
    } else {
      EXPECT_EQ(stats.shared_feature_bytes, 0);
      EXPECT_GT(stats.feature_bytes, 0);
    }
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

  // Batch b from the servers equals the in-process one.
  void ExpectSameBatch(NeighborSampler* remote, NeighborSampler* local, int b) {
    const uint64_t seed = 1000 + b;
    ASSERT_OK_AND_ASSIGN(MiniBatch got, remote->Sample(Seeds(b), seed));
    ASSERT_OK_AND_ASSIGN(MiniBatch want, local->Sample(Seeds(b), seed));
    EXPECT_EQ(got.input_nodes, want.input_nodes) << "batch " << b;
    ASSERT_EQ(got.blocks.size(), want.blocks.size());
    for (size_t l = 0; l < got.blocks.size(); ++l) {
      EXPECT_EQ(got.blocks[l].indices, want.blocks[l].indices) << "batch " << b;
    }
    ASSERT_EQ(got.features.size(), want.features.size());
    EXPECT_EQ(std::memcmp(got.features.data(), want.features.data(),
                          got.features.size() * sizeof(float)),
              0)
        << "batch " << b;
    EXPECT_EQ(got.labels, want.labels) << "batch " << b;
  }

  // Whether the source sees replica `replica` of `part` up within `wait`
  // (its probes let a restarted server rejoin).
  bool UpWithin(int part, int replica, absl::Duration wait) {
    const absl::Time deadline = absl::Now() + wait;
    while (!remote_->replicas(part)[replica].up && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    return remote_->replicas(part)[replica].up;
  }

  void Kill(int part, int replica) {
    servers_[part][replica]->Shutdown(absl::Now());
    servers_[part][replica].reset();
  }

  absl::Duration connect_timeout_ = absl::Seconds(10);
  TempDir tmp_;
  testing::RelabelledGraph graph_;
  std::unique_ptr<InMemoryGraphSource> local_;
  std::vector<std::vector<std::unique_ptr<GraphStoreServer>>> servers_;
  std::unique_ptr<RemoteGraphSource> remote_;
};

TEST_P(ReplicaFailoverTest, SameMiniBatchesWhileReplicasDie) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  for (int b = 0; b < 24; ++b) {
    // One replica of each part dies, at different times, never both
    // replicas of one part.
    if (b == 4) Kill(0, 0);
    if (b == 12) Kill(1, 1);
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  EXPECT_GE(remote_->stats().failovers, 2);
  ExpectFeaturePath();
  EXPECT_FALSE(remote_->replicas(0)[0].up);
  EXPECT_TRUE(remote_->replicas(0)[1].up);
  EXPECT_FALSE(remote_->replicas(1)[1].up);
  EXPECT_THAT(remote_->replicas(0)[0].last_error,
              HasSubstr(remote_->replicas(0)[0].address));
  // Splits and degrees fail over too.
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> degrees,
                       remote_->FetchAllDegrees());
  EXPECT_EQ(degrees.size(), static_cast<size_t>(kNodes));
  EXPECT_OK(remote_->FetchSplit("train").status());
}

// The first call to notice a dead replica is a feature (or label) call, not
// a sampling call: it fails over on its own path.
TEST_P(ReplicaFailoverTest, FeatureAndLabelCallsFailOver) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  const int64_t dim = remote_->feature_dim();
  // Every node in order (one call per part, rows scattered), then one part's
  // nodes alone (rows contiguous).
  std::vector<NodeId> all(kNodes), part1;
  for (NodeId v = 0; v < kNodes; ++v) all[v] = v;
  for (NodeId v = remote_->book().Range(1).start;
       v < remote_->book().Range(1).end; ++v) {
    part1.push_back(v);
  }
  Kill(0, 0);
  Kill(1, 0);
  // Ties go round the replicas: each part's dead one is picked within two
  // calls.
  for (int round = 0; round < 3; ++round) {
    for (const std::vector<NodeId>* nodes : {&all, &part1}) {
      std::vector<float> got(nodes->size() * dim, -1.0f);
      ASSERT_OK(remote_->FetchFeatures(*nodes, got.data()));
      for (size_t i = 0; i < nodes->size(); ++i) {
        ASSERT_EQ(
            std::memcmp(&got[i * dim], &graph_.features[(*nodes)[i] * dim],
                        dim * sizeof(float)),
            0)
            << "node " << (*nodes)[i] << ", round " << round;
      }
      std::vector<int64_t> labels(nodes->size(), -2);
      ASSERT_OK(remote_->FetchLabels(*nodes, labels.data()));
      for (size_t i = 0; i < nodes->size(); ++i) {
        ASSERT_EQ(labels[i], graph_.labels[(*nodes)[i]]);
      }
    }
  }
  EXPECT_FALSE(remote_->replicas(0)[0].up);
  EXPECT_FALSE(remote_->replicas(1)[0].up);
  EXPECT_GE(remote_->stats().failovers, 2);
  ExpectFeaturePath();
}

TEST_P(ReplicaFailoverTest, LoadIsSpreadOverLiveReplicas) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  auto remote = Sampler(remote_.get());
  for (int b = 0; b < 10; ++b) ASSERT_OK(remote->Sample(Seeds(b), b).status());
  for (int p = 0; p < kParts; ++p) {
    for (const internal::ReplicaState& r : remote_->replicas(p)) {
      EXPECT_GT(r.calls, 0) << r.address << " got no call";
    }
    for (int r = 0; r < kReplicas; ++r) {
      EXPECT_GT(servers_[p][r]->Totals().calls, 0);
    }
  }
}

TEST_P(ReplicaFailoverTest, ARestartedReplicaRejoins) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  const std::string address = servers_[0][0]->address();
  Kill(0, 0);
  for (int b = 0; b < 4; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  EXPECT_FALSE(remote_->replicas(0)[0].up);
  // A new server on the same address.
  ASSERT_OK_AND_ASSIGN(servers_[0][0],
                       testing::ServePart(tmp_.Sub("part"), 0, true, address));
  ASSERT_TRUE(UpWithin(0, 0, absl::Seconds(10))) << "not back within 10 s";
  EXPECT_EQ(remote_->replicas(0)[0].rejoins, 1);
  for (int b = 4; b < 12; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  // Its request counter grows again.
  EXPECT_GT(servers_[0][0]->Totals().calls, 0);
  ExpectFeaturePath();
}

// A replica back on its address but still loading its shard (it answers
// gRPC's standard health check NOT_SERVING: GraphStoreServer::Bind before
// Serve) does not rejoin until it serves.
TEST_P(ReplicaFailoverTest, AReplicaStillLoadingDoesNotRejoinUntilItServes) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  const std::string address = servers_[0][0]->address();
  Kill(0, 0);
  for (int b = 0; b < 4; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  ASSERT_FALSE(remote_->replicas(0)[0].up);
  GraphStoreServerOptions options;
  options.listen_address = address;
  options.num_threads = 2;
  ASSERT_OK_AND_ASSIGN(servers_[0][0], GraphStoreServer::Bind(options));
  // Several probe intervals (100 ms) while it loads.
  absl::SleepFor(absl::Milliseconds(800));
  EXPECT_FALSE(remote_->replicas(0)[0].up);
  EXPECT_THAT(remote_->replicas(0)[0].last_error,
              ::testing::HasSubstr("not serving"));
  for (int b = 4; b < 6; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  ShardStoreOptions store_options;
  store_options.path = JoinPath(tmp_.Sub("part"), PartDirName(0));
  store_options.in_memory = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardStore> store,
                       ShardStore::Open(store_options));
  ASSERT_OK(servers_[0][0]->Serve(std::move(store)));
  EXPECT_TRUE(UpWithin(0, 0, absl::Seconds(10))) << "not back within 10 s";
  for (int b = 6; b < 12; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
}

TEST_P(ReplicaFailoverTest, AllReplicasDownWaitsThenNamesThePart) {
  const absl::Duration wait = absl::Milliseconds(1500);
  ASSERT_NO_FATAL_FAILURE(Connect(wait));
  auto remote = Sampler(remote_.get());
  ASSERT_OK(remote->Sample(Seeds(0), 1).status());
  const std::string a = servers_[1][0]->address();
  const std::string b = servers_[1][1]->address();
  Kill(1, 0);
  Kill(1, 1);
  const absl::Time start = absl::Now();
  auto batch = remote->Sample(Seeds(1), 2);
  const absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(batch.ok());
  EXPECT_GE(took, wait);
  EXPECT_LT(took, wait + absl::Seconds(6));  // Plus at most a call deadline.
  EXPECT_THAT(std::string(batch.status().message()),
              AllOf(HasSubstr("part 1"), HasSubstr(a), HasSubstr(b),
                    HasSubstr("--server-wait")));
}

TEST_P(ReplicaFailoverTest, AReplicaBackWithinTheWaitLetsTheRunGoOn) {
  ASSERT_NO_FATAL_FAILURE(Connect(absl::Seconds(20)));
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), 0));
  const std::string address = servers_[1][1]->address();
  Kill(1, 0);
  Kill(1, 1);
  std::thread restart([&] {
    absl::SleepFor(absl::Seconds(1));
    auto server = testing::ServePart(tmp_.Sub("part"), 1, true, address);
    ASSERT_OK(server);
    servers_[1][1] = std::move(server).value();
  });
  const absl::Time start = absl::Now();
  ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), 1));
  restart.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), 2));
  ExpectFeaturePath();
}

// A replica whose host died before the trainers (re)started: Connect starts
// without it once the spare wait has passed, since another replica serves its
// part, and names it; the batches are the same.
TEST_P(ReplicaFailoverTest, AReplicaDownAtConnectIsLeftOutIfItsPartHasAnother) {
  const std::string dead = servers_[0][0]->address();
  Kill(0, 0);
  const absl::Time start = absl::Now();
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration(), {dead}));
  // The spare wait (1 s) plus a health check's slice (1 s), not the connect
  // timeout (10 s).
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(remote_->unreached().size(), 1u);
  EXPECT_EQ(remote_->unreached()[0].first, dead);
  EXPECT_FALSE(remote_->unreached()[0].second.empty());
  ASSERT_EQ(remote_->num_replicas(0), 1);
  EXPECT_EQ(remote_->num_replicas(1), 2);
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  for (int b = 0; b < 4; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  EXPECT_GT(servers_[0][1]->Totals().calls, 0);
}

// A replica down when the trainer connected joins its part once its server
// answers (probed every 100 ms here): it is called from then on, and carries
// the part alone when the part's other replica dies.
TEST_P(ReplicaFailoverTest, AReplicaDownAtConnectJoinsWhenItAnswers) {
  const std::string late = servers_[0][0]->address();
  Kill(0, 0);
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration(), {late}));
  ASSERT_EQ(remote_->num_replicas(0), 1);
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), 0));
  ASSERT_OK_AND_ASSIGN(servers_[0][0],
                       testing::ServePart(tmp_.Sub("part"), 0, true, late));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (remote_->num_replicas(0) < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(remote_->num_replicas(0), 2) << "not joined within 10 s";
  EXPECT_EQ(remote_->initial_replicas(0), 1);
  const std::vector<internal::ReplicaState> states = remote_->replicas(0);
  EXPECT_EQ(states[1].address, late);
  EXPECT_TRUE(states[1].up);
  EXPECT_TRUE(states[1].joined_late);
  EXPECT_FALSE(states[0].joined_late);
  EXPECT_TRUE(remote_->unreached().empty());
  // The part's replica at Connect dies: the one that joined answers alone.
  Kill(0, 1);
  for (int b = 1; b < 6; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
  EXPECT_GT(servers_[0][0]->Totals().calls, 0);
  EXPECT_FALSE(remote_->replicas(0)[0].up);
}

// A server left out at Connect that answers later with another partition's
// shard stays out: unreached() says why, and the part keeps its replica.
TEST_P(ReplicaFailoverTest, AServerLeftOutThatServesAnotherPartitionStaysOut) {
  const std::string late = servers_[0][0]->address();
  Kill(0, 0);
  ASSERT_NO_FATAL_FAILURE(Connect(absl::ZeroDuration(), {late}));
  ASSERT_OK(testing::MakePartitionedRmat(tmp_.Sub("other"), kNodes, kParts, 6)
                .status());
  ASSERT_OK_AND_ASSIGN(
      servers_[0][0],
      testing::ServePart(JoinPath(tmp_.Sub("other"), "part"), 0, true, late));
  auto said_why = [&] {
    const auto left_out = remote_->unreached();
    return left_out.size() == 1 &&
           left_out[0].second.find("not this run's") != std::string::npos;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!said_why() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(remote_->unreached().size(), 1u);
  EXPECT_EQ(remote_->unreached()[0].first, late);
  EXPECT_THAT(remote_->unreached()[0].second,
              AllOf(HasSubstr(late), HasSubstr("not this run's"),
                    HasSubstr(remote_->partition_id())));
  // Several more probes: still out.
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(remote_->num_replicas(0), 1);
  auto remote = Sampler(remote_.get());
  auto local = Sampler(local_.get());
  for (int b = 0; b < 3; ++b) {
    ASSERT_NO_FATAL_FAILURE(ExpectSameBatch(remote.get(), local.get(), b));
  }
}

// No server of part 1 answers: Connect waits the connect timeout (not the
// spare wait) and fails naming one of them.
TEST_P(ReplicaFailoverTest, APartWithNoServerAnsweringFailsConnect) {
  const std::string a = servers_[1][0]->address();
  const std::string b = servers_[1][1]->address();
  Kill(1, 0);
  Kill(1, 1);
  connect_timeout_ = absl::Seconds(3);
  const absl::Time start = absl::Now();
  absl::Status s = TryConnect(absl::ZeroDuration(), {a, b});
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(a));
  EXPECT_GE(took, absl::Seconds(3));
  EXPECT_LT(took, absl::Seconds(8));
  EXPECT_EQ(remote_, nullptr);
}

INSTANTIATE_TEST_SUITE_P(FeaturePaths, ReplicaFailoverTest,
                         ::testing::Values(testing::FeaturePath::kSharedMemory,
                                           testing::FeaturePath::kFeaturePort,
                                           testing::FeaturePath::kGrpc),
                         [](const auto& info) {
                           return testing::FeaturePathName(info.param);
                         });

}  // namespace
}  // namespace shardgnn
