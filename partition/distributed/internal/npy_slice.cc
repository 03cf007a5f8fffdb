#include "partition/distributed/internal/npy_slice.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/npy.h"
#include "common/status.h"

namespace shardgnn::partition_internal {

absl::StatusOr<std::vector<int64_t>> ReadInt64Slice(const std::string& path,
                                                    int64_t expected_length,
                                                    int64_t begin,
                                                    int64_t end) {
  ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
  if (header.dtype != NpyDtype::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": dtype ", NpyDescr(header.dtype), ", expected <i8 (int64)"));
  }
  if (header.shape.size() != 1 || header.shape[0] != expected_length) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape disagrees with the manifest (expected [",
                     expected_length, "])"));
  }
  if (begin < 0 || end < begin || end > expected_length) {
    return absl::OutOfRangeError(absl::StrCat(path, ": elements [", begin, ", ",
                                              end, ") are outside [0, ",
                                              expected_length, ")"));
  }
  std::vector<int64_t> out;
  try {
    out.resize(static_cast<size_t>(end - begin));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": no memory for ", end - begin, " elements"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  char* dst = reinterpret_cast<char*>(out.data());
  size_t left = out.size() * sizeof(int64_t);
  off_t offset = static_cast<off_t>(
      header.data_offset + static_cast<size_t>(begin) * sizeof(int64_t));
  while (left > 0) {
    const ssize_t got = pread(fd, dst, left, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int err = errno;
      close(fd);
      return absl::DataLossError(
          absl::StrCat(path, ": short read at byte ", offset,
                       got < 0 ? absl::StrCat(": ", std::strerror(err)) : ""));
    }
    dst += got;
    left -= static_cast<size_t>(got);
    offset += got;
  }
  close(fd);
  return out;
}

}  // namespace shardgnn::partition_internal
