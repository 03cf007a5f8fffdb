// RemoteGraphSource and a co-located server's shared feature matrix: a
// sealed one is mapped; an unsealed one (that any process of the user could
// rewrite or truncate) is refused with a line saying so, and the features
// come over the network instead.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/shared_memory.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "sampler/remote_graph_source.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNodes = 120;
constexpr int64_t kDim = 8;

// A memory-mode store that offers `region` as its shared feature matrix
// instead of its own.
class OfferingStore final : public ShardStore {
 public:
  OfferingStore(std::shared_ptr<const ShardStore> inner,
                std::unique_ptr<SharedRegion> region)
      : ShardStore(inner->Meta(), /*in_memory=*/true),
        inner_(std::move(inner)),
        region_(std::move(region)) {}
  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               int64_t max_neighbors,
                               SampledNeighbors* out) const override {
    return inner_->SampleNeighbors(ids, fanout, replace, seed, max_neighbors,
                                   out);
  }
  absl::Status GetFeatures(absl::Span<const NodeId> ids,
                           float* out) const override {
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
  std::optional<SharedRegionRef> SharedFeatures() const override {
    return region_->Ref();
  }

 private:
  std::shared_ptr<const ShardStore> inner_;
  std::unique_ptr<SharedRegion> region_;
};

class RemoteSharedMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::MakeTestGraph(kNodes, kDim);
    ASSERT_OK(testing::WriteTestShards(graph_, 1, dir_.path()).status());
  }

  // A server offering a region of the right shape whose rows are all 7s
  // (not the shard's), sealed or not.
  void Serve(bool seal) {
    ShardStoreOptions options;
    options.path = dir_.Sub("part-0");
    options.in_memory = true;
    options.share_features = false;
    ASSERT_OK_AND_ASSIGN(auto store, ShardStore::Open(options));
    const int64_t words[3] = {0, kNodes, kDim};
    ASSERT_OK_AND_ASSIGN(
        auto region,
        SharedRegion::Create("fake", kNodes * kDim * sizeof(float), words));
    float* rows = reinterpret_cast<float*>(region->payload());
    std::fill(rows, rows + kNodes * kDim, 7.0f);
    if (seal) {
      ASSERT_OK(region->Seal());
    }
    auto offering =
        std::make_shared<OfferingStore>(std::move(store), std::move(region));
    ASSERT_OK_AND_ASSIGN(
        server_, GraphStoreServer::Start(offering, GraphStoreServerOptions()));
  }

  absl::StatusOr<std::unique_ptr<RemoteGraphSource>> Connect() {
    RemoteGraphSourceOptions options;
    options.connect_timeout = absl::Seconds(10);
    return RemoteGraphSource::Connect({server_->address()}, options);
  }

  std::vector<float> Fetch(const RemoteGraphSource& source) {
    std::vector<NodeId> ids = {3, 1, 77};
    std::vector<float> rows(ids.size() * kDim);
    EXPECT_OK(source.FetchFeatures(ids, rows.data()));
    return rows;
  }

  testing::TempDir dir_;
  testing::TestGraph graph_;
  std::unique_ptr<GraphStoreServer> server_;
};

TEST_F(RemoteSharedMemoryTest, SealedRegionIsMapped) {
  ASSERT_NO_FATAL_FAILURE(Serve(/*seal=*/true));
  ASSERT_OK_AND_ASSIGN(auto source, Connect());
  EXPECT_TRUE(source->reads_shared_memory(0));
  EXPECT_EQ(Fetch(*source), std::vector<float>(3 * kDim, 7.0f));
}

TEST_F(RemoteSharedMemoryTest, UnsealedRegionIsRefusedWithALine) {
  ASSERT_NO_FATAL_FAILURE(Serve(/*seal=*/false));
  ::testing::internal::CaptureStderr();
  auto source = Connect();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_OK(source.status());
  EXPECT_FALSE((*source)->reads_shared_memory(0));
  EXPECT_THAT(err, HasSubstr(server_->address()));
  EXPECT_THAT(err, HasSubstr("not sealed"));
  // The shard's own rows, over the network.
  std::vector<float> want;
  for (NodeId v : {3, 1, 77}) {
    want.insert(want.end(), graph_.Row(v), graph_.Row(v) + kDim);
  }
  EXPECT_EQ(Fetch(**source), want);
}

}  // namespace
}  // namespace shardgnn
