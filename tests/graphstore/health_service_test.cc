// gRPC's standard services on the storage server (issue 13): the health
// service grpc.health.v1.Health (Check, Watch) and server reflection, called
// by real gRPC clients (tests/graphstore/protos) on real servers on loopback
// ports: while loading, serving and shutting down, with an auth token, over
// TLS, and through `shardgnn serve`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "google/protobuf/descriptor.pb.h"
#include "graphstore/client.h"
#include "graphstore/server.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "proto/graphstore.grpc.pb.h"
#include "reflection_v1alpha.pb.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::Contains;
using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;
namespace reflection = ::shardgnn::testing::reflection;

constexpr int64_t kNodes = 100;
constexpr int64_t kDim = 4;
constexpr char kToken[] = "5e2b9c0d1f3a4e6b8c7d9e0f1a2b3c4d";
constexpr char kOurService[] = "shardgnn.proto.GraphStore";
constexpr char kReflectionMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

std::shared_ptr<grpc::Channel> Plaintext(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

// grpc.health.v1.Health/Check for `service`, as grpc_health_probe calls it
// (no token, a deadline): the status's name ("SERVING", "NOT_SERVING"), or
// the call's error code ("UNAVAILABLE", ...).
std::string Check(const std::shared_ptr<grpc::Channel>& channel,
                  const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  grpc::Status s = stub->Check(&ctx, request, &response);
  if (!s.ok()) return absl::StatusCodeToString(FromGrpc(s).code());
  return HealthCheckResponse::ServingStatus_Name(response.status());
}

// Waits for one operation on `cq` to finish; true if it is `tag` and
// succeeded.
bool Await(grpc::CompletionQueue* cq, int tag) {
  void* got = nullptr;
  bool ok = false;
  return cq->Next(&got, &ok) && got == reinterpret_cast<void*>(tag) && ok;
}

// One request on the reflection stream, as grpcurl sends it (no token).
absl::StatusOr<reflection::ServerReflectionResponse> Reflect(
    const std::shared_ptr<grpc::Channel>& channel,
    const reflection::ServerReflectionRequest& request) {
  grpc::TemplatedGenericStub<reflection::ServerReflectionRequest,
                             reflection::ServerReflectionResponse>
      stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub.PrepareCall(&ctx, kReflectionMethod, &cq);
  reflection::ServerReflectionResponse response;
  grpc::Status status;
  stream->StartCall(reinterpret_cast<void*>(1));
  bool ok = Await(&cq, 1);
  if (ok) {
    stream->Write(request, reinterpret_cast<void*>(2));
    ok = Await(&cq, 2);
  }
  if (ok) {
    stream->Read(&response, reinterpret_cast<void*>(3));
    ok = Await(&cq, 3);
  }
  if (ok) {
    stream->WritesDone(reinterpret_cast<void*>(4));
    ok = Await(&cq, 4);
  }
  stream->Finish(&status, reinterpret_cast<void*>(5));
  Await(&cq, 5);
  cq.Shutdown();
  void* tag;
  bool drained;
  while (cq.Next(&tag, &drained)) {
  }
  if (!status.ok()) return FromGrpc(status);
  if (!ok) return absl::UnknownError("reflection stream broke off");
  return response;
}

absl::StatusOr<std::vector<std::string>> ListServices(
    const std::shared_ptr<grpc::Channel>& channel) {
  reflection::ServerReflectionRequest request;
  request.set_list_services("");
  ASSIGN_OR_RETURN(reflection::ServerReflectionResponse response,
                   Reflect(channel, request));
  std::vector<std::string> names;
  for (const auto& s : response.list_services_response().service()) {
    names.push_back(s.name());
  }
  return names;
}

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK(WriteTestShards(graph_, 1, dir_.Sub("shards")).status());
    ShardStoreOptions options;
    options.path = dir_.Sub("shards/part-0");
    options.in_memory = true;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
  }

  // A client of our own service that does not retry.
  std::unique_ptr<GraphStoreClient> OurClient(const std::string& address) {
    GraphStoreClientOptions options;
    options.max_attempts = 1;
    options.call_timeout = absl::Seconds(5);
    auto client = GraphStoreClient::Connect(address, options);
    EXPECT_OK(client.status());
    return client.ok() ? std::move(client).value() : nullptr;
  }

  TempDir dir_;
  TestGraph graph_;
  std::shared_ptr<const ShardStore> store_;
};

TEST_F(HealthServiceTest, ServingForTheServerAndOurServiceOnceStarted) {
  ASSERT_OK_AND_ASSIGN(
      auto server, GraphStoreServer::Start(store_, GraphStoreServerOptions()));
  auto channel = Plaintext(server->address());
  EXPECT_EQ(Check(channel, ""), "SERVING");
  EXPECT_EQ(Check(channel, kOurService), "SERVING");
  EXPECT_STREQ(kOurService, proto::GraphStore::service_full_name());
  // A service the server does not have is not reported serving.
  EXPECT_EQ(Check(channel, "no.such.Service"), "NOT_FOUND");
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

TEST_F(HealthServiceTest, NotServingWhileLoadingThenServing) {
  ASSERT_OK_AND_ASSIGN(auto server,
                       GraphStoreServer::Bind(GraphStoreServerOptions()));
  auto channel = Plaintext(server->address());
  EXPECT_EQ(Check(channel, ""), "NOT_SERVING");
  EXPECT_EQ(Check(channel, kOurService), "NOT_SERVING");
  EXPECT_EQ(server->feature_port(), 0);  // Bound only once it serves.
  // Our own service says the same: Health answers "not serving", the rest
  // UNAVAILABLE, which clients retry like a refused connection.
  auto client = OurClient(server->address());
  ASSERT_NE(client, nullptr);
  absl::Status health = client->Health();
  EXPECT_EQ(health.code(), absl::StatusCode::kUnavailable) << health;
  EXPECT_THAT(health.message(), HasSubstr("not serving"));
  absl::Status info = client->Info().status();
  EXPECT_EQ(info.code(), absl::StatusCode::kUnavailable) << info;
  EXPECT_THAT(info.message(), HasSubstr("loading"));

  ASSERT_OK(server->Serve(store_));
  EXPECT_EQ(Check(channel, ""), "SERVING");
  EXPECT_EQ(Check(channel, kOurService), "SERVING");
  EXPECT_OK(client->Health());
  ASSERT_OK_AND_ASSIGN(ServerInfo served, client->Info());
  EXPECT_EQ(served.meta.num_nodes_total, kNodes);
  EXPECT_EQ(served.feature_port, server->feature_port());
  EXPECT_GT(server->feature_port(), 0);
  EXPECT_EQ(server->Serve(store_).code(),
            absl::StatusCode::kFailedPrecondition);
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

TEST_F(HealthServiceTest, NotServingFromTheStartOfShutdownThenGone) {
  ASSERT_OK_AND_ASSIGN(
      auto server, GraphStoreServer::Start(store_, GraphStoreServerOptions()));
  auto channel = Plaintext(server->address());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  HealthCheckRequest request;
  request.set_service(kOurService);
  auto watch = stub->Watch(&ctx, request);
  HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::SERVING);

  // Waited for when it goes out of scope, even if an assertion fails.
  auto shutdown = std::async(std::launch::async, [&] {
    server->Shutdown(absl::Now() + absl::Seconds(5));
  });
  // The watcher is told before the server stops, and a check on the open
  // connection meanwhile (if it still gets through) is not SERVING either.
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_NE(Check(channel, ""), "SERVING");
  shutdown.wait();
  while (watch->Read(&update)) {
    EXPECT_NE(update.status(), HealthCheckResponse::SERVING);
  }
  watch->Finish();  // Cancelled or ended by the shutdown: either is fine.
  // Afterwards nothing answers on the port.
  EXPECT_EQ(Check(Plaintext(server->address()), ""), "UNAVAILABLE");
}

TEST_F(HealthServiceTest, HealthAndReflectionNeedNoTokenWhereCallsDo) {
  GraphStoreServerOptions options;
  options.auth_token = kToken;
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Start(store_, options));
  auto channel = Plaintext(server->address());
  // Our calls are refused without the token...
  auto client = OurClient(server->address());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Info().status().code(), absl::StatusCode::kUnauthenticated);
  // ...the standard health service and reflection answer.
  EXPECT_EQ(Check(channel, ""), "SERVING");
  EXPECT_EQ(Check(channel, kOurService), "SERVING");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> services,
                       ListServices(channel));
  EXPECT_THAT(services, Contains(kOurService));
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

TEST_F(HealthServiceTest, ReflectionListsOurServiceAndGivesItsSchema) {
  ASSERT_OK_AND_ASSIGN(
      auto server, GraphStoreServer::Start(store_, GraphStoreServerOptions()));
  auto channel = Plaintext(server->address());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> services,
                       ListServices(channel));
  EXPECT_THAT(services, Contains(kOurService));
  EXPECT_THAT(services, Contains("grpc.health.v1.Health"));

  // What grpcurl asks next: the file defining the service.
  reflection::ServerReflectionRequest request;
  request.set_file_containing_symbol(kOurService);
  ASSERT_OK_AND_ASSIGN(reflection::ServerReflectionResponse response,
                       Reflect(channel, request));
  ASSERT_TRUE(response.has_file_descriptor_response())
      << response.error_response().error_message();
  bool found = false;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    if (file.name() != "proto/graphstore.proto") continue;
    found = true;
    ASSERT_EQ(file.service_size(), 1);
    std::vector<std::string> methods;
    for (const auto& m : file.service(0).method()) methods.push_back(m.name());
    EXPECT_THAT(methods, Contains("SampleNeighbors"));
    EXPECT_THAT(methods, Contains("GetFeatures"));
  }
  EXPECT_TRUE(found);
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

// Runs a shell command quietly; true on exit status 0.
bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

TEST_F(HealthServiceTest, HealthAndReflectionWorkOverTlsWithoutToken) {
  if (!Sh("openssl version")) GTEST_SKIP() << "no openssl command";
  const std::string ca = dir_.Sub("ca"), leaf = dir_.Sub("server");
  std::ofstream(leaf + ".ext") << "subjectAltName=IP:127.0.0.1\n";
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";
  ASSERT_TRUE(Sh(absl::StrCat("openssl req -x509 ", key,
                              " -nodes -days 2 -subj '/CN=test CA' -keyout ",
                              ca, ".key -out ", ca, ".pem")));
  ASSERT_TRUE(Sh(absl::StrCat("openssl req ", key,
                              " -nodes -subj '/CN=server' -keyout ", leaf,
                              ".key -out ", leaf, ".csr")));
  ASSERT_TRUE(Sh(absl::StrCat(
      "openssl x509 -req -days 2 -in ", leaf, ".csr -CA ", ca, ".pem -CAkey ",
      ca, ".key -CAcreateserial -extfile ", leaf, ".ext -out ", leaf, ".pem")));
  GraphStoreServerOptions options;
  ASSERT_OK_AND_ASSIGN(options.tls_cert_pem, ReadFileToString(leaf + ".pem"));
  ASSERT_OK_AND_ASSIGN(options.tls_key_pem, ReadFileToString(leaf + ".key"));
  options.auth_token = kToken;
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Start(store_, options));
  ASSERT_TRUE(server->tls());

  grpc::SslCredentialsOptions ssl;
  ASSERT_OK_AND_ASSIGN(ssl.pem_root_certs, ReadFileToString(ca + ".pem"));
  auto channel =
      grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl));
  EXPECT_EQ(Check(channel, ""), "SERVING");
  EXPECT_EQ(Check(channel, kOurService), "SERVING");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> services,
                       ListServices(channel));
  EXPECT_THAT(services, Contains(kOurService));
  // A plaintext probe gets nothing from a TLS server.
  EXPECT_EQ(Check(Plaintext(server->address()), ""), "UNAVAILABLE");
  server->Shutdown(absl::Now() + absl::Seconds(5));
}

// `shardgnn serve` end to end: health checks on its port say SERVING once it
// is ready, and a watcher hears NOT_SERVING when SIGTERM starts the drain.
TEST_F(HealthServiceTest, ServeCommandReportsServingThenNotServingOnSigterm) {
  SubprocessOptions options;
  options.argv = {testing::ShardgnnBinary(),
                  "serve",
                  "--partition",
                  dir_.Sub("shards"),
                  "--part",
                  "0",
                  "--memory",
                  "--listen",
                  "127.0.0.1:0",
                  "--threads",
                  "2"};
  ASSERT_OK_AND_ASSIGN(auto child, Subprocess::Start(options));
  ASSERT_OK_AND_ASSIGN(
      std::string line,
      child->WaitForLine("ready on ", std::chrono::seconds(60)));
  std::string address = line.substr(line.find("ready on ") + 9);
  address = address.substr(0, address.find(' '));
  auto channel = Plaintext(address);
  EXPECT_EQ(Check(channel, ""), "SERVING");
  EXPECT_EQ(Check(channel, kOurService), "SERVING");

  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto watch = stub->Watch(&ctx, HealthCheckRequest());
  HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::SERVING);
  child->Signal(SIGTERM);
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(child->Wait(std::chrono::seconds(30)).value_or(-1), 0)
      << child->Tail(10);
  while (watch->Read(&update)) {
  }
  watch->Finish();  // Ended by the server's exit.
}

}  // namespace
}  // namespace shardgnn
