// Buffers kept between steps or requests, grown with headroom (issue 17: no
// fresh memory in the steady state).
//
// A kept buffer whose contents vary a little in size from one use to the
// next (a minibatch's features, a pull's rows, a push's gradients) would be
// reallocated at every new largest size if grown to fit exactly, and a large
// one comes from mmap: every page faulted in afresh, thousands of faults each
// time. Grown with a quarter more, the next slightly larger use fits.
#ifndef SHARDGNN_COMMON_BUFFERS_H_
#define SHARDGNN_COMMON_BUFFERS_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace shardgnn {

// Makes room for `n` elements in *buffer (a std::vector or std::string),
// with headroom when it must grow. Growing drops the contents (nothing is
// copied): the caller fills the buffer next.
template <typename Buffer>
void ReserveWithHeadroom(Buffer* buffer, size_t n) {
  if (buffer->capacity() >= n) return;
  buffer->clear();
  buffer->shrink_to_fit();  // The old buffer goes before the new one comes.
  buffer->reserve(n + n / 4);
}

// Objects that hold buffers (a SampledNeighbors, say), kept for later use by
// any thread: Take() one, Give() it back when done with it. Take() returns a
// default-constructed T when none is kept; at most `max_kept` are kept (the
// rest are freed), so the pool holds about as many as are in use at once.
// Thread-safe.
template <typename T>
class BufferPool {
 public:
  explicit BufferPool(size_t max_kept) : max_kept_(max_kept) {}

  T Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.empty()) return T();
    T t = std::move(kept_.back());
    kept_.pop_back();
    return t;
  }
  // The kept object that best fits a use of `want`: of those that hold it
  // and are at most 4 times as large, the least; if none, the least of those
  // smaller than `want` (it is to grow; the larger ones stay for other uses);
  // if none either (only far larger ones are kept, or none), a
  // default-constructed T. For uses of varied sizes (sampling answers, a
  // layer's ten times the last's): with Take(), a large use may get a small
  // buffer and grow it into fresh pages while a large one sits kept; and a
  // small use that took a far larger buffer (its own all in use: training's
  // answers while validation's are in flight, issue 17) would leave the next
  // large use to grow a small one into megabytes of fresh pages, where the
  // small use's own new buffer costs a few.
  template <typename Capacity>
  T TakeFitting(size_t want, Capacity capacity) {
    constexpr size_t kFarLarger = 4;
    constexpr size_t kNone = static_cast<size_t>(-1);
    std::lock_guard<std::mutex> lock(mu_);
    size_t fitting = kNone, smaller = kNone;
    for (size_t i = 0; i < kept_.size(); ++i) {
      const size_t have = capacity(kept_[i]);
      if (have < want) {
        if (smaller == kNone || have < capacity(kept_[smaller])) smaller = i;
      } else if (have / kFarLarger <= want) {
        if (fitting == kNone || have < capacity(kept_[fitting])) fitting = i;
      }
    }
    const size_t best = fitting != kNone ? fitting : smaller;
    if (best == kNone) return T();
    T t = std::move(kept_[best]);
    kept_[best] = std::move(kept_.back());
    kept_.pop_back();
    return t;
  }
  void Give(T&& t) {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() < max_kept_) kept_.push_back(std::move(t));
  }
  // One object taken for a scope and given back at its end.
  class Lease {
   public:
    explicit Lease(BufferPool* pool) : pool_(pool), value_(pool->Take()) {}
    // The kept object that best fits a use of `want` (TakeFitting).
    template <typename Capacity>
    Lease(BufferPool* pool, size_t want, Capacity capacity)
        : pool_(pool), value_(pool->TakeFitting(want, capacity)) {}
    ~Lease() { pool_->Give(std::move(value_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    T& operator*() { return value_; }
    T* operator->() { return &value_; }
    T* get() { return &value_; }

   private:
    BufferPool* pool_;
    T value_;
  };

 private:
  const size_t max_kept_;
  std::mutex mu_;
  std::vector<T> kept_;
};

// A value taken from a shared pool that goes back to it when destroyed,
// unless released: for the buffers of a call's attempts, which may end after
// their caller (a hedged call's losing attempt), so that the loser's buffer
// is kept too rather than freed and made anew by the next call. Move-only; a
// moved-from Pooled gives nothing back.
template <typename T>
class Pooled {
 public:
  Pooled(std::shared_ptr<BufferPool<T>> pool, T value)
      : pool_(std::move(pool)), value_(std::move(value)) {}
  Pooled(Pooled&& other) noexcept
      : pool_(std::move(other.pool_)), value_(std::move(other.value_)) {}
  Pooled& operator=(Pooled&& other) noexcept {
    if (this != &other) {
      GiveBack();
      pool_ = std::move(other.pool_);
      value_ = std::move(other.value_);
    }
    return *this;
  }
  Pooled(const Pooled&) = delete;
  Pooled& operator=(const Pooled&) = delete;
  ~Pooled() { GiveBack(); }

  T& operator*() { return value_; }
  T* operator->() { return &value_; }
  // The value, no longer given back.
  T Release() {
    pool_.reset();
    return std::move(value_);
  }

 private:
  void GiveBack() {
    if (pool_ != nullptr) pool_->Give(std::move(value_));
    pool_.reset();
  }

  std::shared_ptr<BufferPool<T>> pool_;
  T value_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_BUFFERS_H_
