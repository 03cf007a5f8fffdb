// Memory another process on the same machine can map: how a storage server
// lends its feature matrix to co-located trainers (DistDGL's trainers read
// their local partition through shared memory the same way).
//
// The region is a memfd: it has no name in any filesystem and is freed when
// the last process holding it (its creator, or a peer that mapped it) lets go,
// so a server that dies leaks nothing. A peer reaches it through
// /proc/<creator pid>/fd/<fd>, which the kernel allows for processes of the
// same user (it opens a new file description of the same memfd); the peer
// maps it read-only.
//
// Once written, the creator seals it (Seal(): F_SEAL_SHRINK, F_SEAL_GROW,
// F_SEAL_WRITE, F_SEAL_SEAL) and keeps only a read-only mapping: from then on
// no process, the creator included, can change its bytes (write, a writable
// shared mapping, hole punching) or its size (a truncation would kill every
// process reading it with SIGBUS), and the seals cannot be removed. A peer
// refuses a region without all four seals. This protects the served matrix
// from careless or hostile processes using the descriptor; a process of the
// same user that may ptrace the creator can still change its memory.
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
  // aligned) holds `payload_bytes`, zero-filled and mapped read-write until
  // Seal(), with a fresh random token and the given header words.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Create(
      const std::string& name, uint64_t payload_bytes, const int64_t words[3]);

  // Maps a region another process created, read-only. Fails (without side
  // effects) unless the region is on this machine (same boot ID), reachable,
  // sealed (FAILED_PRECONDITION "... is not sealed ..." otherwise), of the
  // stated size, and carries the expected magic and token.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> MapPeer(
      const SharedRegionRef& ref);

  // For the creator, once the payload is written: replaces the writable
  // mapping with a read-only one (payload() moves) and seals the region
  // against writes and resizing. On FAILED_PRECONDITION (the kernel refused
  // the seals) the region stays readable but unsealed, and peers refuse it;
  // on any other error it is no longer mapped (payload() is null).
  // REQUIRES: created by Create(), not sealed yet.
  absl::Status Seal();
  bool sealed() const { return sealed_; }

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  const SharedRegionHeader& header() const {
    return *static_cast<const SharedRegionHeader*>(base_);
  }
  // The payload after the header; writable only in the creating process,
  // before Seal(). Null if the region is not mapped (a failed Seal()).
  char* payload() {
    return base_ == nullptr
               ? nullptr
               : static_cast<char*>(base_) + sizeof(SharedRegionHeader);
  }
  const char* payload() const {
    return base_ == nullptr
               ? nullptr
               : static_cast<const char*>(base_) + sizeof(SharedRegionHeader);
  }
  uint64_t payload_bytes() const { return bytes_ - sizeof(SharedRegionHeader); }
  // For the creator: what a peer needs (fd is -1 in a peer's mapping).
  SharedRegionRef Ref() const;

 private:
  SharedRegion(void* base, uint64_t bytes, int fd, bool sealed)
      : base_(base), bytes_(bytes), fd_(fd), sealed_(sealed) {}
  void* base_;  // Null after a failed Seal().
  uint64_t bytes_;
  int fd_;  // The memfd, kept open by the creator; -1 in a peer.
  bool sealed_;
};

// This kernel's boot ID (/proc/sys/kernel/random/boot_id), "" if unreadable.
const std::string& BootId();

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SHARED_MEMORY_H_
