#include "sampler/internal/owner_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace shardgnn::internal {
namespace {

using ::testing::ElementsAre;

TEST(OwnerGroupsTest, AKeptGroupingServesAsManyNodesSplitAnyWayWithoutGrowing) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book,
                       PartitionBook::Create({0, 1000, 2000, 3000}));
  OwnerGroups groups;
  // A shuffled training call: its nodes evenly over the parts.
  std::vector<NodeId> even;
  for (NodeId v = 0; v < 3000; v += 3) even.push_back(v);
  ASSERT_OK(GroupByOwner(book, even, &groups));
  ASSERT_EQ(groups.num_parts(), 3);
  EXPECT_EQ(groups.ids(0).size(), 334u);
  EXPECT_EQ(groups.ids(1).size(), 333u);
  EXPECT_EQ(groups.ids(2).size(), 333u);
  EXPECT_EQ(groups.positions(2)[0], 667u);  // Node 2001, the 668th.
  EXPECT_GE(groups.capacity(), even.size());
  const NodeId* ids = groups.ids(0).data();
  const size_t* positions = groups.positions(0).data();
  const size_t* where = groups.where(0).data();
  // An unshuffled validation call of as many nodes, all of them part 2's:
  // the same memory, nothing made anew.
  std::vector<NodeId> skewed;
  for (NodeId v = 2000; v < 3000; ++v) skewed.push_back(v);
  ASSERT_OK(GroupByOwner(book, skewed, &groups));
  EXPECT_TRUE(groups.ids(0).empty());
  EXPECT_TRUE(groups.ids(1).empty());
  ASSERT_EQ(groups.ids(2).size(), 1000u);
  EXPECT_EQ(groups.ids(2)[999], 2999);
  EXPECT_EQ(groups.positions(2)[999], 999u);
  EXPECT_EQ(groups.where(2).size(), 1000u);
  EXPECT_EQ(groups.ids(0).data(), ids);
  EXPECT_EQ(groups.positions(0).data(), positions);
  EXPECT_EQ(groups.where(0).data(), where);
  EXPECT_EQ(groups.ids(2).data(), ids);  // Part 2 is all of it now.
}

TEST(OwnerGroupsTest, GroupsInOrderAndNamesANodeOutsideTheGraph) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book, PartitionBook::Create({0, 2, 4}));
  OwnerGroups groups;
  const std::vector<NodeId> nodes = {3, 0, 2, 1};
  ASSERT_OK(GroupByOwner(book, nodes, &groups));
  EXPECT_THAT(groups.ids(0), ElementsAre(0, 1));
  EXPECT_THAT(groups.positions(0), ElementsAre(1u, 3u));
  EXPECT_THAT(groups.ids(1), ElementsAre(3, 2));
  EXPECT_THAT(groups.positions(1), ElementsAre(0u, 2u));
  const std::vector<NodeId> outside = {1, 4};
  absl::Status s = GroupByOwner(book, outside, &groups);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("node 4"));
  EXPECT_TRUE(groups.ids(0).empty());  // Not half made.
  EXPECT_TRUE(groups.ids(1).empty());
}

}  // namespace
}  // namespace shardgnn::internal
