// Memory for the gRPC slices a storage server answers with, and for the
// samples it encodes into them, kept between answers (issue 17: no fresh
// memory in the steady state).
//
// A raw answer (features_codec.h) is one slice that gRPC owns until the
// bytes are sent. Allocated afresh, a slice of a megabyte or more touches
// every one of its pages for the first time: hundreds of page faults per
// answer, each costing 16-19 us on a VM. Slices taken from a SlicePool come
// from buffers that return to the pool when gRPC releases the slice, so a
// steady stream of answers of similar sizes writes into pages that are
// already mapped.
//
// Bounded: at most `max_kept_bytes` of free buffers are kept (a buffer
// returning past that is freed), and buffers over `max_buffer_bytes` are
// never kept (a rare huge answer does not pin its memory). Release() frees
// every kept buffer; the server's MemoryTrimmer calls it when it trims.
//
// Thread-safe. Slices may outlive any server (gRPC releases them on its own
// threads), so servers use the process's pool, Shared(), which is never
// destroyed; a pool of one's own must outlive its slices.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SLICE_POOL_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SLICE_POOL_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/sampled_neighbors.h"
#include "grpc/slice.h"

namespace shardgnn::internal {

class SlicePool {
 public:
  static constexpr size_t kDefaultMaxKeptBytes = size_t{32} << 20;
  static constexpr size_t kDefaultMaxBufferBytes = size_t{16} << 20;

  // The process's pool, with the default bounds.
  static SlicePool& Shared();

  SlicePool(size_t max_kept_bytes, size_t max_buffer_bytes);
  ~SlicePool();  // Frees the kept buffers; no slice of it may be alive.
  SlicePool(const SlicePool&) = delete;
  SlicePool& operator=(const SlicePool&) = delete;

  // A slice of `bytes` uninitialised bytes (the caller fills it) whose
  // buffer comes back to this pool when the last reference to the slice is
  // dropped. Reuses the smallest kept buffer that is large enough.
  grpc_slice Take(size_t bytes);

  // Frees every kept buffer (slices in use return later, as usual).
  void Release();

  struct Stats {
    size_t kept_bytes = 0;  // Free buffers held now.
    int64_t reused = 0;     // Takes served by a kept buffer.
    int64_t allocated = 0;  // Takes that allocated a buffer.
  };
  Stats stats() const;

 private:
  struct Buffer;
  static void Return(void* buffer);  // A slice's destroy callback.
  void Put(Buffer* buffer);

  const size_t max_kept_bytes_;
  const size_t max_buffer_bytes_;
  mutable std::mutex mu_;
  std::vector<Buffer*> free_;  // Guarded by mu_.
  Stats stats_;                // Guarded by mu_.
};

// The vectors a server samples into before it encodes the answer, kept
// between calls for the same reason and released the same way (the
// MemoryTrimmer calls Release() when calls stop). At most `max_kept_bytes`
// of capacity is kept in all, and no single sample over `max_sample_bytes`.
// Thread-safe.
class SampleBufferPool {
 public:
  static constexpr size_t kDefaultMaxKeptBytes = size_t{64} << 20;
  static constexpr size_t kDefaultMaxSampleBytes = size_t{32} << 20;

  static SampleBufferPool& Shared();  // Never destroyed.

  SampleBufferPool(size_t max_kept_bytes, size_t max_sample_bytes);
  SampleBufferPool(const SampleBufferPool&) = delete;
  SampleBufferPool& operator=(const SampleBufferPool&) = delete;

  // Empty vectors: the kept sample with the least room for neighbors that
  // has room for `neighbors` (best fit: a sampling call's answers range from
  // a batch's first hop to its validation's last, and a buffer too small for
  // one would be reallocated, fresh, while a larger one sat idle); none
  // fits: new vectors, and the kept ones stay for calls they fit.
  SampledNeighbors Take(size_t neighbors = 0);
  // Keeps `sample`'s capacity for a later Take(), within the bounds: over
  // the total, smaller kept samples make way for a larger one (the calls a
  // small one fits, a larger one fits too).
  void Put(SampledNeighbors sample);
  void Release();
  size_t kept_bytes() const;

 private:
  const size_t max_kept_bytes_;
  const size_t max_sample_bytes_;
  mutable std::mutex mu_;
  std::vector<SampledNeighbors> free_;  // Guarded by mu_.
  size_t kept_bytes_ = 0;               // Guarded by mu_.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SLICE_POOL_H_
