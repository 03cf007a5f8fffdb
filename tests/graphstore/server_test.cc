#include "graphstore/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/peak_rss.h"
#include "common/sampling.h"
#include "common/shared_memory.h"
#include "graphstore/client.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"
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
constexpr int64_t kDim = 16;

// Writes a 2-part fixture once per test and serves part 1.
class ServerTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK_AND_ASSIGN(metas_, WriteTestShards(graph_, 2, dir_.path()));
    ASSERT_OK_AND_ASSIGN(store_, OpenStore(GetParam()));
    ASSERT_OK(StartServer({}));
  }
  absl::StatusOr<std::shared_ptr<const ShardStore>> OpenStore(bool in_memory) {
    ShardStoreOptions options;
    options.path = dir_.Sub("part-1");
    options.in_memory = in_memory;
    options.block_cache_bytes = 1 << 20;
    absl::StatusOr<std::unique_ptr<ShardStore>> s = ShardStore::Open(options);
    if (!s.ok()) return s.status();
    return std::shared_ptr<const ShardStore>(std::move(s).value());
  }
  absl::Status StartServer(GraphStoreServerOptions options) {
    options.num_threads = 4;
    auto server = GraphStoreServer::Start(store_, options);
    if (!server.ok()) return server.status();
    server_ = std::move(server).value();
    auto client = GraphStoreClient::Connect(server_->address());
    if (!client.ok()) return client.status();
    client_ = std::move(client).value();
    return client_->WaitForHealthy(absl::Now() + absl::Seconds(10));
  }
  std::vector<NodeId> Owned() const {
    std::vector<NodeId> ids;
    for (NodeId v = metas_[1].node_start; v < metas_[1].node_end; ++v) {
      ids.push_back(v);
    }
    return ids;
  }
  // Checks a sample against the source graph and the shared kernel.
  void ExpectSample(absl::Span<const NodeId> ids, int fanout, bool replace,
                    uint64_t seed, const SampledNeighbors& got) {
    ASSERT_EQ(got.counts.size(), ids.size());
    size_t pos = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto adj = graph_.Neighbors(ids[i]);
      Int64Buffer want;
      SampleNeighbors(adj.data(), static_cast<int64_t>(adj.size()), fanout,
                      replace, seed, ids[i], &want);
      ASSERT_EQ(got.counts[i], static_cast<int64_t>(want.size()));
      ASSERT_TRUE(
          std::equal(want.begin(), want.end(), got.neighbors.begin() + pos))
          << "node " << ids[i];
      pos += want.size();
    }
    ASSERT_EQ(pos, got.neighbors.size());
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> client_;
};

TEST_P(ServerTest, InfoDescribesTheShard) {
  EXPECT_GT(server_->port(), 0);
  ASSERT_OK_AND_ASSIGN(ServerInfo info, client_->Info());
  EXPECT_EQ(info.meta.part_id, 1);
  EXPECT_EQ(info.meta.num_parts, 2);
  EXPECT_EQ(info.meta.node_start, metas_[1].node_start);
  EXPECT_EQ(info.meta.node_end, metas_[1].node_end);
  EXPECT_EQ(info.meta.feature_dim, kDim);
  EXPECT_EQ(info.meta.num_edges, metas_[1].num_edges);
  EXPECT_EQ(info.meta.content_checksum, metas_[1].content_checksum);
  EXPECT_EQ(info.meta.partition_id, "test-partition");
  EXPECT_EQ(info.meta.split_counts, metas_[1].split_counts);
  EXPECT_EQ(info.in_memory, GetParam());
  // Memory mode lends its feature matrix to processes on this machine.
  ASSERT_EQ(info.shared_features.has_value(), GetParam());
  if (info.shared_features) {
    EXPECT_EQ(info.shared_features->pid, getpid());
    EXPECT_EQ(info.shared_features->boot_id, BootId());
    auto region = SharedRegion::MapPeer(*info.shared_features);
    ASSERT_TRUE(region.ok()) << region.status();
    EXPECT_EQ((*region)->header().words[0], metas_[1].node_start);
    EXPECT_EQ((*region)->header().words[2], kDim);
  }
}

TEST_P(ServerTest, AnswersMatchTheSource) {
  std::vector<NodeId> ids = Owned();
  std::vector<float> feats(ids.size() * kDim);
  ASSERT_OK(client_->GetFeatures(ids, kDim, feats.data()));
  EXPECT_EQ(std::memcmp(feats.data(), graph_.Row(ids[0]), feats.size() * 4), 0)
      << "features are not bit-exact";
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> labels, client_->GetLabels(ids));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> degrees, client_->GetDegrees(ids));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(labels[i], graph_.labels[ids[i]]);
    EXPECT_EQ(degrees[i],
              static_cast<int64_t>(graph_.Neighbors(ids[i]).size()));
  }
  for (int fanout : {-1, 3, 10, 25}) {
    for (bool replace : {false, true}) {
      ASSERT_OK_AND_ASSIGN(SampledNeighbors s,
                           client_->SampleNeighbors(ids, fanout, replace, 5));
      ExpectSample(ids, fanout, replace, 5, s);
    }
  }
  ASSERT_OK_AND_ASSIGN(std::vector<NodeId> train, client_->GetSplit("train"));
  EXPECT_EQ(static_cast<int64_t>(train.size()),
            metas_[1].split_counts.at("train"));
  EXPECT_EQ(client_->GetSplit("nope").status().code(),
            absl::StatusCode::kNotFound);
  // An empty batch is a valid, empty answer.
  ASSERT_OK_AND_ASSIGN(SampledNeighbors empty,
                       client_->SampleNeighbors({}, 10, false, 1));
  EXPECT_TRUE(empty.counts.empty());
}

TEST_P(ServerTest, UnownedIdNamesTheFirstBadId) {
  std::vector<NodeId> ids = {metas_[1].node_start, 7, 8};
  auto s = client_->GetLabels(ids);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("node 7 (position 1) is not owned by shard 1"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(server_->address()));
  std::vector<float> feats(3 * kDim);
  EXPECT_EQ(client_->GetFeatures(ids, kDim, feats.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->SampleNeighbors(ids, 5, false, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(ServerTest, MalformedAndOversizedRequestsGetTheirStatus) {
  auto channel = grpc::CreateChannel(server_->address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = proto::GraphStore::NewStub(channel);
  auto call = [&](const proto::NodeIdsRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    proto::GetFeaturesResponse resp;
    return stub->GetFeatures(&ctx, req, &resp);
  };
  proto::NodeIdsRequest req;
  req.set_node_ids(std::string(13, '\0'));  // Not a multiple of 8.
  grpc::Status s = call(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("13 bytes"));

  // Over the default limit of 2^20 IDs per call.
  std::vector<NodeId> many((1 << 20) + 1, metas_[1].node_start);
  req.set_node_ids(
      std::string(reinterpret_cast<const char*>(many.data()), many.size() * 8));
  s = call(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("exceeds the limit"));

  for (int fanout : {-2, 10001}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    proto::SampleNeighborsRequest sreq;
    sreq.set_node_ids(std::string(8, '\0'));
    sreq.set_fanout(fanout);
    proto::SampleNeighborsResponse sresp;
    s = stub->SampleNeighbors(&ctx, sreq, &sresp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << fanout;
    EXPECT_THAT(s.error_message(), HasSubstr("fanout"));
  }

  // The server keeps serving after bad requests.
  ASSERT_OK(client_->Health());
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  int64_t errors = 0;
  for (const auto& m : stats.methods) errors += m.errors;
  EXPECT_EQ(errors, 4);
}

TEST_P(ServerTest, ResponseOverTheMessageLimitIsResourceExhausted) {
  server_->Shutdown(absl::Now());
  GraphStoreServerOptions options;
  options.max_message_bytes = 1 << 20;
  ASSERT_OK(StartServer(options));
  // 20000 rows x 16 floats = 1.28 MB > 1 MiB.
  std::vector<NodeId> ids(20000, metas_[1].node_start + 1);
  std::vector<float> feats(ids.size() * kDim);
  absl::Status s = client_->GetFeatures(ids, kDim, feats.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("message limit"));
  // The hub (node 1 is on part 0; use the densest owned node) with fanout -1
  // repeated past the limit.
  NodeId hub = metas_[1].node_start;
  for (NodeId v : Owned()) {
    if (graph_.Neighbors(v).size() > graph_.Neighbors(hub).size()) hub = v;
  }
  std::vector<NodeId> hubs(50000, hub);
  auto sample = client_->SampleNeighbors(hubs, -1, false, 1);
  EXPECT_EQ(sample.status().code(), absl::StatusCode::kResourceExhausted)
      << sample.status();
}

TEST_P(ServerTest, SixteenThreadsThousandCallsEach) {
  std::vector<NodeId> owned = Owned();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      uint64_t state = static_cast<uint64_t>(t);
      std::vector<NodeId> ids(8);
      std::vector<float> feats(ids.size() * kDim);
      for (int call = 0; call < 1000; ++call) {
        for (auto& id : ids) id = owned[UniformBelow(&state, owned.size())];
        if (call % 2 == 0) {
          absl::Status s = client_->GetFeatures(ids, kDim, feats.data());
          bool ok = s.ok();
          for (size_t i = 0; ok && i < ids.size(); ++i) {
            ok = std::memcmp(&feats[i * kDim], graph_.Row(ids[i]), kDim * 4) ==
                 0;
          }
          if (!ok) ++failures;
        } else {
          auto s = client_->SampleNeighbors(ids, 10, false, call);
          if (!s.ok()) {
            ++failures;
            continue;
          }
          size_t pos = 0;
          for (size_t i = 0; i < ids.size(); ++i) {
            auto adj = graph_.Neighbors(ids[i]);
            Int64Buffer want;
            SampleNeighbors(adj.data(), static_cast<int64_t>(adj.size()), 10,
                            false, call, ids[i], &want);
            if (s->counts[i] != static_cast<int64_t>(want.size()) ||
                !std::equal(want.begin(), want.end(),
                            s->neighbors.begin() + pos)) {
              ++failures;
              break;
            }
            pos += want.size();
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  int64_t calls = 0;
  for (const auto& m : stats.methods) {
    if (m.method == "GetFeatures" || m.method == "SampleNeighbors") {
      calls += m.calls;
      EXPECT_GT(m.latency_p99_us, 0);
      EXPECT_GT(m.bytes_out, 0);
    }
  }
  EXPECT_EQ(calls, 16000);
}

TEST_P(ServerTest, ShutdownUnderLoadIsPromptAndNeverWrong) {
  std::vector<NodeId> owned = Owned();
  std::atomic<bool> stop{false};
  std::atomic<int> ok_calls{0}, wrong{0}, other_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      std::vector<NodeId> ids(owned.begin(), owned.end());
      while (!stop.load()) {
        auto s = client_->SampleNeighbors(ids, 25, false, 3);
        if (s.ok()) {
          ++ok_calls;
          if (s->counts.size() != ids.size()) ++wrong;
        } else if (s.status().code() != absl::StatusCode::kUnavailable &&
                   s.status().code() != absl::StatusCode::kCancelled) {
          // Calls arriving while the server stops are turned away (or, at
          // the very end, cancelled); nothing else may happen.
          ADD_FAILURE() << s.status();
          ++other_errors;
        }
      }
    });
  }
  while (ok_calls.load() < 20) std::this_thread::yield();
  absl::Time start = absl::Now();
  server_->Shutdown(absl::Now() + absl::Seconds(10));
  absl::Duration took = absl::Now() - start;
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_LT(took, absl::Seconds(5));
  // Shut down: new calls fail with UNAVAILABLE naming the server.
  absl::Status s = client_->Health();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr(server_->address()));
}

// Forwards to a real store, but GetFeatures waits until released, so a test
// can hold calls in flight.
class BlockingStore final : public ShardStore {
 public:
  explicit BlockingStore(std::shared_ptr<const ShardStore> inner)
      // Blocking calls must run on the worker pool, as in disk mode.
      : ShardStore(inner->Meta(), /*in_memory=*/false),
        inner_(std::move(inner)) {}
  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               int64_t max_neighbors,
                               SampledNeighbors* out) const override {
    return inner_->SampleNeighbors(ids, fanout, replace, seed, max_neighbors,
                                   out);
  }
  absl::Status GetFeatures(absl::Span<const NodeId> ids,
                           float* out) const override {
    entered_.fetch_add(1);
    release_.WaitForNotificationWithTimeout(absl::Seconds(20));
    return inner_->GetFeatures(ids, out);
  }
  absl::Status GetLabels(absl::Span<const NodeId> ids,
                         int64_t* out) const override {
    return inner_->GetLabels(ids, out);
  }
  absl::Status GetDegrees(absl::Span<const NodeId> ids,
                          int64_t* out) const override {
    return inner_->GetDegrees(ids, out);
  }
  absl::StatusOr<std::vector<NodeId>> GetSplit(
      absl::string_view name) const override {
    return inner_->GetSplit(name);
  }
  int entered() const { return entered_.load(); }
  void Release() { release_.Notify(); }

 private:
  std::shared_ptr<const ShardStore> inner_;
  mutable std::atomic<int> entered_{0};
  mutable absl::Notification release_;
};

TEST_P(ServerTest, ShutdownLetsCallsInFlightFinish) {
  auto blocking = std::make_shared<BlockingStore>(store_);
  store_ = blocking;
  server_->Shutdown(absl::Now());
  ASSERT_OK(StartServer({}));  // 4 workers.
  std::vector<NodeId> ids = {metas_[1].node_start, metas_[1].node_end - 1};
  std::vector<absl::Status> results(4);
  std::vector<std::vector<float>> rows(4, std::vector<float>(2 * kDim));
  std::vector<std::thread> callers;
  // Two calls over gRPC (client_ never called Info) and two over the
  // feature port.
  ASSERT_OK_AND_ASSIGN(auto port_client,
                       GraphStoreClient::Connect(server_->address()));
  ASSERT_OK(port_client->Info().status());
  ASSERT_TRUE(port_client->UsesFeaturePort());
  for (int i = 0; i < 4; ++i) {
    GraphStoreClient* c = i < 2 ? client_.get() : port_client.get();
    callers.emplace_back(
        [&, i, c] { results[i] = c->GetFeatures(ids, kDim, rows[i].data()); });
  }
  absl::Time until = absl::Now() + absl::Seconds(10);
  while (blocking->entered() < 4 && absl::Now() < until) {
    std::this_thread::yield();
  }
  ASSERT_EQ(blocking->entered(), 4);
  std::thread stopper(
      [&] { server_->Shutdown(absl::Now() + absl::Seconds(10)); });
  // While draining, new calls are turned away with UNAVAILABLE.
  GraphStoreClientOptions no_retry;
  no_retry.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto other,
                       GraphStoreClient::Connect(server_->address(), no_retry));
  absl::Status late = absl::OkStatus();
  until = absl::Now() + absl::Seconds(10);
  while (late.ok() && absl::Now() < until) late = other->Health();
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable) << late;
  blocking->Release();
  stopper.join();
  for (auto& c : callers) c.join();
  EXPECT_TRUE(port_client->UsesFeaturePort());  // Never fell back.
  for (int i = 0; i < 4; ++i) {
    EXPECT_OK(results[i]);
    EXPECT_EQ(std::memcmp(rows[i].data(), graph_.Row(ids[0]), kDim * 4), 0);
    EXPECT_EQ(std::memcmp(rows[i].data() + kDim, graph_.Row(ids[1]), kDim * 4),
              0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ServerTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

TEST(ServerStartTest, BadAddressIsUnavailable) {
  TempDir dir;
  TestGraph graph = MakeTestGraph(20, 2);
  ASSERT_OK(WriteTestShards(graph, 1, dir.path()));
  ShardStoreOptions options;
  options.path = dir.Sub("part-0");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const ShardStore> store,
                       ShardStore::Open(options));
  GraphStoreServerOptions server_options;
  server_options.listen_address = "256.1.1.1:0";
  auto server = GraphStoreServer::Start(store, server_options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("256.1.1.1"));

  // A port already taken by another server is refused, not shared.
  ASSERT_OK_AND_ASSIGN(auto first, GraphStoreServer::Start(store, {}));
  server_options.listen_address = first->address();
  auto second = GraphStoreServer::Start(store, server_options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(first->address()));
}

// The learnable tables' default bound follows the machine's memory (half
// of it in memory), and a bound beyond the memory is refused unless the
// tables are on disk: a token holder cannot make tables the host cannot hold.
TEST(ServerStartTest, EmbeddingTablesAreBoundedByTheMachinesMemory) {
  const int64_t memory = PhysicalMemoryBytes();
  ASSERT_GT(memory, 0);
  EXPECT_EQ(DefaultMaxEmbeddingBytes(/*tables_on_disk=*/false), memory / 2);
  EXPECT_EQ(DefaultMaxEmbeddingBytes(/*tables_on_disk=*/true),
            int64_t{64} << 30);

  TempDir dir;
  ASSERT_OK(WriteTestShards(MakeTestGraph(100, 4), 1, dir.path()).status());
  ShardStoreOptions options;
  options.path = dir.Sub("part-0");
  options.in_memory = true;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const ShardStore> store,
                       ShardStore::Open(options));
  GraphStoreServerOptions server_options;
  server_options.max_embedding_bytes = memory + (int64_t{1} << 30);
  auto refused = GraphStoreServer::Start(store, server_options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("--embedding-table-dir"));
  server_options.embedding_table_dir = dir.Sub("tables");
  ASSERT_OK_AND_ASSIGN(auto on_disk,
                       GraphStoreServer::Start(store, server_options));

  // A 75 MiB table: within the default (half the memory) ...
  ASSERT_OK_AND_ASSIGN(auto server, GraphStoreServer::Start(store, {}));
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server->address()));
  EmbeddingTableConfig config;
  config.name = "huge";
  config.dim = kMaxEmbeddingDim;
  config.optimizer = EmbeddingOptimizer::kAdam;
  config.num_trainers = 1;
  config.run_id = "r";
  config.run_secret = "the run's secret, 16 bytes or more";
  ASSERT_OK(client->CreateEmbeddingTable(config));
  // ... and a second server bounded below it refuses the same table.
  server_options = {};
  server_options.max_embedding_bytes = 64 << 20;
  ASSERT_OK_AND_ASSIGN(auto small,
                       GraphStoreServer::Start(store, server_options));
  ASSERT_OK_AND_ASSIGN(auto small_client,
                       GraphStoreClient::Connect(small->address()));
  const absl::Status over = small_client->CreateEmbeddingTable(config);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_THAT(std::string(over.message()), HasSubstr("--max-embedding-mb"));
}

}  // namespace
}  // namespace shardgnn
