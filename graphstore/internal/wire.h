// Packing and unpacking of the `bytes` arrays carried by the GraphStore RPCs
// (little-endian int64 and float32). Shared by the server and the client.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_WIRE_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shardgnn::wire {

// The wire format is little-endian and this code copies host memory as is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "shardgnn's wire format assumes a little-endian host");

// Copies `values` into *out as packed bytes.
template <typename T>
void Pack(absl::Span<const T> values, std::string* out) {
  out->resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out->data(), values.data(), out->size());
}

// Checks that `bytes` holds whole values of T and returns their count.
// `field` names the message field in the error.
template <typename T>
absl::Status CheckLength(absl::string_view bytes, absl::string_view field) {
  if (bytes.size() % sizeof(T) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", bytes.size(), " bytes, not a multiple of ",
                     sizeof(T), " (packed ", sizeof(T) * 8, "-bit values)"));
  }
  return absl::OkStatus();
}

// Unpacks `bytes` (whose length is checked) into *out.
template <typename T>
absl::Status Unpack(absl::string_view bytes, absl::string_view field,
                    std::vector<T>* out) {
  absl::Status s = CheckLength<T>(bytes, field);
  if (!s.ok()) return s;
  out->resize(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out->data(), bytes.data(), bytes.size());
  return absl::OkStatus();
}

// The values packed in `bytes` (whose length is checked), for a handler that
// only reads them: viewed in place when `bytes` is aligned for T (a protobuf
// `bytes` field's heap buffer always is; C++20's implicit object creation
// makes such a view well-defined, and GCC and Clang treat it so already),
// else copied into *scratch. Saves a fresh copy of megabyte arrays per call.
template <typename T>
absl::Status ViewOrCopy(absl::string_view bytes, absl::string_view field,
                        std::vector<T>* scratch, absl::Span<const T>* out) {
  absl::Status s = CheckLength<T>(bytes, field);
  if (!s.ok()) return s;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) == 0) {
    *out = absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()),
                               bytes.size() / sizeof(T));
    return absl::OkStatus();
  }
  s = Unpack(bytes, field, scratch);
  *out = absl::MakeConstSpan(*scratch);
  return s;
}

// A protobuf `bytes` field as an absl::string_view.
inline absl::string_view View(const std::string& s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace shardgnn::wire

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_WIRE_H_
