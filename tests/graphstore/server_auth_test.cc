// Authentication with a shared token (issue 12): every gRPC call but Health
// and every feature port connection, against real servers on loopback ports.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "graphstore/client.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/server.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::ConnectToLoopback;
using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::MethodCalls;
using ::testing::Not;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 200;
constexpr int64_t kDim = 8;
constexpr char kToken[] = "9f3c1e0b7a5d4c2e8f6a1b3d5c7e9f0a";
constexpr char kOtherToken[] = "0000111122223333444455556666777788889999";

// Serves part 0 of a 1-part fixture from memory.
class ServerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK(WriteTestShards(graph_, 1, dir_.path()).status());
    ShardStoreOptions options;
    options.path = dir_.Sub("part-0");
    options.in_memory = true;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
  }
  // Starts the server with `token` (empty: none).
  void StartServer(const std::string& token) {
    GraphStoreServerOptions options;
    options.auth_token = token;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    ASSERT_GT(server_->feature_port(), 0);
  }
  // A client with `token` (empty: none) that tries each call once.
  std::unique_ptr<GraphStoreClient> Client(const std::string& token,
                                           bool use_feature_port = true) {
    GraphStoreClientOptions options;
    options.auth_token = token;
    options.max_attempts = 1;
    options.use_feature_port = use_feature_port;
    auto client = GraphStoreClient::Connect(server_->address(), options);
    EXPECT_OK(client.status());
    if (!client.ok()) return nullptr;
    EXPECT_OK((*client)->WaitForHealthy(absl::Now() + absl::Seconds(10)));
    return std::move(client).value();
  }
  // Fetches `ids` over the feature port with `token` and checks the rows.
  absl::Status FetchOverPort(const std::string& token,
                             const std::vector<NodeId>& ids,
                             bool* transport_failed) {
    internal::FeaturePortClient port("127.0.0.1", server_->feature_port(),
                                     token);
    std::vector<float> out(ids.size() * kDim, -1.0f);
    absl::Status s =
        port.Fetch(ids, kDim, out.data(), nullptr,
                   absl::Now() + absl::Seconds(10), transport_failed);
    if (s.ok()) {
      for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(std::memcmp(out.data() + i * kDim, graph_.Row(ids[i]),
                              kDim * sizeof(float)),
                  0)
            << "node " << ids[i];
      }
    }
    return s;
  }
  std::vector<NodeId> SomeIds() const {
    std::vector<NodeId> ids(50);
    std::iota(ids.begin(), ids.end(), 3);
    return ids;
  }

  TempDir dir_;
  TestGraph graph_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
};

TEST_F(ServerAuthTest, EveryCallButHealthNeedsTheToken) {
  StartServer(kToken);
  auto anonymous = Client("");
  ASSERT_NE(anonymous, nullptr);
  ASSERT_OK(anonymous->Health());  // Open, for load balancers' probes.
  const std::vector<NodeId> ids = SomeIds();
  std::vector<float> rows(ids.size() * kDim);
  int64_t dim = 0;
  const std::vector<absl::Status> refused = {
      anonymous->Info().status(),
      anonymous->SampleNeighbors(ids, 5, false, 1).status(),
      anonymous->GetFeatures(ids, kDim, rows.data()),  // Raw gRPC method.
      anonymous->GetFeatures(ids, &dim).status(),
      anonymous->GetLabels(ids).status(),
      anonymous->GetDegrees(ids).status(),
      anonymous->GetSplit("train").status(),
      anonymous->Stats().status(),
  };
  for (const absl::Status& s : refused) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
    EXPECT_THAT(s.message(), HasSubstr("requires an auth token")) << s;
    EXPECT_THAT(s.message(), HasSubstr(server_->address())) << s;
  }

  auto wrong = Client(kOtherToken);
  ASSERT_NE(wrong, nullptr);
  absl::Status s = wrong->Info().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("wrong auth token"));
  EXPECT_THAT(s.message(), Not(HasSubstr(kToken)));  // Never echoed.
  // A token that only starts like the right one is as wrong.
  auto prefix = Client(std::string(kToken).substr(0, 20));
  EXPECT_EQ(prefix->Info().status().code(), absl::StatusCode::kUnauthenticated);

  auto right = Client(kToken, /*use_feature_port=*/false);
  ASSERT_NE(right, nullptr);
  ASSERT_OK(right->Info().status());
  ASSERT_OK(right->SampleNeighbors(ids, 5, false, 1).status());
  ASSERT_OK(right->GetFeatures(ids, kDim, rows.data()));
  EXPECT_EQ(std::memcmp(rows.data(), graph_.Row(ids[0]), kDim * sizeof(float)),
            0);
  ASSERT_OK(right->GetLabels(ids).status());
  ASSERT_OK_AND_ASSIGN(ServerStats stats, right->Stats());
  // The refused calls were counted as errors, the right ones not.
  EXPECT_EQ(MethodCalls(stats, "Info", /*errors=*/true), 3);
  EXPECT_EQ(MethodCalls(stats, "GetFeatures", /*errors=*/true), 2);
  EXPECT_EQ(MethodCalls(stats, "Health", /*errors=*/true), 0);
}

TEST_F(ServerAuthTest, ServerWithoutTokenRefusesCallsCarryingOne) {
  StartServer("");
  auto with_token = Client(kToken);
  ASSERT_NE(with_token, nullptr);
  absl::Status s = with_token->Info().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("runs without an auth token"));
  auto anonymous = Client("");
  ASSERT_OK(anonymous->Info().status());
}

TEST_F(ServerAuthTest, FeaturePortServesOnlyTheRightToken) {
  StartServer(kToken);
  const std::vector<NodeId> ids = SomeIds();
  bool transport_failed = true;
  ASSERT_OK(FetchOverPort(kToken, ids, &transport_failed));
  EXPECT_FALSE(transport_failed);

  absl::Status s = FetchOverPort("", ids, &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("requires the auth token"));
  EXPECT_FALSE(transport_failed);  // Not a reason to try gRPC instead.

  s = FetchOverPort(kOtherToken, ids, &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("wrong auth token"));
  EXPECT_FALSE(transport_failed);
}

TEST_F(ServerAuthTest, FeaturePortMismatchFailsAtOnceBothWays) {
  StartServer("");
  const absl::Time start = absl::Now();
  bool transport_failed = true;
  absl::Status s = FetchOverPort(kToken, SomeIds(), &transport_failed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("runs without an auth token"));
  EXPECT_FALSE(transport_failed);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));  // Not a wait.
  ASSERT_OK(FetchOverPort("", SomeIds(), &transport_failed));
}

// A client with the token reads rows over the port (and the port's first
// call only after Info, itself authenticated).
TEST_F(ServerAuthTest, ClientWithTheTokenUsesTheFeaturePort) {
  StartServer(kToken);
  auto client = Client(kToken);
  ASSERT_NE(client, nullptr);
  ASSERT_OK(client->Info().status());
  ASSERT_TRUE(client->UsesFeaturePort());
  const std::vector<NodeId> ids = SomeIds();
  std::vector<float> rows(ids.size() * kDim);
  ASSERT_OK(client->GetFeatures(ids, kDim, rows.data()));
  EXPECT_TRUE(client->UsesFeaturePort());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(std::memcmp(rows.data() + i * kDim, graph_.Row(ids[i]),
                          kDim * sizeof(float)),
              0);
  }
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client->Stats());
  for (const auto& m : stats.methods) {
    if (m.method == "FeaturePort") {
      EXPECT_EQ(m.calls, 1);
    } else if (m.method == "GetFeatures") {
      EXPECT_EQ(m.calls, 0);
    }
  }
}

// Raw sockets: a plain request gets an UNAUTHENTICATED answer and no rows; a
// forged proof is refused.
TEST_F(ServerAuthTest, FeaturePortRefusesPlainRequestsAndForgedProofs) {
  StartServer(kToken);
  const NodeId first = 3;
  {
    int fd = ConnectToLoopback(server_->feature_port());
    ASSERT_GE(fd, 0);
    internal::FeatureRequestHeader request;
    request.num_ids = 1;
    ASSERT_EQ(send(fd, &request, sizeof(request), 0), 16);
    ASSERT_EQ(send(fd, &first, sizeof(first), 0), 8);
    internal::FeatureResponseHeader h;
    ASSERT_EQ(recv(fd, &h, sizeof(h), MSG_WAITALL), 16);
    EXPECT_EQ(h.magic, internal::kFeatureResponseMagic);
    EXPECT_EQ(h.code, static_cast<int>(absl::StatusCode::kUnauthenticated));
    std::string message(h.payload_bytes, '\0');
    ASSERT_EQ(recv(fd, message.data(), message.size(), MSG_WAITALL),
              static_cast<ssize_t>(message.size()));
    EXPECT_THAT(message, HasSubstr("requires the auth token"));
    char byte;
    EXPECT_EQ(recv(fd, &byte, 1, 0), 0);  // And closed.
    close(fd);
  }
  {
    int fd = ConnectToLoopback(server_->feature_port());
    ASSERT_GE(fd, 0);
    internal::FeatureRequestHeader hello;
    hello.magic = internal::kAuthHelloMagic;
    hello.num_ids = internal::kAuthNonceBytes;
    const std::string nonce(internal::kAuthNonceBytes, 'n');
    ASSERT_EQ(send(fd, &hello, sizeof(hello), 0), 16);
    ASSERT_EQ(send(fd, nonce.data(), nonce.size(), 0), 32);
    internal::FeatureResponseHeader challenge;
    ASSERT_EQ(recv(fd, &challenge, sizeof(challenge), MSG_WAITALL), 16);
    ASSERT_EQ(challenge.magic, internal::kAuthChallengeMagic);
    std::string server_nonce(challenge.payload_bytes, '\0');
    ASSERT_EQ(recv(fd, server_nonce.data(), server_nonce.size(), MSG_WAITALL),
              32);
    // A proof with the token but the directions swapped is no proof.
    const std::string forged = HmacSha256(
        kToken, absl::StrCat(internal::kAuthServerLabel, nonce, server_nonce));
    internal::FeatureRequestHeader proof;
    proof.magic = internal::kAuthProofMagic;
    proof.num_ids = forged.size();
    ASSERT_EQ(send(fd, &proof, sizeof(proof), 0), 16);
    ASSERT_EQ(send(fd, forged.data(), forged.size(), 0), 32);
    internal::FeatureResponseHeader h;
    ASSERT_EQ(recv(fd, &h, sizeof(h), MSG_WAITALL), 16);
    EXPECT_EQ(h.magic, internal::kFeatureResponseMagic);
    EXPECT_EQ(h.code, static_cast<int>(absl::StatusCode::kUnauthenticated));
    close(fd);
  }
  bool transport_failed = true;
  ASSERT_OK(FetchOverPort(kToken, SomeIds(), &transport_failed));
}

// The client checks the server's proof: a listener that plays the handshake
// without knowing the token is refused before any request is sent.
TEST(FeaturePortClientAuthTest, RefusesAServerThatDoesNotKnowTheToken) {
  int listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  ASSERT_EQ(listen(listen_fd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  std::atomic<bool> got_request{false};
  std::thread impostor([&] {
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    char hello[16 + 32];
    recv(fd, hello, sizeof(hello), MSG_WAITALL);
    internal::FeatureResponseHeader challenge;
    challenge.magic = internal::kAuthChallengeMagic;
    challenge.payload_bytes = 32;
    const std::string nonce(32, 's');
    send(fd, &challenge, sizeof(challenge), MSG_NOSIGNAL);
    send(fd, nonce.data(), nonce.size(), MSG_NOSIGNAL);
    char proof[16 + 32];
    recv(fd, proof, sizeof(proof), MSG_WAITALL);
    internal::FeatureResponseHeader accept_header;
    accept_header.magic = internal::kAuthAcceptMagic;
    accept_header.payload_bytes = 32;
    const std::string guess(32, 'g');
    send(fd, &accept_header, sizeof(accept_header), MSG_NOSIGNAL);
    send(fd, guess.data(), guess.size(), MSG_NOSIGNAL);
    internal::FeatureRequestHeader request;
    if (recv(fd, &request, sizeof(request), MSG_WAITALL) == 16) {
      got_request = true;
    }
    close(fd);
  });
  internal::FeaturePortClient client("127.0.0.1", port, kToken);
  std::vector<NodeId> ids = {1, 2};
  std::vector<float> out(2 * kDim);
  bool transport_failed = true;
  absl::Status s =
      client.Fetch(ids, kDim, out.data(), nullptr,
                   absl::Now() + absl::Seconds(10), &transport_failed);
  impostor.join();
  close(listen_fd);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not know the auth token"));
  EXPECT_FALSE(transport_failed);
  EXPECT_FALSE(got_request);
}

}  // namespace
}  // namespace shardgnn
