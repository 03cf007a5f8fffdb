// The Prometheus metrics of a real storage server (graphstore/internal/
// server_metrics.h, GraphStoreServerOptions::metrics_listen_address): real
// gRPC calls and feature port fetches, then GET /metrics over a plain socket
// and the text exposition format parsed here.
#include "graphstore/internal/server_metrics.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/server.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr int64_t kNodes = 200;
constexpr int64_t kDim = 8;

// One sample of the text exposition format: name{labels} value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text exposition format: skips comments (# HELP, # TYPE) and
// blank lines; every other line is `name{k="v",...} value` or `name value`.
// Fails the test on a line it cannot read.
std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        EXPECT_NE(eq, absl::string_view::npos) << line;
        if (eq == absl::string_view::npos) return samples;
        std::string key(line.substr(i, eq - i));
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;  // \" \\ \n
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    while (i < line.size() && line[i] == ' ') ++i;
    absl::string_view number = line.substr(i);
    number = number.substr(0, number.find(' '));  // No timestamps expected.
    if (number == "+Inf") {
      s.value = std::numeric_limits<double>::infinity();
    } else {
      EXPECT_TRUE(absl::SimpleAtod(number, &s.value)) << line;
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

// GET `path` from 127.0.0.1:`port` over HTTP/1.0 with a plain socket;
// returns the status line and the body.
struct HttpAnswer {
  std::string status_line;
  std::string body;
};
HttpAnswer HttpGet(int port, const std::string& path,
                   absl::Duration wait = absl::Seconds(10)) {
  HttpAnswer answer;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout = absl::ToTimeval(wait);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "connect to metrics port " << port << ": "
                  << std::strerror(errno);
    close(fd);
    return answer;
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string all;
  char buf[8192];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, n);
  close(fd);
  const size_t line_end = all.find("\r\n");
  const size_t head_end = all.find("\r\n\r\n");
  EXPECT_NE(head_end, std::string::npos) << all;
  if (head_end == std::string::npos) return answer;
  answer.status_line = all.substr(0, line_end);
  answer.body = all.substr(head_end + 4);
  return answer;
}

// The metrics of a server: one scrape, looked up by name and labels.
class Scrape {
 public:
  explicit Scrape(int port) {
    HttpAnswer answer = HttpGet(port, "/metrics");
    EXPECT_THAT(answer.status_line, HasSubstr(" 200 "));
    text_ = answer.body;
    samples_ = ParseExposition(text_);
  }
  // The one sample called `name` whose labels include `labels`; fails the
  // test (and returns -1) if there is none or more than one.
  double Get(const std::string& name,
             const std::map<std::string, std::string>& labels = {}) const {
    const Sample* found = nullptr;
    int matches = 0;
    for (const Sample& s : samples_) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (all) {
        found = &s;
        ++matches;
      }
    }
    EXPECT_EQ(matches, 1) << name << " " << ::testing::PrintToString(labels)
                          << " in\n"
                          << text_;
    return matches == 1 ? found->value : -1;
  }
  // Whether any sample is called `name` with these labels.
  bool Has(const std::string& name,
           const std::map<std::string, std::string>& labels) const {
    for (const Sample& s : samples_) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (all) return true;
    }
    return false;
  }
  const std::vector<Sample>& samples() const { return samples_; }

 private:
  std::string text_;
  std::vector<Sample> samples_;
};

// The cumulative buckets of histogram `name` for `labels`, in order; checks
// they never decrease, end with +Inf and that +Inf equals _count.
void ExpectHistogram(const Scrape& scrape, const std::string& name,
                     const std::map<std::string, std::string>& labels,
                     double count) {
  double previous = 0;
  bool saw_inf = false;
  for (const Sample& s : scrape.samples()) {
    if (s.name != name + "_bucket") continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (!all) continue;
    EXPECT_FALSE(saw_inf) << "a bucket after +Inf";
    EXPECT_GE(s.value, previous) << name << " le=" << s.labels.at("le");
    previous = s.value;
    saw_inf = s.labels.at("le") == "+Inf";
  }
  EXPECT_TRUE(saw_inf) << name;
  EXPECT_EQ(previous, count) << name;
  EXPECT_EQ(scrape.Get(name + "_count", labels), count);
  EXPECT_GT(scrape.Get(name + "_sum", labels), 0);
}

std::string PackIds(const std::vector<NodeId>& ids) {
  std::string bytes(ids.size() * sizeof(NodeId), '\0');
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  return bytes;
}

// A loopback connection to `port`, closed by the destructor.
struct Connection {
  explicit Connection(int port) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ~Connection() { close(fd); }
  int fd = -1;
};

class ServerMetricsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    graph_ = testing::MakeTestGraph(kNodes, kDim);
    ASSERT_OK_AND_ASSIGN(metas_,
                         testing::WriteTestShards(graph_, 2, dir_.path()));
    ShardStoreOptions options;
    options.path = dir_.Sub("part-1");
    options.in_memory = GetParam();
    options.block_cache_bytes = 1 << 20;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardStore> store,
                         ShardStore::Open(options));
    store_ = std::move(store);
  }
  // Polls the metrics until `name` (with `labels`) reads `want` or 10 s pass;
  // returns the last reading.
  double WaitFor(int port, const std::string& name,
                 const std::map<std::string, std::string>& labels,
                 double want) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    double got = -1;
    while (absl::Now() < deadline) {
      got = Scrape(port).Get(name, labels);
      if (got == want) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return got;
  }

  TempDir dir_;
  testing::TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
};

TEST_P(ServerMetricsTest, CountsWhatRealCallsDid) {
  GraphStoreServerOptions options;
  options.num_threads = 2;
  options.metrics_listen_address = "127.0.0.1:0";
  options.feature_port_connections = 1;  // A second connection is turned away.
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Start(store_, options));
  ASSERT_GT(server->metrics_port(), 0);
  ASSERT_NE(server->metrics_port(), server->port());
  ASSERT_GT(server->feature_port(), 0);

  const ShardMeta& meta = metas_[1];
  const std::vector<NodeId> owned = {meta.node_start, meta.node_start + 1,
                                     meta.node_end - 1};
  const std::vector<NodeId> unowned = {meta.node_start - 1};

  auto channel = grpc::CreateChannel(server->address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = proto::GraphStore::NewStub(channel);
  auto context = [] {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    return ctx;
  };
  // SampleNeighbors: 5 valid, 2 with an unowned ID and 1 with a fanout
  // beyond the limit (INVALID_ARGUMENT all three).
  constexpr int kValidSamples = 5, kInvalidSamples = 3;
  for (int i = 0; i < kValidSamples + kInvalidSamples; ++i) {
    const bool valid = i < kValidSamples;
    const bool huge_fanout = i == kValidSamples + kInvalidSamples - 1;
    proto::SampleNeighborsRequest request;
    request.set_node_ids(PackIds(valid || huge_fanout ? owned : unowned));
    request.set_fanout(huge_fanout ? 1000000 : 5);
    request.set_seed(static_cast<uint64_t>(i));
    proto::SampleNeighborsResponse response;
    grpc::Status s = stub->SampleNeighbors(context().get(), request, &response);
    EXPECT_EQ(s.ok(), valid) << i << ": " << s.error_message();
    if (!valid) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    }
  }
  // GetLabels: 3 valid; GetSplit: 1 unknown split (NOT_FOUND); Info: 1.
  constexpr int kLabels = 3;
  for (int i = 0; i < kLabels; ++i) {
    proto::NodeIdsRequest request;
    request.set_node_ids(PackIds(owned));
    proto::GetLabelsResponse response;
    EXPECT_TRUE(stub->GetLabels(context().get(), request, &response).ok());
  }
  {
    proto::GetSplitRequest request;
    request.set_name("no-such-split");
    proto::GetSplitResponse response;
    EXPECT_EQ(stub->GetSplit(context().get(), request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
    proto::InfoResponse info;
    EXPECT_TRUE(stub->Info(context().get(), {}, &info).ok());
  }
  // GetFeatures over gRPC (the raw method): 2 valid, 1 unowned.
  for (int i = 0; i < 3; ++i) {
    proto::NodeIdsRequest request;
    request.set_node_ids(PackIds(i < 2 ? owned : unowned));
    proto::GetFeaturesResponse response;
    EXPECT_EQ(stub->GetFeatures(context().get(), request, &response).ok(),
              i < 2);
  }

  // The feature port: 4 valid fetches and 2 of an unowned ID, on one pooled
  // connection (an error answer keeps it open).
  constexpr int kValidFetches = 4, kInvalidFetches = 2;
  auto fetcher = std::make_unique<internal::FeaturePortClient>(
      "127.0.0.1", server->feature_port());
  std::vector<float> rows(owned.size() * kDim);
  for (int i = 0; i < kValidFetches + kInvalidFetches; ++i) {
    bool transport_failed = false;
    absl::Status s = fetcher->Fetch(
        i < kValidFetches ? owned : unowned, kDim, rows.data(), nullptr,
        absl::Now() + absl::Seconds(10), &transport_failed);
    EXPECT_FALSE(transport_failed) << s;
    EXPECT_EQ(s.ok(), i < kValidFetches) << s;
  }

  Scrape scrape(server->metrics_port());
  const std::string part = "1";
  auto method = [&](const std::string& name) {
    return std::map<std::string, std::string>{{"part", part}, {"method", name}};
  };
  // gRPC calls, by method.
  EXPECT_EQ(
      scrape.Get("shardgnn_grpc_requests_total", method("SampleNeighbors")),
      kValidSamples + kInvalidSamples);
  EXPECT_EQ(
      scrape.Get("shardgnn_grpc_errors_total", {{"part", part},
                                                {"method", "SampleNeighbors"},
                                                {"code", "INVALID_ARGUMENT"}}),
      kInvalidSamples);
  ExpectHistogram(scrape, "shardgnn_grpc_request_duration_seconds",
                  method("SampleNeighbors"), kValidSamples + kInvalidSamples);
  EXPECT_GT(scrape.Get("shardgnn_grpc_request_bytes_total",
                       method("SampleNeighbors")),
            0);
  EXPECT_GT(scrape.Get("shardgnn_grpc_response_bytes_total",
                       method("SampleNeighbors")),
            0);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("GetLabels")),
            kLabels);
  EXPECT_FALSE(scrape.Has("shardgnn_grpc_errors_total", method("GetLabels")));
  ExpectHistogram(scrape, "shardgnn_grpc_request_duration_seconds",
                  method("GetLabels"), kLabels);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("GetSplit")), 1);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_errors_total",
                       {{"method", "GetSplit"}, {"code", "NOT_FOUND"}}),
            1);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("Info")), 1);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("GetFeatures")),
            3);
  EXPECT_EQ(
      scrape.Get("shardgnn_grpc_errors_total",
                 {{"method", "GetFeatures"}, {"code", "INVALID_ARGUMENT"}}),
      1);
  EXPECT_GT(
      scrape.Get("shardgnn_grpc_response_bytes_total", method("GetFeatures")),
      2 * owned.size() * kDim * sizeof(float));  // And protobuf framing.
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("GetDegrees")),
            0);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_requests_total", method("Health")), 0);
  // One channel, one connection, handed to gRPC by the Listener.
  EXPECT_EQ(scrape.Get("shardgnn_grpc_connections", {{"part", part}}), 1);
  EXPECT_EQ(
      scrape.Get("shardgnn_grpc_connections_accepted_total", {{"part", part}}),
      1);
  EXPECT_EQ(scrape.Get("shardgnn_grpc_calls_in_flight", {{"part", part}}), 0);

  // The feature port.
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_requests_total"),
            kValidFetches + kInvalidFetches);
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_errors_total",
                       {{"code", "INVALID_ARGUMENT"}}),
            kInvalidFetches);
  ExpectHistogram(scrape, "shardgnn_feature_port_request_duration_seconds",
                  {{"part", part}}, kValidFetches + kInvalidFetches);
  const double header = sizeof(internal::FeatureResponseHeader);
  EXPECT_GT(scrape.Get("shardgnn_feature_port_response_bytes_total"),
            kValidFetches * (owned.size() * kDim * sizeof(float) + header));
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_request_bytes_total"),
            kValidFetches * (16 + owned.size() * 8) +
                kInvalidFetches * (16 + unowned.size() * 8));
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_connections"), 1);
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_connections_accepted_total"), 1);
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_connections_rejected_total"), 0);
  // Embedding pulls and pushes over the port have families of their own
  // (none here), and are not gRPC methods.
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_pull_requests_total"), 0);
  EXPECT_EQ(scrape.Get("shardgnn_feature_port_push_requests_total"), 0);
  EXPECT_FALSE(scrape.Has("shardgnn_grpc_requests_total",
                          {{"method", "FeaturePortPull"}}));
  EXPECT_FALSE(scrape.Has("shardgnn_grpc_requests_total",
                          {{"method", "FeaturePortPush"}}));

  // The shard and the process.
  EXPECT_EQ(scrape.Get("shardgnn_server_serving", {{"part", part}}), 1);
  EXPECT_EQ(scrape.Get("shardgnn_shard_nodes", {{"part", part}}),
            meta.node_end - meta.node_start);
  EXPECT_EQ(scrape.Get("shardgnn_shard_edges"), meta.num_edges);
  EXPECT_EQ(scrape.Get("shardgnn_shard_in_memory"), GetParam() ? 1 : 0);
  const auto shared = store_->SharedFeatures();
  EXPECT_EQ(scrape.Get("shardgnn_shard_shared_features_bytes"),
            shared ? static_cast<double>(shared->bytes) : 0.0);
  if (GetParam()) {
    EXPECT_EQ(scrape.Get("shardgnn_shard_block_cache_capacity_bytes"), 0);
  } else {
    EXPECT_EQ(scrape.Get("shardgnn_shard_block_cache_capacity_bytes"), 1 << 20);
    EXPECT_GT(scrape.Get("shardgnn_shard_block_cache_bytes"), 0);
  }
  EXPECT_GT(scrape.Get("process_resident_memory_bytes", {{"part", part}}),
            1 << 20);
  EXPECT_GT(scrape.Get("process_open_fds"), 3);
  // Every sample carries the part label.
  for (const Sample& s : scrape.samples()) {
    EXPECT_EQ(s.labels.count("part"), 1u) << s.name;
    if (s.labels.count("part")) {
      EXPECT_EQ(s.labels.at("part"), part) << s.name;
    }
  }

  // A second feature port connection is over the cap of 1: turned away.
  {
    Connection extra(server->feature_port());
    EXPECT_EQ(
        WaitFor(server->metrics_port(),
                "shardgnn_feature_port_connections_rejected_total", {}, 1),
        1);
  }
  // The fetcher leaves: its connection closes.
  fetcher.reset();
  EXPECT_EQ(WaitFor(server->metrics_port(), "shardgnn_feature_port_connections",
                    {}, 0),
            0);
  EXPECT_EQ(Scrape(server->metrics_port())
                .Get("shardgnn_feature_port_connections_accepted_total"),
            1);

  // Anything but /metrics is not found; a query string is ignored.
  EXPECT_THAT(HttpGet(server->metrics_port(), "/").status_line,
              HasSubstr(" 404 "));
  EXPECT_THAT(HttpGet(server->metrics_port(), "/metrics?x=1").status_line,
              HasSubstr(" 200 "));
  // A client that connects and says nothing does not hold the endpoint:
  // the next scrape is answered meanwhile.
  {
    Connection silent(server->metrics_port());
    const absl::Time start = absl::Now();
    EXPECT_THAT(HttpGet(server->metrics_port(), "/metrics").status_line,
                HasSubstr(" 200 "));
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }

  // Shutdown is prompt, and then nothing listens on the metrics port.
  const int metrics_port = server->metrics_port();
  const absl::Time stop_start = absl::Now();
  server->Shutdown(absl::Now() + absl::Seconds(5));
  EXPECT_LT(absl::Now() - stop_start, absl::Seconds(1));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(metrics_port));
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

INSTANTIATE_TEST_SUITE_P(DiskAndMemory, ServerMetricsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Memory" : "Disk";
                         });

// Bind() before Serve(): the metrics answer while the shard loads, with the
// part label given in the options, and count the calls turned away.
TEST(ServerMetricsLoadingTest, AnswersWhileLoadingThenServes) {
  TempDir dir;
  testing::TestGraph graph = testing::MakeTestGraph(kNodes, kDim);
  ASSERT_OK_AND_ASSIGN(auto metas,
                       testing::WriteTestShards(graph, 2, dir.path()));
  GraphStoreServerOptions options;
  options.metrics_listen_address = "localhost:0";  // A host name.
  options.metrics_part = 0;
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Bind(options));
  ASSERT_GT(server->metrics_port(), 0);
  {
    Scrape loading(server->metrics_port());
    EXPECT_EQ(loading.Get("shardgnn_server_serving", {{"part", "0"}}), 0);
    EXPECT_EQ(loading.Get("shardgnn_shard_nodes", {{"part", "0"}}), 0);
  }
  auto stub = proto::GraphStore::NewStub(grpc::CreateChannel(
      server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  proto::InfoResponse info;
  EXPECT_EQ(stub->Info(&ctx, {}, &info).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  ShardStoreOptions store_options;
  store_options.path = dir.Sub("part-0");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardStore> store,
                       ShardStore::Open(store_options));
  ASSERT_OK(server->Serve(std::move(store)));
  Scrape serving(server->metrics_port());
  EXPECT_EQ(serving.Get("shardgnn_server_serving", {{"part", "0"}}), 1);
  EXPECT_EQ(serving.Get("shardgnn_shard_nodes", {{"part", "0"}}),
            metas[0].node_end - metas[0].node_start);
  EXPECT_EQ(serving.Get("shardgnn_grpc_errors_total",
                        {{"method", "Info"}, {"code", "UNAVAILABLE"}}),
            1);
}

// Half a request line from `source`, then silence; the socket (-1 if the
// connection failed).
int StalledRequest(const std::string& source, int port) {
  const int fd = testing::ConnectFrom(source, port);
  if (fd >= 0 && send(fd, "GET /metr", 9, MSG_NOSIGNAL) != 9) {
    close(fd);
    return -1;
  }
  return fd;
}

// Issue 51: the endpoint's one thread waited up to 2 s for each request in
// turn, so 300 stalled half-requests held off every scrape for 10 minutes.
TEST(ServerMetricsStallTest, StalledRequestsFromManyAddressesDoNotHoldItOff) {
  GraphStoreServerOptions options;
  options.metrics_listen_address = "127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Bind(options));
  const int port = server->metrics_port();
  std::vector<int> stalled;  // 10 from each of 30 addresses.
  for (int i = 0; i < 300; ++i) {
    stalled.push_back(
        StalledRequest(absl::StrCat("127.0.0.", 10 + i % 30), port));
    ASSERT_GE(stalled.back(), 0);
  }
  const absl::Time start = absl::Now();
  EXPECT_THAT(HttpGet(port, "/metrics", absl::Seconds(3)).status_line,
              HasSubstr(" 200 "));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  // Every stalled request is closed within its 2 s.
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  int closed = 0;
  for (int fd : stalled) {
    if (testing::ClosedByServerWithin(fd, deadline - absl::Now())) ++closed;
    close(fd);
  }
  EXPECT_EQ(closed, 300);
}

TEST(ServerMetricsStallTest, OneAddressHoldsAtMostEightConnections) {
  GraphStoreServerOptions options;
  options.metrics_listen_address = "127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Bind(options));
  const int port = server->metrics_port();
  std::vector<int> stalled;
  for (int i = 0; i < 300; ++i) {
    stalled.push_back(StalledRequest("127.0.0.2", port));
    ASSERT_GE(stalled.back(), 0);
  }
  // All but 8 are closed at once.
  int open = 0;
  for (int fd : stalled) {
    if (!testing::ClosedByServerWithin(fd, absl::Milliseconds(1))) ++open;
  }
  EXPECT_EQ(open, 8);
  const absl::Time start = absl::Now();
  EXPECT_THAT(HttpGet(port, "/metrics", absl::Seconds(3)).status_line,
              HasSubstr(" 200 "));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  for (int fd : stalled) close(fd);
}

TEST(ServerMetricsAddressTest, BadOrBusyAddressIsOneClearError) {
  GraphStoreServerOptions options;
  for (const char* bad :
       {"9100", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:http", ":9100"}) {
    options.metrics_listen_address = bad;
    auto server = GraphStoreServer::Bind(options);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(server.status().message(), HasSubstr("not HOST:PORT")) << bad;
  }
  options.metrics_listen_address = "nohost.invalid:0";
  absl::Status unknown = GraphStoreServer::Bind(options).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(unknown.message(),
              HasSubstr("cannot serve metrics on nohost.invalid:0: cannot "
                        "resolve 'nohost.invalid'"));
  options.metrics_listen_address = "192.0.2.1:0";  // Not ours (TEST-NET-1).
  absl::Status foreign = GraphStoreServer::Bind(options).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(foreign.message(),
            "cannot serve metrics on 192.0.2.1:0: Cannot assign requested "
            "address");

  // The port of another server's metrics is in use.
  options.metrics_listen_address = "127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(auto first, GraphStoreServer::Bind(options));
  options.metrics_listen_address =
      absl::StrCat("127.0.0.1:", first->metrics_port());
  absl::Status busy = GraphStoreServer::Bind(options).status();
  EXPECT_EQ(busy.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(busy.message(), absl::StrCat("cannot serve metrics on ",
                                         options.metrics_listen_address,
                                         ": Address already in use"));
  // IPv6, as the gRPC port takes it.
  options.metrics_listen_address = "[::1]:0";
  ASSERT_OK_AND_ASSIGN(auto v6, GraphStoreServer::Bind(options));
  EXPECT_GT(v6->metrics_port(), 0);
  // Without an address nothing listens.
  options.metrics_listen_address.clear();
  ASSERT_OK_AND_ASSIGN(auto plain, GraphStoreServer::Bind(options));
  EXPECT_EQ(plain->metrics_port(), 0);
}

}  // namespace
}  // namespace shardgnn
