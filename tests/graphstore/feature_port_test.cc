// The feature port (graphstore/internal/feature_port.h): real servers on
// loopback ports, real sockets. Samples: feature_port_sample_test.cc.
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

#include "graphstore/client.h"
#include "graphstore/server.h"
#include "tests/graphstore/feature_port_fixture.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ConnectToLoopback;
using testing::FeaturePortTest;
using ::testing::HasSubstr;
using testing::kDim;
using testing::kNodes;
using testing::MethodCalls;

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
