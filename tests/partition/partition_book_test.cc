#include "partition/partition_book.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/file_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::TempDir;
using ::testing::HasSubstr;

TEST(PartitionBookTest, OwnerIsBinarySearchOverOffsets) {
  ASSERT_OK_AND_ASSIGN(PartitionBook book,
                       PartitionBook::Create({0, 3, 3, 7, 10}));
  EXPECT_EQ(book.num_parts(), 4);
  EXPECT_EQ(book.num_nodes(), 10);
  const int expected[] = {0, 0, 0, 2, 2, 2, 2, 3, 3, 3};
  for (NodeId v = 0; v < 10; ++v) EXPECT_EQ(book.Owner(v), expected[v]) << v;
  EXPECT_EQ(book.Owner(-1), -1);
  EXPECT_EQ(book.Owner(10), -1);
  EXPECT_EQ(book.Range(1).size(), 0);
  EXPECT_EQ(book.Range(3).start, 7);
  EXPECT_EQ(book.Range(3).end, 10);
}

TEST(PartitionBookTest, RejectsBadOffsets) {
  EXPECT_FALSE(PartitionBook::Create({}).ok());
  EXPECT_FALSE(PartitionBook::Create({0}).ok());
  EXPECT_FALSE(PartitionBook::Create({1, 4}).ok());
  auto decreasing = PartitionBook::Create({0, 5, 4});
  EXPECT_THAT(std::string(decreasing.status().message()),
              HasSubstr("decrease at index 2"));
}

PartitionManifest SmallManifest() {
  PartitionManifest m;
  m.dataset_name = "tiny";
  m.dataset_checksum = "0123456789abcdef";
  m.num_nodes = 5;
  m.num_edges = 8;
  m.feature_dim = 3;
  m.num_classes = 2;
  m.splits = {{"train", 2}};
  m.num_parts = 2;
  m.method = "metis";
  m.requested_method = "metis";
  m.seed = 18446744073709551615ull;
  m.partition_id = "feedfacefeedface";
  m.node_ranges = {0, 3, 5};
  m.parts = {{0, "part-0", 3, 5, 1, {{"train", 1}}, "aa", {}},
             {1, "part-1", 2, 3, 1, {{"train", 1}}, "bb", {}}};
  m.edge_cut = 2;
  m.edge_cut_fraction = 0.25;
  m.balance["nodes"] = {3, 2.5};
  m.warnings = {"a warning"};
  return m;
}

TEST(PartitionManifestTest, JsonRoundTripsExactly) {
  PartitionManifest m = SmallManifest();
  std::string json = m.ToJson();
  ASSERT_OK_AND_ASSIGN(PartitionManifest back,
                       PartitionManifest::FromJson(json));
  EXPECT_EQ(back.ToJson(), json);
  EXPECT_EQ(back.seed, m.seed);
  EXPECT_DOUBLE_EQ(back.balance.at("nodes").Imbalance(), 1.2);
}

TEST(PartitionManifestTest, ReadNamesTheFileOnError) {
  TempDir tmp;
  auto missing = ReadPartitionManifest(tmp.path());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("partition.json"));
  PartitionManifest m = SmallManifest();
  m.node_ranges = {0, 4, 5};  // Disagrees with parts[0].nodes.
  ASSERT_OK(WriteFileAtomic(tmp.Sub("partition.json"), m.ToJson()));
  auto inconsistent = ReadPartitionManifest(tmp.path());
  EXPECT_TRUE(absl::IsInvalidArgument(inconsistent.status()));
  EXPECT_THAT(std::string(inconsistent.status().message()),
              HasSubstr("partition.json: parts[0] disagrees"));
  ASSERT_OK(WriteFileAtomic(tmp.Sub("partition.json"), "{\"format\": 1"));
  EXPECT_FALSE(ReadPartitionManifest(tmp.path()).ok());
}

TEST(PartitionManifestTest, RejectsNonIntegralAndOutOfRangeCounts) {
  const std::string good = SmallManifest().ToJson();
  struct Case {
    std::string field, from, to;
  };
  const std::vector<Case> cases = {
      {"num_nodes", "\"num_nodes\": 5", "\"num_nodes\": 5.5"},
      {"num_nodes", "\"num_nodes\": 5", "\"num_nodes\": -5"},
      {"num_edges", "\"num_edges\": 8", "\"num_edges\": 18446744073709551615"},
      {"num_parts", "\"num_parts\": 2", "\"num_parts\": 2.0"},
      {"feature_dim", "\"feature_dim\": 3", "\"feature_dim\": 1e12"},
      {"seed", "\"seed\": 18446744073709551615", "\"seed\": -1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    std::string text = good;
    // The last one: "dataset" repeats the counts first, unread.
    const size_t at = text.rfind(c.from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.from.size(), c.to);
    auto m = PartitionManifest::FromJson(text);
    EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
    EXPECT_THAT(std::string(m.status().message()),
                HasSubstr("\"" + c.field + "\""));
  }
}

}  // namespace
}  // namespace shardgnn
