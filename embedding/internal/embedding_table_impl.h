// The internals of an EmbeddingTable (embedding/embedding_table.h), shared by
// the file that updates rows (embedding_table.cc) and the one that saves and
// loads them (embedding_snapshot.cc). Not part of the component's interface.
#ifndef SHARDGNN_EMBEDDING_INTERNAL_EMBEDDING_TABLE_IMPL_H_
#define SHARDGNN_EMBEDDING_INTERNAL_EMBEDDING_TABLE_IMPL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status.h"
#include "embedding/embedding_table.h"

namespace shardgnn {
namespace embedding_internal {

// The key of the counter-based generator for one table; a row's elements are
// drawn from MixSeed(MixSeed(key, node), col).
uint64_t TableKey(const EmbeddingTableConfig& config);
uint64_t RowKey(uint64_t table_key, NodeId node);
// A standard normal draw from the stream keyed by (row_key, col), scaled by
// init_std.
float InitialValue(uint64_t row_key, int64_t col, double init_std);

// Frees an array: free() for memory, munmap() of its `bytes` for a mapped
// file.
struct ArrayDeleter {
  size_t mapped_bytes = 0;
  void operator()(void* p) const;
};
template <typename T>
using CArray = std::unique_ptr<T[], ArrayDeleter>;

// Zero-filled space for n elements: anonymous memory (calloc of a large block
// maps fresh zero pages, so memory is committed only for the rows the run
// writes), or with `backing_dir` a file there, reserved whole on disk
// (fallocate: a full disk is an error now, not a SIGBUS later), unlinked at
// once and mapped shared, so the kernel keeps hot pages in memory and writes
// cold ones back to it: a table may be larger than RAM.
absl::StatusOr<void*> ZeroBytes(uint64_t n, size_t size, absl::string_view what,
                                absl::string_view table,
                                const std::string& backing_dir,
                                size_t* mapped_bytes);
template <typename T>
absl::StatusOr<CArray<T>> ZeroArray(uint64_t n, absl::string_view what,
                                    absl::string_view table,
                                    const std::string& backing_dir) {
  size_t mapped = 0;
  ASSIGN_OR_RETURN(void* p,
                   ZeroBytes(n, sizeof(T), what, table, backing_dir, &mapped));
  return CArray<T>(static_cast<T*>(p), ArrayDeleter{mapped});
}

// Stripes on their own cache lines, so that threads updating rows of
// different stripes do not contend on one line. The locks here are
// std::mutex rather than absl::Mutex so that ThreadSanitizer, which does not
// see through the prebuilt Abseil library, can check this file.
struct alignas(64) Stripe {
  std::mutex mu;
};
constexpr int64_t kNumStripes = 1024;

// The most lagging trainers a DEADLINE_EXCEEDED message names.
constexpr int kMaxNamedTrainers = 16;

}  // namespace embedding_internal

class EmbeddingTable::Impl {
 public:
  Impl(const EmbeddingTableConfig& config, NodeId node_start, NodeId node_end,
       std::string backing_dir)
      : backing_dir_(std::move(backing_dir)),
        config_(config),
        node_start_(node_start),
        node_end_(node_end),
        dim_(config.dim),
        table_key_(embedding_internal::TableKey(config)),
        lr_(static_cast<float>(config.lr)),
        eps_(static_cast<float>(config.eps)),
        beta1_(static_cast<float>(config.beta1)),
        beta2_(static_cast<float>(config.beta2)),
        one_minus_beta1_(static_cast<float>(1.0 - config.beta1)),
        one_minus_beta2_(static_cast<float>(1.0 - config.beta2)),
        stripes_(
            new embedding_internal::Stripe[embedding_internal::kNumStripes]),
        push_mu_(new std::mutex[config.num_trainers]),
        next_step_(config.num_trainers, 0) {}

  absl::Status Allocate() {
    const uint64_t rows = static_cast<uint64_t>(node_end_ - node_start_);
    uint64_t elements;
    if (__builtin_mul_overflow(rows, static_cast<uint64_t>(dim_), &elements)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("embedding table ", config_.name, ": ", rows,
                       " rows of dim ", dim_, " overflow the address space"));
    }
    const std::string& name = config_.name;
    ASSIGN_OR_RETURN(values_, embedding_internal::ZeroArray<float>(
                                  elements, "rows", name, backing_dir_));
    ASSIGN_OR_RETURN(created_, embedding_internal::ZeroArray<uint8_t>(
                                   rows, "row flags", name, backing_dir_));
    switch (config_.optimizer) {
      case EmbeddingOptimizer::kSgd:
        break;
      case EmbeddingOptimizer::kAdagrad: {
        ASSIGN_OR_RETURN(sum_sq_, embedding_internal::ZeroArray<float>(
                                      elements, "Adagrad sums of squares", name,
                                      backing_dir_));
        break;
      }
      case EmbeddingOptimizer::kAdam: {
        ASSIGN_OR_RETURN(
            m_, embedding_internal::ZeroArray<float>(
                    elements, "Adam first moments", name, backing_dir_));
        ASSIGN_OR_RETURN(
            v_, embedding_internal::ZeroArray<float>(
                    elements, "Adam second moments", name, backing_dir_));
        ASSIGN_OR_RETURN(adam_steps_,
                         embedding_internal::ZeroArray<int64_t>(
                             rows, "Adam step counts", name, backing_dir_));
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Pull(absl::Span<const NodeId> ids, int64_t step, int staleness,
                    absl::Time deadline, float* out);
  absl::Status Push(int trainer, int64_t step, absl::Span<const NodeId> ids,
                    absl::Span<const float> grads);

  // embedding_snapshot.cc: writes the created rows and their optimizer
  // state (see EmbeddingTable::Save), and reads them back into a fresh
  // table.
  absl::Status Save(int64_t step, const std::string& path);
  absl::Status Load(const std::string& path, int64_t step);

  int64_t applied_steps() const {
    return applied_.load(std::memory_order_acquire);
  }

  EmbeddingTableStats stats() const {
    EmbeddingTableStats s;
    s.rows_pulled = rows_pulled_.load(std::memory_order_relaxed);
    s.rows_pushed = rows_pushed_.load(std::memory_order_relaxed);
    s.pulls = pulls_.load(std::memory_order_relaxed);
    s.pushes = pushes_.load(std::memory_order_relaxed);
    s.rows_touched = rows_touched_.load(std::memory_order_relaxed);
    s.pull_wait_seconds =
        static_cast<double>(pull_wait_nanos_.load(std::memory_order_relaxed)) *
        1e-9;
    s.staleness_sum = staleness_sum_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::mutex& StripeOf(int64_t row) const {
    return stripes_[row % embedding_internal::kNumStripes].mu;
  }

  // The row's values, created from the initial values on first touch.
  // REQUIRES: the row's stripe is held.
  float* RowLocked(int64_t row) {
    float* values = values_.get() + row * dim_;
    if (!created_[row]) {
      const uint64_t row_key =
          embedding_internal::RowKey(table_key_, node_start_ + row);
      for (int64_t c = 0; c < dim_; ++c) {
        values[c] =
            embedding_internal::InitialValue(row_key, c, config_.init_std);
      }
      created_[row] = 1;
      rows_touched_.fetch_add(1, std::memory_order_relaxed);
    }
    return values;
  }

  // Applies the summed gradient g (dim_ floats) to one row.
  void ApplyRow(int64_t row, const float* g);
  // Applies one validated push: duplicates summed, then row by row.
  void ApplyPush(absl::Span<const NodeId> ids, absl::Span<const float> grads);
  // config_.ordered: holds the validated push; applies every step that is
  // complete, in step and trainer order, and advances the clock.
  // REQUIRES: push_mu_[trainer] held.
  absl::Status HoldPush(int trainer, int64_t step, absl::Span<const NodeId> ids,
                        absl::Span<const float> grads);

  absl::Status ValidatePush(int trainer, int64_t step,
                            absl::Span<const NodeId> ids,
                            absl::Span<const float> grads) const;
  // Waits until applied_ >= needed; false if `deadline` passes first.
  bool WaitForClock(std::unique_lock<std::mutex>& lock, int64_t needed,
                    absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(clock_mu_);
  std::string LaggingTrainers(int64_t needed) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(clock_mu_);

  // Where the arrays are mapped files ("": in memory).
  const std::string backing_dir_;
  const EmbeddingTableConfig config_;
  const NodeId node_start_;
  const NodeId node_end_;
  const int64_t dim_;
  const uint64_t table_key_;
  // The optimizer's constants in the rows' arithmetic (float).
  const float lr_, eps_, beta1_, beta2_, one_minus_beta1_, one_minus_beta2_;

  // Row r (node node_start_ + r) is values_[r * dim_ ...]; it and its
  // optimizer state are read and written only under StripeOf(r).
  embedding_internal::CArray<float> values_;
  embedding_internal::CArray<uint8_t> created_;
  embedding_internal::CArray<float> sum_sq_;  // Adagrad.
  embedding_internal::CArray<float> m_, v_;   // Adam.
  embedding_internal::CArray<int64_t>
      adam_steps_;  // Adam: updates of each row so far.
  const std::unique_ptr<embedding_internal::Stripe[]> stripes_;

  // Serializes each trainer's pushes, held through the whole push, so that a
  // retry that arrives while the first copy is applying waits for it and is
  // then acknowledged without effect.
  const std::unique_ptr<std::mutex[]> push_mu_;

  // config_.ordered: the pushes of steps not yet complete, by step, one slot
  // per trainer, and each trainer's next step to hold.
  struct HeldPush {
    bool held = false;
    std::vector<NodeId> ids;
    std::vector<float> grads;
  };
  std::mutex held_mu_;
  std::map<int64_t, std::vector<HeldPush>> held_ ABSL_GUARDED_BY(held_mu_);
  // The slots of an applied step, kept (with their vectors' capacity) for a
  // later step: no fresh megabytes per step.
  std::vector<std::vector<HeldPush>> spare_slots_ ABSL_GUARDED_BY(held_mu_);
  std::vector<int64_t> next_held_ ABSL_GUARDED_BY(held_mu_);

  mutable std::mutex clock_mu_;
  // Notified whenever applied_ advances.
  std::condition_variable clock_advanced_;
  // Per trainer, the steps applied (the next step it must push).
  std::vector<int64_t> next_step_ ABSL_GUARDED_BY(clock_mu_);
  // config_.ordered: each trainer's next step to push (held or applied).
  std::vector<int64_t> pushed_next_ ABSL_GUARDED_BY(clock_mu_);
  // min(next_step_), written under clock_mu_; read without it.
  std::atomic<int64_t> applied_{0};

  std::atomic<int64_t> rows_pulled_{0}, rows_pushed_{0}, pulls_{0}, pushes_{0},
      rows_touched_{0}, pull_wait_nanos_{0}, staleness_sum_{0};
};

}  // namespace shardgnn

#endif  // SHARDGNN_EMBEDDING_INTERNAL_EMBEDDING_TABLE_IMPL_H_
