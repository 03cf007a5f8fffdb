// Learned-embedding pulls over the feature port (graphstore/internal/
// feature_port.h): a real server on loopback ports over a real shard, the
// same rows, waits and errors as PullEmbeddings over gRPC.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "graphstore/client.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/server.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 400;
constexpr int64_t kFeatureDim = 16;
constexpr int64_t kDim = 8;

int64_t Calls(const ServerStats& stats, const std::string& method,
              bool errors = false) {
  for (const auto& m : stats.methods) {
    if (m.method == method) return errors ? m.errors : m.calls;
  }
  return -1;
}

// Serves part 1 of a 2-part fixture; one client pulls over the feature port,
// the other over gRPC.
class EmbeddingPullPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kFeatureDim);
    ASSERT_OK_AND_ASSIGN(metas_, WriteTestShards(graph_, 2, dir_.path()));
    ShardStoreOptions options;
    options.path = dir_.Sub("part-1");
    options.in_memory = true;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
    config_.name = "node";
    config_.dim = kDim;
    config_.optimizer = EmbeddingOptimizer::kAdagrad;
    config_.lr = 0.1;
    config_.seed = 7;
    config_.num_trainers = 1;
    config_.ordered = true;
    config_.run_id = "run-a";
  }
  void Start(const std::string& token = "") {
    GraphStoreServerOptions options;
    options.auth_token = token;
    options.max_ids_per_call = 1000;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    GraphStoreClientOptions port_options;
    port_options.auth_token = token;
    GraphStoreClientOptions grpc_options = port_options;
    grpc_options.use_feature_port = false;
    ASSERT_OK_AND_ASSIGN(port_client_, GraphStoreClient::Connect(
                                           server_->address(), port_options));
    ASSERT_OK_AND_ASSIGN(grpc_client_, GraphStoreClient::Connect(
                                           server_->address(), grpc_options));
    ASSERT_OK(port_client_->Info().status());
    ASSERT_OK(grpc_client_->Info().status());
    ASSERT_TRUE(port_client_->UsesFeaturePort());
    ASSERT_OK(grpc_client_->CreateEmbeddingTable(config_));
  }
  std::vector<NodeId> Owned() const {
    std::vector<NodeId> ids(
        static_cast<size_t>(metas_[1].node_end - metas_[1].node_start));
    std::iota(ids.begin(), ids.end(), metas_[1].node_start);
    return ids;
  }
  // Trainer 0's gradient of `step` for every other owned node.
  void Push(int64_t step) {
    std::vector<NodeId> ids;
    for (NodeId id : Owned()) {
      if (id % 2 == 0) ids.push_back(id);
    }
    std::vector<float> gradients(ids.size() * kDim);
    for (size_t i = 0; i < gradients.size(); ++i) {
      gradients[i] = 0.01f * static_cast<float>(i % 13) + 0.01f;
    }
    ASSERT_OK(
        grpc_client_->PushEmbeddingGradients(config_, 0, step, ids, gradients));
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  EmbeddingTableConfig config_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> port_client_, grpc_client_;
};

TEST_F(EmbeddingPullPortTest, RowsEqualGrpcPullsBitForBit) {
  Start();
  Push(0);
  std::vector<NodeId> ids = Owned();
  std::mt19937_64 rng(5);
  std::shuffle(ids.begin(), ids.end(), rng);
  // Scattered into every other slot of a buffer twice as long, reversed.
  std::vector<size_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) rows[i] = 2 * (ids.size() - 1 - i);
  std::vector<float> over_port(2 * ids.size() * kDim, -7.0f);
  std::vector<float> over_grpc(over_port);
  ASSERT_OK(port_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         over_port.data(), rows));
  ASSERT_OK(grpc_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         over_grpc.data(), rows));
  EXPECT_EQ(over_port, over_grpc);
  // The pushed rows moved from their initial values, the others did not,
  // and the slots in between are untouched.
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* row = over_port.data() + rows[i] * kDim;
    const float initial = InitialEmbeddingValue(config_, ids[i], 0);
    if (ids[i] % 2 == 0) {
      EXPECT_NE(row[0], initial) << "node " << ids[i];
    } else {
      EXPECT_EQ(row[0], initial) << "node " << ids[i];
    }
    EXPECT_EQ(over_port[(rows[i] + 1) * kDim], -7.0f);
  }
  // Contiguous, and an empty pull.
  std::vector<float> contiguous(ids.size() * kDim);
  ASSERT_OK(port_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         contiguous.data()));
  EXPECT_EQ(contiguous[kDim], over_port[rows[1] * kDim]);
  ASSERT_OK(port_client_->PullEmbeddings(config_, {}, 1, 0, absl::Seconds(2),
                                         contiguous.data()));

  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(Calls(stats, "FeaturePortPull"), 3);
  EXPECT_EQ(Calls(stats, "PullEmbeddings"), 1);
}

TEST_F(EmbeddingPullPortTest, ClockWaitsAndErrorsAreTheGrpcOnes) {
  Start();
  std::vector<NodeId> ids = Owned();
  std::vector<float> out(ids.size() * kDim);
  // Step 1 before step 0's push: the server holds the pull for its wait,
  // then says which trainer it waits for; the connection stays usable.
  const absl::Time start = absl::Now();
  absl::Status s = port_client_->PullEmbeddings(
      config_, ids, 1, 0, absl::Milliseconds(300), out.data());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(server_->address() + ": FAILED_PRECONDITION: PullEmbeddings:"));
  absl::Status grpc = grpc_client_->PullEmbeddings(
      config_, ids, 1, 0, absl::Milliseconds(300), out.data());
  EXPECT_EQ(grpc.code(), s.code());
  EXPECT_THAT(std::string(grpc.message()), HasSubstr("waits for pushes"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("waits for pushes"));
  // A pull that a push releases while it waits.
  std::thread pusher([&] {
    absl::SleepFor(absl::Milliseconds(200));
    Push(0);
  });
  EXPECT_OK(port_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(5),
                                         out.data()));
  pusher.join();

  // A row the server does not own, an unknown table, another run's table.
  std::vector<NodeId> foreign = {metas_[0].node_start + 3};
  s = port_client_->PullEmbeddings(config_, foreign, 1, 0, absl::Seconds(1),
                                   out.data());
  grpc = grpc_client_->PullEmbeddings(config_, foreign, 1, 0, absl::Seconds(1),
                                      out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), grpc.code()) << s << " / " << grpc;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(std::to_string(metas_[0].node_start + 3)));
  EmbeddingTableConfig other = config_;
  other.name = "item";
  s = port_client_->PullEmbeddings(other, ids, 1, 0, absl::Seconds(1),
                                   out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  other = config_;
  other.run_id = "run-b";
  s = port_client_->PullEmbeddings(other, ids, 1, 0, absl::Seconds(1),
                                   out.data());
  EXPECT_EQ(s.code(),
            grpc_client_
                ->PullEmbeddings(other, ids, 1, 0, absl::Seconds(1), out.data())
                .code())
      << s;
  // Rows narrower than the table: the client's DATA_LOSS, as over gRPC.
  other = config_;
  other.dim = kDim + 1;
  std::vector<float> wide(ids.size() * (kDim + 1));
  s = port_client_->PullEmbeddings(other, ids, 1, 0, absl::Seconds(1),
                                   wide.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;

  EXPECT_TRUE(port_client_->UsesFeaturePort());  // Errors are not breakage.
  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  // Six pulls; the server failed four (DATA_LOSS is the client's finding).
  EXPECT_EQ(Calls(stats, "FeaturePortPull"), 6);
  EXPECT_EQ(Calls(stats, "FeaturePortPull", /*errors=*/true), 4);
}

TEST_F(EmbeddingPullPortTest, WithATokenPullsAuthenticateFirst) {
  Start(std::string(32, 'k'));
  Push(0);
  std::vector<NodeId> ids = Owned();
  std::vector<float> a(ids.size() * kDim), b(ids.size() * kDim);
  ASSERT_OK(port_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         a.data()));
  ASSERT_OK(grpc_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         b.data()));
  EXPECT_EQ(a, b);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(Calls(stats, "FeaturePortPull"), 1);
}

// Hand-made requests: framing the server cannot trust is answered and the
// connection closed; the server goes on serving.
TEST_F(EmbeddingPullPortTest, MalformedPullsAreRefusedAndTheServerLivesOn) {
  Start();
  auto send_pull = [&](uint64_t num_ids, internal::EmbeddingPullHeader p,
                       const std::string& names) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(server_->feature_port()));
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    internal::FeatureRequestHeader h;
    h.magic = internal::kEmbeddingPullMagic;
    h.num_ids = num_ids;
    std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
    bytes.append(reinterpret_cast<const char*>(&p), sizeof(p));
    bytes += names;
    EXPECT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    internal::FeatureResponseHeader r;
    std::string message;
    if (recv(fd, &r, sizeof(r), MSG_WAITALL) == sizeof(r)) {
      message.resize(std::min<uint64_t>(r.payload_bytes, 4096));
      recv(fd, message.data(), message.size(), MSG_WAITALL);
    }
    // Closed: end of file at once; open: nothing to read.
    pollfd readable{fd, POLLIN, 0};
    char more;
    const bool closed =
        poll(&readable, 1, 1000) == 1 && recv(fd, &more, 1, 0) == 0;
    close(fd);
    return std::make_pair(static_cast<absl::StatusCode>(r.code),
                          message + (closed ? " [closed]" : ""));
  };
  internal::EmbeddingPullHeader p;
  p.table_bytes = 1u << 30;  // Would size a 1 GiB string.
  auto [code, message] = send_pull(1, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("at most 1024"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  p = {};
  std::tie(code, message) = send_pull(uint64_t{1} << 40, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("exceeds the limit of 1000"));
  // Well framed but naming nothing: the table's error, then the connection
  // would stay open (the test closes it).
  p.table_bytes = 4;
  p.run_id_bytes = 5;
  std::tie(code, message) = send_pull(0, p, "nodeother");
  EXPECT_EQ(code, absl::StatusCode::kFailedPrecondition) << message;
  EXPECT_THAT(message, ::testing::Not(HasSubstr("[closed]")));

  std::vector<NodeId> ids = Owned();
  std::vector<float> out(ids.size() * kDim);
  EXPECT_OK(port_client_->PullEmbeddings(config_, ids, 0, 0, absl::Seconds(1),
                                         out.data()));
}

}  // namespace
}  // namespace shardgnn
