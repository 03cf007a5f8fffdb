// Test helpers for absl::Status: ASSERT_OK(expr), EXPECT_OK(expr),
// ASSERT_OK_AND_ASSIGN(lhs, expr). Each evaluates `expr` exactly once; and
// testing::ExpectError(status, code, part of the message), and the matcher
// testing::StatusIs(code, message matcher).
#ifndef SHARDGNN_TESTS_TESTING_STATUS_MATCHERS_H_
#define SHARDGNN_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn::testing {
inline const absl::Status& ToStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

// Expects `s` to fail with `code` and a message containing `part`.
inline void ExpectError(const absl::Status& s, absl::StatusCode code,
                        const std::string& part) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(part));
}

// Matches an absl::Status (or StatusOr) failed with `code` whose message
// matches `message` (a string matcher: HasSubstr(...), AllOf(...)).
MATCHER_P2(StatusIs, code, message,
           ::testing::PrintToString(code) + " with a message that " +
               ::testing::DescribeMatcher<std::string>(message)) {
  const absl::Status& s = ToStatus(arg);
  *result_listener << "status " << s;
  return s.code() == code &&
         ::testing::ExplainMatchResult(message, std::string(s.message()),
                                       result_listener);
}
}  // namespace shardgnn::testing

// `expr` is evaluated once; the failure message shows that status, and more
// can be streamed after the macro (ASSERT_OK(f()) << "context").
#define SHARDGNN_STATUS_OK_(expr, on_failure)  \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                \
  if (const ::absl::Status shardgnn_status_ =  \
          ::shardgnn::testing::ToStatus(expr); \
      shardgnn_status_.ok()) {                 \
  } else /* NOLINT */                          \
    on_failure() << #expr << " returned " << shardgnn_status_ << " "
#define ASSERT_OK(expr) SHARDGNN_STATUS_OK_(expr, GTEST_FAIL)
#define EXPECT_OK(expr) SHARDGNN_STATUS_OK_(expr, ADD_FAILURE)

#define SHARDGNN_TEST_CONCAT_INNER_(a, b) a##b
#define SHARDGNN_TEST_CONCAT_(a, b) SHARDGNN_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                       \
  ASSERT_OK_AND_ASSIGN_IMPL_(SHARDGNN_TEST_CONCAT_(statusor_, __LINE__), lhs, \
                             expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  ASSERT_TRUE(tmp.ok()) << tmp.status();           \
  lhs = std::move(tmp).value()

#endif  // SHARDGNN_TESTS_TESTING_STATUS_MATCHERS_H_
