#include "partition/relabelled_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/npy.h"
#include "common/progress.h"
#include "partition/partition.h"
#include "partition/partition_book.h"
#include "tests/partition/graph_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::ClusteredGraph;
using ::shardgnn::testing::TempDir;
using ::testing::HasSubstr;

// Node v of the relabelled graph is node orig_ids[v] of the dataset: same
// features, label, and neighbors (mapped through the relabelling, sorted).
TEST(RelabelledGraphTest, IsTheDatasetInThePartitionsIds) {
  Progress::SetQuietByDefault(true);
  Dataset d = ClusteredGraph(/*clusters=*/4, /*per_cluster=*/60, 6);
  TempDir tmp;
  PartitionOptions options;
  options.num_parts = 3;
  ASSERT_OK(PartitionInMemory(d, tmp.Sub("p"), options).status());
  ASSERT_OK_AND_ASSIGN(RelabelledGraph g, RelabelForPartition(d, tmp.Sub("p")));
  ASSERT_OK_AND_ASSIGN(
      NpyArray<int64_t> orig,
      ReadNpy<int64_t>(JoinPath(tmp.Sub("p"), kOrigIdsFile), 1));
  ASSERT_EQ(g.num_nodes(), d.num_nodes());
  std::vector<NodeId> new_id(d.num_nodes());
  for (NodeId v = 0; v < d.num_nodes(); ++v) new_id[orig.data[v]] = v;
  const int64_t dim = d.feature_dim();
  ASSERT_EQ(g.feature_dim, dim);
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const NodeId o = orig.data[v];
    EXPECT_EQ(g.labels[v], d.labels[o]);
    EXPECT_EQ(std::memcmp(&g.features[v * dim], &d.features[o * dim],
                          dim * sizeof(float)),
              0);
    std::vector<NodeId> want;
    for (int64_t e = d.indptr[o]; e < d.indptr[o + 1]; ++e)
      want.push_back(new_id[d.indices[e]]);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(std::vector<NodeId>(g.indices.begin() + g.indptr[v],
                                  g.indices.begin() + g.indptr[v + 1]),
              want);
    for (NodeId u : want) EXPECT_TRUE(g.HasEdge(v, u));
    EXPECT_EQ(g.Degree(v), static_cast<int64_t>(want.size()));
  }
}

TEST(RelabelledGraphTest, RefusesIdsThatAreNotAPermutation) {
  Dataset d = ClusteredGraph(2, 10, 3);
  TempDir tmp;
  const std::string path = JoinPath(tmp.path(), kOrigIdsFile);
  std::vector<int64_t> ids(d.num_nodes());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  ids[5] = ids[4];  // Repeated.
  ASSERT_OK(WriteNpy<int64_t>(path, {static_cast<int64_t>(ids.size())}, ids));
  auto g = RelabelForPartition(d, tmp.path());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(path));
  ids.pop_back();  // Too few.
  ASSERT_OK(WriteNpy<int64_t>(path, {static_cast<int64_t>(ids.size())}, ids));
  EXPECT_EQ(RelabelForPartition(d, tmp.path()).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shardgnn
