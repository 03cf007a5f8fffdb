#include "common/file_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {
namespace fs = std::filesystem;

TEST(StagingDirTest, CommitRenamesIntoPlace) {
  testing::TempDir dir;
  std::string out = dir.Sub("out");
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(out));
    std::ofstream(JoinPath(staging->path(), "f")) << "x";
    EXPECT_FALSE(fs::exists(out));
    ASSERT_OK(staging->Commit());
  }
  EXPECT_TRUE(fs::exists(out + "/f"));
}

TEST(StagingDirTest, AbandonedLeavesNothing) {
  testing::TempDir dir;
  {
    ASSERT_OK_AND_ASSIGN(auto staging, StagingDir::Create(dir.Sub("out")));
    std::ofstream(JoinPath(staging->path(), "f")) << "x";
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(StagingDirTest, RefusesExistingOutput) {
  testing::TempDir dir;
  fs::create_directory(dir.Sub("out"));
  auto staging = StagingDir::Create(dir.Sub("out"));
  EXPECT_EQ(staging.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(WriteFileAtomicTest, WritesAndReplaces) {
  testing::TempDir dir;
  ASSERT_OK(WriteFileAtomic(dir.Sub("a"), "one"));
  ASSERT_OK(WriteFileAtomic(dir.Sub("a"), "two"));
  ASSERT_OK_AND_ASSIGN(auto text, ReadFileToString(dir.Sub("a")));
  EXPECT_EQ(text, "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()),
                          fs::directory_iterator()),
            1);
}

}  // namespace
}  // namespace shardgnn
