// Returning the memory of freed blocks to the OS while a storage server runs.
//
// Glibc keeps the memory of freed blocks in its heaps (and does not trim the
// heaps of its per-thread arenas by itself), so a burst of big answers (a
// flood, a big evaluation) leaves RSS at the burst's peak. Once a second this
// trims (malloc_trim; and, when calls stopped, the answers' kept buffers:
// slice_pool.h) when
// calls came and then stopped, or, while calls go
// on, when resident memory grew by kGrowthBytes over its lowest level since
// the last trim. A load whose memory keeps coming back would be trimmed over
// and over (each time faulting its pages in again), so growth trims that
// follow each other within a few seconds space themselves out, doubling up
// to kMaxInterval.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_MEMORY_TRIMMER_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_MEMORY_TRIMMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace shardgnn::internal {

// Trims on a thread of its own from construction to destruction (which
// joins it). `calls` counts the calls the server has answered so far; it is
// called on that thread and must be thread-safe.
class MemoryTrimmer {
 public:
  static constexpr int64_t kGrowthBytes = int64_t{32} << 20;
  static constexpr std::chrono::seconds kMaxInterval{16};

  explicit MemoryTrimmer(std::function<int64_t()> calls)
      : calls_(std::move(calls)), thread_([this] { Loop(); }) {}
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

 private:
  void Loop();

  std::function<int64_t()> calls_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // Last: starts once the rest is built.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_MEMORY_TRIMMER_H_
