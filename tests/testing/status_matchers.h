// Test helpers for absl::Status: ASSERT_OK(expr), EXPECT_OK(expr),
// ASSERT_OK_AND_ASSIGN(lhs, expr).
#ifndef SHARDGNN_TESTS_TESTING_STATUS_MATCHERS_H_
#define SHARDGNN_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn::testing {
inline const absl::Status& ToStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace shardgnn::testing

#define ASSERT_OK(expr)                                 \
  ASSERT_TRUE(::shardgnn::testing::ToStatus(expr).ok()) \
      << ::shardgnn::testing::ToStatus(expr)
#define EXPECT_OK(expr)                                 \
  EXPECT_TRUE(::shardgnn::testing::ToStatus(expr).ok()) \
      << ::shardgnn::testing::ToStatus(expr)

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
