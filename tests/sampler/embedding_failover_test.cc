// Learned tables on replicated parts (issue 15, item 5): each replica of a
// part holds a copy of its rows. A copy whose server dies, or comes back
// restarted without the table, is left by the trainer, and training goes on
// from the other copies computing exactly what it would have: the rows equal
// those of the same steps on a table in this process. Real servers on
// loopback, killed and restarted on their addresses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/progress.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "partition/partition.h"
#include "sampler/embedding_rows.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ExpectError;
using ::testing::HasSubstr;
using testing::TempDir;

class EmbeddingFailoverTest : public ::testing::Test {
 protected:
  static constexpr int kParts = 2;
  static constexpr int kReplicas = 2;

  void SetUp() override {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(Dataset dataset, testing::MakeRmatDataset(
                                              tmp_.Sub("rmat"), 400, 8, 4, 7));
    PartitionOptions options;
    options.num_parts = kParts;
    ASSERT_OK(PartitionInMemory(dataset, tmp_.Sub("part"), options).status());
    std::vector<std::string> addresses;
    servers_.resize(kParts);
    for (int p = 0; p < kParts; ++p) {
      for (int r = 0; r < kReplicas; ++r) {
        ASSERT_OK_AND_ASSIGN(
            auto server,
            testing::ServePart(tmp_.Sub("part"), p,
                               /*in_memory=*/true, "", SnapshotDir(p, r)));
        addresses.push_back(server->address());
        servers_[p].push_back(std::move(server));
      }
    }
    RemoteGraphSourceOptions remote;
    remote.connect_timeout = absl::Seconds(10);
    remote.client.call_timeout = absl::Seconds(5);
    ASSERT_OK_AND_ASSIGN(remote_,
                         RemoteGraphSource::Connect(addresses, remote));
    ASSERT_EQ(remote_->num_replicas(1), kReplicas);
    for (NodeId v = 0; v < remote_->num_nodes(); ++v) all_.push_back(v);
    config_.dim = 4;
    config_.optimizer = EmbeddingOptimizer::kAdam;
    config_.lr = 0.05;
    config_.num_trainers = 1;
    config_.run_id = "failover";
    config_.run_secret = "the failover run's secret, 128 bits";
  }

  void TearDown() override {
    for (auto& part : servers_) {
      for (auto& server : part) {
        if (server != nullptr) server->Shutdown(absl::Now());
      }
    }
  }

  std::string SnapshotDir(int part, int replica) {
    return tmp_.Sub(absl::StrCat("embeddings/part-", part, "-", replica));
  }

  // Server `replica` of `part` dies: stopped at once, its table gone.
  void Kill(int part, int replica) {
    servers_[part][replica]->Shutdown(absl::Now());
    servers_[part][replica].reset();
  }

  // ... and comes back on its address, holding no table.
  void Restart(int part, int replica, const std::string& address) {
    ASSERT_OK_AND_ASSIGN(servers_[part][replica],
                         testing::ServePart(tmp_.Sub("part"), part,
                                            /*in_memory=*/true, address,
                                            SnapshotDir(part, replica)));
  }

  // The tables server `replica` of `part` holds.
  std::vector<GraphStoreClient::EmbeddingServerStats> TablesOn(int part,
                                                               int replica) {
    GraphStoreClientOptions options;
    options.call_timeout = absl::Seconds(5);
    auto client =
        GraphStoreClient::Connect(servers_[part][replica]->address(), options);
    EXPECT_OK(client.status());
    if (!client.ok()) return {};
    auto tables = (*client)->EmbeddingStats();
    EXPECT_OK(tables.status());
    return tables.ok() ? *tables
                       : std::vector<GraphStoreClient::EmbeddingServerStats>{};
  }

  // Step `step` of a training-like loop: every row pulled, and a gradient
  // that depends on the rows pulled (so a stale or missing update changes
  // every later step).
  void Step(LearnableRows& rows, int64_t step) {
    std::vector<float> got(all_.size() * 4);
    ASSERT_OK(rows.Pull(all_, step, got.data()));
    std::vector<float> grads(got.size());
    for (size_t k = 0; k < got.size(); ++k) {
      grads[k] = 0.5f * got[k] +
                 0.01f * static_cast<float>((k * 7 + step * 13) % 11) - 0.05f;
    }
    ASSERT_OK(rows.Push(step, all_, grads));
  }

  std::vector<float> PullAll(LearnableRows& rows, int64_t step) {
    std::vector<float> out(all_.size() * 4);
    EXPECT_OK(rows.Pull(all_, step, out.data()));
    return out;
  }

  // The rows after `steps` steps of the same loop on a table in this
  // process.
  std::vector<float> Reference(int64_t steps) {
    auto table = EmbeddingTable::Create(config_, 0, remote_->num_nodes());
    EXPECT_OK(table.status());
    if (!table.ok()) return {};
    std::unique_ptr<LearnableRows> local =
        MakeLocalRows(std::move(*table), 0, 0);
    for (int64_t s = 0; s < steps; ++s) Step(*local, s);
    EXPECT_OK(local->Flush());
    return PullAll(*local, steps);
  }

  TempDir tmp_;
  std::vector<std::vector<std::unique_ptr<GraphStoreServer>>> servers_;
  std::unique_ptr<RemoteGraphSource> remote_;
  std::vector<NodeId> all_;
  EmbeddingTableConfig config_;
};

// One copy of each part dies (part 0's never comes back, part 1's is
// restarted without the table): the rows equal the in-process table's, bit
// for bit, and the restarted server is never given the table again.
TEST_F(EmbeddingFailoverTest, DeadAndRestartedCopiesAreLeftAndRowsStayExact) {
  constexpr int64_t kSteps = 12;
  const std::vector<float> reference = Reference(kSteps);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  const std::string restarted = servers_[1][0]->address();
  for (int64_t s = 0; s < kSteps; ++s) {
    if (s == 3) Kill(1, 0);
    if (s == 5) Kill(0, 1);
    if (s == 7) {
      ASSERT_NO_FATAL_FAILURE(Restart(1, 0, restarted));
    }
    ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  }
  ASSERT_OK(rows->Flush());
  EXPECT_EQ(PullAll(*rows, kSteps), reference);
  EXPECT_EQ(rows->stats().copies_dropped, 2);
  // The restarted server was left: nothing created the table there again.
  EXPECT_TRUE(TablesOn(1, 0).empty());
  // The copies in use took every step.
  for (const auto& [part, replica] :
       std::vector<std::pair<int, int>>{{0, 0}, {1, 1}}) {
    const auto tables = TablesOn(part, replica);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_EQ(tables[0].applied_steps, kSteps);
  }
}

// A replica restarted before the trainer pushed to it again (so no push
// failed) answers the pull with NOT_FOUND: the pull goes to the other copy,
// and the copy is left for good.
TEST_F(EmbeddingFailoverTest, APullFindingNoTableOnACopyIsAskedOfAnother) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  for (int64_t s = 0; s < 3; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  const std::vector<float> before = PullAll(*rows, 3);
  // Both replicas of part 1 in turn answer pulls (the set spreads them), so
  // some pull reaches the restarted one within a few.
  const std::string address = servers_[1][1]->address();
  Kill(1, 1);
  ASSERT_NO_FATAL_FAILURE(Restart(1, 1, address));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(PullAll(*rows, 3), before);
  EXPECT_EQ(rows->stats().copies_dropped, 1);
  EXPECT_TRUE(TablesOn(1, 1).empty());
}

// A replica that joined after Connect (its server was down then) holds no
// copy of a table: the table is not created there, pushes and pulls never go
// to it, and no copy is dropped; the rows stay exact.
TEST_F(EmbeddingFailoverTest, AReplicaThatJoinedLateHoldsNoCopy) {
  constexpr int64_t kSteps = 6;
  const std::vector<float> reference = Reference(kSteps);
  const std::string late = servers_[1][1]->address();
  Kill(1, 1);
  std::vector<std::string> addresses = {late};
  for (int p = 0; p < kParts; ++p) {
    for (const auto& server : servers_[p]) {
      if (server != nullptr) addresses.push_back(server->address());
    }
  }
  RemoteGraphSourceOptions options;
  options.connect_timeout = absl::Seconds(10);
  options.spare_replica_wait = absl::Seconds(1);
  options.probe_interval = absl::Milliseconds(100);
  options.client.call_timeout = absl::Seconds(5);
  remote_.reset();
  ASSERT_OK_AND_ASSIGN(remote_, RemoteGraphSource::Connect(addresses, options));
  ASSERT_EQ(remote_->num_replicas(1), 1);
  ASSERT_NO_FATAL_FAILURE(Restart(1, 1, late));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (remote_->num_replicas(1) < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(remote_->num_replicas(1), 2) << "not joined within 10 s";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  for (int64_t s = 0; s < kSteps; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  // Pulls spread over a part's copies would reach the late one in a few.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PullAll(*rows, kSteps), reference);
  EXPECT_EQ(rows->stats().copies_dropped, 0);
  EXPECT_TRUE(TablesOn(1, 1).empty());
  const auto tables = TablesOn(1, 0);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].applied_steps, kSteps);
}

// The last copy of a part lost fails the push (the run then rolls back to
// its checkpoint), naming the server.
TEST_F(EmbeddingFailoverTest, LosingEveryCopyOfAPartFailsThePush) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  ASSERT_NO_FATAL_FAILURE(Step(*rows, 0));
  ASSERT_OK(rows->Flush());
  const std::string last = servers_[1][1]->address();
  Kill(1, 0);
  Kill(1, 1);
  std::vector<float> grads(all_.size() * 4, 0.1f);
  ASSERT_OK(rows->Push(1, all_, grads));  // Sent in the background.
  absl::Status flushed = rows->Flush();
  EXPECT_EQ(flushed.code(), absl::StatusCode::kUnavailable) << flushed;
  EXPECT_THAT(flushed.message(), HasSubstr("pushing the embedding gradient"));
  EXPECT_THAT(flushed.message(), HasSubstr(last));
  EXPECT_EQ(rows->stats().copies_dropped, 1);
}

// Snapshots skip a dropped copy; a restore asks every copy: one restarted
// without that epoch's snapshot is dropped again (it holds no table after),
// the others go back to the snapshot; epoch 0 (the initial table, no file)
// brings it back into use.
TEST_F(EmbeddingFailoverTest, SnapshotsAndRestoresAfterACopyIsLost) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  const std::string address = servers_[1][0]->address();
  Kill(1, 0);
  for (int64_t s = 0; s < 4; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  ASSERT_EQ(rows->stats().copies_dropped, 1);
  ASSERT_OK_AND_ASSIGN(EmbeddingSnapshotStats snap, rows->Snapshot(1, 4));
  // Rows written: both copies of part 0's, one of part 1's.
  const NodeRange part0 = remote_->book().Range(0);
  const NodeRange part1 = remote_->book().Range(1);
  EXPECT_EQ(snap.rows, 2 * (part0.end - part0.start) + part1.end - part1.start);
  const std::vector<float> at_snapshot = PullAll(*rows, 4);
  for (int64_t s = 4; s < 6; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  EXPECT_NE(PullAll(*rows, 6), at_snapshot);

  ASSERT_NO_FATAL_FAILURE(Restart(1, 0, address));
  ASSERT_OK(rows->Restore(1, 4));
  EXPECT_EQ(rows->stats().copies_dropped, 2);  // No epoch 1 there.
  EXPECT_TRUE(TablesOn(1, 0).empty());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PullAll(*rows, 4), at_snapshot);

  ASSERT_OK(rows->Restore(0, 0));
  const auto tables = TablesOn(1, 0);
  ASSERT_EQ(tables.size(), 1u);  // In use again: the same initial rows.
  for (int64_t s = 0; s < 3; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  EXPECT_EQ(TablesOn(1, 0)[0].applied_steps, 3);
  EXPECT_EQ(PullAll(*rows, 3), Reference(3));
}

// Flips one byte in the middle of every epoch-`epoch` snapshot file under
// `dir`; how many it damaged.
int DamageSnapshots(const std::string& dir, int epoch) {
  int damaged = 0;
  const std::string name = absl::StrCat("epoch-", epoch, ".emb");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() != name) continue;
    std::fstream f(entry.path(),
                   std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(entry.file_size() / 2);
    f.seekg(middle);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(middle);
    f.write(&c, 1);
    damaged += f.good() ? 1 : 0;
  }
  return damaged;
}

// A copy whose snapshot is damaged (its checksum fails) holds no table after
// the restore: it is left, saying why, and the part's other copy, restored,
// holds the rows; with every copy of a part damaged the restore fails,
// naming the file.
TEST_F(EmbeddingFailoverTest, ADamagedSnapshotCopyIsLeftForAnotherCopy) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LearnableRows> rows,
                       MakeRemoteRows(remote_.get(), config_, 0, 0));
  for (int64_t s = 0; s < 4; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  ASSERT_OK(rows->Snapshot(1, 4).status());
  const std::vector<float> at_snapshot = PullAll(*rows, 4);
  for (int64_t s = 4; s < 6; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  ASSERT_NE(PullAll(*rows, 6), at_snapshot);

  ASSERT_EQ(DamageSnapshots(SnapshotDir(1, 0), 1), 1);
  ASSERT_OK(rows->Restore(1, 4));
  EXPECT_EQ(rows->stats().copies_dropped, 1);
  EXPECT_TRUE(TablesOn(1, 0).empty());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PullAll(*rows, 4), at_snapshot);

  // Trained on, so that a restore loads the snapshot again.
  for (int64_t s = 4; s < 6; ++s) ASSERT_NO_FATAL_FAILURE(Step(*rows, s));
  ASSERT_OK(rows->Flush());
  ASSERT_EQ(DamageSnapshots(SnapshotDir(0, 0), 1), 1);
  ASSERT_EQ(DamageSnapshots(SnapshotDir(0, 1), 1), 1);
  const absl::Status both = rows->Restore(1, 4);
  EXPECT_EQ(both.code(), absl::StatusCode::kDataLoss) << both;
  EXPECT_THAT(both.message(), HasSubstr("epoch-1.emb"));
  EXPECT_THAT(both.message(), HasSubstr("damaged"));
}

}  // namespace
}  // namespace shardgnn
