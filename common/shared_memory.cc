#include "common/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {

constexpr uint64_t kMagic = 0x314d485334574753ULL;  // "SGW4SHM1"
// Every seal a region carries once written (see the header).
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

const std::string& BootId() {
  static const std::string* id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string line;
    std::getline(in, line);
    return new std::string(absl::StripAsciiWhitespace(line));
  }();
  return *id;
}

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Create(
    const std::string& name, uint64_t payload_bytes, const int64_t words[3]) {
  const uint64_t bytes = sizeof(SharedRegionHeader) + payload_bytes;
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = Errno(absl::StrCat("ftruncate to ", bytes, " bytes"));
    close(fd);
    return s;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    absl::Status s = Errno(absl::StrCat("mmap of ", bytes, " bytes"));
    close(fd);
    return s;
  }
  auto* header = static_cast<SharedRegionHeader*>(base);
  std::memset(header, 0, sizeof(*header));
  header->magic = kMagic;
  std::random_device rd;
  header->token = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  for (int i = 0; i < 3; ++i) header->words[i] = words[i];
  return std::unique_ptr<SharedRegion>(
      new SharedRegion(base, bytes, fd, /*sealed=*/false));
}

absl::Status SharedRegion::Seal() {
  if (fd_ < 0 || sealed_ || base_ == nullptr) {
    return absl::FailedPreconditionError(
        "only a region this process created can be sealed, once");
  }
  // F_SEAL_WRITE fails while a writable shared mapping exists: drop it first.
  munmap(base_, bytes_);
  base_ = nullptr;
  const int sealed = fcntl(fd_, F_ADD_SEALS, kSeals);
  const int seal_errno = errno;
  void* base = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd_, 0);
  if (base == MAP_FAILED) {
    return Errno(absl::StrCat("mmap of ", bytes_, " bytes, read-only"));
  }
  base_ = base;
  if (sealed != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("sealing the shared region: ", std::strerror(seal_errno)));
  }
  sealed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::MapPeer(
    const SharedRegionRef& ref) {
  if (ref.boot_id.empty() || ref.boot_id != BootId())
    return absl::FailedPreconditionError("the region is on another machine");
  if (ref.bytes < sizeof(SharedRegionHeader))
    return absl::InvalidArgumentError("region smaller than its header");
  const std::string path = absl::StrCat("/proc/", ref.pid, "/fd/", ref.fd);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(absl::StrCat("open ", path));
  // Sealed, or its creator (or anyone holding it) may still rewrite or
  // truncate it under us.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is not sealed against writes and resizing (seals ",
        seals < 0 ? std::string("unreadable") : absl::StrCat(seals),
        "); not trusting it"));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != ref.bytes) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a region of ", ref.bytes, " bytes"));
  }
  void* base = mmap(nullptr, ref.bytes, PROT_READ, MAP_SHARED, fd, 0);
  // Read errno before close() can change it.
  absl::Status mapped = base == MAP_FAILED ? Errno(absl::StrCat("mmap ", path))
                                           : absl::OkStatus();
  close(fd);  // The mapping keeps the region alive.
  if (!mapped.ok()) return mapped;
  std::unique_ptr<SharedRegion> region(
      new SharedRegion(base, ref.bytes, -1, /*sealed=*/true));
  if (region->header().magic != kMagic || region->header().token != ref.token)
    return absl::FailedPreconditionError(
        absl::StrCat(path, " does not carry the expected token"));
  return region;
}

SharedRegion::~SharedRegion() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

SharedRegionRef SharedRegion::Ref() const {
  SharedRegionRef ref;
  ref.pid = getpid();
  ref.fd = fd_;
  ref.token = header().token;
  ref.bytes = bytes_;
  ref.boot_id = BootId();
  return ref;
}

}  // namespace shardgnn
