// The trainer's side against a hostile storage server: a real gRPC server
// implementing proto/graphstore.proto whose handlers answer with crafted bad
// responses, and a real TCP listener speaking the feature port's framing
// with crafted frames. Every bad answer must be a DATA_LOSS naming the
// server, never an out-of-bounds write or a huge allocation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graphstore/client.h"
#include "graphstore/internal/feature_port.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"
#include "sampler/remote_graph_source.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;

std::string Pack(const std::vector<int64_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(int64_t));
}
std::vector<int64_t> Unpack(const std::string& bytes) {
  std::vector<int64_t> out(bytes.size() / sizeof(int64_t));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A well-formed one-part partition of 10 nodes, 30 adjacency entries, 4
// features and 3 classes, unless a test changes it.
proto::InfoResponse GoodInfo() {
  proto::InfoResponse info;
  info.set_format_version(1);
  info.set_part_id(0);
  info.set_num_parts(1);
  info.set_node_start(0);
  info.set_node_end(10);
  info.set_num_nodes_total(10);
  info.set_num_edges(30);
  info.set_feature_dim(4);
  info.set_num_classes(3);
  (*info.mutable_split_counts())["train"] = 3;
  info.set_partition_id("hostile");
  info.set_server_version("adversary");
  return info;
}

// An adversary: answers every call with what the test put in its hooks.
// Hooks are set before the calls that use them.
class HostileService final : public proto::GraphStore::Service {
 public:
  proto::InfoResponse info = GoodInfo();
  std::function<void(const std::vector<int64_t>& ids, int fanout,
                     proto::SampleNeighborsResponse*)>
      sample;
  std::function<void(const std::vector<int64_t>& ids,
                     proto::GetFeaturesResponse*)>
      features;
  std::function<void(const std::vector<int64_t>& ids,
                     proto::GetLabelsResponse*)>
      labels;
  std::function<void(const std::vector<int64_t>& ids,
                     proto::GetDegreesResponse*)>
      degrees;
  std::function<void(proto::GetSplitResponse*)> split;
  std::function<void(proto::StatsResponse*)> stats;

  grpc::Status Info(grpc::ServerContext*, const proto::InfoRequest*,
                    proto::InfoResponse* resp) override {
    *resp = info;
    return grpc::Status::OK;
  }
  grpc::Status Health(grpc::ServerContext*, const proto::HealthRequest*,
                      proto::HealthResponse* resp) override {
    resp->set_serving(true);
    return grpc::Status::OK;
  }
  grpc::Status SampleNeighbors(grpc::ServerContext*,
                               const proto::SampleNeighborsRequest* req,
                               proto::SampleNeighborsResponse* resp) override {
    if (sample) sample(Unpack(req->node_ids()), req->fanout(), resp);
    return grpc::Status::OK;
  }
  grpc::Status GetFeatures(grpc::ServerContext*,
                           const proto::NodeIdsRequest* req,
                           proto::GetFeaturesResponse* resp) override {
    if (features) features(Unpack(req->node_ids()), resp);
    return grpc::Status::OK;
  }
  grpc::Status GetLabels(grpc::ServerContext*, const proto::NodeIdsRequest* req,
                         proto::GetLabelsResponse* resp) override {
    if (labels) labels(Unpack(req->node_ids()), resp);
    return grpc::Status::OK;
  }
  grpc::Status GetDegrees(grpc::ServerContext*,
                          const proto::NodeIdsRequest* req,
                          proto::GetDegreesResponse* resp) override {
    if (degrees) degrees(Unpack(req->node_ids()), resp);
    return grpc::Status::OK;
  }
  grpc::Status GetSplit(grpc::ServerContext*, const proto::GetSplitRequest*,
                        proto::GetSplitResponse* resp) override {
    if (split) split(resp);
    return grpc::Status::OK;
  }
  grpc::Status Stats(grpc::ServerContext*, const proto::StatsRequest*,
                     proto::StatsResponse* resp) override {
    if (stats) stats(resp);
    return grpc::Status::OK;
  }
};

// The service on a loopback port picked by the kernel.
class HostileServer {
 public:
  HostileServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service);
    server_ = builder.BuildAndStart();
  }
  ~HostileServer() {
    if (server_ != nullptr) server_->Shutdown();
  }
  bool started() const { return server_ != nullptr && port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  HostileService service;

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

RemoteGraphSourceOptions FastOptions() {
  RemoteGraphSourceOptions options;
  options.connect_timeout = absl::Seconds(10);
  options.client.max_attempts = 1;
  options.use_shared_memory = false;
  return options;
}

class HostileServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.started()); }

  absl::StatusOr<std::unique_ptr<RemoteGraphSource>> ConnectSource() {
    return RemoteGraphSource::Connect({server_.address()}, FastOptions());
  }

  // Expects DATA_LOSS naming the server and saying `what`.
  void ExpectDataLoss(const absl::Status& s, absl::string_view what) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(server_.address())) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(what))) << s;
  }

  HostileServer server_;
  HostileService& service_ = server_.service;
};

// A run's leader records the servers' Stats every epoch (issue 17): figures
// no process can have are refused, naming the server.
TEST_F(HostileServerTest, StatsWithImpossibleUsageAreDataLoss) {
  GraphStoreClientOptions options;
  options.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server_.address(), options));
  service_.stats = [](proto::StatsResponse* resp) {
    resp->set_minor_faults(12);
    resp->set_cpu_seconds(0.5);
  };
  ASSERT_OK_AND_ASSIGN(ServerStats fine, client->Stats());
  EXPECT_EQ(fine.minor_faults, 12);
  EXPECT_EQ(fine.cpu_seconds, 0.5);
  service_.stats = [](proto::StatsResponse* resp) {
    resp->set_minor_faults(-5);
  };
  ExpectDataLoss(client->Stats().status(), "minor_faults -5");
  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    service_.stats = [bad](proto::StatsResponse* resp) {
      resp->set_cpu_seconds(bad);
    };
    ExpectDataLoss(client->Stats().status(), "cpu_seconds");
  }
}

// The ASan finding of issue 12: counts that add up to the neighbor array's
// length but include a negative one made the merge copy out of bounds.
TEST_F(HostileServerTest, NegativeCountThatSumsRightIsDataLoss) {
  service_.sample = [](const std::vector<int64_t>& ids, int,
                       proto::SampleNeighborsResponse* resp) {
    std::vector<int64_t> counts(ids.size(), 0);
    counts[0] = 2;
    counts[1] = -1;
    counts[2] = 2;
    resp->set_counts(Pack(counts));
    resp->set_neighbors(Pack({1, 2, 3}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "count -1");
}

// A server that answers wrongly is not a server that is down: with
// --server-wait the trainer does not wait for it to "come back" (its health
// check passes, and every answer fails again), it says what was wrong at once.
TEST_F(HostileServerTest, AWrongAnswerIsSaidAtOnceNotWaitedOut) {
  service_.sample = [](const std::vector<int64_t>& ids, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack(std::vector<int64_t>(ids.size(), 1)));
    resp->set_neighbors(Pack(std::vector<int64_t>(ids.size(), 99)));
  };
  RemoteGraphSourceOptions options = FastOptions();
  options.server_wait = absl::Seconds(60);
  options.probe_interval = absl::Milliseconds(50);
  ASSERT_OK_AND_ASSIGN(
      auto source, RemoteGraphSource::Connect({server_.address()}, options));
  SampledNeighbors out;
  const absl::Time start = absl::Now();
  const absl::Status s = source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out);
  // Far below the 60 s wait: no wait at all (the call's own deadline is
  // 30 s, so this bound cannot pass by waiting out anything).
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  ExpectDataLoss(s, "neighbor");
  EXPECT_THAT(std::string(s.message()),
              ::testing::Not(HasSubstr("does not answer")));
}

TEST_F(HostileServerTest, CountsThatOverflowTheirSumAreDataLoss) {
  // INT64_MAX + INT64_MAX + 2 wraps to 0: an empty neighbor array "matches".
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    const int64_t big = std::numeric_limits<int64_t>::max();
    resp->set_counts(Pack({big, big, 2}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, -1, false, 7, &out),
                 "count");
}

TEST_F(HostileServerTest, CountAboveTheFanoutIsDataLoss) {
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({3, 0, 0}));
    resp->set_neighbors(Pack({1, 2, 3}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "fanout 2");
}

TEST_F(HostileServerTest, CountsNotAddingUpToTheNeighborsAreDataLoss) {
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({1, 1, 1}));
    resp->set_neighbors(Pack({1, 2}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "neighbors");
}

TEST_F(HostileServerTest, WrongNumberOfCountsIsDataLoss) {
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({1}));
    resp->set_neighbors(Pack({1}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "counts");
}

TEST_F(HostileServerTest, NeighborOutsideTheGraphIsDataLoss) {
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({1, 1, 0}));
    resp->set_neighbors(Pack({4, 10}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "neighbor 10");
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({1, 0, 0}));
    resp->set_neighbors(Pack({-3}));
  };
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "neighbor -3");
}

TEST_F(HostileServerTest, TruncatedArrayIsDataLoss) {
  service_.sample = [](const std::vector<int64_t>&, int,
                       proto::SampleNeighborsResponse* resp) {
    resp->set_counts(Pack({1, 0, 0}).substr(0, 20));
    resp->set_neighbors(Pack({1}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  SampledNeighbors out;
  ExpectDataLoss(source->SampleNeighbors({0, 1, 2}, 2, false, 7, &out),
                 "counts");
}

TEST_F(HostileServerTest, LabelOutsideTheClassesIsDataLoss) {
  service_.labels = [](const std::vector<int64_t>&,
                       proto::GetLabelsResponse* resp) {
    resp->set_labels(Pack({0, 3, 1}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  std::vector<int64_t> out(3);
  ExpectDataLoss(source->FetchLabels({0, 1, 2}, out.data()), "label 3");
  service_.labels = [](const std::vector<int64_t>&,
                       proto::GetLabelsResponse* resp) {
    resp->set_labels(Pack({0, -2, 1}));
  };
  ExpectDataLoss(source->FetchLabels({0, 1, 2}, out.data()), "label -2");
}

TEST_F(HostileServerTest, ImpossibleDegreeIsDataLoss) {
  service_.degrees = [](const std::vector<int64_t>&,
                        proto::GetDegreesResponse* resp) {
    resp->set_degrees(Pack({1, -4, 2}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  std::vector<int64_t> out(3);
  ExpectDataLoss(source->FetchDegrees({0, 1, 2}, out.data()), "degree -4");
  // The shard holds 30 adjacency entries: no node has more.
  service_.degrees = [](const std::vector<int64_t>&,
                        proto::GetDegreesResponse* resp) {
    resp->set_degrees(Pack({1, 31, 2}));
  };
  ExpectDataLoss(source->FetchDegrees({0, 1, 2}, out.data()), "degree 31");
  service_.degrees = [](const std::vector<int64_t>&,
                        proto::GetDegreesResponse* resp) {
    resp->set_degrees(Pack({1, 2}));
  };
  ExpectDataLoss(source->FetchAllDegrees().status(), "degrees");
}

TEST_F(HostileServerTest, SplitOutsideTheServersNodesIsDataLoss) {
  service_.split = [](proto::GetSplitResponse* resp) {
    resp->set_node_ids(Pack({1, 4, 12}));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  ExpectDataLoss(source->FetchSplit("train").status(), "node 12");
  service_.split = [](proto::GetSplitResponse* resp) {
    resp->set_node_ids(Pack({4, 1}));
  };
  ExpectDataLoss(source->FetchSplit("train").status(), "not sorted");
}

TEST_F(HostileServerTest, FeatureRowsOfTheWrongWidthAreDataLoss) {
  service_.features = [](const std::vector<int64_t>& ids,
                         proto::GetFeaturesResponse* resp) {
    resp->set_feature_dim(5);
    resp->set_features(std::string(ids.size() * 5 * sizeof(float), '\0'));
  };
  ASSERT_OK_AND_ASSIGN(auto source, ConnectSource());
  std::vector<float> out(3 * 4);
  ExpectDataLoss(source->FetchFeatures({0, 1, 2}, out.data()), "expected 48");
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server_.address(), {}));
  ASSERT_OK(client->Info().status());
  int64_t dim = 0;
  ExpectDataLoss(client->GetFeatures({0, 1, 2}, &dim).status(), "feature_dim");
  service_.features = [](const std::vector<int64_t>& ids,
                         proto::GetFeaturesResponse* resp) {
    resp->set_feature_dim(-1);
  };
  ExpectDataLoss(client->GetFeatures({0, 1, 2}, &dim).status(), "feature_dim");
}

// Info answers that would make the trainer misjudge the partition.
struct BadInfo {
  const char* name;
  std::function<void(proto::InfoResponse*)> spoil;
  const char* what;
};

TEST_F(HostileServerTest, InconsistentInfoIsDataLoss) {
  const std::vector<BadInfo> cases = {
      {"range backwards", [](proto::InfoResponse* i) { i->set_node_end(-5); },
       "node range"},
      {"range beyond the graph",
       [](proto::InfoResponse* i) { i->set_num_nodes_total(8); }, "node range"},
      {"negative feature_dim",
       [](proto::InfoResponse* i) { i->set_feature_dim(-4); }, "feature_dim"},
      {"huge feature_dim",
       [](proto::InfoResponse* i) { i->set_feature_dim(int64_t{1} << 61); },
       "feature_dim"},
      {"negative num_classes",
       [](proto::InfoResponse* i) { i->set_num_classes(-1); }, "num_classes"},
      {"negative num_edges",
       [](proto::InfoResponse* i) { i->set_num_edges(-1); }, "num_edges"},
      {"no parts", [](proto::InfoResponse* i) { i->set_num_parts(0); }, "part"},
      {"part beyond the parts",
       [](proto::InfoResponse* i) { i->set_part_id(3); }, "part"},
      {"split larger than the shard",
       [](proto::InfoResponse* i) {
         (*i->mutable_split_counts())["train"] = 11;
       },
       "split"},
      {"feature port beyond 65535",
       [](proto::InfoResponse* i) { i->set_feature_port(70000); },
       "feature_port"},
  };
  for (const BadInfo& c : cases) {
    SCOPED_TRACE(c.name);
    service_.info = GoodInfo();
    c.spoil(&service_.info);
    ExpectDataLoss(ConnectSource().status(), c.what);
  }
}

// A server claiming a billion parts must not make the trainer allocate a
// slot for each before noticing the other servers are missing.
TEST_F(HostileServerTest, HugePartCountIsRefusedBeforeAllocating) {
  service_.info.set_num_parts(std::numeric_limits<int32_t>::max());
  service_.info.set_part_id(5);
  absl::Status s = ConnectSource().status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(server_.address()));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2147483647 parts"));
}

// Two parts whose servers disagree about the graph.
TEST_F(HostileServerTest, ServersDisagreeingAboutTheGraphAreDataLoss) {
  HostileServer second;
  ASSERT_TRUE(second.started());
  auto two_parts = [](proto::InfoResponse* info, int part) {
    info->set_num_parts(2);
    info->set_part_id(part);
    info->set_node_start(part == 0 ? 0 : 5);
    info->set_node_end(part == 0 ? 5 : 10);
    (*info->mutable_split_counts())["train"] = 1;
  };
  two_parts(&service_.info, 0);
  const std::vector<BadInfo> cases = {
      {"feature_dim", [](proto::InfoResponse* i) { i->set_feature_dim(8); },
       "feature_dim"},
      {"num_classes", [](proto::InfoResponse* i) { i->set_num_classes(7); },
       "num_classes"},
      {"num_nodes_total",
       [](proto::InfoResponse* i) { i->set_num_nodes_total(12); },
       "num_nodes_total"},
  };
  for (const BadInfo& c : cases) {
    SCOPED_TRACE(c.name);
    second.service.info = GoodInfo();
    two_parts(&second.service.info, 1);
    c.spoil(&second.service.info);
    absl::Status s = RemoteGraphSource::Connect(
                         {server_.address(), second.address()}, FastOptions())
                         .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(second.address())) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.what)) << s;
  }
  // The last part must end where the graph does.
  second.service.info = GoodInfo();
  two_parts(&second.service.info, 1);
  second.service.info.set_node_end(9);
  second.service.info.set_num_nodes_total(10);
  service_.info.set_num_nodes_total(10);
  absl::Status s = RemoteGraphSource::Connect(
                       {server_.address(), second.address()}, FastOptions())
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("10 nodes")) << s;
}

// ------------------------------------------------------------ feature port

// A loopback TCP listener that reads one feature request per connection and
// answers it with `respond` (the raw bytes to send), then closes.
class CraftedFeaturePort {
 public:
  // Returns the bytes to send for a request of `num_ids` IDs.
  using Respond = std::function<std::string(uint64_t num_ids)>;

  explicit CraftedFeaturePort(Respond respond) : respond_(std::move(respond)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CraftedFeaturePort() {
    shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  static bool ReadAll(int fd, void* data, size_t n) {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
      ssize_t r = recv(fd, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  void Serve() {
    while (true) {
      int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0) return;  // The listener was shut down.
      internal::FeatureRequestHeader h;
      // A push's header and names before its IDs, gradients after them:
      // read whole, so that closing does not reset the connection.
      internal::EmbeddingPushHeader push;
      std::string names, gradients;
      std::vector<int64_t> ids;
      bool ok = ReadAll(conn, &h, sizeof(h)) && h.num_ids < (1 << 20);
      if (ok && h.magic == internal::kEmbeddingPushMagic) {
        ok = ReadAll(conn, &push, sizeof(push)) &&
             push.gradient_bytes < (1 << 26) && push.table_bytes < 4096 &&
             push.run_id_bytes < 4096 && push.secret_bytes < 4096;
        names.resize(
            ok ? push.table_bytes + push.run_id_bytes + push.secret_bytes : 0);
        gradients.resize(ok ? push.gradient_bytes : 0);
        ok = ok && ReadAll(conn, names.data(), names.size());
      }
      ids.resize(ok ? h.num_ids : 0);
      if (ok && ReadAll(conn, ids.data(), ids.size() * sizeof(int64_t)) &&
          ReadAll(conn, gradients.data(), gradients.size())) {
        std::string out = respond_(h.num_ids);
        (void)!send(conn, out.data(), out.size(), MSG_NOSIGNAL);
      }
      close(conn);
    }
  }

  Respond respond_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

std::string Frame(uint32_t magic, int32_t code, uint64_t payload_bytes,
                  const std::string& payload) {
  internal::FeatureResponseHeader h;
  h.magic = magic;
  h.code = code;
  h.payload_bytes = payload_bytes;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + payload;
}

class HostileFeaturePortTest : public HostileServerTest {
 protected:
  // A client that was told (by Info) to use `port` for features.
  std::unique_ptr<GraphStoreClient> ClientUsing(
      const CraftedFeaturePort& port) {
    service_.info.set_feature_port(static_cast<uint32_t>(port.port()));
    GraphStoreClientOptions options;
    options.max_attempts = 1;
    options.call_timeout = absl::Seconds(5);
    auto client = GraphStoreClient::Connect(server_.address(), options);
    EXPECT_OK(client.status());
    if (!client.ok()) return nullptr;
    EXPECT_OK((*client)->Info().status());
    EXPECT_TRUE((*client)->UsesFeaturePort());
    return std::move(*client);
  }
};

TEST_F(HostileFeaturePortTest, FrameClaimingFourGigabytesIsDataLoss) {
  CraftedFeaturePort port([](uint64_t) {
    return Frame(internal::kFeatureResponseMagic, 0, uint64_t{4} << 30,
                 std::string(64, '\0'));
  });
  ASSERT_GT(port.port(), 0);
  auto client = ClientUsing(port);
  ASSERT_NE(client, nullptr);
  std::vector<float> out(3 * 4, -1);
  const absl::Time start = absl::Now();
  ExpectDataLoss(client->GetFeatures({0, 1, 2}, 4, out.data()), "bytes");
  EXPECT_LT(absl::Now() - start, absl::Seconds(4)) << "waited for the bytes";
}

TEST_F(HostileFeaturePortTest, RowsOfTheWrongWidthAreDataLoss) {
  CraftedFeaturePort port([](uint64_t n) {
    const std::string rows(n * 3 * sizeof(float), '\0');
    return Frame(internal::kFeatureResponseMagic, 0, rows.size(), rows);
  });
  ASSERT_GT(port.port(), 0);
  auto client = ClientUsing(port);
  ASSERT_NE(client, nullptr);
  std::vector<float> out(3 * 4, -1);
  // Scattered to given rows, too: nothing may be written past `out`.
  std::vector<size_t> rows = {2, 0, 1};
  ExpectDataLoss(client->GetFeatures({0, 1, 2}, 4, out.data(), rows), "wide");
  EXPECT_EQ(out, std::vector<float>(3 * 4, -1));
}

TEST_F(HostileFeaturePortTest, PushAnswersOtherThanAppliedStepsAreDataLoss) {
  EmbeddingTableConfig table;
  table.name = "node";
  table.run_id = "run";
  table.run_secret = "the run's secret, 16 bytes or more";
  table.dim = 4;
  const std::vector<float> gradients = {1, 2, 3, 4};
  {  // Half an answer.
    CraftedFeaturePort port([](uint64_t) {
      return Frame(internal::kFeatureResponseMagic, 0, 4, "abcd");
    });
    ASSERT_GT(port.port(), 0);
    auto client = ClientUsing(port);
    ASSERT_NE(client, nullptr);
    ExpectDataLoss(client->PushEmbeddingGradients(table, 0, 0, {0}, gradients),
                   "expected 8");
  }
  {  // Steps that cannot be.
    CraftedFeaturePort port([](uint64_t) {
      const int64_t applied = -5;
      return Frame(internal::kFeatureResponseMagic, 0, sizeof(applied),
                   std::string(reinterpret_cast<const char*>(&applied),
                               sizeof(applied)));
    });
    ASSERT_GT(port.port(), 0);
    auto client = ClientUsing(port);
    ASSERT_NE(client, nullptr);
    ExpectDataLoss(client->PushEmbeddingGradients(table, 0, 0, {0}, gradients),
                   "-5 applied steps");
  }
}

TEST_F(HostileFeaturePortTest, BadMagicIsDataLoss) {
  CraftedFeaturePort port([](uint64_t n) {
    const std::string rows(n * 4 * sizeof(float), '\0');
    return Frame(0xdeadbeef, 0, rows.size(), rows);
  });
  ASSERT_GT(port.port(), 0);
  auto client = ClientUsing(port);
  ASSERT_NE(client, nullptr);
  std::vector<float> out(3 * 4, -1);
  ExpectDataLoss(client->GetFeatures({0, 1, 2}, 4, out.data()),
                 "not a shardgnn feature response");
}

}  // namespace
}  // namespace shardgnn
