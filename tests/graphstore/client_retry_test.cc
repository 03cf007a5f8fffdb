// The client's retry policy against a real server that sheds load: calls
// answered UNAVAILABLE "server busy" are retried (exponential backoff with
// jitter) until the call's overall deadline, not a fixed number of times.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "graphstore/client.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr int64_t kNodes = 200;
constexpr int64_t kDim = 4;

// Forwards to a real store; GetLabels takes `delay` (or, while held, waits
// for Release()), so calls pile up in the server's queue. Disk mode as far
// as the server knows, so every call runs on its workers.
class SlowStore final : public ShardStore {
 public:
  SlowStore(std::shared_ptr<const ShardStore> inner, absl::Duration delay)
      : ShardStore(inner->Meta(), /*in_memory=*/false),
        inner_(std::move(inner)),
        delay_(delay) {}
  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               int64_t max_neighbors,
                               SampledNeighbors* out) const override {
    return inner_->SampleNeighbors(ids, fanout, replace, seed, max_neighbors,
                                   out);
  }
  absl::Status GetFeatures(absl::Span<const NodeId> ids,
                           float* out) const override {
    return inner_->GetFeatures(ids, out);
  }
  absl::Status GetLabels(absl::Span<const NodeId> ids,
                         int64_t* out) const override {
    entered_.fetch_add(1);
    if (held_.load()) {
      release_.WaitForNotificationWithTimeout(absl::Seconds(20));
    } else {
      absl::SleepFor(delay_);
    }
    return inner_->GetLabels(ids, out);
  }
  absl::Status GetDegrees(absl::Span<const NodeId> ids,
                          int64_t* out) const override {
    return inner_->GetDegrees(ids, out);
  }
  absl::StatusOr<std::vector<NodeId>> GetSplit(
      absl::string_view name) const override {
    return inner_->GetSplit(name);
  }
  void Hold() { held_.store(true); }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }
  int entered() const { return entered_.load(); }

 private:
  std::shared_ptr<const ShardStore> inner_;
  absl::Duration delay_;
  mutable std::atomic<int> entered_{0};
  std::atomic<bool> held_{false};
  mutable absl::Notification release_;
};

class ClientRetryTest : public ::testing::Test {
 protected:
  // A server over a SlowStore that queues at most one call per address.
  void Start(absl::Duration delay) {
    graph_ = testing::MakeTestGraph(kNodes, kDim);
    ASSERT_OK(testing::WriteTestShards(graph_, 1, tmp_.path()).status());
    ShardStoreOptions store_options;
    store_options.path = tmp_.Sub("part-0");
    store_options.in_memory = true;
    ASSERT_OK_AND_ASSIGN(auto store, ShardStore::Open(store_options));
    store_ = std::make_shared<SlowStore>(std::move(store), delay);
    GraphStoreServerOptions options;
    options.num_threads = 2;  // One address runs on one worker at a time.
    options.max_queued_per_ip = 1;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
  }
  void TearDown() override {
    if (store_ != nullptr) store_->Release();
    if (server_ != nullptr) server_->Shutdown(absl::Now());
  }

  TempDir tmp_;
  testing::TestGraph graph_;
  std::shared_ptr<SlowStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
};

TEST_F(ClientRetryTest, BusyServerIsRetriedUntilEveryCallSucceeds) {
  // 12 callers of 2 calls of 100 ms each, served one at a time with one
  // waiting: the last ones wait about 2 s, answered "busy" all along.
  ASSERT_NO_FATAL_FAILURE(Start(absl::Milliseconds(100)));
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server_->address()));
  ASSERT_OK(client->Info().status());
  const std::vector<NodeId> ids = {3, 4, 5};
  std::vector<absl::Status> errors;
  absl::Mutex mu;
  std::vector<std::thread> callers;
  for (int t = 0; t < 12; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 2; ++i) {
        auto labels = client->GetLabels(ids);
        if (!labels.ok()) {
          absl::MutexLock lock(&mu);
          errors.push_back(labels.status());
        } else {
          EXPECT_EQ((*labels)[1], graph_.labels[4]);
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  for (const absl::Status& e : errors) ADD_FAILURE() << e;
  EXPECT_EQ(store_->entered(), 24);
  // The server did turn calls away.
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client->Stats());
  int64_t refused = 0;
  for (const auto& m : stats.methods) {
    if (m.method == "GetLabels") refused = m.errors;
  }
  EXPECT_GT(refused, 0);
  // The serving process's fresh pages so far (issue 17): some, surely.
  EXPECT_GT(stats.minor_faults, 0);
  EXPECT_GT(stats.cpu_seconds, 0.0);
}

TEST_F(ClientRetryTest, BusyRetriesStopAtTheOverallDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(absl::ZeroDuration()));
  store_->Hold();
  GraphStoreClientOptions options;
  options.overall_timeout = absl::Milliseconds(1500);
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server_->address(), options));
  // One call running and one queued: the address's share is full.
  std::thread running([&] { (void)client->GetLabels({1}); });
  while (store_->entered() < 1) absl::SleepFor(absl::Milliseconds(5));
  std::thread queued([&] { (void)client->GetLabels({2}); });
  absl::SleepFor(absl::Milliseconds(200));  // Let it reach the queue.
  const absl::Time start = absl::Now();
  auto labels = client->GetLabels({3});
  const absl::Duration took = absl::Now() - start;
  store_->Release();
  running.join();
  queued.join();
  EXPECT_EQ(labels.status().code(), absl::StatusCode::kUnavailable)
      << labels.status();
  EXPECT_THAT(std::string(labels.status().message()),
              HasSubstr(server_->address()));
  EXPECT_THAT(std::string(labels.status().message()), HasSubstr("busy"));
  // Retried until the deadline, not for a fixed count (4 attempts: ~0.4 s).
  EXPECT_GE(took, absl::Milliseconds(1400));
  EXPECT_LT(took, absl::Milliseconds(3000));
}

}  // namespace
}  // namespace shardgnn
