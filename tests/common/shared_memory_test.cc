#include "common/shared_memory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace shardgnn {
namespace {

constexpr int64_t kWords[3] = {7, 1000, 16};

// A region of `floats` floats 0.5, 1.5, ..., sealed unless `seal` is false.
std::unique_ptr<SharedRegion> MakeRegion(uint64_t floats, bool seal = true) {
  auto region = SharedRegion::Create("test", floats * sizeof(float), kWords);
  EXPECT_TRUE(region.ok()) << region.status();
  if (!region.ok()) return nullptr;
  auto* p = reinterpret_cast<float*>((*region)->payload());
  std::iota(p, p + floats, 0.5f);
  if (seal) {
    absl::Status s = (*region)->Seal();
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return nullptr;
  }
  return std::move(*region);
}

TEST(SharedMemoryTest, PeerSeesTheCreatorsBytes) {
  auto region = MakeRegion(16000);
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(region->sealed());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(region->payload()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(region->payload())[3], 3.5f);
  auto peer = SharedRegion::MapPeer(region->Ref());
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ((*peer)->payload_bytes(), 16000 * sizeof(float));
  EXPECT_EQ((*peer)->header().words[1], 1000);
  EXPECT_EQ(std::memcmp((*peer)->payload(), region->payload(),
                        region->payload_bytes()),
            0);
  // The peer's mapping outlives the creator's handle.
  region.reset();
  EXPECT_EQ(reinterpret_cast<const float*>((*peer)->payload())[124], 124.5f);
}

TEST(SharedMemoryTest, PeerRefusesAnUnsealedRegion) {
  auto region = MakeRegion(100, /*seal=*/false);
  ASSERT_NE(region, nullptr);
  EXPECT_FALSE(region->sealed());
  auto peer = SharedRegion::MapPeer(region->Ref());
  EXPECT_EQ(peer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(peer.status().message().find("not sealed"), absl::string_view::npos)
      << peer.status();
}

// What a hostile process of the same user can do with the creator's memfd
// (through /proc/PID/fd/N, as a trainer reaches it): nothing that changes it.
TEST(SharedMemoryTest, SealedRegionCannotBeWrittenOrResized) {
  auto region = MakeRegion(4096);
  ASSERT_NE(region, nullptr);
  const SharedRegionRef ref = region->Ref();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit code: the number of the first attack that worked, 0 if none.
    const std::string path =
        "/proc/" + std::to_string(ref.pid) + "/fd/" + std::to_string(ref.fd);
    int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) _exit(100);
    const char junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (pwrite(fd, junk, sizeof(junk), 64) >= 0 || errno != EPERM) _exit(1);
    void* w =
        mmap(nullptr, ref.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (w != MAP_FAILED) _exit(2);
    if (ftruncate(fd, 0) == 0 || errno != EPERM) _exit(3);
    if (ftruncate(fd, static_cast<off_t>(ref.bytes) * 2) == 0) _exit(4);
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                  static_cast<off_t>(ref.bytes)) == 0) {
      _exit(5);
    }
    // A read-only mapping cannot be made writable.
    void* r = mmap(nullptr, ref.bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) _exit(101);
    if (mprotect(r, ref.bytes, PROT_READ | PROT_WRITE) == 0) _exit(6);
    // Seals cannot be removed or added to.
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0) _exit(7);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "attack " << WEXITSTATUS(status) << " changed the region";
  // Unchanged, and the creator still reads it.
  const float* p = reinterpret_cast<const float*>(region->payload());
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(p[i], i + 0.5f) << i;
  EXPECT_EQ(region->header().words[0], kWords[0]);
}

TEST(SharedMemoryTest, PeerMappingIsReadOnly) {
  auto region = MakeRegion(1024);
  ASSERT_NE(region, nullptr);
  auto peer = SharedRegion::MapPeer(region->Ref());
  ASSERT_TRUE(peer.ok()) << peer.status();
  void* page = const_cast<char*>((*peer)->payload()) - 64;
  EXPECT_NE(mprotect(page, 4096, PROT_READ | PROT_WRITE), 0);
}

TEST(SharedMemoryTest, AnotherProcessMapsIt) {
  auto region = MakeRegion(1 << 20);
  ASSERT_NE(region, nullptr);
  SharedRegionRef ref = region->Ref();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A fresh process image is not needed: the child maps through /proc of
    // its parent like any other process would.
    auto peer = SharedRegion::MapPeer(ref);
    if (!peer.ok()) _exit(2);
    const float* p = reinterpret_cast<const float*>((*peer)->payload());
    for (int i = 0; i < (1 << 20); ++i) {
      if (p[i] != static_cast<float>(i) + 0.5f) _exit(3);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SharedMemoryTest, WrongReferencesFailCleanly) {
  auto region = MakeRegion(100);
  ASSERT_NE(region, nullptr);
  SharedRegionRef good = region->Ref();

  SharedRegionRef bad = good;
  bad.token ^= 1;
  EXPECT_EQ(SharedRegion::MapPeer(bad).status().code(),
            absl::StatusCode::kFailedPrecondition);
  bad = good;
  bad.boot_id = "another-machine";
  EXPECT_EQ(SharedRegion::MapPeer(bad).status().code(),
            absl::StatusCode::kFailedPrecondition);
  bad = good;
  bad.bytes += 4096;
  EXPECT_FALSE(SharedRegion::MapPeer(bad).ok());
  bad = good;
  bad.fd = 1 << 20;  // No such descriptor.
  EXPECT_FALSE(SharedRegion::MapPeer(bad).ok());
  bad = good;
  bad.pid = 0;  // No such process directory.
  EXPECT_FALSE(SharedRegion::MapPeer(bad).ok());
  bad = good;
  bad.fd = STDIN_FILENO;  // Not a region of that size.
  EXPECT_FALSE(SharedRegion::MapPeer(bad).ok());
}

}  // namespace
}  // namespace shardgnn
