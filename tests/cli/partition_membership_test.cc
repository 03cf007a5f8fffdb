// `serve` and `info` check that each shard is the one its partition's
// partition.json describes (issue 12): a shard copied in from another
// partition of the same graph is refused, naming both partition ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/cli/shardgnn_child.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::LastErrorLine;
using testing::RunShardgnn;

TEST(PartitionMembershipTest, ServeAndInfoRefuseAShardOfAnotherPartition) {
  testing::TempDir dir;
  const std::string data = dir.Sub("sbm");
  ASSERT_EQ(
      RunShardgnn({"dataset", "generate", "--nodes", "2000", "--out", data})
          .exit_status,
      0);
  // Two partitions of the same graph with different seeds.
  for (const char* seed : {"1", "2"}) {
    testing::Finished p =
        RunShardgnn({"partition", "--dataset", data, "--parts", "2", "--seed",
                     seed, "--out", dir.Sub(std::string("p") + seed)});
    ASSERT_EQ(p.exit_status, 0) << p.output;
  }
  testing::Finished ok = RunShardgnn({"info", dir.Sub("p1")});
  EXPECT_EQ(ok.exit_status, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("all 2 parts belong to this partition"));

  // p1's part 1 replaced by p2's.
  fs::remove_all(dir.Sub("p1/part-1"));
  fs::copy(dir.Sub("p2/part-1"), dir.Sub("p1/part-1"),
           fs::copy_options::recursive);
  testing::Finished info = RunShardgnn({"info", dir.Sub("p1")});
  EXPECT_NE(info.exit_status, 0);
  EXPECT_THAT(LastErrorLine(info.output),
              HasSubstr("part-1: the shard of part 1 does not belong to "
                        "partition"))
      << info.output;
  testing::Finished serve =
      RunShardgnn({"serve", "--partition", dir.Sub("p1"), "--part", "1",
                   "--listen", "127.0.0.1:0"});
  EXPECT_NE(serve.exit_status, 0);
  EXPECT_THAT(LastErrorLine(serve.output), HasSubstr("its partition id is "))
      << serve.output;
}

}  // namespace
}  // namespace shardgnn
