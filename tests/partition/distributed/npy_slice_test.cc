// ReadInt64Slice: a range of a .npy array, read without the rest.
#include "partition/distributed/internal/npy_slice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/file_util.h"
#include "common/npy.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::partition_internal {
namespace {

using ::testing::HasSubstr;

TEST(NpySliceTest, ReadsRangesOfTheArray) {
  testing::TempDir tmp;
  std::vector<int64_t> data(1000);
  std::iota(data.begin(), data.end(), -7);
  const std::string path = tmp.Sub("a.npy");
  ASSERT_OK(WriteNpy(path, {1000}, data));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> all,
                       ReadInt64Slice(path, 1000, 0, 1000));
  EXPECT_EQ(all, data);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> middle,
                       ReadInt64Slice(path, 1000, 333, 337));
  EXPECT_EQ(middle, (std::vector<int64_t>{326, 327, 328, 329}));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> empty,
                       ReadInt64Slice(path, 1000, 1000, 1000));
  EXPECT_TRUE(empty.empty());
}

TEST(NpySliceTest, RefusesBadRangesShapesDtypesAndShortFiles) {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("a.npy");
  ASSERT_OK(WriteNpy(path, {10}, std::vector<int64_t>(10, 1)));
  EXPECT_THAT(ReadInt64Slice(path, 10, 5, 11).status().message(),
              HasSubstr("outside [0, 10)"));
  EXPECT_THAT(ReadInt64Slice(path, 10, 6, 5).status().message(),
              HasSubstr("outside"));
  EXPECT_THAT(ReadInt64Slice(path, 10, -1, 5).status().message(),
              HasSubstr("outside"));
  EXPECT_THAT(ReadInt64Slice(path, 11, 0, 5).status().message(),
              HasSubstr("shape disagrees"));
  const std::string ints = tmp.Sub("i.npy");
  ASSERT_OK(WriteNpy(ints, {10}, std::vector<int32_t>(10, 1)));
  EXPECT_THAT(ReadInt64Slice(ints, 10, 0, 5).status().message(),
              HasSubstr("expected <i8"));
  EXPECT_FALSE(ReadInt64Slice(tmp.Sub("missing.npy"), 10, 0, 5).ok());
  // A file cut short: the header's shape promises more than there is.
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFileToString(path));
  ASSERT_OK(WriteFileAtomic(path, bytes.substr(0, bytes.size() - 8)));
  EXPECT_FALSE(ReadInt64Slice(path, 10, 8, 10).ok());
}

}  // namespace
}  // namespace shardgnn::partition_internal
