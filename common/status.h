// Status helpers shared by every component.
//
// shardgnn reports failure with absl::Status / absl::StatusOr<T> at every
// component boundary. These macros keep call sites short without hiding control
// flow: each returns early from the enclosing function.
#ifndef SHARDGNN_COMMON_STATUS_H_
#define SHARDGNN_COMMON_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define SHARDGNN_CONCAT_INNER_(a, b) a##b
#define SHARDGNN_CONCAT_(a, b) SHARDGNN_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status shardgnn_status_ = (expr);            \
    if (!shardgnn_status_.ok()) return shardgnn_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F());` declares x from an OK StatusOr or returns
// its status.
#define ASSIGN_OR_RETURN(lhs, expr)                                           \
  ASSIGN_OR_RETURN_IMPL_(SHARDGNN_CONCAT_(shardgnn_statusor_, __LINE__), lhs, \
                         expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

namespace shardgnn {

// Returns `status` with `prefix: ` prepended to its message (same code). Used
// to say where an error happened
// ("reading raw/edge.csv.gz: line 12: ...").
absl::Status Annotate(const absl::Status& status, absl::string_view prefix);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_STATUS_H_
