// A caching CPU allocator for LibTorch tensors (issue 17: no fresh memory in
// the steady state).
//
// A training step allocates the same large tensors every time: the dropped-out
// input features, each layer's activations, their gradients. LibTorch's
// default CPU allocator hands each to malloc, and glibc serves a block of 32
// MiB or more (and, after frees, smaller ones too) with a fresh mmap and
// returns it with munmap: every step touches hundreds of megabytes of new
// pages, one minor page fault per 4 KiB (about 16 us each on a VM). This
// allocator keeps freed blocks of at least `min_block_bytes` and hands them
// out again for requests of a similar size (a block serves a request of at
// least 2/3 of its size; a new block is made 1/8 larger than asked and rounded
// up to 1/16 of a power of two, so that sizes that vary from step to step, and
// a batch somewhat larger than any before, share blocks), holding at most
// `max_cached_bytes` of free blocks (beyond that, freed blocks go back to the
// system, largest first). Blocks are mapped apart from malloc's heap and
// populated whole when made (the warm-up faults them in at once, and the
// headroom never faults later). Free blocks the caller has retired (their
// sizes will not come again: training's, before the test pass with larger
// fanouts) give their pages to a request that no free block serves: moved
// under the new block with mremap, whole blocks that fit and the head of a
// larger one for the rest (its tail stays cached, retired), so that the new
// block faults in a page only when no retired block is left.
// Smaller requests go to LibTorch's default allocator unchanged. Installing
// it also makes it the provider of large buffers outside LibTorch
// (common/large_buffer.h: minibatches' feature rows, the samplers' arrays),
// which then share its blocks, retired ones included. Thread-safe.
//
// Installed once per process, before the first tensor of the run is made
// (tensors made earlier keep their own deleter and are freed as before).
#ifndef SHARDGNN_TRAINER_CPU_CACHING_ALLOCATOR_H_
#define SHARDGNN_TRAINER_CPU_CACHING_ALLOCATOR_H_

#include <cstdint>

namespace shardgnn {

struct CpuCachingAllocatorOptions {
  int64_t min_block_bytes = int64_t{256} << 10;
  // Free blocks kept at most; 0: a quarter of the machine's memory.
  int64_t max_cached_bytes = 0;
};

struct CpuCachingAllocatorStats {
  int64_t allocations = 0;     // Requests of min_block_bytes or more.
  int64_t reused = 0;          // Of those, served from a cached block.
  int64_t cached_bytes = 0;    // Free blocks held now.
  int64_t in_use_bytes = 0;    // Blocks handed out and not yet freed.
  int64_t released_bytes = 0;  // Freed blocks returned to the system.
  int64_t fresh_bytes = 0;     // Blocks taken from the system (new pages).
  int64_t moved_bytes = 0;     // Free blocks' pages moved into new blocks.
};

// Makes the caching allocator LibTorch's CPU allocator. The first call
// installs it with `options`; later calls change nothing and return false.
bool InstallCpuCachingAllocator(const CpuCachingAllocatorOptions& options = {});

// Marks every block free now as retired: a later request that no free block
// serves may take their pages (a retired block reused for its own size is
// no longer retired). For a phase whose tensors are larger than any before
// and whose predecessor's sizes will not come again (the test pass after
// training): without it, blocks are only reused whole. Does nothing if the
// allocator is not installed.
void RetireCpuCachedBlocks();

// All zero if it is not installed.
CpuCachingAllocatorStats GetCpuCachingAllocatorStats();

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_CPU_CACHING_ALLOCATOR_H_
