#include "datasets/internal/import_util.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace shardgnn::datasets_internal {
namespace {

TEST(ParseLabelTest, IntegersIntegralFloatsAndUnlabeled) {
  int64_t label = 0;
  EXPECT_TRUE(ParseLabel("3", &label));
  EXPECT_EQ(label, 3);
  EXPECT_TRUE(ParseLabel(" 4.0 ", &label));
  EXPECT_EQ(label, 4);
  EXPECT_TRUE(ParseLabel("nan", &label));
  EXPECT_EQ(label, -1);
  EXPECT_TRUE(ParseLabel("", &label));
  EXPECT_EQ(label, -1);
  EXPECT_FALSE(ParseLabel("2.5", &label));
  EXPECT_FALSE(ParseLabel("cat", &label));
}

// Found by tests/fuzz/text_fuzz: a label past int64 was parsed as a float and
// converted (undefined behaviour). Class indices stop below 2^31 (the most
// classes a manifest may declare).
TEST(ParseLabelTest, RefusesClassIndicesOutOfRange) {
  int64_t label = 0;
  EXPECT_FALSE(ParseLabel("88888888888888888883", &label));
  EXPECT_FALSE(ParseLabel("1e30", &label));
  EXPECT_FALSE(ParseLabel("-1e30", &label));
  EXPECT_FALSE(ParseLabel("inf", &label));
  EXPECT_FALSE(ParseLabel("2147483648", &label));
  EXPECT_FALSE(ParseLabel("-2", &label));
  EXPECT_TRUE(ParseLabel("2147483647", &label));
  EXPECT_EQ(label, 2147483647);
  EXPECT_TRUE(ParseLabel("-1", &label));
  EXPECT_EQ(label, -1);
}

}  // namespace
}  // namespace shardgnn::datasets_internal
