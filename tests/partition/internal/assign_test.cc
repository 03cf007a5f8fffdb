#include "partition/internal/assign.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/progress.h"
#include "tests/partition/graph_fixture.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn::partition_internal {
namespace {

using ::testing::ElementsAre;

std::vector<int32_t> Row(const MetisGraph& g, int u) {
  return std::vector<int32_t>(g.adjncy.begin() + g.xadj[u],
                              g.adjncy.begin() + g.xadj[u + 1]);
}

TEST(SymmetrizeTest, DirectedInputBecomesTheUnionWithoutSelfLoops) {
  Progress::SetQuietByDefault(true);
  // 0->1, 0->0, 1->2, 2->0, 3 isolated; 1->2 given twice.
  std::vector<int64_t> indptr = {0, 2, 4, 5, 5};
  std::vector<NodeId> indices = {0, 1, 2, 2, 0};
  ASSERT_OK_AND_ASSIGN(MetisGraph g, SymmetrizeForMetis(indptr, indices, 100));
  ASSERT_EQ(g.xadj.size(), 5u);
  EXPECT_THAT(Row(g, 0), ElementsAre(1, 2));
  EXPECT_THAT(Row(g, 1), ElementsAre(0, 2));
  EXPECT_THAT(Row(g, 2), ElementsAre(0, 1));
  EXPECT_THAT(Row(g, 3), ElementsAre());
  EXPECT_EQ(g.adjncy.size(), 6u);
}

TEST(SymmetrizeTest, SymmetricInputIsCopiedAndSorted) {
  // Undirected triangle 0-1-2 plus a self-loop on 1, row 2 unsorted.
  std::vector<int64_t> indptr = {0, 2, 5, 7};
  std::vector<NodeId> indices = {1, 2, 0, 1, 2, 1, 0};
  ASSERT_OK_AND_ASSIGN(MetisGraph g, SymmetrizeForMetis(indptr, indices, 100));
  EXPECT_THAT(Row(g, 0), ElementsAre(1, 2));
  EXPECT_THAT(Row(g, 1), ElementsAre(0, 2));
  EXPECT_THAT(Row(g, 2), ElementsAre(0, 1));
}

TEST(SymmetrizeTest, OverflowOfTheIndexTypeIsReported) {
  std::vector<int64_t> indptr = {0, 1, 2};
  std::vector<NodeId> indices = {1, 0};
  auto too_many_nodes = SymmetrizeForMetis(indptr, indices, 2);
  EXPECT_TRUE(absl::IsOutOfRange(too_many_nodes.status()));
  // Directed 0->1, 0->2, 1->2: 4 offsets fit a limit of 4, but the union's
  // 6 entries do not.
  auto too_many_entries = SymmetrizeForMetis({0, 2, 3, 3}, {1, 2, 2}, 4);
  EXPECT_TRUE(absl::IsOutOfRange(too_many_entries.status()));
  EXPECT_THAT(std::string(too_many_entries.status().message()),
              ::testing::HasSubstr("32-bit idx_t"));
}

TEST(RandomAssignmentTest, DealsNodesAndTrainNodesEvenly) {
  Dataset d = testing::ClusteredGraph(5, 41, 4);
  for (int k : {1, 2, 3, 7}) {
    std::vector<int32_t> part = RandomAssignment(d, k, /*seed=*/9);
    std::vector<int64_t> nodes(k), train(k);
    for (int32_t p : part) ++nodes[p];
    for (NodeId v : d.splits.at("train")) ++train[part[v]];
    EXPECT_LE(*std::max_element(nodes.begin(), nodes.end()) -
                  *std::min_element(nodes.begin(), nodes.end()),
              1);
    EXPECT_LE(*std::max_element(train.begin(), train.end()) -
                  *std::min_element(train.begin(), train.end()),
              1);
    EXPECT_EQ(RandomAssignment(d, k, 9), part);
    if (k > 1) {
      EXPECT_NE(RandomAssignment(d, k, 10), part);
    }
  }
}

}  // namespace
}  // namespace shardgnn::partition_internal
