// The fixture of the feature port's tests (feature_port_test.cc: features,
// connections, shutdown; feature_port_sample_test.cc: samples): a real
// server over part 1 of a 2-part test graph, memory or disk mode.
#ifndef SHARDGNN_TESTS_GRAPHSTORE_FEATURE_PORT_FIXTURE_H_
#define SHARDGNN_TESTS_GRAPHSTORE_FEATURE_PORT_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "graphstore/client.h"
#include "graphstore/server.h"
#include "tests/graphstore/server_testing.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::testing {

inline constexpr int64_t kNodes = 400;
inline constexpr int64_t kDim = 16;

// Serves part 1 of a 2-part fixture; the parameter is memory mode.
class FeaturePortTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK_AND_ASSIGN(metas_, WriteTestShards(graph_, 2, dir_.path()));
    ShardStoreOptions options;
    options.path = dir_.Sub("part-1");
    options.in_memory = GetParam();
    options.block_cache_bytes = 1 << 20;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
  }
  void Start(GraphStoreServerOptions options = {},
             GraphStoreClientOptions client_options = {}) {
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    ASSERT_OK_AND_ASSIGN(
        client_, GraphStoreClient::Connect(server_->address(), client_options));
    ASSERT_OK(client_->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  }
  std::vector<NodeId> Owned() const {
    std::vector<NodeId> ids(
        static_cast<size_t>(metas_[1].node_end - metas_[1].node_start));
    std::iota(ids.begin(), ids.end(), metas_[1].node_start);
    return ids;
  }
  // Fetches `ids` into a buffer of `slots` rows at `rows` (or contiguously)
  // and checks every row bit for bit, and that other slots are untouched.
  void ExpectFetch(const std::vector<NodeId>& ids,
                   const std::vector<size_t>& rows = {}, size_t slots = 0) {
    slots = rows.empty() ? ids.size() : slots;
    std::vector<float> out(slots * kDim, -7.0f);
    ASSERT_OK(client_->GetFeatures(ids, kDim, out.data(), rows));
    std::vector<bool> written(slots, false);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t at = rows.empty() ? i : rows[i];
      written[at] = true;
      ASSERT_EQ(std::memcmp(out.data() + at * kDim, graph_.Row(ids[i]),
                            kDim * sizeof(float)),
                0)
          << "node " << ids[i];
    }
    for (size_t r = 0; r < slots; ++r) {
      if (!written[r]) {
        ASSERT_EQ(out[r * kDim], -7.0f) << "slot " << r;
      }
    }
  }

  // Checks how many fetches the server answered on each path.
  void ExpectFetchCalls(int64_t port, int64_t grpc) {
    ASSERT_OK_AND_ASSIGN(ServerStats stats, client_->Stats());
    EXPECT_EQ(MethodCalls(stats, "FeaturePort"), port);
    EXPECT_EQ(MethodCalls(stats, "GetFeatures"), grpc);
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
  std::unique_ptr<GraphStoreClient> client_;
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_GRAPHSTORE_FEATURE_PORT_FIXTURE_H_
