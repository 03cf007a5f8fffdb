// Strict integers out of JSON manifests (dataset manifest.json,
// partition.json, shard metadata): nlohmann reads 2708.5 as 2708 and 2^64-1
// as -1, so every count goes through these.
#ifndef SHARDGNN_COMMON_JSON_INTS_H_
#define SHARDGNN_COMMON_JSON_INTS_H_

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace shardgnn {

// Bounds of manifests' counts: far beyond any graph, and small enough that
// N + 1 and N x F cannot overflow.
inline constexpr int64_t kMaxJsonCount = int64_t{1} << 48;
inline constexpr int64_t kMaxJsonWidth = int64_t{1} << 31;

// `v`, which must be a whole JSON number in [lo, hi]; otherwise throws
// std::invalid_argument naming `name`.
inline int64_t JsonInt(const nlohmann::json& v, const std::string& name,
                       int64_t lo, int64_t hi) {
  bool ok = false;
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    ok = true;
    x = v.get<int64_t>();
  }
  if (!ok || x < lo || x > hi) {
    throw std::invalid_argument(absl::StrCat("field \"", name, "\" is ",
                                             v.dump(), ", not an integer in [",
                                             lo, ", ", hi, "]"));
  }
  return x;
}

// The field `key` of object `j` (nlohmann's out_of_range if it is missing),
// as JsonInt.
inline int64_t JsonIntField(const nlohmann::json& j, const std::string& key,
                            int64_t lo, int64_t hi) {
  return JsonInt(j.at(key), key, lo, hi);
}

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_JSON_INTS_H_
