// Opening a shard database: nothing is written to an info log, read-only or
// not (Debian's RocksDB asserts when the log is written after a failed write,
// as on a full disk).
#include "graphstore/internal/rocks_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::internal {
namespace {

namespace fs = std::filesystem;

// Files in `dir` whose names start with "LOG" (RocksDB's info log and its
// rotated copies).
std::vector<std::string> InfoLogs(const std::string& dir) {
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("LOG", 0) == 0) logs.push_back(name);
  }
  return logs;
}

TEST(RocksUtilTest, ShardDbWritesNoInfoLog) {
  testing::TempDir tmp;
  testing::TestGraph graph = testing::MakeTestGraph(50, 4);
  ASSERT_OK(testing::WriteTestShards(graph, 1, tmp.path()).status());
  const std::string shard = tmp.Sub("part-0");
  ASSERT_TRUE(InfoLogs(shard).empty());
  for (bool read_only : {true, false}) {
    ASSERT_OK_AND_ASSIGN(auto db, ShardDb::Open(shard, 1 << 20, read_only));
    ASSERT_OK(db->ReadMeta().status());
    db.reset();
    EXPECT_TRUE(InfoLogs(shard).empty())
        << "read_only " << read_only << ": " << InfoLogs(shard)[0];
  }
}

TEST(RocksUtilTest, DiscardLoggerTakesEveryLevel) {
  std::shared_ptr<rocksdb::Logger> logger = NewDiscardLogger();
  ASSERT_NE(logger, nullptr);
  rocksdb::Log(rocksdb::InfoLogLevel::FATAL_LEVEL, logger, "%s", "dropped");
  rocksdb::Log(rocksdb::InfoLogLevel::ERROR_LEVEL, logger, "%d", 1);
}

}  // namespace
}  // namespace shardgnn::internal
