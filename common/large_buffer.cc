#include "common/large_buffer.h"

#include <atomic>
#include <cstdlib>

namespace shardgnn {
namespace {

std::atomic<const LargeBufferProvider*> provider{nullptr};

}  // namespace

void SetLargeBufferProvider(const LargeBufferProvider* p) {
  provider.store(p, std::memory_order_release);
}

void* AllocateLargeBuffer(size_t bytes) {
  const LargeBufferProvider* p = provider.load(std::memory_order_acquire);
  void* ptr = p != nullptr ? p->allocate(bytes) : std::malloc(bytes);
  if (ptr == nullptr && bytes > 0) throw std::bad_alloc();
  return ptr;
}

void DeallocateLargeBuffer(void* ptr) {
  if (ptr == nullptr) return;
  const LargeBufferProvider* p = provider.load(std::memory_order_acquire);
  if (p != nullptr) {
    p->deallocate(ptr);
  } else {
    std::free(ptr);
  }
}

}  // namespace shardgnn
