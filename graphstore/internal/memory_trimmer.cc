#include "graphstore/internal/memory_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "graphstore/internal/slice_pool.h"

namespace shardgnn::internal {
namespace {

// The process's resident anonymous memory (resident minus file-backed and
// shared pages, so the shared feature region does not count), in bytes.
int64_t ResidentAnonBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0, shared = 0;
  const int got = std::fscanf(f, "%lld %lld %lld", &size, &resident, &shared);
  std::fclose(f);
  if (got != 3) return 0;
  return (resident - shared) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MemoryTrimmer::Loop() {
  using Clock = std::chrono::steady_clock;
  int64_t seen = calls_();
  bool busy = false;
  int64_t low = ResidentAnonBytes();
  std::chrono::seconds interval{1};
  Clock::time_point last_growth_trim = Clock::now() - kMaxInterval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_; })) {
    const int64_t now = calls_();
    const int64_t resident = ResidentAnonBytes();
    low = std::min(low, resident);
    const Clock::time_point t = Clock::now();
    const bool fell_idle = busy && now == seen;
    const bool grew =
        resident > low + kGrowthBytes && t - last_growth_trim >= interval;
    if (fell_idle || grew) {
      // The answers' kept buffers go too once calls stop (while they go on,
      // the pool's bound, at most kGrowthBytes, stays).
      if (fell_idle) {
        SlicePool::Shared().Release();
        SampleBufferPool::Shared().Release();
      }
      malloc_trim(0);
      // A trim that gave little back met memory in use: that is the new
      // floor. One that gave much back keeps the old floor, so memory
      // freed later in the same burst is trimmed too.
      const int64_t after = ResidentAnonBytes();
      low = resident - after < kGrowthBytes / 4 ? after : std::min(low, after);
      busy = false;
    }
    if (grew && !fell_idle) {
      // Back to back: space them out; after a calm spell: start over.
      interval = t - last_growth_trim < 4 * interval
                     ? std::min(2 * interval, kMaxInterval)
                     : std::chrono::seconds(1);
      last_growth_trim = t;
    }
    if (now != seen) busy = true;
    seen = now;
  }
}

}  // namespace shardgnn::internal
