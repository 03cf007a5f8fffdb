#include "trainer/cpu_caching_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "c10/core/CPUAllocator.h"
#include "c10/core/impl/alloc_cpu.h"
#include "c10/util/Exception.h"
#include "common/large_buffer.h"
#include "common/peak_rss.h"

namespace shardgnn {
namespace {

// Rounds `n` up to a multiple of 1/16 of the power of two at or above it (at
// most 12.5% more than `n`), so that requests that differ a little share a
// block size.
size_t RoundUp(size_t n) {
  size_t power = 1;
  while (power < n) power <<= 1;
  const size_t step = std::max<size_t>(power / 16, 4096);
  return (n + step - 1) / step * step;
}

class CachingAllocator final : public c10::Allocator {
 public:
  CachingAllocator(c10::Allocator* fallback,
                   const CpuCachingAllocatorOptions& options)
      : fallback_(fallback),
        min_block_(static_cast<size_t>(options.min_block_bytes)),
        max_cached_(static_cast<size_t>(options.max_cached_bytes)) {}

  c10::DataPtr allocate(size_t n) const override {
    if (n < min_block_) return fallback_->allocate(n);
    void* ptr = nullptr;
    size_t size = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.allocations;
      // The smallest free block that fits, if not much larger than asked
      // (at least 2/3 of it used: a block made for n serves requests from
      // about 3/4 n to at least 9/8 n).
      auto it = free_.lower_bound(n);
      if (it != free_.end() && it->first - it->first / 3 <= n) {
        size = it->first;
        ptr = it->second;
        free_.erase(it);
        retired_.erase(ptr);
        cached_ -= size;
        ++stats_.reused;
      }
    }
    const bool made = ptr == nullptr;
    size_t moved = 0;  // Of the new block, bytes from retired blocks.
    if (made) {
      // With an eighth to spare: the next batch a little larger than any
      // before (sizes vary from batch to batch: a batch that straddles two
      // parts of the graph samples 12% more nodes on the 200k reference
      // graph) reuses this block instead of faulting in a new one.
      size = RoundUp(n + n / 8);
      std::vector<std::pair<void*, size_t>> pieces = TakePieces(size);
      ptr = pieces.empty() ? MapBlock(size)
                           : MapBlockFromPieces(size, pieces, &moved);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (made) {
      stats_.fresh_bytes += static_cast<int64_t>(size - moved);
      stats_.moved_bytes += static_cast<int64_t>(moved);
      if (moved > 0) pieced_.insert(ptr);
    }
    live_[ptr] = size;
    in_use_ += size;
    return {ptr, ptr, &Delete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

  void RetireFreeBlocks() const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [bytes, block] : free_) retired_.insert(block);
  }

  CpuCachingAllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    CpuCachingAllocatorStats s = stats_;
    s.cached_bytes = static_cast<int64_t>(cached_);
    s.in_use_bytes = static_cast<int64_t>(in_use_);
    return s;
  }

  // A block for a buffer outside LibTorch (common/large_buffer.h): the
  // pointer, with the ownership its DataPtr had.
  void* AllocateRaw(size_t n) const {
    c10::DataPtr data = allocate(n);
    void* ptr = data.get();
    data.release_context();
    return ptr;
  }

  static void Delete(void* ptr) {
    if (ptr != nullptr) instance->Release(ptr);
  }

  static CachingAllocator* instance;

 private:
  void Release(void* ptr) const {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      // Not ours: a request under min_block_ (LibTorch's own allocation), or
      // a large buffer made with std::malloc before this cache was installed
      // (common/large_buffer.h); both are free()d.
      lock.unlock();
      c10::free_cpu(ptr);
      return;
    }
    const size_t size = it->second;
    live_.erase(it);
    in_use_ -= size;
    free_.emplace(size, ptr);
    cached_ += size;
    // Over the cap: give back the largest free blocks.
    while (cached_ > max_cached_ && !free_.empty()) {
      auto largest = std::prev(free_.end());
      const size_t bytes = largest->first;
      void* block = largest->second;
      free_.erase(largest);
      cached_ -= bytes;
      stats_.released_bytes += static_cast<int64_t>(bytes);
      pieced_.erase(block);
      retired_.erase(block);
      munmap(block, bytes);
    }
  }

  // Blocks are mapped apart from malloc's heap (kept in the cache, they would
  // otherwise sit between the heap's small allocations, which then extend
  // the heap into fresh pages), and populated whole when made: the pages a
  // first tensor left untouched (the headroom) would otherwise fault one by
  // one when a larger tensor takes the block, epochs later. Populating is
  // also cheaper than faulting page by page. Throws on failure, as LibTorch's
  // allocator does.
  static void* MapBlock(size_t size) {
    void* ptr = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    TORCH_CHECK(ptr != MAP_FAILED, "caching allocator: cannot map ", size,
                " bytes: ", std::strerror(errno));
    return ptr;
  }

  // Retired free blocks whose pages a new block of `size` takes instead of
  // fresh ones (tensors larger than every free block: the test pass's
  // twice-as-large fanouts after training), taken out of the cache: the
  // largest first, as many as fit in `size`, at most kMaxPieces, and the rest
  // from the head of the smallest retired block larger than it, whose tail
  // stays in the cache, retired (a mapping of its own once the head has
  // moved). Only retired blocks: a block whose size comes again (the training
  // step's, after a validation with larger batches) would otherwise be made
  // again, fresh, for every block taken from it. Blocks made of pieces are
  // not taken again (mremap moves one mapping at a time, and a pieced block
  // is several). Sizes are whole pages (RoundUp), so every piece is.
  std::vector<std::pair<void*, size_t>> TakePieces(size_t size) const {
    constexpr size_t kMaxPieces = 16;
    std::vector<std::pair<void*, size_t>> pieces;
    std::lock_guard<std::mutex> lock(mu_);
    auto takeable = [&](void* block) {
      return retired_.count(block) != 0 && pieced_.count(block) == 0;
    };
    size_t taken = 0;
    for (auto it = free_.lower_bound(size);
         it != free_.begin() && pieces.size() < kMaxPieces;) {
      --it;
      if (taken + it->first > size || !takeable(it->second)) continue;
      taken += it->first;
      pieces.emplace_back(it->second, it->first);
      retired_.erase(it->second);
      cached_ -= it->first;
      it = free_.erase(it);
    }
    const size_t rest = size - taken;
    if (rest == 0 || pieces.size() >= kMaxPieces) return pieces;
    for (auto it = free_.upper_bound(rest); it != free_.end(); ++it) {
      if (!takeable(it->second)) continue;
      char* head = static_cast<char*>(it->second);
      const size_t bytes = it->first;
      free_.erase(it);
      retired_.erase(head);
      pieces.emplace_back(head, rest);
      free_.emplace(bytes - rest, head + rest);
      retired_.insert(head + rest);
      cached_ -= rest;
      break;
    }
    return pieces;
  }

  // A block of `size` whose first pages are `pieces`' (moved there by
  // mremap: the page tables move, no page is copied or faulted in), the rest
  // populated fresh. `*moved`: the bytes taken from pieces. A piece that
  // cannot be moved is returned to the system. Throws on failure.
  void* MapBlockFromPieces(size_t size,
                           const std::vector<std::pair<void*, size_t>>& pieces,
                           size_t* moved) const {
    char* base = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) {
      const int error = errno;
      for (const auto& [piece, bytes] : pieces) munmap(piece, bytes);
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& piece : pieces)
          stats_.released_bytes += static_cast<int64_t>(piece.second);
      }
      TORCH_CHECK(false, "caching allocator: cannot map ", size,
                  " bytes: ", std::strerror(error));
    }
    size_t offset = 0;
    size_t lost = 0;
    for (const auto& [piece, bytes] : pieces) {
      if (mremap(piece, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED,
                 base + offset) == MAP_FAILED) {
        munmap(piece, bytes);
        lost += bytes;
        continue;
      }
      offset += bytes;
    }
    if (offset < size &&
        madvise(base + offset, size - offset, MADV_POPULATE_WRITE) != 0) {
      // Kernels before 5.14: touched here, as MAP_POPULATE would.
      const long page = sysconf(_SC_PAGESIZE);
      for (size_t i = offset; i < size; i += static_cast<size_t>(page))
        base[i] = 0;
    }
    *moved = offset;
    if (lost > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.released_bytes += static_cast<int64_t>(lost);
    }
    return base;
  }

  c10::Allocator* fallback_;
  const size_t min_block_;
  const size_t max_cached_;
  mutable std::mutex mu_;
  mutable std::multimap<size_t, void*> free_;       // By size.
  mutable std::unordered_map<void*, size_t> live_;  // Handed out.
  mutable std::unordered_set<void*> pieced_;        // Made of moved pieces.
  mutable std::unordered_set<void*> retired_;       // Free, pages takeable.
  mutable size_t cached_ = 0;
  mutable size_t in_use_ = 0;
  mutable CpuCachingAllocatorStats stats_;
};

CachingAllocator* CachingAllocator::instance = nullptr;

int64_t QuarterOfMemory() {
  const int64_t memory = PhysicalMemoryBytes();
  return memory > 0 ? memory / 4 : int64_t{1} << 30;
}

}  // namespace

bool InstallCpuCachingAllocator(const CpuCachingAllocatorOptions& options) {
  static std::once_flag once;
  bool installed = false;
  std::call_once(once, [&] {
    CpuCachingAllocatorOptions o = options;
    if (o.max_cached_bytes <= 0) o.max_cached_bytes = QuarterOfMemory();
    o.min_block_bytes = std::max<int64_t>(o.min_block_bytes, 1);
    // Never destroyed: tensors may be freed during static destruction.
    CachingAllocator::instance =
        new CachingAllocator(c10::GetDefaultCPUAllocator(), o);
    c10::SetCPUAllocator(CachingAllocator::instance, /*priority=*/1);
    // Minibatches' feature rows come from the same blocks.
    static const LargeBufferProvider provider = {
        [](size_t bytes) {
          return CachingAllocator::instance->AllocateRaw(bytes);
        },
        &CachingAllocator::Delete};
    SetLargeBufferProvider(&provider);
    installed = true;
  });
  return installed;
}

void RetireCpuCachedBlocks() {
  if (CachingAllocator::instance != nullptr)
    CachingAllocator::instance->RetireFreeBlocks();
}

CpuCachingAllocatorStats GetCpuCachingAllocatorStats() {
  if (CachingAllocator::instance == nullptr) return {};
  return CachingAllocator::instance->stats();
}

}  // namespace shardgnn
