// Memory another process on the same machine can map: how a storage server
// lends its feature matrix to co-located trainers (DistDGL's trainers read
// their local partition through shared memory the same way).
//
// The region is a memfd: it has no name in any filesystem and is freed when
// the last process holding it (its creator, or a peer that mapped it) lets go,
// so a server that dies leaks nothing. A peer reaches it through
// /proc/<creator pid>/fd/<fd>, which the kernel allows for processes of the
// same user; the peer maps it read-only.
//
// A region starts with a 64-byte header (magic, a random token, and three
// words for the creator's use) that a peer checks before trusting anything
// else it was told: a stale or mistaken (pid, fd) pair maps the wrong file or
// nothing, and fails the check.
#ifndef SHARDGNN_COMMON_SHARED_MEMORY_H_
#define SHARDGNN_COMMON_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shardgnn {

struct SharedRegionHeader {
  uint64_t magic;
  uint64_t token;    // Random, chosen by the creator.
  int64_t words[3];  // Creator-defined (e.g. first row, rows, columns).
  uint64_t reserved[3];
};
static_assert(sizeof(SharedRegionHeader) == 64);

// How a peer finds a region: everything it needs to open and check it.
struct SharedRegionRef {
  int64_t pid = 0;
  int fd = -1;
  uint64_t token = 0;
  uint64_t bytes = 0;   // Whole region, header included.
  std::string boot_id;  // The creator's kernel boot ID (same machine check).
};

class SharedRegion {
 public:
  // Creates a region whose payload (after the 64-byte header, so 64-byte
  // aligned) holds `payload_bytes`, zero-filled and mapped read-write, with a
  // fresh random token and the given header words.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Create(
      const std::string& name, uint64_t payload_bytes, const int64_t words[3]);

  // Maps a region another process created, read-only. Fails (without side
  // effects) unless the region is on this machine (same boot ID), reachable,
  // of the stated size, and carries the expected magic and token.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> MapPeer(
      const SharedRegionRef& ref);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  const SharedRegionHeader& header() const {
    return *static_cast<const SharedRegionHeader*>(base_);
  }
  // The payload after the header; writable only in the creating process.
  char* payload() {
    return static_cast<char*>(base_) + sizeof(SharedRegionHeader);
  }
  const char* payload() const {
    return static_cast<const char*>(base_) + sizeof(SharedRegionHeader);
  }
  uint64_t payload_bytes() const { return bytes_ - sizeof(SharedRegionHeader); }
  // For the creator: what a peer needs (fd is -1 in a peer's mapping).
  SharedRegionRef Ref() const;

 private:
  SharedRegion(void* base, uint64_t bytes, int fd)
      : base_(base), bytes_(bytes), fd_(fd) {}
  void* base_;
  uint64_t bytes_;
  int fd_;  // The memfd, kept open by the creator; -1 in a peer.
};

// This kernel's boot ID (/proc/sys/kernel/random/boot_id), "" if unreadable.
const std::string& BootId();

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SHARED_MEMORY_H_
