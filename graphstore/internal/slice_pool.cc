#include "graphstore/internal/slice_pool.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>

namespace shardgnn::internal {
namespace {

// Buffers are sized with headroom and rounded up, so that answers whose
// sizes vary a little from step to step fit the buffers of earlier steps.
constexpr size_t kGranule = size_t{64} << 10;

size_t CapacityFor(size_t bytes) {
  const size_t wanted = bytes + bytes / 8;
  return (wanted + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

struct SlicePool::Buffer {
  SlicePool* pool;
  char* data;
  size_t capacity;
};

SlicePool& SlicePool::Shared() {
  static SlicePool* pool =
      new SlicePool(kDefaultMaxKeptBytes, kDefaultMaxBufferBytes);
  return *pool;
}

SlicePool::SlicePool(size_t max_kept_bytes, size_t max_buffer_bytes)
    : max_kept_bytes_(max_kept_bytes), max_buffer_bytes_(max_buffer_bytes) {}

SlicePool::~SlicePool() { Release(); }

grpc_slice SlicePool::Take(size_t bytes) {
  Buffer* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i]->capacity >= bytes &&
          (best == free_.size() ||
           free_[i]->capacity < free_[best]->capacity)) {
        best = i;
      }
    }
    if (best != free_.size()) {
      buffer = free_[best];
      free_[best] = free_.back();
      free_.pop_back();
      stats_.kept_bytes -= buffer->capacity;
      ++stats_.reused;
    } else {
      ++stats_.allocated;
    }
  }
  if (buffer == nullptr) {
    const size_t capacity = CapacityFor(bytes);
    char* data = static_cast<char*>(std::malloc(capacity == 0 ? 1 : capacity));
    if (data == nullptr) throw std::bad_alloc();
    buffer = new Buffer{this, data, capacity};
  }
  return grpc_slice_new_with_user_data(buffer->data, bytes, &SlicePool::Return,
                                       buffer);
}

void SlicePool::Return(void* buffer) {
  auto* b = static_cast<Buffer*>(buffer);
  b->pool->Put(b);
}

void SlicePool::Put(Buffer* buffer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (buffer->capacity <= max_buffer_bytes_ &&
        stats_.kept_bytes + buffer->capacity <= max_kept_bytes_) {
      free_.push_back(buffer);
      stats_.kept_bytes += buffer->capacity;
      return;
    }
  }
  std::free(buffer->data);
  delete buffer;
}

void SlicePool::Release() {
  std::vector<Buffer*> freed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    freed.swap(free_);
    stats_.kept_bytes = 0;
  }
  for (Buffer* b : freed) {
    std::free(b->data);
    delete b;
  }
}

SlicePool::Stats SlicePool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

namespace {

size_t CapacityBytes(const SampledNeighbors& s) {
  return s.counts.capacity() * sizeof(int64_t) +
         s.neighbors.capacity() * sizeof(NodeId) +
         s.relations.capacity() * sizeof(int32_t);
}

}  // namespace

SampleBufferPool& SampleBufferPool::Shared() {
  static SampleBufferPool* pool =
      new SampleBufferPool(kDefaultMaxKeptBytes, kDefaultMaxSampleBytes);
  return *pool;
}

SampleBufferPool::SampleBufferPool(size_t max_kept_bytes,
                                   size_t max_sample_bytes)
    : max_kept_bytes_(max_kept_bytes), max_sample_bytes_(max_sample_bytes) {}

SampledNeighbors SampleBufferPool::Take(size_t neighbors) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t best = free_.size();
  for (size_t i = 0; i < free_.size(); ++i) {
    const size_t room = free_[i].neighbors.capacity();
    if (room >= neighbors &&
        (best == free_.size() || room < free_[best].neighbors.capacity())) {
      best = i;
    }
  }
  if (best == free_.size()) return SampledNeighbors();
  SampledNeighbors s = std::move(free_[best]);
  if (best + 1 != free_.size()) free_[best] = std::move(free_.back());
  free_.pop_back();
  kept_bytes_ -= CapacityBytes(s);
  return s;
}

void SampleBufferPool::Put(SampledNeighbors sample) {
  const size_t bytes = CapacityBytes(sample);
  if (bytes == 0 || bytes > max_sample_bytes_) return;  // Freed here.
  sample.counts.clear();
  sample.neighbors.clear();
  // An untyped sample taken later must not answer a typed one's relations.
  sample.relations.clear();
  std::vector<SampledNeighbors> evicted;  // Freed after the lock.
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_bytes_ + bytes > max_kept_bytes_) {
    // Smaller kept samples, the smallest first, make way if enough of them
    // do; otherwise this one goes. (Take looks for the best fit, so the
    // order of free_ is free to change.)
    std::sort(free_.begin(), free_.end(),
              [](const SampledNeighbors& x, const SampledNeighbors& y) {
                return CapacityBytes(x) < CapacityBytes(y);
              });
    size_t freed = 0;
    size_t count = 0;
    while (kept_bytes_ - freed + bytes > max_kept_bytes_ &&
           count < free_.size() && CapacityBytes(free_[count]) < bytes) {
      freed += CapacityBytes(free_[count++]);
    }
    if (kept_bytes_ - freed + bytes > max_kept_bytes_) return;
    evicted.assign(std::make_move_iterator(free_.begin()),
                   std::make_move_iterator(free_.begin() + count));
    free_.erase(free_.begin(), free_.begin() + count);
    kept_bytes_ -= freed;
  }
  kept_bytes_ += bytes;
  free_.push_back(std::move(sample));
}

void SampleBufferPool::Release() {
  std::vector<SampledNeighbors> freed;
  std::lock_guard<std::mutex> lock(mu_);
  freed.swap(free_);
  kept_bytes_ = 0;
}

size_t SampleBufferPool::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_bytes_;
}

}  // namespace shardgnn::internal
