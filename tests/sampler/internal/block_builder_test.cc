#include "sampler/internal/block_builder.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/status_matchers.h"

namespace shardgnn::internal {
namespace {

// Runs two hops with fixed neighbor lists and returns (nodes, blocks).
void TwoHops(BlockBuilder* builder, std::vector<NodeId>* nodes,
             std::vector<Block>* blocks) {
  blocks->resize(2);
  ASSERT_OK(builder->Reset(std::vector<NodeId>{40, 10}));
  ASSERT_OK(builder->AddHop(std::vector<int64_t>{2, 1},
                            std::vector<NodeId>{7, 10, 7}, &(*blocks)[1]));
  ASSERT_OK(builder->AddHop(std::vector<int64_t>{0, 1, 3},
                            std::vector<NodeId>{99, 40, 3, 99}, &(*blocks)[0]));
  nodes->assign(builder->nodes().begin(), builder->nodes().end());
}

TEST(BlockBuilderTest, AssignsFirstAppearanceOrderWithDenseAndHashMaps) {
  BlockBuilder dense(100);
  BlockBuilder hashed(BlockBuilder::kDenseMapLimit + 1);
  for (BlockBuilder* builder : {&dense, &hashed}) {
    std::vector<NodeId> nodes;
    std::vector<Block> blocks;
    TwoHops(builder, &nodes, &blocks);
    EXPECT_EQ(nodes, (std::vector<NodeId>{40, 10, 7, 99, 3}));
    EXPECT_EQ(blocks[1].num_dst, 2);
    EXPECT_EQ(blocks[1].num_src, 3);
    EXPECT_EQ(blocks[1].indptr, (Int64Buffer{0, 2, 3}));
    EXPECT_EQ(blocks[1].indices, (Int64Buffer{2, 1, 2}));
    EXPECT_EQ(blocks[0].num_dst, 3);
    EXPECT_EQ(blocks[0].num_src, 5);
    EXPECT_EQ(blocks[0].indices, (Int64Buffer{3, 0, 4, 3}));
    // Reusing the builder starts from scratch.
    TwoHops(builder, &nodes, &blocks);
    EXPECT_EQ(nodes.size(), 5u);
  }
}

TEST(BlockBuilderTest, RejectsBadIdsAndMismatchedCounts) {
  BlockBuilder builder(100);
  EXPECT_FALSE(builder.Reset(std::vector<NodeId>{1, 100}).ok());
  EXPECT_FALSE(builder.Reset(std::vector<NodeId>{-1}).ok());
  ASSERT_OK(builder.Reset(std::vector<NodeId>{1, 2}));
  Block block;
  absl::Status status = builder.AddHop(std::vector<int64_t>{1, 1},
                                       std::vector<NodeId>{5, 100}, &block);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(status.message()).find("100"), std::string::npos);
  ASSERT_OK(builder.Reset(std::vector<NodeId>{1, 2}));
  EXPECT_FALSE(
      builder.AddHop(std::vector<int64_t>{1}, std::vector<NodeId>{5}, &block)
          .ok());
  EXPECT_FALSE(
      builder.AddHop(std::vector<int64_t>{1, 1}, std::vector<NodeId>{5}, &block)
          .ok());
}

}  // namespace
}  // namespace shardgnn::internal
