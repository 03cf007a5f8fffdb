#include "common/status.h"

#include "absl/strings/str_cat.h"

namespace shardgnn {

absl::Status Annotate(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace shardgnn
