#include "tests/testing/status_matchers.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "absl/status/statusor.h"

namespace shardgnn::testing {
namespace {

// A call that fails the first time and succeeds after: evaluating it twice
// would report "OK" for a call that failed.
int calls = 0;
absl::Status FailsFirstTime() {
  return ++calls == 1 ? absl::InternalError("first call failed")
                      : absl::OkStatus();
}
absl::StatusOr<int> FailsFirstTimeOr() {
  absl::Status s = FailsFirstTime();
  if (!s.ok()) return s;
  return 7;
}

TEST(StatusMatchersTest, ExpectOkEvaluatesOnceAndReportsThatStatus) {
  calls = 0;
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(FailsFirstTime()), "first call failed");
  EXPECT_EQ(calls, 1);
  calls = 0;
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(FailsFirstTimeOr()) << "extra context",
                          "extra context");
  EXPECT_EQ(calls, 1);
}

void AssertOkOnce() { ASSERT_OK(FailsFirstTime()) << "more"; }

TEST(StatusMatchersTest, AssertOkEvaluatesOnceAndReportsThatStatus) {
  calls = 0;
  EXPECT_FATAL_FAILURE(AssertOkOnce(), "first call failed");
  EXPECT_EQ(calls, 1);
}

TEST(StatusMatchersTest, OkPassesAndAssignWorks) {
  calls = 1;  // The next call succeeds.
  EXPECT_OK(FailsFirstTime());
  calls = 1;
  ASSERT_OK_AND_ASSIGN(int v, FailsFirstTimeOr());
  EXPECT_EQ(v, 7);
}

}  // namespace
}  // namespace shardgnn::testing
