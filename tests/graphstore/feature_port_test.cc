// The feature port (graphstore/internal/feature_port.h): real servers on
// loopback ports, real sockets.
#include "graphstore/internal/feature_port.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "absl/synchronization/notification.h"
#include "graphstore/client.h"
#include "graphstore/internal/sample_request.h"
#include "graphstore/internal/work_queue.h"
#include "graphstore/server.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ConnectToLoopback;
using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::MethodCalls;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 400;
constexpr int64_t kDim = 16;

// A loopback socket connected to `port`.

// Serves part 1 of a 2-part fixture; the parameter is memory mode.
class FeaturePortTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK_AND_ASSIGN(metas_, WriteTestShards(graph_, 2, dir_.path()));
    ShardStoreOptions options;
    options.path = dir_.Sub("part-1");
    options.in_memory = GetParam();
    options.block_cache_bytes = 1 << 20;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
  }
  void Start(GraphStoreServerOptions options = {},
             GraphStoreClientOptions client_options = {}) {
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    ASSERT_OK_AND_ASSIGN(
        client_, GraphStoreClient::Connect(server_->address(), client_options));
    ASSERT_OK(client_->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  }
  std::vector<NodeId> Owned() const {
    std::vector<NodeId> ids(
        static_cast<size_t>(metas_[1].node_end - metas_[1].node_start));
    std::iota(ids.begin(), ids.end(), metas_[1].node_start);
    return ids;
  }
  // Fetches `ids` into a buffer of `slots` rows at `rows` (or contiguously)
  // and checks every row bit for bit, and that other slots are untouched.
  void ExpectFetch(const std::vector<NodeId>& ids,
                   const std::vector<size_t>& rows = {}, size_t slots = 0) {
    slots = rows.empty() ? ids.size() : slots;
    std::vector<float> out(slots * kDim, -7.0f);
    ASSERT_OK(client_->GetFeatures(ids, kDim, out.data(), rows));
    std::vector<bool> written(slots, false);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t at = rows.empty() ? i : rows[i];
      written[at] = true;
      ASSERT_EQ(std::memcmp(out.data() + at * kDim, graph_.Row(ids[i]),
                            kDim * sizeof(float)),
                0)
          << "node " << ids[i];
    }
    for (size_t r = 0; r < slots; ++r) {
      if (!written[r]) ASSERT_EQ(out[r * kDim], -7.0f) << "slot " << r;
    }
  }

  // Checks how many fetches the server answered on each path.
  void ExpectFetchCalls(int64_t port, int64_t grpc) {
    ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
    EXPECT_EQ(MethodCalls(stats, "FeaturePort"), port);
    EXPECT_EQ(MethodCalls(stats, "GetFeatures"), grpc);
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> client_;
};

TEST_P(FeaturePortTest, InfoAdvertisesThePortAndRowsMatchTheSource) {
  Start();
  ASSERT_GT(server_->feature_port(), 0);
  EXPECT_FALSE(client_->UsesFeaturePort());  // Not before Info().
  ASSERT_OK_AND_ASSIGN(ServerInfo info, client_->Info());
  EXPECT_EQ(info.feature_port, server_->feature_port());
  EXPECT_TRUE(client_->UsesFeaturePort());

  std::vector<NodeId> ids = Owned();
  std::mt19937_64 rng(3);
  std::shuffle(ids.begin(), ids.end(), rng);
  ExpectFetch(ids);
  // Scattered into every other slot of a buffer twice as long, reversed.
  std::vector<size_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) rows[i] = 2 * (ids.size() - 1 - i);
  ExpectFetch(ids, rows, 2 * ids.size());
  ExpectFetch({});  // An empty batch is a valid request.

  ExpectFetchCalls(/*port=*/3, /*grpc=*/0);
  ServerTotals totals = server_->Totals();
  EXPECT_GE(totals.bytes_out,
            static_cast<int64_t>(2 * ids.size() * kDim * sizeof(float)));
}

TEST_P(FeaturePortTest, ServerErrorsKeepTheirStatusAndTheConnection) {
  GraphStoreServerOptions options;
  options.max_message_bytes = 1 << 20;
  Start(options);
  ASSERT_OK(client_->Info().status());
  std::vector<NodeId> ids = Owned();
  ids.insert(ids.begin() + 3, metas_[0].node_start + 5);  // Not owned.
  std::vector<float> out(ids.size() * kDim);
  absl::Status s = client_->GetFeatures(ids, kDim, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(server_->address() + ": INVALID_ARGUMENT: GetFeatures:"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(std::to_string(metas_[0].node_start + 5)));

  // Wider rows than the server's: DATA_LOSS, as over gRPC.
  ids = Owned();
  out.assign(ids.size() * (kDim + 1), 0);
  s = client_->GetFeatures(ids, kDim + 1, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("16 wide"));

  // A response over the 1 MiB message limit.
  std::vector<NodeId> many(20000, metas_[1].node_start);
  out.assign(many.size() * kDim, 0);
  s = client_->GetFeatures(many, kDim, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;

  EXPECT_TRUE(client_->UsesFeaturePort());  // Errors are not breakage.
  ExpectFetch(Owned());
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  // Four requests; the server failed two (DATA_LOSS is the client's finding).
  EXPECT_EQ(MethodCalls(stats, "FeaturePort"), 4);
  EXPECT_EQ(MethodCalls(stats, "FeaturePort", /*errors=*/true), 2);
  EXPECT_EQ(MethodCalls(stats, "GetFeatures"), 0);
}

TEST_P(FeaturePortTest, MalformedRequestsGetAnErrorAndTheServerLivesOn) {
  GraphStoreServerOptions options;
  options.max_ids_per_call = 100;
  Start(options);
  ASSERT_OK(client_->Info().status());
  const int port = server_->feature_port();
  auto read_error = [](int fd, internal::FeatureResponseHeader* h) {
    std::string message;
    if (recv(fd, h, sizeof(*h), MSG_WAITALL) != sizeof(*h)) return message;
    message.resize(h->payload_bytes);
    if (recv(fd, message.data(), message.size(), MSG_WAITALL) !=
        static_cast<ssize_t>(message.size())) {
      message = "<short>";
    }
    return message;
  };
  {  // Not our protocol: an error, then the server closes.
    int fd = ConnectToLoopback(port);
    ASSERT_GE(fd, 0);
    const char junk[] = "GET / HTTP/1.1\r\n";
    ASSERT_EQ(send(fd, junk, 16, 0), 16);
    internal::FeatureResponseHeader h;
    std::string message = read_error(fd, &h);
    EXPECT_EQ(h.magic, internal::kFeatureResponseMagic);
    EXPECT_EQ(h.code, static_cast<int>(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(message, HasSubstr("bad magic"));
    char byte;
    EXPECT_EQ(recv(fd, &byte, 1, 0), 0);  // Closed.
    close(fd);
  }
  {  // Over the ID limit: an error naming it, then the server closes.
    int fd = ConnectToLoopback(port);
    ASSERT_GE(fd, 0);
    internal::FeatureRequestHeader request;
    request.num_ids = 101;
    ASSERT_EQ(send(fd, &request, sizeof(request), 0), 16);
    internal::FeatureResponseHeader h;
    std::string message = read_error(fd, &h);
    EXPECT_EQ(h.code, static_cast<int>(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(message, HasSubstr("limit of 100 IDs"));
    char byte;
    EXPECT_EQ(recv(fd, &byte, 1, 0), 0);
    close(fd);
  }
  {  // A request cut short by the client going away.
    int fd = ConnectToLoopback(port);
    ASSERT_GE(fd, 0);
    internal::FeatureRequestHeader request;
    request.num_ids = 10;
    NodeId three[3] = {metas_[1].node_start, metas_[1].node_start + 1,
                       metas_[1].node_start + 2};
    ASSERT_EQ(send(fd, &request, sizeof(request), 0), 16);
    ASSERT_EQ(send(fd, three, sizeof(three), 0),
              static_cast<ssize_t>(sizeof(three)));
    close(fd);
  }
  // The server still answers, on the port and over gRPC.
  std::vector<NodeId> ids = Owned();
  ids.resize(100);
  ExpectFetch(ids);
  ASSERT_OK(client_->Health());
}

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
  EXPECT_EQ(std::vector<int64_t>(counts, counts + 2), over_grpc.counts);
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
// whatever fails meanwhile (~WorkQueue joins its workers).
class HeldWorker {
 public:
  explicit HeldWorker(internal::WorkQueue* workers) {
    holding_ = workers
                   ->Submit("someone else",
                            [this] {
                              holding_now_.Notify();
                              release_.WaitForNotification();
                            })
                   .ok();
    if (holding_) holding_now_.WaitForNotification();
  }
  ~HeldWorker() { release_.Notify(); }
  HeldWorker(const HeldWorker&) = delete;
  HeldWorker& operator=(const HeldWorker&) = delete;
  bool holding() const { return holding_; }

 private:
  absl::Notification holding_now_, release_;
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

TEST_P(FeaturePortTest, StalledRequestIsCutIdleConnectionIsKept) {
  internal::FeaturePortLimits limits;
  limits.io_timeout = absl::Milliseconds(200);
  ASSERT_OK_AND_ASSIGN(
      auto port, internal::FeaturePortServer::Start("127.0.0.1", 0, store_,
                                                    limits, /*hooks=*/{}));
  const NodeId first = metas_[1].node_start;
  {  // Half a request, then silence: the server hangs up.
    int fd = ConnectToLoopback(port->port());
    ASSERT_GE(fd, 0);
    internal::FeatureRequestHeader request;
    request.num_ids = 10;
    ASSERT_EQ(send(fd, &request, sizeof(request), 0), 16);
    ASSERT_EQ(send(fd, &first, sizeof(first), 0), 8);
    const absl::Time start = absl::Now();
    char byte;
    EXPECT_EQ(recv(fd, &byte, 1, 0), 0);  // Closed by the server.
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    close(fd);
  }
  {  // Idle for longer than the timeout, then a request: answered.
    int fd = ConnectToLoopback(port->port());
    ASSERT_GE(fd, 0);
    absl::SleepFor(absl::Milliseconds(600));
    internal::FeatureRequestHeader request;
    request.num_ids = 1;
    ASSERT_EQ(send(fd, &request, sizeof(request), 0), 16);
    ASSERT_EQ(send(fd, &first, sizeof(first), 0), 8);
    internal::FeatureResponseHeader h;
    ASSERT_EQ(recv(fd, &h, sizeof(h), MSG_WAITALL), 16);
    EXPECT_EQ(h.code, 0);
    ASSERT_EQ(h.payload_bytes, kDim * sizeof(float));
    std::vector<float> row(kDim);
    ASSERT_EQ(recv(fd, row.data(), h.payload_bytes, MSG_WAITALL),
              static_cast<ssize_t>(h.payload_bytes));
    EXPECT_EQ(std::memcmp(row.data(), graph_.Row(first), h.payload_bytes), 0);
    close(fd);
  }
  port->Shutdown(absl::Now() + absl::Seconds(5));
}

TEST_P(FeaturePortTest, SixteenThreadsFetchConcurrently) {
  Start();
  ASSERT_OK(client_->Info().status());
  const std::vector<NodeId> owned = Owned();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      std::vector<NodeId> ids(64);
      std::vector<size_t> rows(ids.size());
      std::iota(rows.begin(), rows.end(), 0);
      std::vector<float> out(ids.size() * kDim);
      for (int call = 0; call < 200 && failures.load() == 0; ++call) {
        for (auto& id : ids) id = owned[rng() % owned.size()];
        std::shuffle(rows.begin(), rows.end(), rng);
        if (!client_->GetFeatures(ids, kDim, out.data(), rows).ok()) {
          failures.fetch_add(1);
          return;
        }
        for (size_t i = 0; i < ids.size(); ++i) {
          if (std::memcmp(out.data() + rows[i] * kDim, graph_.Row(ids[i]),
                          kDim * sizeof(float)) != 0) {
            failures.fetch_add(1);
            return;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePort"), 16 * 200);
}

TEST_P(FeaturePortTest, ShutdownWithOpenConnectionsIsPrompt) {
  Start();
  ASSERT_OK(client_->Info().status());
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<NodeId> ids = Owned();
      std::vector<float> out(ids.size() * kDim);
      while (!stop.load()) {
        absl::Status s = client_->GetFeatures(ids, kDim, out.data());
        if (s.ok()) {
          if (std::memcmp(out.data(), graph_.Row(ids[0]),
                          kDim * sizeof(float)) != 0) {
            wrong.fetch_add(1);
          }
        } else if (!absl::IsUnavailable(s) && !absl::IsCancelled(s)) {
          // Calls arriving while the server stops fall back to gRPC and are
          // turned away (or, at the very end, cancelled); nothing else.
          ADD_FAILURE() << s;
          wrong.fetch_add(1);
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Now() + absl::Seconds(5));
  const absl::Duration took = absl::Now() - start;
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_LT(took, absl::Seconds(2));
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(FeaturePortTest, DeadServerIsUnavailableNamingItAfterFallingBack) {
  Start();
  ASSERT_OK(client_->Info().status());
  ExpectFetch(Owned());  // Leaves an idle connection in the pool.
  const std::string address = server_->address();
  server_->Shutdown(absl::Now());
  server_.reset();
  std::vector<float> out(Owned().size() * kDim);
  const absl::Time start = absl::Now();
  absl::Status s = client_->GetFeatures(Owned(), kDim, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(address + ": UNAVAILABLE"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_FALSE(client_->UsesFeaturePort());  // gRPC until the next Info().
}

TEST_P(FeaturePortTest, ServerRestartedOnItsPortsIsUsedAgain) {
  Start();
  ASSERT_OK(client_->Info().status());
  ExpectFetch(Owned());  // Leaves an idle connection in the pool.
  GraphStoreServerOptions same;
  same.listen_address = server_->address();
  same.feature_port = server_->feature_port();
  server_->Shutdown(absl::Now() + absl::Seconds(5));
  server_.reset();
  ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, same));
  ASSERT_OK(client_->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  // The pooled connection is dead; the fetch retries on a new one.
  ExpectFetch(Owned());
  EXPECT_TRUE(client_->UsesFeaturePort());
  ExpectFetchCalls(/*port=*/1, /*grpc=*/0);
}

TEST_P(FeaturePortTest, ServerRestartedOnANewFeaturePortIsFoundAgain) {
  GraphStoreClientOptions client_options;
  client_options.feature_port_retry = absl::Milliseconds(100);
  Start({}, client_options);
  ASSERT_OK(client_->Info().status());
  ExpectFetch(Owned());
  const int old_port = server_->feature_port();
  GraphStoreServerOptions same_address;
  same_address.listen_address = server_->address();
  do {
    same_address.feature_port = testing::PickFreePort();
  } while (same_address.feature_port == old_port);
  server_->Shutdown(absl::Now() + absl::Seconds(5));
  server_.reset();
  ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, same_address));
  ASSERT_OK(client_->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  // The old port is gone: this fetch falls back to gRPC.
  ExpectFetch(Owned());
  EXPECT_FALSE(client_->UsesFeaturePort());
  // After the retry period the client asks Info again and uses the new port.
  absl::SleepFor(absl::Milliseconds(150));
  ExpectFetch(Owned());
  EXPECT_TRUE(client_->UsesFeaturePort());
  ExpectFetch(Owned());
  ExpectFetchCalls(/*port=*/2, /*grpc=*/1);
}

TEST_P(FeaturePortTest, ClientsOverTheConnectionLimitFetchOverGrpc) {
  GraphStoreServerOptions options;
  options.feature_port_connections = 1;
  Start(options);
  ASSERT_OK(client_->Info().status());
  ExpectFetch(Owned());  // client_ holds the one connection (pooled).
  ASSERT_OK_AND_ASSIGN(auto second,
                       GraphStoreClient::Connect(server_->address()));
  ASSERT_OK(second->Info().status());
  ASSERT_TRUE(second->UsesFeaturePort());
  const std::vector<NodeId> ids = Owned();
  std::vector<float> out(ids.size() * kDim);
  ASSERT_OK(second->GetFeatures(ids, kDim, out.data()));
  EXPECT_EQ(std::memcmp(out.data(), graph_.Row(ids[0]),
                        ids.size() * kDim * sizeof(float)),
            0);
  EXPECT_FALSE(second->UsesFeaturePort());  // Turned away: gRPC for now.
  ExpectFetch(Owned());  // The first client keeps its connection.
  EXPECT_TRUE(client_->UsesFeaturePort());
  ExpectFetchCalls(/*port=*/2, /*grpc=*/1);
  options.feature_port_connections = 0;
  EXPECT_EQ(GraphStoreServer::Start(store_, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Resident memory of this process in bytes, after returning freed memory to
// the system.
int64_t ResidentBytes() {
  malloc_trim(0);
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Sends a request for `ids` on `fd` and reads the answer through a small
// buffer; returns its status code (-1 on a transport error).
int RequestAndDiscard(int fd, const std::vector<NodeId>& ids) {
  internal::FeatureRequestHeader request;
  request.num_ids = ids.size();
  if (send(fd, &request, sizeof(request), 0) != sizeof(request)) return -1;
  const char* p = reinterpret_cast<const char*>(ids.data());
  size_t left = ids.size() * sizeof(NodeId);
  while (left > 0) {
    ssize_t n = send(fd, p, left, 0);
    if (n <= 0) return -1;
    p += n;
    left -= static_cast<size_t>(n);
  }
  internal::FeatureResponseHeader h;
  if (recv(fd, &h, sizeof(h), MSG_WAITALL) != sizeof(h)) return -1;
  std::vector<char> chunk(1 << 16);
  for (uint64_t got = 0; got < h.payload_bytes;) {
    ssize_t n =
        recv(fd, chunk.data(),
             std::min<uint64_t>(chunk.size(), h.payload_bytes - got), 0);
    if (n <= 0) return -1;
    got += static_cast<uint64_t>(n);
  }
  return h.code;
}

// Issue 12: after large requests, idle connections held their buffers
// (8 connections held 2 GB). Each connection now keeps at most a small
// buffer between requests.
TEST_P(FeaturePortTest, IdleConnectionsHoldNoLargeBuffers) {
  Start();
  const int64_t before = ResidentBytes();
  std::vector<NodeId> ids(400000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = Owned()[i % Owned().size()];
  std::vector<int> fds;
  for (int c = 0; c < 4; ++c) {  // 4 x (3.2 MB of IDs + 25.6 MB of rows).
    int fd = ConnectToLoopback(server_->feature_port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(RequestAndDiscard(fd, ids), 0);
    fds.push_back(fd);
  }
  ids = {};
  const int64_t held = ResidentBytes() - before;
  EXPECT_LT(held, int64_t{24} << 20)
      << "4 idle connections hold " << (held >> 20) << " MiB";
  for (int fd : fds) close(fd);
}

TEST_P(FeaturePortTest, WorksOverIpv6) {
  GraphStoreServerOptions options;
  options.listen_address = "[::1]:0";
  Start(options);
  EXPECT_EQ(server_->address().rfind("[::1]:", 0), 0u) << server_->address();
  ASSERT_OK(client_->Info().status());
  ASSERT_TRUE(client_->UsesFeaturePort());
  ExpectFetch(Owned());
  ExpectFetchCalls(/*port=*/1, /*grpc=*/0);
}

TEST_P(FeaturePortTest, OffOnEitherSideMeansGrpc) {
  GraphStoreServerOptions off;
  off.feature_port = -1;
  Start(off);
  ASSERT_OK_AND_ASSIGN(ServerInfo info, client_->Info());
  EXPECT_EQ(info.feature_port, 0);
  EXPECT_EQ(server_->feature_port(), 0);
  EXPECT_FALSE(client_->UsesFeaturePort());
  ExpectFetch(Owned());
  ExpectFetchCalls(/*port=*/0, /*grpc=*/1);
  server_->Shutdown(absl::Now());

  GraphStoreClientOptions client_off;
  client_off.use_feature_port = false;
  Start({}, client_off);
  ASSERT_OK_AND_ASSIGN(info, client_->Info());
  EXPECT_GT(info.feature_port, 0);  // Offered, but not used.
  EXPECT_FALSE(client_->UsesFeaturePort());
  ExpectFetch(Owned());
  ExpectFetchCalls(/*port=*/0, /*grpc=*/1);
}

TEST_P(FeaturePortTest, BadOrBusyPortFailsStart) {
  GraphStoreServerOptions options;
  options.feature_port = 70000;
  auto bad = GraphStoreServer::Start(store_, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("70000"));
  Start();
  options.feature_port = server_->feature_port();
  auto busy = GraphStoreServer::Start(store_, options);
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(busy.status().message()),
              HasSubstr(absl::StrCat("cannot listen on 127.0.0.1:",
                                     server_->feature_port())));
  ExpectFetch(Owned());  // The first server is unaffected.
}

INSTANTIATE_TEST_SUITE_P(Modes, FeaturePortTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

// The client alone, against ports that do not behave.
TEST(FeaturePortClientTest, ClosedPortIsATransportFailure) {
  internal::FeaturePortClient client("127.0.0.1", testing::PickFreePort());
  std::vector<NodeId> ids = {1, 2};
  std::vector<float> out(2 * kDim);
  bool transport_failed = false;
  absl::Status s =
      client.Fetch(ids, kDim, out.data(), nullptr,
                   absl::Now() + absl::Seconds(5), &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(transport_failed);
}

TEST(FeaturePortClientTest, SilentPortEndsAtTheDeadline) {
  testing::SilentListener silent;
  internal::FeaturePortClient client("127.0.0.1", silent.port());
  std::vector<NodeId> ids = {1, 2};
  std::vector<float> out(2 * kDim);
  bool transport_failed = true;
  const absl::Time start = absl::Now();
  absl::Status s =
      client.Fetch(ids, kDim, out.data(), nullptr,
                   start + absl::Milliseconds(300), &transport_failed);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no answer on feature port"));
  // A slow server is not a broken port: no silent second try over gRPC.
  EXPECT_FALSE(transport_failed);
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Seconds(2));
}

}  // namespace
}  // namespace shardgnn
