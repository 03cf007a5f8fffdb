#include "graphstore/shard_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;

ShardMeta SmallMeta() {
  ShardMeta m;
  m.part_id = 1;
  m.num_parts = 2;
  m.node_start = 3;
  m.node_end = 5;
  m.num_nodes_total = 5;
  m.num_edges = 7;
  m.feature_dim = 4;
  m.num_classes = 3;
  m.split_counts = {{"train", 1}};
  m.partition_id = "feedfacefeedface";
  m.content_checksum = "0123456789abcdef";
  return m;
}

TEST(ShardMetaTest, JsonRoundTrips) {
  ASSERT_OK_AND_ASSIGN(ShardMeta back,
                       ShardMeta::FromJson(SmallMeta().ToJson()));
  EXPECT_EQ(back.ToJson(), SmallMeta().ToJson());
}

// Counts that are not whole numbers in range are refused, naming the field.
TEST(ShardMetaTest, RejectsNonIntegralAndOutOfRangeCounts) {
  const std::string good = SmallMeta().ToJson();
  struct Case {
    std::string field, from, to;
  };
  const std::vector<Case> cases = {
      {"num_nodes_total", "\"num_nodes_total\": 5", "\"num_nodes_total\": 5.5"},
      {"node_end", "\"node_end\": 5", "\"node_end\": 18446744073709551615"},
      {"num_edges", "\"num_edges\": 7", "\"num_edges\": -7"},
      {"feature_dim", "\"feature_dim\": 4", "\"feature_dim\": 4e40"},
      {"num_classes", "\"num_classes\": 3", "\"num_classes\": -1"},
      {"part_id", "\"part_id\": 1", "\"part_id\": 4294967297"},
      {"train", "\"train\": 1", "\"train\": 0.5"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    std::string text = good;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.from.size(), c.to);
    auto m = ShardMeta::FromJson(text);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << m.status();
    EXPECT_THAT(std::string(m.status().message()),
                HasSubstr("\"" + c.field + "\""));
  }
}

}  // namespace
}  // namespace shardgnn
