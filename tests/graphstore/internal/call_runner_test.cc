// The storage server's call machinery (graphstore/internal/call_runner.h)
// behind a real gRPC server on a loopback port: what a call costs the server
// before it is admitted.
#include "graphstore/internal/call_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn::internal {
namespace {

constexpr char kToken[] = "5b1d0c9e7f3a4e2d8c6b0a9f1e3d5c7b";
enum Method { kHealth, kInfo };

// Answers Info through a CallRunner whose heavy-call judge counts its calls
// and records the thread the work ran on.
class InfoService : public proto::GraphStore::CallbackService {
 public:
  InfoService(bool heavy, bool loaded)
      : heavy_(heavy),
        runner_({"Health", "Info"}, kHealth, kToken, WorkQueueOptions{},
                [loaded] { return loaded; }) {}

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx,
                                 const proto::InfoRequest* req,
                                 proto::InfoResponse* resp) override {
    const std::thread::id grpc_thread = std::this_thread::get_id();
    auto judge = [this] {
      ++judged_;
      return heavy_;
    };
    return runner_.Run(ctx, kInfo, req, resp, judge,
                       [this, grpc_thread, resp]() -> absl::Status {
                         on_grpc_thread_ =
                             std::this_thread::get_id() == grpc_thread;
                         resp->set_part_id(7);
                         return absl::OkStatus();
                       });
  }

  int judged() const { return judged_.load(); }
  bool on_grpc_thread() const { return on_grpc_thread_.load(); }

 private:
  const bool heavy_;
  CallRunner runner_;
  std::atomic<int> judged_{0};
  std::atomic<bool> on_grpc_thread_{false};
};

class CallRunnerTest : public ::testing::Test {
 protected:
  void Start(bool heavy, bool loaded = true) {
    service_ = std::make_unique<InfoService>(heavy, loaded);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = proto::GraphStore::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                            grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  // Info with `token` (empty: none); its status, the answer in `*resp`.
  grpc::Status Info(const std::string& token, proto::InfoResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    return stub_->Info(&ctx, proto::InfoRequest(), resp);
  }

  std::unique_ptr<InfoService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<proto::GraphStore::Stub> stub_;
};

TEST_F(CallRunnerTest, ACallIsJudgedOnlyOnceAdmitted) {
  Start(/*heavy=*/false);
  proto::InfoResponse resp;
  EXPECT_EQ(Info("", &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Info("wrong-token", &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(service_->judged(), 0);

  ASSERT_TRUE(Info(kToken, &resp).ok());
  EXPECT_EQ(resp.part_id(), 7u);
  EXPECT_EQ(service_->judged(), 1);
  EXPECT_TRUE(service_->on_grpc_thread());
}

TEST_F(CallRunnerTest, ACallWhileTheShardLoadsIsNotJudged) {
  Start(/*heavy=*/false, /*loaded=*/false);
  proto::InfoResponse resp;
  EXPECT_EQ(Info(kToken, &resp).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_->judged(), 0);
}

TEST_F(CallRunnerTest, ACallJudgedHeavyRunsOnTheWorkQueue) {
  Start(/*heavy=*/true);
  proto::InfoResponse resp;
  ASSERT_TRUE(Info(kToken, &resp).ok());
  EXPECT_EQ(resp.part_id(), 7u);
  EXPECT_EQ(service_->judged(), 1);
  EXPECT_FALSE(service_->on_grpc_thread());
}

}  // namespace
}  // namespace shardgnn::internal
