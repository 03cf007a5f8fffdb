// Typed (heterogeneous) shards end to end: ShardWriter::AddNodeRow, the
// typed meta, ShardStore's typed sampling, per-type features and multi-label
// labels in both modes, and the same through a real server and client.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/sampling.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "graphstore/server.h"
#include "graphstore/shard_format.h"
#include "graphstore/shard_store.h"
#include "graphstore/shard_writer.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "proto/graphstore.grpc.pb.h"
#include "tests/graphstore/server_testing.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// Global types: paper [40], author [30] (no features), venue [10]. The shard
// is part 0 of 2 and owns [0, 60): 30 papers, 20 authors, 10 venues.
constexpr int64_t kNodesTotal = 80;
constexpr int kNumClasses = 3;
const std::vector<NodeId> kTypeStarts = {0, 30, 50, 60};
const std::vector<int64_t> kTypeDims = {4, 0, 2};

struct TypedRow {
  std::vector<NodeId> neighbors;
  std::vector<int32_t> relations;
  std::vector<float> features;
  std::vector<int64_t> labels;
};

ShardMeta TypedMeta() {
  ShardMeta meta;
  meta.part_id = 0;
  meta.num_parts = 2;
  meta.node_start = 0;
  meta.node_end = 60;
  meta.num_nodes_total = kNodesTotal;
  meta.num_classes = kNumClasses;
  meta.label_columns = kNumClasses;
  meta.partition_id = "typed-test";
  meta.node_types = {{"paper", 40, 4}, {"author", 30, 0}, {"venue", 10, 2}};
  meta.edge_types = {{"author", "writes", "paper", 100, 0},
                     {"paper", "cites", "paper", 200, 0},
                     {"venue", "hosts", "paper", 50, 0}};
  meta.type_starts = kTypeStarts;
  return meta;
}

int TypeOfNode(NodeId v) { return v < 30 ? 0 : v < 50 ? 1 : 2; }

// Rows sorted by (relation, neighbor); node 0 is isolated, node 1 has long
// runs in every relation, a few nodes lack a relation.
std::vector<TypedRow> MakeRows() {
  std::vector<TypedRow> rows(60);
  uint64_t state = 42;
  for (NodeId v = 0; v < 60; ++v) {
    TypedRow& row = rows[v];
    for (int32_t r = 0; r < 3; ++r) {
      int64_t degree = v == 0   ? 0
                       : v == 1 ? 25
                                : static_cast<int64_t>(UniformBelow(&state, 9));
      if (v % 7 == 3 && r == 1) degree = 0;
      std::vector<NodeId> run;
      for (int64_t j = 0; j < degree; ++j) {
        run.push_back(static_cast<NodeId>(UniformBelow(&state, kNodesTotal)));
      }
      std::sort(run.begin(), run.end());
      run.erase(std::unique(run.begin(), run.end()), run.end());
      for (NodeId u : run) {
        row.neighbors.push_back(u);
        row.relations.push_back(r);
      }
    }
    for (int64_t d = 0; d < kTypeDims[TypeOfNode(v)]; ++d) {
      row.features.push_back(static_cast<float>(v) + 0.25f * d);
    }
    for (int c = 0; c < kNumClasses; ++c) {
      row.labels.push_back(v % 5 == 4 ? -1 : ((v >> c) & 1));
    }
  }
  return rows;
}

absl::StatusOr<ShardMeta> WriteTypedShard(const std::string& dir,
                                          const std::vector<TypedRow>& rows) {
  ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(dir, TypedMeta()));
  for (NodeId v = 0; v < 60; ++v) {
    const TypedRow& row = rows[v];
    RETURN_IF_ERROR(writer->AddNodeRow(
        v, row.neighbors.data(), row.neighbors.size(), row.relations.data(),
        row.features.empty() ? nullptr : row.features.data(),
        row.labels.data()));
  }
  RETURN_IF_ERROR(writer->AddSplit("train", {2, 3, 5, 8}));
  return writer->Finish();
}

// The in-process answer: SampleTypedRow over the same rows.
SampledNeighbors Reference(const std::vector<TypedRow>& rows,
                           const std::vector<NodeId>& ids,
                           const std::vector<int>& fanouts, bool replace,
                           uint64_t seed) {
  SampledNeighbors want;
  for (NodeId v : ids) {
    const TypedRow& row = rows[v];
    want.counts.push_back(
        SampleTypedRow(row.neighbors.data(), row.relations.data(),
                       static_cast<int64_t>(row.neighbors.size()),
                       fanouts.data(), static_cast<int>(fanouts.size()),
                       replace, seed, v, &want.neighbors, &want.relations));
  }
  return want;
}

void ExpectSameSample(const SampledNeighbors& got,
                      const SampledNeighbors& want) {
  EXPECT_EQ(std::vector<int64_t>(got.counts.begin(), got.counts.end()),
            std::vector<int64_t>(want.counts.begin(), want.counts.end()));
  EXPECT_EQ(std::vector<NodeId>(got.neighbors.begin(), got.neighbors.end()),
            std::vector<NodeId>(want.neighbors.begin(), want.neighbors.end()));
  EXPECT_EQ(got.relations, want.relations);
}

std::vector<NodeId> AllOwned() {
  std::vector<NodeId> ids;
  for (NodeId v = 59; v >= 0; --v) ids.push_back(v);  // Any order.
  ids.push_back(1);                                   // With a repeat.
  return ids;
}

const std::vector<std::vector<int>> kFanouts = {
    {2, 3, 1}, {0, -1, 2}, {-1, -1, -1}, {5, 0, 0}, {0, 0, 0}};

class TypedShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = MakeRows();
    ASSERT_OK_AND_ASSIGN(meta_, WriteTypedShard(dir_.Sub("part-0"), rows_));
  }
  absl::StatusOr<std::unique_ptr<ShardStore>> Open(bool in_memory) {
    ShardStoreOptions options;
    options.path = dir_.Sub("part-0");
    options.in_memory = in_memory;
    options.block_cache_bytes = 1 << 20;
    return ShardStore::Open(options);
  }

  TempDir dir_;
  std::vector<TypedRow> rows_;
  ShardMeta meta_;
};

TEST_F(TypedShardTest, MetaSaysTyped) {
  EXPECT_TRUE(meta_.typed());
  EXPECT_EQ(meta_.num_edges, [&] {
    int64_t n = 0;
    for (const auto& r : rows_) n += static_cast<int64_t>(r.neighbors.size());
    return n;
  }());
  EXPECT_EQ(meta_.TypeOf(0), 0);
  EXPECT_EQ(meta_.TypeOf(29), 0);
  EXPECT_EQ(meta_.TypeOf(30), 1);
  EXPECT_EQ(meta_.TypeOf(50), 2);
  EXPECT_EQ(meta_.TypeOf(59), 2);
  EXPECT_EQ(meta_.TypeOf(60), -1);
  EXPECT_EQ(meta_.TypeOf(-1), -1);
  ShardMeta untyped;
  untyped.node_end = 10;
  EXPECT_EQ(untyped.TypeOf(3), -1);
}

TEST_F(TypedShardTest, SamplesEqualTheKernelInBothModes) {
  ASSERT_OK_AND_ASSIGN(auto disk, Open(false));
  ASSERT_OK_AND_ASSIGN(auto memory, Open(true));
  EXPECT_TRUE(memory->in_memory());
  EXPECT_FALSE(memory->SharedFeatures().has_value());
  const std::vector<NodeId> ids = AllOwned();
  for (uint64_t seed : {1ull, 7ull, 12345ull}) {
    for (const auto& fanouts : kFanouts) {
      for (bool replace : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "seed " << seed << " fanouts " << fanouts[0] << ","
                     << fanouts[1] << "," << fanouts[2] << " replace "
                     << replace);
        const SampledNeighbors want =
            Reference(rows_, ids, fanouts, replace, seed);
        for (const ShardStore* store : {disk.get(), memory.get()}) {
          SampledNeighbors got;
          ASSERT_OK(store->SampleTypedNeighbors(ids, fanouts, replace, seed,
                                                1 << 20, &got));
          ExpectSameSample(got, want);
        }
      }
    }
  }
  // The reference is not trivial: the long row is cut by its fanouts, and
  // fanout 0 leaves a relation out.
  const SampledNeighbors some = Reference(rows_, {1}, {2, 3, 0}, false, 9);
  EXPECT_EQ(some.counts[0], 5);
  EXPECT_EQ(some.relations, (std::vector<int32_t>{0, 0, 1, 1, 1}));
}

TEST_F(TypedShardTest, FeaturesLabelsAndDegreesAsWritten) {
  for (bool in_memory : {false, true}) {
    ASSERT_OK_AND_ASSIGN(auto store, Open(in_memory));
    for (int t = 0; t < 3; ++t) {
      std::vector<NodeId> ids;
      for (NodeId v = kTypeStarts[t + 1] - 1; v >= kTypeStarts[t]; --v) {
        ids.push_back(v);
      }
      const size_t dim = static_cast<size_t>(kTypeDims[t]);
      std::vector<float> got(ids.size() * dim + 1, -7.0f);
      ASSERT_OK(store->GetTypeFeatures(t, ids, got.data()));
      for (size_t i = 0; i < ids.size(); ++i) {
        for (size_t d = 0; d < dim; ++d) {
          ASSERT_EQ(got[i * dim + d], rows_[ids[i]].features[d]);
        }
      }
      EXPECT_EQ(got.back(), -7.0f) << "wrote past the rows of type " << t;
    }
    std::vector<NodeId> ids = AllOwned();
    std::vector<int64_t> labels(ids.size() * kNumClasses);
    std::vector<int64_t> degrees(ids.size());
    ASSERT_OK(store->GetLabels(ids, labels.data()));
    ASSERT_OK(store->GetDegrees(ids, degrees.data()));
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int c = 0; c < kNumClasses; ++c) {
        ASSERT_EQ(labels[i * kNumClasses + c], rows_[ids[i]].labels[c]);
      }
      ASSERT_EQ(degrees[i],
                static_cast<int64_t>(rows_[ids[i]].neighbors.size()));
    }
  }
}

TEST_F(TypedShardTest, BadRequestsAreRefused) {
  for (bool in_memory : {false, true}) {
    ASSERT_OK_AND_ASSIGN(auto store, Open(in_memory));
    std::vector<float> out(64);
    // Node 35 is an author, not a paper.
    absl::Status s = store->GetTypeFeatures(0, {3, 35}, out.data());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("node 35"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("'author'"));
    EXPECT_EQ(store->GetTypeFeatures(3, {3}, out.data()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->GetTypeFeatures(2, {65}, out.data()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->GetFeatures({3}, out.data()).code(),
              absl::StatusCode::kFailedPrecondition);
    SampledNeighbors got;
    s = store->SampleTypedNeighbors({1}, {1, 1}, false, 1, 1 << 20, &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("2 relation fanouts"));
    EXPECT_EQ(
        store->SampleTypedNeighbors({1, 70}, {1, 1, 1}, false, 1, 1 << 20, &got)
            .code(),
        absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->SampleTypedNeighbors({1}, {-1, -1, -1}, false, 1, 10, &got)
                  .code(),
              absl::StatusCode::kResourceExhausted);
  }
}

TEST_F(TypedShardTest, MetaJsonRoundTrips) {
  const std::string json = meta_.ToJson();
  ASSERT_OK_AND_ASSIGN(ShardMeta back, ShardMeta::FromJson(json));
  EXPECT_EQ(back.ToJson(), json);
  ASSERT_EQ(back.node_types.size(), 3u);
  EXPECT_EQ(back.node_types[2].name, "venue");
  EXPECT_EQ(back.node_types[2].feature_dim, 2);
  ASSERT_EQ(back.edge_types.size(), 3u);
  EXPECT_EQ(back.edge_types[1].relation, "cites");
  EXPECT_EQ(back.type_starts, kTypeStarts);
  EXPECT_EQ(back.label_columns, kNumClasses);
  // An untyped shard's JSON has none of it.
  ShardMeta untyped;
  untyped.node_end = untyped.num_nodes_total = 5;
  const std::string plain = untyped.ToJson();
  EXPECT_THAT(plain, ::testing::Not(HasSubstr("node_types")));
  EXPECT_THAT(plain, ::testing::Not(HasSubstr("label_columns")));
  EXPECT_THAT(plain, ::testing::Not(HasSubstr("type_starts")));
}

TEST_F(TypedShardTest, CorruptTypedMetaIsRejected) {
  auto corrupt = [&](auto edit) {
    nlohmann::json j = nlohmann::json::parse(meta_.ToJson());
    edit(j);
    return ShardMeta::FromJson(j.dump()).status();
  };
  struct Case {
    std::string what;
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"decreasing", [](nlohmann::json& j) { j["type_starts"][2] = 20; },
       "decreases"},
      {"short", [](nlohmann::json& j) { j["type_starts"].erase(1); },
       "type_starts has 3 values"},
      {"past the range", [](nlohmann::json& j) { j["type_starts"][3] = 61; },
       "owned range"},
      {"too many of a type",
       [](nlohmann::json& j) {
         j["node_types"][0]["count"] = 45;
         j["node_types"][2]["count"] = 5;
       },
       "nodes of type"},
      {"bad name",
       [](nlohmann::json& j) { j["node_types"][0]["name"] = "a b"; },
       "not a type name"},
      {"unknown src",
       [](nlohmann::json& j) { j["edge_types"][0]["src"] = "nobody"; },
       "names a node type not in node_types"},
      {"label columns", [](nlohmann::json& j) { j["label_columns"] = 2; },
       "label_columns"},
      {"starts without types", [](nlohmann::json& j) { j.erase("node_types"); },
       "without"},
  };
  for (const Case& c : cases) {
    absl::Status s = corrupt(c.edit);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.what;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.what;
  }
}

TEST_F(TypedShardTest, WriterRefusesBadRows) {
  ASSERT_OK_AND_ASSIGN(auto writer,
                       ShardWriter::Create(dir_.Sub("bad"), TypedMeta()));
  const float features[4] = {1, 2, 3, 4};
  const int64_t labels[3] = {0, 1, 0};
  const NodeId neighbors[3] = {5, 9, 7};
  const int32_t unsorted[3] = {0, 0, 0};  // 9 then 7 within relation 0.
  absl::Status s =
      writer->AddNodeRow(0, neighbors, 3, unsorted, features, labels);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 0"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("entry 2"));
  const int32_t relation_order[3] = {1, 0, 2};
  EXPECT_EQ(
      writer->AddNodeRow(0, neighbors, 3, relation_order, features, labels)
          .code(),
      absl::StatusCode::kInvalidArgument);
  const int32_t out_of_range[3] = {0, 1, 3};
  s = writer->AddNodeRow(0, neighbors, 3, out_of_range, features, labels);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("relation 3"));
  EXPECT_EQ(
      writer->AddNodeRow(0, neighbors, 3, nullptr, features, labels).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->AddNodeRow(0, nullptr, 0, nullptr, nullptr, labels).code(),
            absl::StatusCode::kInvalidArgument)
      << "a paper needs its 4 features";
  const int32_t sorted[3] = {0, 0, 1};
  const NodeId sorted_neighbors[3] = {5, 9, 7};
  ASSERT_OK(
      writer->AddNodeRow(0, sorted_neighbors, 3, sorted, features, labels));

  // An untyped shard takes no relations; a typed meta must be consistent.
  ShardMeta untyped;
  untyped.node_end = untyped.num_nodes_total = 2;
  untyped.feature_dim = 0;
  ASSERT_OK_AND_ASSIGN(auto plain,
                       ShardWriter::Create(dir_.Sub("plain"), untyped));
  const int64_t one_label = 0;
  EXPECT_EQ(
      plain->AddNodeRow(0, neighbors, 1, sorted, nullptr, &one_label).code(),
      absl::StatusCode::kInvalidArgument);
  ShardMeta bad = TypedMeta();
  bad.type_starts = {0, 30, 20, 60};
  EXPECT_EQ(ShardWriter::Create(dir_.Sub("bad-meta"), bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The same shard behind a real server on loopback.
class TypedServerTest : public TypedShardTest,
                        public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    TypedShardTest::SetUp();
    ASSERT_OK_AND_ASSIGN(auto store, Open(GetParam()));
    store_ = std::shared_ptr<const ShardStore>(std::move(store));
    GraphStoreServerOptions options;
    options.num_threads = 2;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    ASSERT_OK_AND_ASSIGN(client_,
                         GraphStoreClient::Connect(server_->address()));
    ASSERT_OK(client_->WaitForHealthy(absl::Now() + absl::Seconds(10)));
    ASSERT_OK_AND_ASSIGN(info_, client_->Info());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Now() + absl::Seconds(5));
  }

  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> client_;
  ServerInfo info_;
};

TEST_P(TypedServerTest, InfoCarriesTheTypedMeta) {
  EXPECT_TRUE(info_.meta.typed());
  EXPECT_EQ(info_.meta.type_starts, kTypeStarts);
  EXPECT_EQ(info_.meta.label_columns, kNumClasses);
  ASSERT_EQ(info_.meta.node_types.size(), 3u);
  EXPECT_EQ(info_.meta.node_types[0].name, "paper");
  EXPECT_EQ(info_.meta.node_types[0].feature_dim, 4);
  EXPECT_EQ(info_.meta.node_types[1].count, 30);
  ASSERT_EQ(info_.meta.edge_types.size(), 3u);
  EXPECT_EQ(EdgeTypeKey(info_.meta.edge_types[2]), "venue/hosts/paper");
  EXPECT_FALSE(info_.shared_features.has_value());
}

TEST_P(TypedServerTest, TypedSamplesFeaturesAndLabelsEqualTheStore) {
  const std::vector<NodeId> ids = AllOwned();
  for (uint64_t seed : {3ull, 99ull}) {
    for (const auto& fanouts : kFanouts) {
      SampledNeighbors got;
      ASSERT_OK(client_->SampleTypedNeighbors(ids, fanouts, false, seed, &got));
      SampledNeighbors want;
      ASSERT_OK(store_->SampleTypedNeighbors(ids, fanouts, false, seed, 1 << 20,
                                             &want));
      ExpectSameSample(got, want);
      ExpectSameSample(got, Reference(rows_, ids, fanouts, false, seed));
    }
  }
  for (int t = 0; t < 3; ++t) {
    std::vector<NodeId> ids_of_type;
    for (NodeId v = kTypeStarts[t]; v < kTypeStarts[t + 1]; v += 2) {
      ids_of_type.push_back(v);
    }
    const size_t dim = static_cast<size_t>(kTypeDims[t]);
    std::vector<float> got(ids_of_type.size() * dim);
    ASSERT_OK(
        client_->GetTypeFeatures(t, ids_of_type, kTypeDims[t], got.data()));
    for (size_t i = 0; i < ids_of_type.size(); ++i) {
      for (size_t d = 0; d < dim; ++d) {
        ASSERT_EQ(got[i * dim + d], rows_[ids_of_type[i]].features[d]);
      }
    }
    // Scattered to rows of the caller's choosing.
    if (dim > 0) {
      std::vector<float> scattered(ids_of_type.size() * dim);
      std::vector<size_t> rows;
      for (size_t i = 0; i < ids_of_type.size(); ++i) {
        rows.push_back(ids_of_type.size() - 1 - i);
      }
      ASSERT_OK(client_->GetTypeFeatures(t, ids_of_type, kTypeDims[t],
                                         scattered.data(), rows));
      for (size_t i = 0; i < ids_of_type.size(); ++i) {
        ASSERT_EQ(scattered[rows[i] * dim], got[i * dim]);
      }
    }
  }
  // The wrong width is the client's DATA_LOSS.
  std::vector<float> wide(40 * 5);
  EXPECT_EQ(client_->GetTypeFeatures(0, {1, 2}, 5, wide.data()).code(),
            absl::StatusCode::kDataLoss);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> labels, client_->GetLabels(ids));
  ASSERT_EQ(labels.size(), ids.size() * kNumClasses);
  std::vector<int64_t> want(labels.size());
  ASSERT_OK(store_->GetLabels(ids, want.data()));
  EXPECT_EQ(labels, want);
  EXPECT_EQ(labels[(59 - 4) * kNumClasses], -1) << "node 4 is unlabeled";
}

TEST_P(TypedServerTest, MalformedRequestsAreRefusedAndTheServerServesOn) {
  SampledNeighbors got;
  absl::Status s =
      client_->SampleTypedNeighbors({1, 2}, {1, 1}, false, 1, &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("2 relation fanouts"));
  s = client_->SampleTypedNeighbors({1}, {1, -2, 1}, false, 1, &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("fanout -2 of relation 1"));
  std::vector<float> out(8);
  s = client_->GetTypeFeatures(0, {1, 35}, 4, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 35"));
  EXPECT_EQ(client_->GetTypeFeatures(7, {1}, 4, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  // Untyped features of a typed shard, over gRPC (and the feature port).
  s = client_->GetFeatures({1}, 4, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;

  // relation_fanouts that are not whole int32s, by hand.
  auto channel = grpc::CreateChannel(server_->address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = proto::GraphStore::NewStub(channel);
  proto::SampleNeighborsRequest req;
  const NodeId one = 1;
  req.set_node_ids(std::string(reinterpret_cast<const char*>(&one), 8));
  req.set_relation_fanouts(std::string(5, '\1'));
  proto::SampleNeighborsResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status raw = stub->SampleNeighbors(&ctx, req, &resp);
  EXPECT_EQ(raw.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(raw.error_message(), HasSubstr("relation_fanouts"));

  // Still serving, and answering right.
  ASSERT_OK(client_->Health());
  ASSERT_OK(client_->SampleTypedNeighbors({1, 2}, {2, 2, 2}, false, 5, &got));
  ExpectSameSample(got, Reference(rows_, {1, 2}, {2, 2, 2}, false, 5));
  ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
  EXPECT_GE(testing::MethodCalls(stats, "SampleNeighbors", /*errors=*/true), 3);
}

INSTANTIATE_TEST_SUITE_P(Modes, TypedServerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Memory" : "Disk";
                         });

}  // namespace
}  // namespace shardgnn
