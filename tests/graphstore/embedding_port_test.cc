// Learned-embedding pulls and pushes over the feature port (graphstore/
// internal/feature_port.h): a real server on loopback ports over a real
// shard, the same rows, waits, updates and errors as PullEmbeddings and
// PushEmbeddingGradients over gRPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
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
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 400;
constexpr int64_t kFeatureDim = 16;
constexpr int64_t kDim = 8;

// Serves part 1 of a 2-part fixture; one client pulls and pushes over the
// feature port, the other over gRPC.
class EmbeddingPortTest : public ::testing::Test {
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
    config_.run_secret = "run-a's secret, 128 bits or more";
  }
  void Start(const std::string& token = "", int64_t max_ids_per_call = 1000) {
    GraphStoreServerOptions options;
    options.auth_token = token;
    options.max_ids_per_call = max_ids_per_call;
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
  // Trainer 0's gradient of `step` for every other owned node, over gRPC.
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
  // Every owned row of the table at `step`, pulled by `client`.
  std::vector<float> Table(GraphStoreClient* client, int64_t step) {
    std::vector<NodeId> ids = Owned();
    std::vector<float> rows(ids.size() * kDim);
    EXPECT_OK(client->PullEmbeddings(config_, ids, step, 0, absl::Seconds(2),
                                     rows.data()));
    return rows;
  }
  // A request header with `magic` and `num_ids`, the method's own header
  // `p`, then `rest`, sent by SendRaw.
  template <typename Header>
  std::pair<absl::StatusCode, std::string> SendFramed(uint32_t magic,
                                                      uint64_t num_ids,
                                                      const Header& p,
                                                      const std::string& rest) {
    internal::FeatureRequestHeader h;
    h.magic = magic;
    h.num_ids = num_ids;
    std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
    bytes.append(reinterpret_cast<const char*>(&p), sizeof(p));
    return SendRaw(bytes + rest);
  }

  // A hand-made request on a new connection; the server's code and message,
  // the message ending in " [closed]" if the server then closed.
  std::pair<absl::StatusCode, std::string> SendRaw(const std::string& bytes) {
    int fd = ConnectToLoopback(server_->feature_port());
    EXPECT_GE(fd, 0);
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
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  EmbeddingTableConfig config_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> port_client_, grpc_client_;
};

TEST_F(EmbeddingPortTest, RowsEqualGrpcPullsBitForBit) {
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
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPull"), 3);
  EXPECT_EQ(MethodCalls(stats, "PullEmbeddings"), 1);
}

// The process's minor page faults so far (the server runs in it).
int64_t MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Issue 17: each connection kept pull buffers of its own, so the first pull
// over every connection (a trainer opens several per server) faulted the
// whole answer in afresh: thousands of pages per server and step over a
// run's first epochs. The connections now share one pool of them.
TEST_F(EmbeddingPortTest, ANewConnectionsPullReusesThePooledBuffers) {
  config_.dim = 128;
  Start("", 100000);
  // 40k rows of 512 bytes: a 20 MB answer, about 5,000 pages.
  std::vector<NodeId> ids(40000);
  const std::vector<NodeId> owned = Owned();
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = owned[i % owned.size()];
  std::vector<float> out(ids.size() * config_.dim, 1.0f);
  ASSERT_OK(port_client_->PullEmbeddings(config_, ids, 0, 0, absl::Seconds(5),
                                         out.data()));
  const std::vector<float> first = out;
  GraphStoreClientOptions options;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphStoreClient> other,
                       GraphStoreClient::Connect(server_->address(), options));
  ASSERT_OK(other->Info().status());
  ASSERT_TRUE(other->UsesFeaturePort());
  std::fill(out.begin(), out.end(), 0.0f);
  // The server's thread puts the first pull's buffers back just after its
  // last byte went out: a moment for it (on a loaded machine).
  absl::SleepFor(absl::Milliseconds(100));
  const int64_t before = MinorFaults();
  ASSERT_OK(
      other->PullEmbeddings(config_, ids, 0, 0, absl::Seconds(5), out.data()));
  const int64_t faults = MinorFaults() - before;
  EXPECT_EQ(out, first);
  EXPECT_LT(faults, 1000) << "a pull on a new connection faulted " << faults
                          << " pages";
}

TEST_F(EmbeddingPortTest, ClockWaitsAndErrorsAreTheGrpcOnes) {
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
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPull"), 6);
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPull", /*errors=*/true), 4);
}

TEST_F(EmbeddingPortTest, WithATokenPullsAuthenticateFirst) {
  Start(std::string(32, 'k'));
  Push(0);
  std::vector<NodeId> ids = Owned();
  std::vector<float> a(ids.size() * kDim), b(ids.size() * kDim);
  ASSERT_OK(port_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         a.data()));
  ASSERT_OK(grpc_client_->PullEmbeddings(config_, ids, 1, 0, absl::Seconds(2),
                                         b.data()));
  EXPECT_EQ(a, b);
  // A push over the authenticated port moves the rows.
  const std::vector<float> gradients(ids.size() * kDim, 0.5f);
  ASSERT_OK(
      port_client_->PushEmbeddingGradients(config_, 0, 1, ids, gradients));
  EXPECT_NE(Table(grpc_client_.get(), 2), b);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPull"), 1);
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush"), 1);
  EXPECT_EQ(MethodCalls(stats, "PushEmbeddingGradients"), 1);  // Push(0).
}

// Issue 51: over the port as over gRPC, a pull or push from another client
// with the cluster's token and the (public) run ID but not the run's secret
// is refused, reads and changes nothing, and leaves the port in use.
TEST_F(EmbeddingPortTest, PullsAndPushesNeedTheRunsSecret) {
  const std::string token(32, 'k');
  Start(token);
  Push(0);
  const std::vector<float> before = Table(grpc_client_.get(), 1);
  GraphStoreClientOptions options;
  options.auth_token = token;
  ASSERT_OK_AND_ASSIGN(auto intruder,
                       GraphStoreClient::Connect(server_->address(), options));
  ASSERT_OK(intruder->Info().status());
  ASSERT_TRUE(intruder->UsesFeaturePort());
  EmbeddingTableConfig stolen = config_;
  stolen.run_secret = "0123456789abcdef0123456789abcdef";
  const std::vector<NodeId> ids = Owned();
  std::vector<float> out(ids.size() * kDim, -1.0f);
  absl::Status s =
      intruder->PullEmbeddings(stolen, ids, 1, 0, absl::Seconds(2), out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("another run's table"));
  EXPECT_EQ(out, std::vector<float>(out.size(), -1.0f));
  const std::vector<float> gradients(ids.size() * kDim, 0.5f);
  s = intruder->PushEmbeddingGradients(stolen, 0, 1, ids, gradients);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("another run's table"));
  stolen.run_secret.clear();
  EXPECT_EQ(
      intruder->PushEmbeddingGradients(stolen, 0, 1, ids, gradients).code(),
      absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(intruder->UsesFeaturePort());  // Refused on the port itself.
  EXPECT_EQ(Table(grpc_client_.get(), 1), before);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPull", /*errors=*/true), 1);
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush", /*errors=*/true), 2);
  // The run's own client goes on over the port.
  ASSERT_OK(
      port_client_->PushEmbeddingGradients(config_, 0, 1, ids, gradients));
  EXPECT_NE(Table(port_client_.get(), 2), before);
}

// A client of the port's first embedding protocol ("SFE1", "SFG1": no run
// secret) is told to update, and served nothing: its push would otherwise
// reach the table.
TEST_F(EmbeddingPortTest, FirstProtocolFramesAreRefusedNamingTheUpdate) {
  Start();
  const std::string names = "node" + config_.run_id;
  internal::EmbeddingPullHeader pull;
  pull.table_bytes = 4;
  pull.run_id_bytes = static_cast<uint32_t>(config_.run_id.size());
  auto [code, message] = SendFramed(0x31454653u, 0, pull, names);
  EXPECT_EQ(code, absl::StatusCode::kFailedPrecondition) << message;
  EXPECT_THAT(message, HasSubstr("older than this server"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  internal::EmbeddingPushHeader push;
  push.table_bytes = 4;
  push.run_id_bytes = static_cast<uint32_t>(config_.run_id.size());
  std::tie(code, message) = SendFramed(0x31474653u, 0, push, names);
  EXPECT_EQ(code, absl::StatusCode::kFailedPrecondition) << message;
  EXPECT_THAT(message, HasSubstr("older than this server"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  // Trainer 0's step 0 is still the next one: the push was not applied.
  ASSERT_OK_AND_ASSIGN(auto tables, grpc_client_->EmbeddingStats());
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].stats.pushes, 0);
  EXPECT_EQ(tables[0].applied_steps, 0);
}

// Hand-made requests: framing the server cannot trust is answered and the
// connection closed; the server goes on serving.
TEST_F(EmbeddingPortTest, MalformedPullsAreRefusedAndTheServerLivesOn) {
  Start();
  auto send_pull = [&](uint64_t num_ids, internal::EmbeddingPullHeader p,
                       const std::string& names) {
    return SendFramed(internal::kEmbeddingPullMagic, num_ids, p, names);
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

// The same pushes, over the port to one server and over gRPC to another
// serving the same shard: the same table after every step, bit for bit.
TEST_F(EmbeddingPortTest, PushesEqualGrpcPushesBitForBit) {
  Start();
  ASSERT_OK_AND_ASSIGN(auto twin, GraphStoreServer::Start(store_, {}));
  GraphStoreClientOptions grpc_only;
  grpc_only.use_feature_port = false;
  ASSERT_OK_AND_ASSIGN(auto twin_client,
                       GraphStoreClient::Connect(twin->address(), grpc_only));
  ASSERT_OK(twin_client->CreateEmbeddingTable(config_));
  std::mt19937_64 rng(11);
  const std::vector<NodeId> owned = Owned();
  for (int64_t step = 0; step < 4; ++step) {
    // A few hundred IDs with repeats (summed by the table), and an empty
    // push at step 2.
    std::vector<NodeId> ids;
    if (step != 2) {
      for (int i = 0; i < 300; ++i) ids.push_back(owned[rng() % owned.size()]);
    }
    std::vector<float> gradients(ids.size() * kDim);
    std::normal_distribution<float> normal;
    for (float& g : gradients) g = normal(rng);
    ASSERT_OK(
        port_client_->PushEmbeddingGradients(config_, 0, step, ids, gradients));
    ASSERT_OK(
        twin_client->PushEmbeddingGradients(config_, 0, step, ids, gradients));
    EXPECT_EQ(Table(grpc_client_.get(), step + 1),
              Table(twin_client.get(), step + 1))
        << "after step " << step;
  }
  // A repeated step is acknowledged and not applied again, as over gRPC.
  const std::vector<float> before = Table(grpc_client_.get(), 4);
  const std::vector<float> gradients(owned.size() * kDim, 1.0f);
  ASSERT_OK(
      port_client_->PushEmbeddingGradients(config_, 0, 3, owned, gradients));
  EXPECT_EQ(Table(grpc_client_.get(), 4), before);

  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush"), 5);
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush", /*errors=*/true), 0);
  EXPECT_EQ(MethodCalls(stats, "PushEmbeddingGradients"), 0);
  ASSERT_OK_AND_ASSIGN(stats, twin_client->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush"), 0);
  EXPECT_EQ(MethodCalls(stats, "PushEmbeddingGradients"), 4);
}

// Every push the table refuses is refused over the port with gRPC's code and
// message, leaves the table unchanged and the connection in use.
TEST_F(EmbeddingPortTest, PushErrorsAreTheGrpcOnesAndChangeNothing) {
  Start();
  const std::vector<float> initial = Table(grpc_client_.get(), 0);
  const NodeId v = Owned()[3];
  const std::vector<float> row(kDim, 0.25f);
  struct Bad {
    std::string what;
    EmbeddingTableConfig config;
    int trainer;
    int64_t step;
    std::vector<NodeId> ids;
    std::vector<float> gradients;
  };
  EmbeddingTableConfig unknown = config_;
  unknown.name = "item";
  std::vector<float> nan_row = row;
  nan_row[2] = std::nanf("");
  const std::vector<Bad> bad = {
      {"narrower rows", config_, 0, 0, {v}, std::vector<float>(kDim - 1, 1)},
      {"a row of another part", config_, 0, 0, {metas_[0].node_start}, row},
      {"a NaN gradient", config_, 0, 0, {v}, nan_row},
      {"a step ahead", config_, 0, 5, {v}, row},
      {"an unknown trainer", config_, 3, 0, {v}, row},
      {"an unknown table", unknown, 0, 0, {v}, row},
  };
  for (const Bad& b : bad) {
    absl::Status port = port_client_->PushEmbeddingGradients(
        b.config, b.trainer, b.step, b.ids, b.gradients);
    absl::Status grpc = grpc_client_->PushEmbeddingGradients(
        b.config, b.trainer, b.step, b.ids, b.gradients);
    EXPECT_FALSE(port.ok()) << b.what;
    EXPECT_EQ(port, grpc) << b.what;
  }
  EXPECT_TRUE(port_client_->UsesFeaturePort());  // Errors are not breakage.
  EXPECT_EQ(Table(grpc_client_.get(), 0), initial);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, grpc_client_->Stats());
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush"), 6);
  EXPECT_EQ(MethodCalls(stats, "FeaturePortPush", /*errors=*/true), 6);
  // And the same connection then pushes.
  ASSERT_OK(port_client_->PushEmbeddingGradients(config_, 0, 0, {v}, row));
  EXPECT_NE(Table(grpc_client_.get(), 1), initial);
}

// Hand-made pushes whose framing the server cannot trust are answered and
// the connection closed, before anything is sized by them.
TEST_F(EmbeddingPortTest, MalformedPushesAreRefusedAndTheServerLivesOn) {
  Start();
  auto send_push = [&](uint64_t num_ids, internal::EmbeddingPushHeader p,
                       const std::string& rest) {
    return SendFramed(internal::kEmbeddingPushMagic, num_ids, p, rest);
  };
  internal::EmbeddingPushHeader p;
  p.gradient_bytes = uint64_t{1} << 40;  // Would size a 1 TiB string.
  auto [code, message] = send_push(1, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("exceeds the 256.0 MiB message limit"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  p = {};
  p.run_id_bytes = 1u << 31;
  std::tie(code, message) = send_push(1, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("at most 1024"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  p = {};
  std::tie(code, message) = send_push(uint64_t{1} << 40, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("exceeds the limit of 1000"));
  p = {};
  p.secret_bytes = 4096;
  std::tie(code, message) = send_push(1, p, "");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message, HasSubstr("with a secret of 4096 bytes; at most 1024"));
  EXPECT_THAT(message, HasSubstr("[closed]"));
  // Well framed, gradients of 3 bytes: the table's error, connection open.
  const NodeId v = Owned()[0];
  p = {};
  p.table_bytes = 4;
  p.run_id_bytes = 5;
  p.secret_bytes = static_cast<uint32_t>(config_.run_secret.size());
  p.gradient_bytes = 3;
  const std::string id(reinterpret_cast<const char*>(&v), sizeof(v));
  std::tie(code, message) =
      send_push(1, p, "noderun-a" + config_.run_secret + id + "abc");
  EXPECT_EQ(code, absl::StatusCode::kInvalidArgument) << message;
  EXPECT_THAT(message, ::testing::Not(HasSubstr("[closed]")));
  // The same with another secret: refused before anything else.
  std::tie(code, message) = send_push(
      1, p, "noderun-a" + std::string(p.secret_bytes, 'x') + id + "abc");
  EXPECT_EQ(code, absl::StatusCode::kPermissionDenied) << message;
  EXPECT_THAT(message, HasSubstr("another run's table"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("[closed]")));

  const std::vector<float> initial = Table(grpc_client_.get(), 0);
  ASSERT_OK(port_client_->PushEmbeddingGradients(
      config_, 0, 0, {v}, std::vector<float>(kDim, 1.0f)));
  EXPECT_NE(Table(grpc_client_.get(), 1), initial);
}

}  // namespace
}  // namespace shardgnn
