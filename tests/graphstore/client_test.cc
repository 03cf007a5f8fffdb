#include "graphstore/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "graphstore/server.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::SilentListener;
using testing::TempDir;

// A port nobody listens on.
std::string DeadAddress() {
  return "127.0.0.1:" + std::to_string(testing::PickFreePort());
}

TEST(ClientTest, DeadAddressIsUnavailableAfterBoundedRetries) {
  std::string address = DeadAddress();
  GraphStoreClientOptions options;
  options.max_attempts = 3;
  options.initial_backoff = absl::Milliseconds(50);
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(address, options));
  absl::Time start = absl::Now();
  auto info = client->Info();
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(info.status().message()),
              HasSubstr(address + ": UNAVAILABLE: Info:"));
  // Two backoffs (50 + 100 ms) between three attempts, then it gives up.
  EXPECT_GE(took, absl::Milliseconds(140));
  EXPECT_LT(took, absl::Seconds(3));
}

TEST(ClientTest, SilentPortFailsPromptlyNamingTheAddress) {
  SilentListener silent;
  GraphStoreClientOptions options;
  options.call_timeout = absl::Milliseconds(300);
  options.max_attempts = 2;
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(silent.address(), options));
  absl::Time start = absl::Now();
  absl::Status s = client->Health();
  absl::Duration took = absl::Now() - start;
  // The HTTP/2 handshake never completes: gRPC reports UNAVAILABLE or the
  // deadline, whichever it notices first.
  EXPECT_TRUE(s.code() == absl::StatusCode::kDeadlineExceeded ||
              s.code() == absl::StatusCode::kUnavailable)
      << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(silent.address()));
  EXPECT_LT(took, absl::Seconds(3));
}

// A real gRPC server whose Health handler does not answer until released.
class StuckService final : public proto::GraphStore::Service {
 public:
  grpc::Status Health(grpc::ServerContext*, const proto::HealthRequest*,
                      proto::HealthResponse* resp) override {
    release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    resp->set_serving(true);
    return grpc::Status::OK;
  }
  void Release() { release_.Notify(); }

 private:
  absl::Notification release_;
};

TEST(ClientTest, SlowServerHitsTheDeadlineWithoutRetrying) {
  StuckService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::string address = "127.0.0.1:" + std::to_string(port);
  GraphStoreClientOptions options;
  options.call_timeout = absl::Milliseconds(200);
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(address, options));
  absl::Time start = absl::Now();
  absl::Status s = client->Health();
  absl::Duration took = absl::Now() - start;
  service.Release();
  server->Shutdown();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(address + ": DEADLINE_EXCEEDED: Health:"));
  EXPECT_GE(took, absl::Milliseconds(190));
  EXPECT_LT(took, absl::Seconds(2)) << "DEADLINE_EXCEEDED must not be retried";
}

TEST(ClientTest, WaitForHealthyGivesUpAtTheDeadline) {
  std::string address = DeadAddress();
  ASSERT_OK_AND_ASSIGN(auto client, GraphStoreClient::Connect(address));
  absl::Time start = absl::Now();
  absl::Status s =
      client->WaitForHealthy(absl::Now() + absl::Milliseconds(400));
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr(address));
  EXPECT_GE(took, absl::Milliseconds(390));
  EXPECT_LT(took, absl::Seconds(3));
}

TEST(ClientTest, BadAddressIsInvalidArgument) {
  EXPECT_EQ(GraphStoreClient::Connect("no-port").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientTest, ServerWidthMismatchIsDataLoss) {
  TempDir dir;
  auto graph = testing::MakeTestGraph(50, 3);
  ASSERT_OK(testing::WriteTestShards(graph, 1, dir.path()));
  ShardStoreOptions store_options;
  store_options.path = dir.Sub("part-0");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const ShardStore> store,
                       ShardStore::Open(store_options));
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Start(store, {}));
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server->address()));
  ASSERT_OK(client->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  std::vector<float> out(2 * 4);
  absl::Status s = client->GetFeatures({1, 2}, /*feature_dim=*/4, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  int64_t dim = 0;
  ASSERT_OK_AND_ASSIGN(std::vector<float> rows,
                       client->GetFeatures({1, 2}, &dim));
  EXPECT_EQ(dim, 3);
  EXPECT_EQ(rows, std::vector<float>(graph.Row(1), graph.Row(1) + 6));
}

}  // namespace
}  // namespace shardgnn
