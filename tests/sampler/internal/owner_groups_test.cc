#include "sampler/internal/owner_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
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

// A loader's kept threads: one samples training batches, another validation's
// larger ones. Alone each grows its grouping once; when their calls overlap
// (the next epoch's batches sampled during validation) neither grows again.
// From a pool shared by the threads, the overlap found the one large grouping
// taken and made a new one: fresh pages at whichever validation first
// overlapped (issue 17).
TEST(OwnerGroupsTest, EachThreadsGroupingGrowsOnceHoweverItsCallsOverlap) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book,
                       PartitionBook::Create({0, 5000, 10000}));
  auto call = [&](size_t n) {
    std::vector<NodeId> nodes(n);
    for (size_t i = 0; i < n; ++i) nodes[i] = static_cast<NodeId>(i * 3);
    return nodes;
  };
  const std::vector<NodeId> train = call(1000), valid = call(3000);
  struct Seen {
    size_t capacity_before = 0;  // The lease's, before grouping.
    const NodeId* ids = nullptr;
  };
  Seen t1, t2, v1, v2;
  auto group = [&](ThreadOwnerGroups& g, absl::Span<const NodeId> nodes,
                   Seen* seen) {
    seen->capacity_before = g->capacity();
    ASSERT_OK(GroupByOwner(book, nodes, g.get()));
    seen->ids = g->ids(0).data();
  };
  std::promise<void> t_alone, v_holding, t_overlapped;
  std::thread trainer([&] {
    {
      ThreadOwnerGroups g;
      group(g, train, &t1);
    }
    t_alone.set_value();
    v_holding.get_future().wait();
    {
      ThreadOwnerGroups g;
      group(g, train, &t2);
    }
    t_overlapped.set_value();
  });
  std::thread validator([&] {
    t_alone.get_future().wait();
    {
      ThreadOwnerGroups g;
      group(g, valid, &v1);
    }
    ThreadOwnerGroups g;  // Held while the trainer's call runs.
    v_holding.set_value();
    t_overlapped.get_future().wait();
    group(g, valid, &v2);
  });
  trainer.join();
  validator.join();
  EXPECT_GE(t2.capacity_before, train.size());
  EXPECT_EQ(t2.ids, t1.ids);
  EXPECT_GE(v2.capacity_before, valid.size());
  EXPECT_EQ(v2.ids, v1.ids);
}

// A loader's threads end (validation's, before the test pass) and the next
// loader's begin: a new thread starts with the grouping an ended one grew.
TEST(OwnerGroupsTest, AThreadThatBeginsTakesTheGroupingOfOneThatEnded) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book,
                       PartitionBook::Create({0, 5000, 10000}));
  std::vector<NodeId> nodes(3000);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i] = static_cast<NodeId>(i * 3);
  }
  const NodeId* ended_ids = nullptr;
  std::thread ended([&] {
    ThreadOwnerGroups g;
    ASSERT_OK(GroupByOwner(book, nodes, g.get()));
    ended_ids = g->ids(0).data();
  });
  ended.join();
  size_t capacity = 0;
  const NodeId* begun_ids = nullptr;
  std::thread begun([&] {
    ThreadOwnerGroups g;
    capacity = g->capacity();
    ASSERT_OK(GroupByOwner(book, nodes, g.get()));
    begun_ids = g->ids(0).data();
  });
  begun.join();
  EXPECT_GE(capacity, nodes.size());
  EXPECT_EQ(begun_ids, ended_ids);
}

// A call made from inside another on the same thread gets a grouping of its
// own, not the one in use.
TEST(OwnerGroupsTest, ANestedUseOnAThreadGetsAnotherGrouping) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book, PartitionBook::Create({0, 2, 4}));
  const std::vector<NodeId> outer = {3, 0}, inner = {1, 2, 0};
  ThreadOwnerGroups a;
  ASSERT_OK(GroupByOwner(book, outer, a.get()));
  {
    ThreadOwnerGroups b;
    EXPECT_NE(a.get(), b.get());
    ASSERT_OK(GroupByOwner(book, inner, b.get()));
    EXPECT_THAT(b->ids(0), ElementsAre(1, 0));
  }
  EXPECT_THAT(a->ids(0), ElementsAre(0));
  EXPECT_THAT(a->ids(1), ElementsAre(3));
}

}  // namespace
}  // namespace shardgnn::internal
