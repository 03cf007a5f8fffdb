// Memory for large, long-lived buffers (a minibatch's feature rows) from a
// process-wide provider, so that they share one cache of blocks with
// LibTorch's tensors: the trainer installs its block cache
// (trainer/cpu_caching_allocator.h) as the provider, and a feature buffer
// then reuses pages a freed tensor or an earlier batch left, or, after
// RetireCpuCachedBlocks(), takes over retired blocks' pages instead of
// faulting in fresh ones. Without a provider, std::malloc and std::free.
//
// The provider's deallocate must accept any pointer std::malloc returned as
// well as its own (a buffer made before the provider was installed may be
// freed after); a provider, once installed, stays for the life of the process.
#ifndef SHARDGNN_COMMON_LARGE_BUFFER_H_
#define SHARDGNN_COMMON_LARGE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace shardgnn {

struct LargeBufferProvider {
  void* (*allocate)(size_t bytes);  // Null or throws on failure.
  void (*deallocate)(void* ptr);
};

// Installs `provider` (static storage; not null) for every later call.
void SetLargeBufferProvider(const LargeBufferProvider* provider);

// `bytes` from the provider (std::malloc without one), aligned for any
// scalar type. Throws std::bad_alloc on failure.
void* AllocateLargeBuffer(size_t bytes);
void DeallocateLargeBuffer(void* ptr);

// A standard allocator over AllocateLargeBuffer.
template <typename T>
struct LargeBufferAllocator {
  using value_type = T;
  LargeBufferAllocator() = default;
  template <typename U>
  LargeBufferAllocator(const LargeBufferAllocator<U>&) {}  // NOLINT
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(AllocateLargeBuffer(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) { DeallocateLargeBuffer(p); }
  template <typename U>
  bool operator==(const LargeBufferAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const LargeBufferAllocator<U>&) const {
    return false;
  }
};

// Arrays of megabytes: a minibatch's feature rows, its blocks' edges.
using FloatBuffer = std::vector<float, LargeBufferAllocator<float>>;
using Int64Buffer = std::vector<int64_t, LargeBufferAllocator<int64_t>>;

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_LARGE_BUFFER_H_
