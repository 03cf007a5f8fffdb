// Content checksums (XXH64, printed as 16 hex digits) for manifests.
//
// Manifests record a checksum of every file they name, so that a copied or
// damaged dataset, partition or shard is detected before it is served or
// trained on. Thread-compatible.
#ifndef SHARDGNN_COMMON_CHECKSUM_H_
#define SHARDGNN_COMMON_CHECKSUM_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn {

// Streaming XXH64 over any sequence of byte ranges.
class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void Update(const void* data, size_t size);
  void Update(absl::string_view bytes) { Update(bytes.data(), bytes.size()); }
  uint64_t Value() const;
  std::string Hex() const;  // 16 lowercase hex digits.

 private:
  void* state_;  // XXH64_state_t, kept out of the header.
};

std::string ChecksumHex(uint64_t value);

// XXH64 of a whole file's bytes, as hex.
absl::StatusOr<std::string> ChecksumFile(const std::string& path);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_CHECKSUM_H_
