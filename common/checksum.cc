#include "common/checksum.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "xxhash.h"

namespace shardgnn {

Checksum::Checksum() : state_(XXH64_createState()) {
  XXH64_reset(static_cast<XXH64_state_t*>(state_), 0);
}

Checksum::~Checksum() { XXH64_freeState(static_cast<XXH64_state_t*>(state_)); }

void Checksum::Update(const void* data, size_t size) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), data, size);
}

uint64_t Checksum::Value() const {
  return XXH64_digest(static_cast<XXH64_state_t*>(state_));
}

std::string Checksum::Hex() const { return ChecksumHex(Value()); }

std::string ChecksumHex(uint64_t value) {
  return absl::StrFormat("%016x", value);
}

absl::StatusOr<std::string> ChecksumFile(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  Checksum sum;
  std::vector<char> buffer(1 << 20);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file)) > 0)
    sum.Update(buffer.data(), n);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return sum.Hex();
}

}  // namespace shardgnn
