#include "common/shared_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace shardgnn {
namespace {

constexpr int64_t kWords[3] = {7, 1000, 16};

std::unique_ptr<SharedRegion> MakeRegion(uint64_t floats) {
  auto region = SharedRegion::Create("test", floats * sizeof(float), kWords);
  EXPECT_TRUE(region.ok()) << region.status();
  if (!region.ok()) return nullptr;
  auto* p = reinterpret_cast<float*>((*region)->payload());
  std::iota(p, p + floats, 0.5f);
  return std::move(*region);
}

TEST(SharedMemoryTest, PeerSeesTheCreatorsBytesAndLaterWrites) {
  auto region = MakeRegion(16000);
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(region->payload()) % 64, 0u);
  auto peer = SharedRegion::MapPeer(region->Ref());
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ((*peer)->payload_bytes(), 16000 * sizeof(float));
  EXPECT_EQ((*peer)->header().words[1], 1000);
  EXPECT_EQ(std::memcmp((*peer)->payload(), region->payload(),
                        region->payload_bytes()),
            0);
  reinterpret_cast<float*>(region->payload())[123] = -1.0f;
  EXPECT_EQ(reinterpret_cast<const float*>((*peer)->payload())[123], -1.0f);
  // The peer's mapping outlives the creator's handle.
  region.reset();
  EXPECT_EQ(reinterpret_cast<const float*>((*peer)->payload())[124], 124.5f);
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
