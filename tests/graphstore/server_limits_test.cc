// The storage server's resource limits and fairness (issue 12): work caps per
// call, exact bytes in tiny answers, connection caps and idle timeouts, and a
// client that keeps its pace while another address floods the server. Real
// servers on loopback ports, real sockets.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "graphstore/client.h"
#include "graphstore/server.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ClosedByServerWithin;
using testing::ConnectFrom;
using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 400;
constexpr int64_t kDim = 16;

// A TCP connection to `port` on `host` ("127.0.0.1" or "::1") that sends
// nothing; -1 if refused.
int IdleConnection(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  int fd = socket(v6 ? AF_INET6 : AF_INET,
                  SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
    a->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, host.c_str(), &a->sin_addr);
    a->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*a);
  }
  // Not blocking: a server that stops accepting fills its backlog.
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t err_len = sizeof(err);
    if (errno != EINPROGRESS || poll(&p, 1, 200) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// Calls GraphStore method `method` with the request bytes `request` and
// returns the raw bytes of its answer (no protobuf on either side).
grpc::Status RawCall(const std::string& address, const std::string& method,
                     const std::string& request, std::string* answer) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::Slice request_slice(request.data(), request.size());
  grpc::ByteBuffer request_buffer(&request_slice, 1);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::CompletionQueue cq;
  grpc::ByteBuffer response;
  grpc::Status status;
  auto rpc = stub.PrepareUnaryCall(&ctx, "/shardgnn.proto.GraphStore/" + method,
                                   request_buffer, &cq);
  rpc->StartCall();
  rpc->Finish(&response, &status, &status);
  void* tag = nullptr;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&tag, &ok));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  answer->clear();
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Valid()) {
    EXPECT_TRUE(response.Dump(&slices).ok());
  }
  for (const grpc::Slice& s : slices) {
    answer->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

std::string IdBytes(absl::Span<const NodeId> ids) {
  return std::string(reinterpret_cast<const char*>(ids.data()),
                     ids.size() * sizeof(NodeId));
}

// The raw bytes of a GetFeatures answer.
grpc::Status RawGetFeatures(const std::string& address,
                            const std::vector<NodeId>& ids,
                            std::string* answer) {
  proto::NodeIdsRequest request;
  request.set_node_ids(IdBytes(ids));
  return RawCall(address, "GetFeatures", request.SerializeAsString(), answer);
}

// Part 1 of a 2-part fixture; the parameter is memory mode.
class ServerLimitsTest : public ::testing::TestWithParam<bool> {
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
  void Start(GraphStoreServerOptions options = {}) {
    if (options.num_threads == 0) options.num_threads = 2;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
  }
  std::unique_ptr<GraphStoreClient> Client(
      const std::string& host, GraphStoreClientOptions options = {}) {
    auto client = GraphStoreClient::Connect(
        absl::StrCat(host, ":", server_->port()), options);
    EXPECT_OK(client.status());
    if (!client.ok()) return nullptr;
    return std::move(client).value();
  }
  // `n` owned IDs, cycling through the owned range.
  std::vector<NodeId> Ids(size_t n) const {
    std::vector<NodeId> ids(n);
    const int64_t owned = metas_[1].node_end - metas_[1].node_start;
    for (size_t i = 0; i < n; ++i) {
      ids[i] = metas_[1].node_start + static_cast<int64_t>(i) % owned;
    }
    return ids;
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
};

// Answers small enough for gRPC's inline slices (at most about 23 bytes)
// once carried uninitialized memory.
TEST_P(ServerLimitsTest, TinyFeatureAnswersAreExactBytes) {
  Start();
  std::string answer;
  // No IDs: only the feature_dim field (tag 0x08, varint 16).
  ASSERT_TRUE(RawGetFeatures(server_->address(), {}, &answer).ok());
  EXPECT_EQ(answer, std::string("\x08\x10", 2));
  // One row: dim, then field 2 with 64 bytes of the row.
  const NodeId v = metas_[1].node_start + 3;
  ASSERT_TRUE(RawGetFeatures(server_->address(), {v}, &answer).ok());
  std::string want("\x08\x10\x12\x40", 4);
  want.append(reinterpret_cast<const char*>(graph_.Row(v)), kDim * 4);
  EXPECT_EQ(answer, want);
}

// SampleNeighbors answers are written without protobuf (features_codec.h):
// the bytes are what protobuf would write, and a request that does not
// parse is refused.
TEST_P(ServerLimitsTest, SampleAnswersAreTheProtobufBytes) {
  Start();
  auto client = Client("127.0.0.1");
  const std::vector<NodeId> ids = Ids(50);
  proto::SampleNeighborsRequest request;
  request.set_node_ids(IdBytes(ids));
  request.set_fanout(3);
  request.set_seed(7);
  std::string answer;
  ASSERT_TRUE(RawCall(server_->address(), "SampleNeighbors",
                      request.SerializeAsString(), &answer)
                  .ok());
  ASSERT_OK_AND_ASSIGN(SampledNeighbors expected,
                       client->SampleNeighbors(ids, 3, false, 7));
  proto::SampleNeighborsResponse want;
  want.set_counts(
      std::string(reinterpret_cast<const char*>(expected.counts.data()),
                  expected.counts.size() * 8));
  want.set_neighbors(IdBytes(expected.neighbors));
  EXPECT_GT(expected.neighbors.size(), 50u);
  EXPECT_EQ(answer, want.SerializeAsString());

  const grpc::Status bad = RawCall(server_->address(), "SampleNeighbors",
                                   std::string("\x0a\xff\xff", 3), &answer);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("not a SampleNeighborsRequest"));
  // The server goes on serving.
  EXPECT_OK(client->SampleNeighbors(ids, 3, false, 7).status());
}

// A few KB asking for tens of millions of samples (replace, huge fanout)
// used to cost seconds of CPU and a 240 MB answer.
TEST_P(ServerLimitsTest, AmplifyingSampleIsRefusedAtOnceNamingTheLimit) {
  Start();
  auto client = Client("127.0.0.1");
  const std::vector<NodeId> ids = Ids(3000);  // 24 KB of request.
  const absl::Time start = absl::Now();
  auto sample = client->SampleNeighbors(ids, 10000, /*replace=*/true, 1);
  EXPECT_EQ(sample.status().code(), absl::StatusCode::kResourceExhausted)
      << sample.status();
  EXPECT_THAT(std::string(sample.status().message()),
              HasSubstr("limit of 8388608 sampled neighbors per call"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  // Real batches stay well below it.
  EXPECT_OK(client->SampleNeighbors(Ids(20000), 25, false, 1).status());
  EXPECT_OK(client->SampleNeighbors(Ids(20000), 25, true, 1).status());
}

TEST_P(ServerLimitsTest, SampleCapIsConfigurable) {
  GraphStoreServerOptions options;
  options.max_sampled_per_call = 1000;
  Start(options);
  auto client = Client("127.0.0.1");
  auto sample = client->SampleNeighbors(Ids(101), 10, /*replace=*/true, 1);
  EXPECT_EQ(sample.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(sample.status().message()),
              HasSubstr("limit of 1000 sampled neighbors per call"));
  EXPECT_OK(client->SampleNeighbors(Ids(100), 10, true, 1).status());
}

// Connections that never send a byte, or go quiet, are closed after the idle
// timeout and their file descriptors come back.
TEST_P(ServerLimitsTest, IdleConnectionsAreClosed) {
  GraphStoreServerOptions options;
  options.idle_timeout = absl::Milliseconds(500);
  Start(options);
  int grpc_fd = IdleConnection("127.0.0.1", server_->port());
  int port_fd = IdleConnection("127.0.0.1", server_->feature_port());
  ASSERT_GE(grpc_fd, 0);
  ASSERT_GE(port_fd, 0);
  EXPECT_TRUE(ClosedByServerWithin(grpc_fd, absl::Seconds(5)));
  EXPECT_TRUE(ClosedByServerWithin(port_fd, absl::Seconds(5)));
  close(grpc_fd);
  close(port_fd);
  // A client that idles past the timeout reconnects transparently.
  auto client = Client("127.0.0.1");
  ASSERT_OK(client->WaitForHealthy(absl::Now() + absl::Seconds(5)));
  ASSERT_OK(client->Info().status());
  absl::SleepFor(absl::Seconds(1));
  std::vector<float> rows(kDim * 2);
  EXPECT_OK(client->GetFeatures(Ids(2), kDim, rows.data()));
  EXPECT_OK(client->SampleNeighbors(Ids(2), 5, false, 1).status());
}

// One address holding connections cannot lock out another, and once it lets
// go, it is served again.
TEST_P(ServerLimitsTest, ConnectionCapsAreCountedPerAddress) {
  GraphStoreServerOptions options;
  options.listen_address = "[::]:0";
  options.max_connections_per_ip = 8;
  options.feature_port_connections_per_ip = 4;
  Start(options);
  std::vector<int> attacker;
  for (int i = 0; i < 40; ++i) {
    for (int port : {server_->port(), server_->feature_port()}) {
      int fd = IdleConnection("::1", port);
      if (fd >= 0) attacker.push_back(fd);
    }
  }
  absl::SleepFor(absl::Milliseconds(300));
  // The kernel completes every handshake; the server closes those over the
  // caps: 8 gRPC and 4 feature port connections stay.
  int open = 0;
  for (int fd : attacker) {
    if (!ClosedByServerWithin(fd, absl::Milliseconds(20))) ++open;
  }
  EXPECT_EQ(open, 12);
  // Another address is served, over the feature port too.
  auto other = Client("127.0.0.1");
  ASSERT_OK(other->WaitForHealthy(absl::Now() + absl::Seconds(5)));
  ASSERT_OK(other->Info().status());
  EXPECT_TRUE(other->UsesFeaturePort());
  std::vector<float> rows(kDim * 3);
  EXPECT_OK(other->GetFeatures(Ids(3), kDim, rows.data()));
  ASSERT_OK_AND_ASSIGN(ServerStats stats, other->Stats());
  for (const auto& m : stats.methods) {
    if (m.method == "FeaturePort") {
      EXPECT_EQ(m.calls, 1);
    }
  }
  for (int fd : attacker) close(fd);
  auto back = Client("[::1]");
  EXPECT_OK(back->WaitForHealthy(absl::Now() + absl::Seconds(5)));
}

// Issue 51: under a 1024 open-file limit the per-address cap (256) was the
// whole cap (a quarter of the limit), so idle connections from one address
// made Health UNAVAILABLE for every other client until the idle timeout.
// One address now holds at most a quarter of the gRPC port and half of the
// feature port.
TEST_P(ServerLimitsTest, OneAddressLeavesRoomForOthers) {
  GraphStoreServerOptions options;
  options.max_connections = 64;  // The per-address cap asks for all of it.
  options.max_connections_per_ip = 64;
  options.feature_port_connections = 16;
  options.feature_port_connections_per_ip = 16;
  Start(options);
  std::vector<int> attacker;
  for (int i = 0; i < 80; ++i) {
    for (int port : {server_->port(), server_->feature_port()}) {
      if (port == server_->feature_port() && i >= 20) continue;
      const int fd = ConnectFrom("127.0.0.2", port);
      ASSERT_GE(fd, 0);
      attacker.push_back(fd);
    }
  }
  // Another address is served at once, over both ports.
  auto other = Client("127.0.0.1");
  ASSERT_OK(other->WaitForHealthy(absl::Now() + absl::Seconds(3)));
  ASSERT_OK(other->Info().status());
  EXPECT_TRUE(other->UsesFeaturePort());
  std::vector<float> rows(kDim * 3);
  EXPECT_OK(other->GetFeatures(Ids(3), kDim, rows.data()));
  ASSERT_OK_AND_ASSIGN(ServerStats stats, other->Stats());
  EXPECT_EQ(testing::MethodCalls(stats, "FeaturePort"), 1);
  // The attacker keeps 16 gRPC and 8 feature port connections; the server
  // closed the rest on accept.
  int open = 0;
  for (int fd : attacker) {
    if (!ClosedByServerWithin(fd, absl::Milliseconds(1))) ++open;
    close(fd);
  }
  EXPECT_EQ(open, 16 + 8);
}

// Calls beyond an address's queue are shed with UNAVAILABLE ("server busy"),
// which clients retry; none fails otherwise.
TEST_P(ServerLimitsTest, CallsOverAnAddresssQueueAreShedAsBusy) {
  GraphStoreServerOptions options;
  options.max_queued_per_ip = 2;
  Start(options);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(
      server_->address(), grpc::InsecureChannelCredentials(), args);
  auto stub = proto::GraphStore::NewStub(channel);
  proto::SampleNeighborsRequest request;
  const std::vector<NodeId> ids = Ids(4000);
  request.set_node_ids(std::string(reinterpret_cast<const char*>(ids.data()),
                                   ids.size() * sizeof(NodeId)));
  request.set_fanout(1000);
  request.set_replace(true);
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
        proto::SampleNeighborsResponse response;
        grpc::Status s = stub->SampleNeighbors(&ctx, request, &response);
        if (s.ok()) {
          ++ok;
        } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
                   s.error_message().find("server busy") != std::string::npos) {
          ++busy;
        } else {
          ++other;
          ADD_FAILURE() << s.error_code() << " " << s.error_message();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(busy.load(), 0);
  EXPECT_EQ(other.load(), 0);
}

// While another address floods the server with heavy calls, a well-behaved
// client is not starved: its steps stay within 10x of quiet (without the
// work queue, disk mode was 75x slower), and after the flood they are back.
// A starvation check, not a speed figure: the target (about 2x) is
// measured by bench/load (ratio_to_quiet); on a shared 2-core machine (other
// tests, builds) a 2x bound failed on noise alone (quiet 10 ms, 30 ms under
// attack).
TEST_P(ServerLimitsTest, FloodFromOneAddressDoesNotStarveAnother) {
  GraphStoreServerOptions options;
  options.listen_address = "[::]:0";
  options.feature_port = -1;  // Features over gRPC: all work on its path.
  Start(options);
  auto good = Client("127.0.0.1");
  ASSERT_OK(good->WaitForHealthy(absl::Now() + absl::Seconds(5)));
  const std::vector<NodeId> seeds = Ids(512);
  const std::vector<NodeId> frontier = Ids(5000);
  std::vector<float> rows(frontier.size() * kDim);
  // One "training step": two layers of sampling and the input features.
  auto step = [&]() -> absl::Duration {
    const absl::Time start = absl::Now();
    EXPECT_OK(good->SampleNeighbors(seeds, 10, false, 7).status());
    EXPECT_OK(good->SampleNeighbors(frontier, 10, false, 7).status());
    EXPECT_OK(good->GetFeatures(frontier, kDim, rows.data()));
    return absl::Now() - start;
  };
  auto median_step = [&](int steps) {
    std::vector<absl::Duration> times;
    for (int i = 0; i < steps; ++i) times.push_back(step());
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  median_step(5);  // Warm up.

  // The machine is shared: a round compares the quiet and the attacked
  // median taken back to back, and one of three rounds must meet the bound.
  absl::Duration quiet, attacked, after;
  bool met = false;
  for (int round = 0; round < 3 && !met; ++round) {
    quiet = median_step(30);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> attacks{0};
    std::vector<std::thread> attacker;
    auto flood = Client("[::1]");
    for (int t = 0; t < 6; ++t) {
      attacker.emplace_back([&] {
        const std::vector<NodeId> ids = Ids(4000);
        while (!stop) {
          // 4M samples each: heavy, but under the per-call cap.
          auto s = flood->SampleNeighbors(ids, 1000, /*replace=*/true, 3);
          ++attacks;
        }
      });
    }
    absl::SleepFor(absl::Milliseconds(200));
    attacked = median_step(30);
    stop = true;
    for (auto& t : attacker) t.join();
    after = median_step(30);
    EXPECT_GT(attacks.load(), 0);
    met = attacked <= 10 * quiet + absl::Milliseconds(5) &&
          after <= 10 * quiet + absl::Milliseconds(5);
  }
  EXPECT_TRUE(met) << "quiet " << quiet << ", under attack " << attacked
                   << ", after the attack " << after;
}

INSTANTIATE_TEST_SUITE_P(Modes, ServerLimitsTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

}  // namespace
}  // namespace shardgnn
