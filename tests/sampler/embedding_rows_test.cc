// Learned embedding tables on real storage servers (issue 15): the
// server's embedding calls through GraphStoreClient and MakeRemoteRows, with
// bad requests, the step clock across trainers, deadlines and shutdown.
#include "sampler/embedding_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/peak_rss.h"
#include "common/progress.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "partition/partition.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ExpectError;
using ::testing::HasSubstr;
using testing::TempDir;

// A run's secret in these tests (what `shardgnn train` draws at random).
std::string SecretOf(const std::string& run) {
  return absl::StrCat("secret of run ", run, ", 128 bits or more");
}

class EmbeddingRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(Dataset dataset, testing::MakeRmatDataset(
                                              tmp_.Sub("rmat"), 800, 8, 4, 3));
    PartitionOptions options;
    options.num_parts = 2;
    ASSERT_OK(PartitionInMemory(dataset, tmp_.Sub("part"), options).status());
    ASSERT_OK_AND_ASSIGN(cluster_, testing::TestCluster::Start(
                                       tmp_.Sub("part"), /*in_memory=*/true));
    RemoteGraphSourceOptions remote;
    remote.connect_timeout = absl::Seconds(10);
    ASSERT_OK_AND_ASSIGN(
        remote_, RemoteGraphSource::Connect(cluster_->addresses(), remote));
    // Part 0's server, asked directly.
    GraphStoreClientOptions client;
    client.call_timeout = absl::Seconds(2);
    client.max_attempts = 1;
    ASSERT_OK_AND_ASSIGN(server_, Client(client));
    ASSERT_OK(server_->Info().status());
    const NodeRange range = remote_->book().Range(0);
    owned_ = {range.start, range.end};
  }

  absl::StatusOr<std::unique_ptr<GraphStoreClient>> Client(
      const GraphStoreClientOptions& options) {
    ASSIGN_OR_RETURN(auto client, GraphStoreClient::Connect(
                                      cluster_->addresses()[0], options));
    RETURN_IF_ERROR(client->Info().status());
    return client;
  }

  static EmbeddingTableConfig Config(int trainers, const std::string& run) {
    EmbeddingTableConfig c;
    c.dim = 4;
    c.optimizer = EmbeddingOptimizer::kSgd;
    c.lr = 1.0;
    c.num_trainers = trainers;
    c.run_id = run;
    c.run_secret = SecretOf(run);
    return c;
  }

  std::vector<float> Row(const EmbeddingTableConfig& c, NodeId v) {
    std::vector<float> row(static_cast<size_t>(c.dim));
    EXPECT_OK(server_->PullEmbeddings(c, {v}, 0, -1, absl::ZeroDuration(),
                                      row.data()));
    return row;
  }

  TempDir tmp_;
  std::unique_ptr<testing::TestCluster> cluster_;
  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<GraphStoreClient> server_;
  std::pair<NodeId, NodeId> owned_;
};

TEST_F(EmbeddingRowsTest, CreateJoinsTheRunsTableAndRefusesOtherSettings) {
  const EmbeddingTableConfig c = Config(1, "run-a");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  ASSERT_OK(
      server_->PushEmbeddingGradients(c, 0, 0, {v}, {1.0f, 1.0f, 1.0f, 1.0f}));
  // Joining the same run keeps the rows.
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  EXPECT_FLOAT_EQ(Row(c, v)[0], InitialEmbeddingValue(c, v, 0) - 1.0f);
  EmbeddingTableConfig other = c;
  other.dim = 8;
  other.lr = 0.5;
  ExpectError(server_->CreateEmbeddingTable(other),
              absl::StatusCode::kFailedPrecondition, "dim 8 != 4");
  // Another run replaces the table: fresh rows, and the old run is told.
  const EmbeddingTableConfig next = Config(1, "run-b");
  ASSERT_OK(server_->CreateEmbeddingTable(next));
  EXPECT_FLOAT_EQ(Row(next, v)[0], InitialEmbeddingValue(next, v, 0));
  std::vector<float> row(4);
  ExpectError(
      server_->PullEmbeddings(c, {v}, 0, -1, absl::ZeroDuration(), row.data()),
      absl::StatusCode::kFailedPrecondition, "another run");
  EmbeddingTableConfig unknown = c;
  unknown.name = "item";
  ExpectError(server_->PullEmbeddings(unknown, {v}, 0, -1, absl::ZeroDuration(),
                                      row.data()),
              absl::StatusCode::kNotFound, "no embedding table item");
}

// Issue 51: the run ID is public (embedding_run.json is world-readable). A
// second client of the same cluster (the same token, here none) that knows
// the run ID but not the run's secret neither writes the run's rows (a push,
// a snapshot, a restore or a join that would reset them) nor reads them, and
// the run goes on untouched.
TEST_F(EmbeddingRowsTest, OnlyTheRunsSecretReachesItsTable) {
  const EmbeddingTableConfig c = Config(1, "run-a");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  ASSERT_OK(
      server_->PushEmbeddingGradients(c, 0, 0, {v}, {1.0f, 1.0f, 1.0f, 1.0f}));
  const std::vector<float> before = Row(c, v);
  GraphStoreClientOptions options;
  options.call_timeout = absl::Seconds(2);
  options.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto intruder, Client(options));
  for (const std::string& secret :
       {std::string("0123456789abcdef0123456789abcdef"), c.run_secret + "!"}) {
    SCOPED_TRACE(secret);
    EmbeddingTableConfig stolen = c;
    stolen.run_secret = secret;
    const std::vector<float> g = {9.0f, 9.0f, 9.0f, 9.0f};
    ExpectError(intruder->PushEmbeddingGradients(stolen, 0, 1, {v}, g),
                absl::StatusCode::kPermissionDenied, "another run's table");
    std::vector<float> row(4, -1.0f);
    ExpectError(intruder->PullEmbeddings(stolen, {v}, 1, -1,
                                         absl::ZeroDuration(), row.data()),
                absl::StatusCode::kPermissionDenied, "another run's table");
    EXPECT_EQ(row, std::vector<float>(4, -1.0f));
    ExpectError(intruder->SnapshotEmbeddings(stolen, 1, 1).status(),
                absl::StatusCode::kPermissionDenied, "another run's table");
    // Joining the run's table, and restoring its epoch 0 (which would put
    // the initial rows back).
    ExpectError(intruder->CreateEmbeddingTable(stolen),
                absl::StatusCode::kPermissionDenied, "embedding table node");
    ExpectError(intruder->CreateEmbeddingTable(stolen, 0, 0),
                absl::StatusCode::kPermissionDenied, "another run's table");
  }
  // Without any secret: refused as well.
  EmbeddingTableConfig bare = c;
  bare.run_secret.clear();
  std::vector<float> row(4);
  EXPECT_FALSE(
      intruder
          ->PullEmbeddings(bare, {v}, 1, -1, absl::ZeroDuration(), row.data())
          .ok());
  EXPECT_FALSE(
      intruder->PushEmbeddingGradients(bare, 0, 1, {v}, {1, 1, 1, 1}).ok());
  EXPECT_FALSE(intruder->CreateEmbeddingTable(bare, 0, 0).ok());
  // The run's rows and clock are where the run left them, and it goes on.
  EXPECT_EQ(Row(c, v), before);
  ASSERT_OK(
      server_->PushEmbeddingGradients(c, 0, 1, {v}, {1.0f, 1.0f, 1.0f, 1.0f}));
  EXPECT_FLOAT_EQ(Row(c, v)[0], before[0] - 1.0f);
}

// A table is created only with a secret to protect it (a client older than
// the server sends none).
TEST_F(EmbeddingRowsTest, ATableWithoutASecretIsRefused) {
  EmbeddingTableConfig c = Config(1, "bare");
  c.run_secret.clear();
  ExpectError(server_->CreateEmbeddingTable(c),
              absl::StatusCode::kInvalidArgument, "run secret");
  c.run_secret = "short";
  ExpectError(server_->CreateEmbeddingTable(c),
              absl::StatusCode::kInvalidArgument, "at least 16 bytes");
  ASSERT_OK_AND_ASSIGN(auto tables, server_->EmbeddingStats());
  EXPECT_TRUE(tables.empty());
}

TEST_F(EmbeddingRowsTest, BadPushesGetAStatusAndChangeNothing) {
  const EmbeddingTableConfig c = Config(2, "bad");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  const NodeId foreign = owned_.second;  // Part 1's first node.
  const std::vector<float> before = Row(c, v);
  const std::vector<float> g = {1, 2, 3, 4};
  ExpectError(server_->PushEmbeddingGradients(c, 0, 0, {v, foreign},
                                              {1, 2, 3, 4, 5, 6, 7, 8}),
              absl::StatusCode::kInvalidArgument, std::to_string(foreign));
  ExpectError(
      server_->PushEmbeddingGradients(
          c, 0, 0, {v}, {1, std::numeric_limits<float>::quiet_NaN(), 3, 4}),
      absl::StatusCode::kInvalidArgument, "");
  ExpectError(server_->PushEmbeddingGradients(c, 0, 0, {v}, {1, 2, 3}),
              absl::StatusCode::kInvalidArgument, "dimension 4");
  ExpectError(server_->PushEmbeddingGradients(c, 2, 0, {v}, g),
              absl::StatusCode::kInvalidArgument, "");
  ExpectError(server_->PushEmbeddingGradients(c, 0, 5, {v}, g),
              absl::StatusCode::kFailedPrecondition, "");
  EXPECT_EQ(Row(c, v), before);
  // The clock did not move: step 0 is still the next one for trainer 0.
  ASSERT_OK(server_->PushEmbeddingGradients(c, 0, 0, {v}, g));
  EXPECT_FLOAT_EQ(Row(c, v)[1], before[1] - 2.0f);
}

TEST_F(EmbeddingRowsTest, SyncPullWaitsForEveryTrainerWithoutHoldingAWorker) {
  const EmbeddingTableConfig c = Config(2, "sync");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  ASSERT_OK(server_->PushEmbeddingGradients(c, 0, 0, {v}, {1, 1, 1, 1}));
  std::atomic<bool> trainer1_pushed{false};
  std::atomic<bool> pulled{false};
  std::vector<float> row(4);
  absl::Status pull;
  std::thread puller([&] {
    // Step 1 in sync: needs step 0 of both trainers.
    pull = server_->PullEmbeddings(c, {v}, 1, 0, absl::Seconds(10), row.data());
    EXPECT_TRUE(trainer1_pushed.load()) << "the pull did not wait";
    pulled = true;
  });
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(pulled.load());
  // While it waits, the server answers other calls from the same address at
  // once (the pull holds none of its workers): many large feature fetches.
  std::vector<NodeId> ids;
  for (NodeId u = owned_.first; u < owned_.second; ++u) ids.push_back(u);
  for (int i = 0; i < 20; ++i) {
    int64_t dim = 0;
    ASSERT_OK(server_->GetFeatures(ids, &dim).status());
  }
  EXPECT_FALSE(pulled.load());
  trainer1_pushed = true;
  ASSERT_OK(server_->PushEmbeddingGradients(c, 1, 0, {v}, {2, 2, 2, 2}));
  puller.join();
  ASSERT_OK(pull);
  // Both pushes applied before the pull read the row.
  EXPECT_FLOAT_EQ(row[0], InitialEmbeddingValue(c, v, 0) - 3.0f);
}

TEST_F(EmbeddingRowsTest, BoundedPullWaitsOnlyForStepsOlderThanK) {
  const EmbeddingTableConfig c = Config(2, "bounded");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  for (int64_t s = 0; s < 3; ++s)
    ASSERT_OK(server_->PushEmbeddingGradients(c, 0, s, {v}, {1, 1, 1, 1}));
  std::vector<float> row(4);
  // Trainer 1 has pushed nothing: step 2 with K = 2 needs no push at all.
  ASSERT_OK(
      server_->PullEmbeddings(c, {v}, 2, 2, absl::Seconds(5), row.data()));
  // Step 3 with K = 2 needs step 0 of trainer 1: it waits, and is answered
  // with the trainer named when the wait runs out.
  GraphStoreClientOptions quick;
  quick.call_timeout = absl::Milliseconds(300);
  quick.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto client, Client(quick));
  const auto t0 = std::chrono::steady_clock::now();
  // A client waiting in slices (a wait given) is told "not yet" with a code
  // replica sets do not fail over from; without one, the call's deadline
  // ends the wait.
  ExpectError(
      client->PullEmbeddings(c, {v}, 3, 2, absl::Milliseconds(300), row.data()),
      absl::StatusCode::kFailedPrecondition,
      "waits for pushes of trainers 1 (at step 0)");
  ExpectError(
      client->PullEmbeddings(c, {v}, 3, 2, absl::ZeroDuration(), row.data()),
      absl::StatusCode::kDeadlineExceeded, "trainer");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  // Async never waits.
  ASSERT_OK(
      server_->PullEmbeddings(c, {v}, 100, -1, absl::Seconds(5), row.data()));
}

TEST_F(EmbeddingRowsTest, EightClientsPushingOneRowLoseNoUpdate) {
  constexpr int kClients = 8;
  constexpr int kSteps = 50;
  const EmbeddingTableConfig c = Config(kClients, "sum");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  const NodeId v = owned_.first;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto client = Client({});
      if (!client.ok()) {
        ++failures;
        return;
      }
      for (int s = 0; s < kSteps; ++s) {
        // The shared row and one of this client's own, twice in one push
        // (duplicates are summed).
        const NodeId own = owned_.first + 1 + t;
        if (!(*client)
                 ->PushEmbeddingGradients(
                     c, t, s, {v, own, own},
                     {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
                 .ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_FLOAT_EQ(Row(c, v)[2], InitialEmbeddingValue(c, v, 2) -
                                    static_cast<float>(kClients * kSteps));
  for (int t = 0; t < kClients; ++t) {
    const NodeId own = owned_.first + 1 + t;
    EXPECT_FLOAT_EQ(Row(c, own)[3],
                    InitialEmbeddingValue(c, own, 3) - kSteps * 1.0f);
  }
  ASSERT_OK_AND_ASSIGN(auto stats, server_->EmbeddingStats());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].applied_steps, kSteps);
  EXPECT_EQ(stats[0].stats.rows_pushed, kClients * kSteps * 3);
}

TEST_F(EmbeddingRowsTest, RemoteRowsPullFromEveryOwnerAndPushInOrder) {
  const EmbeddingTableConfig c = Config(1, "rows");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), c, 0, 0));
  // Nodes of both parts, in mixed order.
  const std::vector<NodeId> nodes = {owned_.second + 3, owned_.first + 1,
                                     owned_.second, owned_.first};
  std::vector<float> got(nodes.size() * 4);
  ASSERT_OK(rows->Pull(nodes, 0, got.data()));
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(got[i * 4 + k], InitialEmbeddingValue(c, nodes[i], k));
  // Steps 0..4, each of one node only (the other part gets empty pushes, and
  // its clock still advances).
  for (int64_t s = 0; s < 5; ++s) {
    ASSERT_OK(rows->Push(s, {nodes[0]}, {1, 1, 1, 1}));
  }
  ASSERT_OK(rows->Flush());
  ASSERT_OK(rows->Pull(nodes, 5, got.data()));  // Sync: waits for all 5.
  EXPECT_FLOAT_EQ(got[0], InitialEmbeddingValue(c, nodes[0], 0) - 5.0f);
  EXPECT_EQ(got[4], InitialEmbeddingValue(c, nodes[1], 0));
  ASSERT_OK_AND_ASSIGN(auto stats, server_->EmbeddingStats());
  EXPECT_EQ(stats[0].applied_steps, 5);  // Part 0 owns nothing pushed.
  EXPECT_EQ(rows->stats().rows_pushed, 5);
  EXPECT_EQ(rows->stats().rows_pulled, 8);
  // Outside the graph.
  EXPECT_FALSE(rows->Pull({remote_->num_nodes()}, 5, got.data()).ok());
}

// Issue 17: a trainer's push copied each step's gradients into buffers grown
// to fit exactly, so every step a little larger than any before reallocated
// (and faulted in afresh) megabytes of them, and each pull scattered its rows
// through a fresh list of their places. Steps that grow a little at a time
// now touch no fresh memory once the first steps have sized the buffers
// (the servers run in this process: their side is counted too).
TEST_F(EmbeddingRowsTest, GrowingStepsReuseThePushAndPullBuffers) {
  EmbeddingTableConfig c = Config(1, "growing");
  c.dim = 1024;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), c, 0, 0));
  // Nodes of the two parts alternately: each part's share grows with a step.
  const NodeRange a = remote_->book().Range(0);
  const NodeRange b = remote_->book().Range(1);
  const int64_t per_part = std::min(a.end - a.start, b.end - b.start);
  ASSERT_GE(per_part, 330);
  std::vector<NodeId> order;
  for (int64_t i = 0; i < per_part; ++i) {
    order.push_back(a.start + i);
    order.push_back(b.start + i);
  }
  constexpr int kSteps = 16;
  constexpr int kWarmSteps = 4;
  // 520 .. 640 rows of 4 KiB: each step 2-2.6 MB of gradients, 1.5% more
  // rows than the one before.
  auto rows_of = [](int step) { return static_cast<size_t>(520 + 8 * step); };
  const size_t dim = static_cast<size_t>(c.dim);
  std::vector<float> out(order.size() * dim);
  const std::vector<float> grads(rows_of(kSteps - 1) * dim, 1e-3f);
  ASSERT_OK(rows->Pull(order, 0, out.data()));  // Every row made once.
  int64_t before = 0;
  size_t pushed = 0;
  for (int step = 0; step < kSteps; ++step) {
    if (step == kWarmSteps) before = MinorFaults();
    const size_t n = rows_of(step);
    const auto nodes = absl::MakeConstSpan(order).first(n);
    ASSERT_OK(rows->Pull(nodes, step, out.data()));
    ASSERT_OK(
        rows->Push(step, nodes, absl::MakeConstSpan(grads).first(n * dim)));
    pushed += n;
  }
  ASSERT_OK(rows->Flush());
  const int64_t faults = MinorFaults() - before;
  RecordProperty("fresh_pages", static_cast<int>(faults));
  EXPECT_EQ(rows->stats().rows_pushed, static_cast<int64_t>(pushed));
  // Before: about 600 pages a step (7,375 over these 12: the push's copy of
  // the gradients and both parts' rows reallocated at every step); after,
  // 400-1,000 (the servers' and the threads' own).
  EXPECT_LT(faults, 150 * (kSteps - kWarmSteps))
      << faults << " fresh pages over " << kSteps - kWarmSteps << " steps";
  // The last step's rows came back updated by the steps before it.
  ASSERT_OK(
      rows->Pull(absl::MakeConstSpan(order).first(1), kSteps, out.data()));
  EXPECT_NEAR(out[0], InitialEmbeddingValue(c, order[0], 0) - kSteps * 1e-3f,
              1e-5);
}

TEST_F(EmbeddingRowsTest, ShutdownAnswersWaitingPulls) {
  const EmbeddingTableConfig c = Config(2, "stop");
  ASSERT_OK(server_->CreateEmbeddingTable(c));
  absl::Status pull;
  std::vector<float> row(4);
  std::thread puller([&] {
    pull = server_->PullEmbeddings(c, {owned_.first}, 1, 0, absl::Seconds(30),
                                   row.data());
  });
  absl::SleepFor(absl::Milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  cluster_->server(0).Shutdown(absl::Now() + absl::Seconds(10));
  puller.join();
  // Not held until the pull's 30 s.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(pull.code(), absl::StatusCode::kUnavailable) << pull;
}

// Servers started without --embedding-dir refuse snapshots, saying how to
// get them; names that are not one safe path component are refused.
TEST_F(EmbeddingRowsTest, SnapshotsNeedASnapshotDirectory) {
  const EmbeddingTableConfig c = Config(1, "no-dir");
  ASSERT_OK_AND_ASSIGN(auto rows, MakeRemoteRows(remote_.get(), c, 0, 0));
  ASSERT_OK(rows->Push(0, {}, {}));
  ASSERT_OK(rows->Flush());
  ExpectError(rows->Snapshot(1, 1).status(),
              absl::StatusCode::kFailedPrecondition, "--embedding-dir");
}

// A trainer whose own push failed stops waiting for the step clock within a
// slice of its pull's wait (the other trainers may be waiting for that very
// push), with the push's error, instead of the whole wait.
TEST_F(EmbeddingRowsTest, AFailedPushEndsAWaitingPull) {
  const EmbeddingTableConfig c = Config(2, "failed-push");
  ASSERT_OK_AND_ASSIGN(
      auto rows, MakeRemoteRows(remote_.get(), c, 0, 0, absl::Seconds(60)));
  const NodeId v = owned_.first;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_OK(rows->Push(0, {v}, {nan, 0, 0, 0}));
  std::vector<float> out(4);
  const absl::Time start = absl::Now();
  ExpectError(rows->Pull({v}, 1, out.data()),
              absl::StatusCode::kInvalidArgument, "is not finite");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

class EmbeddingSnapshotsOnServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(Dataset dataset, testing::MakeRmatDataset(
                                              tmp_.Sub("rmat"), 400, 8, 4, 5));
    PartitionOptions options;
    options.num_parts = 2;
    ASSERT_OK(PartitionInMemory(dataset, tmp_.Sub("part"), options).status());
    ASSERT_OK_AND_ASSIGN(cluster_,
                         testing::TestCluster::Start(tmp_.Sub("part"),
                                                     /*in_memory=*/true,
                                                     tmp_.Sub("embeddings")));
    RemoteGraphSourceOptions remote;
    remote.connect_timeout = absl::Seconds(10);
    remote.client.call_timeout = absl::Seconds(5);
    ASSERT_OK_AND_ASSIGN(
        remote_, RemoteGraphSource::Connect(cluster_->addresses(), remote));
    for (NodeId v = 0; v < remote_->num_nodes(); ++v) all_.push_back(v);
  }

  std::vector<float> PullAll(LearnableRows& rows, int64_t step) {
    std::vector<float> out(all_.size() * static_cast<size_t>(rows.dim()));
    EXPECT_OK(rows.Pull(all_, step, out.data()));
    return out;
  }

  // Step `step`: a gradient on every node, different per step and node.
  void PushAll(LearnableRows& rows, int64_t step) {
    std::vector<float> grads(all_.size() * static_cast<size_t>(rows.dim()));
    for (size_t k = 0; k < grads.size(); ++k) {
      grads[k] = 0.01f * static_cast<float>((k * 7 + step * 13) % 11) - 0.05f;
    }
    ASSERT_OK(rows.Push(step, all_, grads));
  }

  TempDir tmp_;
  std::unique_ptr<testing::TestCluster> cluster_;
  std::unique_ptr<RemoteGraphSource> remote_;
  std::vector<NodeId> all_;
};

// A table snapshotted at step 3 and pushed on is put back to step 3 on every
// server by Restore, also on a server restarted since (which held no table
// until the restore read its file), and then continues from step 3.
TEST_F(EmbeddingSnapshotsOnServersTest, RestoreRollsBackEveryServer) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.optimizer = EmbeddingOptimizer::kAdam;
  c.run_id = "snap-1";
  c.run_secret = SecretOf(c.run_id);
  ASSERT_OK_AND_ASSIGN(auto rows, MakeRemoteRows(remote_.get(), c, 0, 0));
  for (int64_t s = 0; s < 3; ++s) PushAll(*rows, s);
  ASSERT_OK(rows->Flush());
  ASSERT_OK_AND_ASSIGN(EmbeddingSnapshotStats snap, rows->Snapshot(1, 3));
  EXPECT_EQ(snap.rows, remote_->num_nodes());
  EXPECT_GT(snap.bytes, snap.rows * c.dim * 4 * 3);
  const std::vector<float> at_snapshot = PullAll(*rows, 3);
  for (int64_t s = 3; s < 5; ++s) PushAll(*rows, s);
  ASSERT_OK(rows->Flush());
  const std::vector<float> moved_on = PullAll(*rows, 5);
  EXPECT_NE(moved_on, at_snapshot);

  ASSERT_OK(cluster_->Restart(1));
  std::vector<float> out(all_.size() * 4);
  ExpectError(rows->Pull(all_, 5, out.data()), absl::StatusCode::kNotFound,
              "no embedding table node");
  ASSERT_OK(rows->Restore(1, 3));
  EXPECT_EQ(PullAll(*rows, 3), at_snapshot);
  // The clock is back at step 3 on both: the same pushes again give the
  // same rows as the first time.
  for (int64_t s = 3; s < 5; ++s) PushAll(*rows, s);
  ASSERT_OK(rows->Flush());
  EXPECT_EQ(PullAll(*rows, 5), moved_on);

  // The last two epochs are kept on each server.
  ASSERT_OK(rows->Snapshot(2, 5).status());
  PushAll(*rows, 5);
  ASSERT_OK(rows->Flush());
  ASSERT_OK(rows->Snapshot(3, 6).status());
  for (int p = 0; p < 2; ++p) {
    const std::string dir =
        tmp_.Sub(absl::StrCat("embeddings/part-", p, "/node/snap-1"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/epoch-1.emb")) << dir;
    EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-2.emb")) << dir;
    EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-3.emb")) << dir;
  }
  ExpectError(rows->Restore(1, 3), absl::StatusCode::kNotFound,
              "no snapshot of embedding table node of run snap-1 at epoch 1");
  // Epoch 0 is the initial table, on every server.
  ASSERT_OK(rows->Restore(0, 0));
  const std::vector<float> initial = PullAll(*rows, 0);
  for (size_t i = 0; i < all_.size(); ++i) {
    EXPECT_EQ(initial[i * 4], InitialEmbeddingValue(c, all_[i], 0));
  }
  // A snapshot not at the trainers' step is refused.
  ExpectError(rows->Snapshot(4, 9).status(),
              absl::StatusCode::kFailedPrecondition, "has pushed 0 steps");
}

// Several tables of one run (one per node type, once graphs have types) live
// side by side on the servers: each with its own dimension, optimizer, step
// clock and snapshots, none touching the others.
TEST_F(EmbeddingSnapshotsOnServersTest, TablesOfOneRunAreIndependent) {
  EmbeddingTableConfig node;
  node.dim = 4;
  node.optimizer = EmbeddingOptimizer::kAdam;
  node.run_id = "two-tables";
  node.run_secret = SecretOf(node.run_id);
  EmbeddingTableConfig user = node;
  user.name = "user";
  user.dim = 8;
  user.optimizer = EmbeddingOptimizer::kAdagrad;
  ASSERT_OK_AND_ASSIGN(auto node_rows, MakeRemoteRows(remote_.get(), node, 0, 0,
                                                      absl::Seconds(2)));
  ASSERT_OK_AND_ASSIGN(auto user_rows, MakeRemoteRows(remote_.get(), user, 0, 0,
                                                      absl::Seconds(2)));
  const std::vector<float> user_initial = PullAll(*user_rows, 0);
  for (int64_t s = 0; s < 3; ++s) PushAll(*node_rows, s);
  ASSERT_OK(node_rows->Flush());
  const std::vector<float> node_at_3 = PullAll(*node_rows, 3);
  // The other table's rows and clock did not move: its step 0 is still the
  // initial table, and its step 1 waits for its own push.
  EXPECT_EQ(PullAll(*user_rows, 0), user_initial);
  std::vector<float> out(all_.size() * 8);
  EXPECT_EQ(user_rows->Pull(all_, 1, out.data()).code(),
            absl::StatusCode::kDeadlineExceeded);
  PushAll(*user_rows, 0);
  ASSERT_OK(user_rows->Flush());
  ASSERT_OK(user_rows->Snapshot(1, 1).status());
  ASSERT_OK(node_rows->Snapshot(1, 3).status());
  const std::vector<float> user_at_1 = PullAll(*user_rows, 1);
  EXPECT_NE(user_at_1, user_initial);
  // Each server lists both, each at its own step.
  GraphStoreClientOptions options;
  options.call_timeout = absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(auto client, GraphStoreClient::Connect(
                                        cluster_->addresses()[0], options));
  ASSERT_OK_AND_ASSIGN(auto tables, client->EmbeddingStats());
  ASSERT_EQ(tables.size(), 2u);
  for (const auto& t : tables) {
    EXPECT_EQ(t.applied_steps, t.name == "user" ? 1 : 3) << t.name;
    EXPECT_EQ(t.dim, t.name == "user" ? 8 : 4) << t.name;
  }
  // One table rolled back leaves the other where it is.
  PushAll(*node_rows, 3);
  ASSERT_OK(node_rows->Flush());
  ASSERT_OK(node_rows->Restore(1, 3));
  EXPECT_EQ(PullAll(*node_rows, 3), node_at_3);
  EXPECT_EQ(PullAll(*user_rows, 1), user_at_1);
  for (int p = 0; p < 2; ++p) {
    const std::string dir = tmp_.Sub(absl::StrCat("embeddings/part-", p));
    EXPECT_TRUE(std::filesystem::exists(dir + "/node/two-tables/epoch-1.emb"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/user/two-tables/epoch-1.emb"));
  }
}

// Issue 51: a run's snapshots answer only its secret. Another run may take
// the table's name (a finished or dead run's table is replaced), but not the
// run's ID: re-creating, restoring or snapshotting run R's table with
// another secret is refused (the server keeps the secret's digest beside R's
// snapshots, and no more), so R's snapshot files keep R's rows, and R itself
// resumes from them.
TEST_F(EmbeddingSnapshotsOnServersTest, ARunsSnapshotsAnswerOnlyItsSecret) {
  EmbeddingTableConfig c;
  c.dim = 4;
  c.run_id = "owner";
  c.run_secret = SecretOf("owner");
  ASSERT_OK_AND_ASSIGN(auto rows, MakeRemoteRows(remote_.get(), c, 0, 0));
  for (int64_t s = 0; s < 2; ++s) PushAll(*rows, s);
  ASSERT_OK(rows->Flush());
  ASSERT_OK(rows->Snapshot(1, 2).status());
  const std::vector<float> at_snapshot = PullAll(*rows, 2);

  // Another run replaces the table: allowed, a new run starts afresh.
  EmbeddingTableConfig other = c;
  other.run_id = "other";
  other.run_secret = SecretOf("other");
  ASSERT_OK_AND_ASSIGN(auto other_rows,
                       MakeRemoteRows(remote_.get(), other, 0, 0));
  PushAll(*other_rows, 0);
  ASSERT_OK(other_rows->Flush());
  // With the owner's run ID and its own secret it gets nothing: not a fresh
  // table, not the owner's snapshot, and the table it holds stays its own.
  EmbeddingTableConfig thief = c;
  thief.run_secret = other.run_secret;
  EXPECT_EQ(MakeRemoteRows(remote_.get(), thief, 0, 0).status().code(),
            absl::StatusCode::kPermissionDenied);
  GraphStoreClientOptions options;
  options.call_timeout = absl::Seconds(5);
  options.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto client, GraphStoreClient::Connect(
                                        cluster_->addresses()[0], options));
  ASSERT_OK(client->Info().status());
  ExpectError(client->CreateEmbeddingTable(thief, 1, 2),
              absl::StatusCode::kPermissionDenied, "another run's table");
  ExpectError(client->SnapshotEmbeddings(thief, 2, 2).status(),
              absl::StatusCode::kFailedPrecondition, "belongs to another run");
  std::vector<float> out(all_.size() * 4);
  ASSERT_OK(other_rows->Pull(all_, 1, out.data()));

  // A server restarted since knows the owner's secret from its files too.
  ASSERT_OK(cluster_->Restart(1));
  ASSERT_OK_AND_ASSIGN(auto restarted, GraphStoreClient::Connect(
                                           cluster_->addresses()[1], options));
  ASSERT_OK(restarted->Info().status());
  ExpectError(restarted->CreateEmbeddingTable(thief, 1, 2),
              absl::StatusCode::kPermissionDenied, "another run's table");
  ExpectError(restarted->CreateEmbeddingTable(thief),
              absl::StatusCode::kPermissionDenied, "another run's table");

  // The owner resumes from its snapshot, with its rows.
  ASSERT_OK(rows->Restore(1, 2));
  EXPECT_EQ(PullAll(*rows, 2), at_snapshot);
  // What the servers keep of the secret beside the snapshots: its digest,
  // readable by the server's user alone.
  for (int p = 0; p < 2; ++p) {
    const std::string dir =
        tmp_.Sub(absl::StrCat("embeddings/part-", p, "/node/owner"));
    bool digest = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      EXPECT_EQ(bytes.find(c.run_secret), std::string::npos) << entry.path();
      if (entry.path().filename() == "run-secret.sha256") {
        digest = true;
        EXPECT_EQ(entry.status().permissions() & std::filesystem::perms::all,
                  std::filesystem::perms::owner_read |
                      std::filesystem::perms::owner_write);
      }
    }
    EXPECT_TRUE(digest) << dir;
  }
}

TEST_F(EmbeddingSnapshotsOnServersTest, UnsafeRunIdsNameNoFile) {
  EmbeddingTableConfig c;
  c.dim = 2;
  c.run_id = "../../etc";
  c.run_secret = SecretOf(c.run_id);
  ASSERT_OK_AND_ASSIGN(auto rows, MakeRemoteRows(remote_.get(), c, 0, 0));
  ASSERT_OK(rows->Push(0, {}, {}));
  ASSERT_OK(rows->Flush());
  ExpectError(rows->Snapshot(1, 1).status(), absl::StatusCode::kInvalidArgument,
              "cannot name a snapshot");
  ExpectError(rows->Restore(1, 1), absl::StatusCode::kInvalidArgument,
              "cannot name a snapshot");
}

}  // namespace
}  // namespace shardgnn
