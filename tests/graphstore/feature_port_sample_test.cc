// Samples over the feature port (graphstore/internal/feature_port.h): real
// servers on loopback ports, real sockets, the server's real work queue.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "absl/synchronization/notification.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/sample_request.h"
#include "graphstore/internal/work_queue.h"
#include "tests/graphstore/feature_port_fixture.h"
#include "tests/testing/ports.h"

namespace shardgnn {
namespace {

using testing::ConnectToLoopback;
using testing::FeaturePortTest;
using ::testing::HasSubstr;
using testing::MethodCalls;

TEST_P(FeaturePortTest, SamplesComeOverThePortAsOverGrpc) {
  Start();
  ASSERT_OK(client_->Info().status());
  ASSERT_TRUE(client_->UsesFeaturePort());
  std::vector<NodeId> ids = Owned();
  std::mt19937_64 rng(5);
  std::shuffle(ids.begin(), ids.end(), rng);
  SampledNeighbors port;
  ASSERT_OK(client_->SampleNeighbors(ids, 3, false, 11, &port));
  SampledNeighbors all;
  ASSERT_OK(client_->SampleNeighbors(ids, -1, false, 11, &all));

  GraphStoreClientOptions grpc_only;
  grpc_only.use_feature_port = false;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<GraphStoreClient> grpc,
      GraphStoreClient::Connect(server_->address(), grpc_only));
  ASSERT_OK(grpc->Info().status());
  ASSERT_FALSE(grpc->UsesFeaturePort());
  SampledNeighbors over_grpc;
  ASSERT_OK(grpc->SampleNeighbors(ids, 3, false, 11, &over_grpc));
  EXPECT_EQ(port.counts, over_grpc.counts);
  EXPECT_EQ(port.neighbors, over_grpc.neighbors);
  ASSERT_OK(grpc->SampleNeighbors(ids, -1, false, 11, &over_grpc));
  EXPECT_EQ(all.counts, over_grpc.counts);
  EXPECT_EQ(all.neighbors, over_grpc.neighbors);
  int64_t edges = 0;
  for (int64_t c : all.counts) edges += c;
  EXPECT_GT(edges, static_cast<int64_t>(ids.size()));  // A real sample.

  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortSample"), 2);
  EXPECT_EQ(MethodCalls(stats, "SampleNeighbors"), 2);  // The gRPC client's.
}

TEST_P(FeaturePortTest, BadSamplesGetTheServersErrorsAndTheConnectionStays) {
  GraphStoreServerOptions options;
  options.max_fanout = 50;
  options.max_sampled_per_call = 20;
  Start(options);
  ASSERT_OK(client_->Info().status());
  const int port = server_->feature_port();
  int fd = ConnectToLoopback(port);
  ASSERT_GE(fd, 0);
  // One request on the raw connection; its answer's code and payload.
  auto ask = [&](const std::vector<NodeId>& ids, int fanout, bool replace,
                 std::string* payload) {
    internal::FeatureRequestHeader request;
    request.magic = internal::kSampleMagic;
    request.num_ids = ids.size();
    internal::SampleHeader sample;
    sample.fanout = fanout;
    sample.replace = replace ? 1 : 0;
    sample.seed = 3;
    EXPECT_EQ(send(fd, &request, sizeof(request), 0), 16);
    EXPECT_EQ(send(fd, &sample, sizeof(sample), 0), 16);
    EXPECT_EQ(send(fd, ids.data(), ids.size() * 8, 0),
              static_cast<ssize_t>(ids.size() * 8));
    internal::FeatureResponseHeader h;
    if (recv(fd, &h, sizeof(h), MSG_WAITALL) != sizeof(h)) return -1;
    EXPECT_EQ(h.magic, internal::kFeatureResponseMagic);
    payload->resize(h.payload_bytes);
    if (recv(fd, payload->data(), payload->size(), MSG_WAITALL) !=
        static_cast<ssize_t>(payload->size())) {
      return -1;
    }
    return h.code;
  };
  const NodeId first = metas_[1].node_start;
  std::string payload;
  EXPECT_EQ(ask({first}, 51, false, &payload),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(payload, HasSubstr("outside [-1, 50]"));
  EXPECT_EQ(ask({first}, -2, false, &payload),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ask({first, metas_[0].node_start}, 2, false, &payload),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(payload, HasSubstr(absl::StrCat(metas_[0].node_start)));
  EXPECT_EQ(ask({first, first + 1, first + 2}, 10, true, &payload),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(payload, HasSubstr("--max-sampled-per-call"));
  // The same connection still answers: 2 counts, then the neighbors.
  ASSERT_EQ(ask({first, first + 1}, 2, false, &payload), 0);
  ASSERT_GE(payload.size(), 16u);
  int64_t counts[2];
  std::memcpy(counts, payload.data(), 16);
  EXPECT_EQ(payload.size(),
            static_cast<size_t>(16 + 8 * (counts[0] + counts[1])));
  SampledNeighbors over_grpc;
  GraphStoreClientOptions grpc_only;
  grpc_only.use_feature_port = false;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<GraphStoreClient> grpc,
      GraphStoreClient::Connect(server_->address(), grpc_only));
  ASSERT_OK(grpc->SampleNeighbors({first, first + 1}, 2, false, 3, &over_grpc));
  EXPECT_EQ(
      std::vector<int64_t>(counts, counts + 2),
      std::vector<int64_t>(over_grpc.counts.begin(), over_grpc.counts.end()));
  EXPECT_EQ(std::memcmp(payload.data() + 16, over_grpc.neighbors.data(),
                        over_grpc.neighbors.size() * 8),
            0);
  close(fd);

  // Through the client the errors keep their codes.
  absl::Status s = client_->SampleNeighbors({first}, 51, false, 3, &over_grpc);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = client_->SampleNeighbors({first, first + 1, first + 2}, 10, true, 3,
                               &over_grpc);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("--max-sampled-per-call"));
}

TEST_P(FeaturePortTest, AClientRefusesASampleLargerThanItAllows) {
  Start();
  ASSERT_OK(client_->Info().status());
  internal::FeaturePortClient port("127.0.0.1", server_->feature_port());
  const std::vector<NodeId> ids = Owned();
  SampledNeighbors out;
  bool transport_failed = true;
  ASSERT_OK(port.Sample(ids, 2, false, 1, 2 * ids.size(), &out,
                        absl::Now() + absl::Seconds(10), &transport_failed));
  EXPECT_FALSE(transport_failed);
  EXPECT_EQ(out.counts.size(), ids.size());
  EXPECT_GT(out.neighbors.size(), 1u);
  absl::Status s =
      port.Sample(ids, 2, false, 1, 1, &out, absl::Now() + absl::Seconds(10),
                  &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("at most 1 neighbors"));
}

// Holds one of `workers`' threads (under another client's key) until it goes,
// whatever fails meanwhile (~WorkQueue joins its workers). The notifications
// are shared with the task: the worker may still be inside
// WaitForNotification when the holder is gone.
class HeldWorker {
 public:
  explicit HeldWorker(internal::WorkQueue* workers)
      : state_(std::make_shared<State>()) {
    holding_ = workers
                   ->Submit("someone else",
                            [state = state_] {
                              state->holding_now.Notify();
                              state->release.WaitForNotification();
                            })
                   .ok();
    if (holding_) state_->holding_now.WaitForNotification();
  }
  ~HeldWorker() { state_->release.Notify(); }
  HeldWorker(const HeldWorker&) = delete;
  HeldWorker& operator=(const HeldWorker&) = delete;
  bool holding() const { return holding_; }

 private:
  struct State {
    absl::Notification holding_now, release;
  };
  std::shared_ptr<State> state_;
  bool holding_ = false;
};

// Large samples run on the server's workers (hooks.workers), queued under
// the client's address: with the one worker held, a whole-neighborhood sample
// waits for it, a second finds the address's queue full ("server busy", the
// connection kept), one that waits the I/O timeout is told so, and a small
// sample is answered on its connection's thread meanwhile (in memory; a
// disk-mode store's samples all go to the workers).
TEST_P(FeaturePortTest, LargeSamplesWaitForTheWorkersAndAFullQueueIsBusy) {
  internal::WorkQueueOptions queue;
  queue.num_workers = 1;
  queue.max_running_per_key = 1;
  queue.max_queued_per_key = 2;
  internal::WorkQueue workers(queue);
  internal::FeaturePortHooks hooks;
  hooks.workers = &workers;
  internal::FeaturePortLimits limits;
  limits.io_timeout = absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(auto server, internal::FeaturePortServer::Start(
                                        "127.0.0.1", 0, store_, limits, hooks));
  auto held = std::make_unique<HeldWorker>(&workers);
  ASSERT_TRUE(held->holding());
  const std::vector<NodeId> ids = Owned();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  const int64_t most = int64_t{1} << 20;
  bool transport_failed = false;

  internal::FeaturePortClient first("127.0.0.1", server->port());
  SampledNeighbors small;
  if (GetParam()) {  // In memory; a disk-mode store's samples all queue.
    ASSERT_OK(first.Sample({ids[0], ids[1]}, 2, false, 1, most, &small,
                           deadline, &transport_failed));
    EXPECT_EQ(small.counts.size(), 2u);
  }

  // Waits the I/O timeout for the held worker: busy, and skipped later.
  absl::Time start = absl::Now();
  SampledNeighbors whole;
  absl::Status s = first.Sample(ids, -1, false, 1, most, &whole, deadline,
                                &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("server busy"));
  EXPECT_FALSE(transport_failed);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));

  absl::Status waited;
  std::thread waiting([&] {
    waited = first.Sample(ids, -1, false, 7, most, &whole, deadline,
                          &transport_failed);
  });
  // The skipped sample and this one: queued under 127.0.0.1, the most it
  // may have queued.
  while (workers.queued() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  internal::FeaturePortClient second("127.0.0.1", server->port());
  SampledNeighbors refused;
  bool second_failed = false;
  s = second.Sample(ids, -1, false, 7, most, &refused, deadline,
                    &second_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("already queued"));
  EXPECT_FALSE(second_failed);

  held.reset();
  waiting.join();
  ASSERT_OK(waited);
  SampledNeighbors expected;
  ASSERT_OK(internal::SampleWithinLimits(*store_, ids, -1, false, 7,
                                         internal::SampleLimits(), &expected));
  EXPECT_EQ(whole.counts, expected.counts);
  EXPECT_EQ(whole.neighbors, expected.neighbors);
  // Both connections still answer.
  ASSERT_OK(second.Sample(ids, -1, false, 7, most, &refused, deadline,
                          &second_failed));
  EXPECT_EQ(refused.neighbors, expected.neighbors);

  if (!GetParam()) {  // On disk a small sample waits for a worker too.
    held = std::make_unique<HeldWorker>(&workers);
    ASSERT_TRUE(held->holding());
    s = first.Sample({ids[0], ids[1]}, 2, false, 1, most, &small, deadline,
                     &transport_failed);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

// A client whose sample the port turns away ("server busy": its address's
// queue is full) samples over gRPC, which retries "server busy" until the
// call's deadline, and keeps the port: the sample arrives once the worker is
// free, and later calls use the port again.
TEST_P(FeaturePortTest, AClientToldBusyOnThePortSamplesOverGrpc) {
  GraphStoreServerOptions options;
  options.num_threads = 1;
  options.max_queued_per_ip = 1;
  Start(options);
  ASSERT_OK(client_->Info().status());  // Learns the port.
  ASSERT_TRUE(client_->UsesFeaturePort());
  internal::WorkQueue* workers = server_->workers_for_testing();
  auto held = std::make_unique<HeldWorker>(workers);
  ASSERT_TRUE(held->holding());
  const std::vector<NodeId> ids = Owned();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);

  // A whole-neighborhood sample from this address waits for the worker: the
  // most the address may have queued.
  internal::FeaturePortClient other("127.0.0.1", server_->feature_port());
  SampledNeighbors queued;
  absl::Status queued_status;
  std::thread waiting([&] {
    bool failed = false;
    queued_status = other.Sample(ids, -1, false, 7, int64_t{1} << 20, &queued,
                                 deadline, &failed);
  });
  while (workers->queued() < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::thread releasing([&] {
    absl::SleepFor(absl::Milliseconds(300));
    held.reset();
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<SampledNeighbors> got =
      client_->SampleNeighbors(ids, -1, false, 7);
  const absl::Duration took = absl::Now() - start;
  releasing.join();
  waiting.join();

  ASSERT_OK(got.status());
  ASSERT_OK(queued_status);
  // On disk every call waits for a worker; in memory gRPC judges a call
  // by its request's size before reading it (200 IDs: small) and answers it
  // on its own thread.
  if (!GetParam()) {
    EXPECT_GE(took, absl::Milliseconds(250));
  }
  SampledNeighbors expected;
  ASSERT_OK(internal::SampleWithinLimits(*store_, ids, -1, false, 7,
                                         internal::SampleLimits(), &expected));
  EXPECT_EQ(got->counts, expected.counts);
  EXPECT_EQ(got->neighbors, expected.neighbors);
  EXPECT_EQ(queued.neighbors, expected.neighbors);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  // The port turned the client's sample away; gRPC answered it.
  EXPECT_GE(MethodCalls(stats, "FeaturePortSample", /*errors=*/true), 1);
  EXPECT_GE(MethodCalls(stats, "SampleNeighbors"), 1);
  EXPECT_EQ(MethodCalls(stats, "SampleNeighbors", /*errors=*/true),
            MethodCalls(stats, "SampleNeighbors") - 1);
  // The port was kept: the next sample goes over it.
  EXPECT_TRUE(client_->UsesFeaturePort());
  const int64_t port_samples = MethodCalls(stats, "FeaturePortSample");
  ASSERT_OK(client_->SampleNeighbors({ids[0]}, 2, false, 1).status());
  ASSERT_OK_AND_ASSIGN(stats, client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortSample"), port_samples + 1);
}

// gRPC judges a sample by what it asks, as the port does (SampleIsHeavy): a
// whole-neighborhood sample of two IDs (which may be millions of neighbors)
// waits for a worker, a fanout-2 one of two IDs is answered at once (in
// memory; on disk both wait).
TEST_P(FeaturePortTest, GrpcJudgesSamplesByTheirFanoutAsThePortDoes) {
  GraphStoreServerOptions options;
  options.num_threads = 1;
  GraphStoreClientOptions grpc_only;
  grpc_only.use_feature_port = false;
  grpc_only.call_timeout = absl::Milliseconds(300);
  grpc_only.overall_timeout = absl::Milliseconds(300);
  Start(options, grpc_only);
  auto held = std::make_unique<HeldWorker>(server_->workers_for_testing());
  ASSERT_TRUE(held->holding());
  const std::vector<NodeId> two = {Owned()[0], Owned()[1]};
  absl::StatusOr<SampledNeighbors> small =
      client_->SampleNeighbors(two, 2, false, 1);
  EXPECT_EQ(small.ok(), GetParam()) << small.status();
  absl::StatusOr<SampledNeighbors> whole =
      client_->SampleNeighbors(two, -1, false, 1);
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kDeadlineExceeded)
      << whole.status();
  held.reset();
  ASSERT_OK_AND_ASSIGN(SampledNeighbors got,
                       client_->SampleNeighbors(two, -1, false, 1));
  SampledNeighbors expected;
  ASSERT_OK(internal::SampleWithinLimits(*store_, two, -1, false, 1,
                                         internal::SampleLimits(), &expected));
  EXPECT_EQ(got.neighbors, expected.neighbors);
}

INSTANTIATE_TEST_SUITE_P(Modes, FeaturePortTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

}  // namespace
}  // namespace shardgnn
