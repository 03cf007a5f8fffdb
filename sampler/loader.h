// A prefetching minibatch loader: background threads sample the batches of an
// epoch ahead of the trainer.
//
// A loader iterates over items: seed nodes (node tasks; each batch of them is
// sampled by a NeighborSampler) or any other int64 items with a BatchFn that
// makes a batch of them into a MiniBatch (link prediction: indices of train
// edges, sampler/link_batcher.h).
//
// Each epoch visits the items in a seeded shuffled order (Fisher-Yates with
// common/sampling.h's generator and seed MixSeed(shuffle_seed, epoch); with
// `shuffle` false, in the order given); batch i
// takes the next batch_size seeds and is sampled with
// MixSeed(MixSeed(sample_seed, epoch), i), so the batches are the same whatever
// the number of threads and whether prefetching is on. `steps_per_epoch` fixes
// the number of batches (every data-parallel rank must run the same number of
// steps): with more steps than the seeds fill, the order wraps around (pad);
// with fewer, the rest of the epoch is skipped (trim).
//
// Shares (SetShares, data-parallel ranks with unequal speeds): every rank
// holds all the items and the same options; batch i is cut from the epoch's
// global batch i (the batch a lone loader with these options makes), rank r
// taking the r-th of ShareSizes(its items, weights) consecutive slices. The
// ranks' batches of a step are then disjoint and together the global batch,
// whatever the weights; the sample seed is the global batch's.
//
// Up to `prefetch` finished batches wait in a bounded buffer; with prefetch 0
// Next() samples on the caller's thread. The first error a background thread
// meets is kept and returned by every later Next() (never a hang: the sources'
// calls have deadlines, and Next() itself gives up after `max_wait`).
//
// The background threads are kept from epoch to epoch (idle between them):
// a fresh thread per epoch attaches to whichever malloc arena is free and
// faults in afresh the sampler's scratch memory there. Pause() ends the
// current epoch's work and keeps them; Stop() or the destructor ends them.
// Next()/StartEpoch()/Pause()/Stop()/set_workers() must be called
// from one thread.
#ifndef SHARDGNN_SAMPLER_LOADER_H_
#define SHARDGNN_SAMPLER_LOADER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "sampler/minibatch.h"
#include "sampler/neighbor_sampler.h"

namespace shardgnn {

struct LoaderOptions {
  int64_t batch_size = 1024;
  int64_t steps_per_epoch = 0;  // 0: ceil(seeds / batch_size).
  int prefetch =
      4;  // Batches ready ahead of the consumer; 0 = no background threads.
  int workers = 1;  // Background sampling threads (when prefetch > 0).
  // false: every epoch visits the items in the order given (evaluation).
  bool shuffle = true;
  // true: the epoch's seeds split into steps_per_epoch batches whose sizes
  // differ by at most one (each at most batch_size), not full batches and a
  // short last one. Only with the natural step count (steps_per_epoch 0).
  bool balanced = false;
  uint64_t shuffle_seed = 0;
  uint64_t sample_seed = 0;
  std::chrono::milliseconds max_wait{std::chrono::minutes(10)};
};

struct LoaderStats {
  int64_t batches = 0;
  double wait_seconds =
      0;  // Time Next() blocked waiting for a batch (the trainer's idle time).
  double sample_seconds =
      0;  // Time spent building batches, summed over threads.
  double fetch_seconds =
      0;  // The part of sample_seconds spent fetching features.
};

// The number of batches an epoch has for `num_seeds` seeds with these options.
int64_t StepsPerEpoch(int64_t num_seeds, const LoaderOptions& options);

// Cuts `items` into weights.size() slice sizes that sum to `items`, each
// proportional to its weight (largest remainders break the rounding, lower
// index first), and at least 1 while items >= weights.size(). Weights are
// positive.
std::vector<int64_t> ShareSizes(int64_t items,
                                absl::Span<const int64_t> weights);

// A rank's batch within its step's global batch (SetShares).
struct BatchShare {
  int64_t items = 0;         // This rank's.
  int64_t global_items = 0;  // The step's, over all ranks.
};

// Makes the batch of `items` sampled with `batch_seed` into *out (reusing its
// buffers). Called from several threads at once: it must be thread-safe.
using BatchFn = std::function<absl::Status(
    absl::Span<const int64_t> items, uint64_t batch_seed, MiniBatch* out)>;

class PrefetchLoader {
 public:
  // Fails if `seeds` is empty, the batch size is not positive, or
  // steps_per_epoch is negative. The sampler is borrowed and must outlive the
  // loader.
  static absl::StatusOr<std::unique_ptr<PrefetchLoader>> Create(
      const NeighborSampler* sampler, std::vector<NodeId> seeds,
      LoaderOptions options);
  // The same over any items, each batch made by `make_batch`.
  static absl::StatusOr<std::unique_ptr<PrefetchLoader>> Create(
      BatchFn make_batch, std::vector<int64_t> items, LoaderOptions options);
  ~PrefetchLoader();
  PrefetchLoader(const PrefetchLoader&) = delete;
  PrefetchLoader& operator=(const PrefetchLoader&) = delete;

  // Stops any previous epoch and starts producing the batches of `epoch`.
  void StartEpoch(int64_t epoch);
  // The next batch of the current epoch into *out; false once the epoch's
  // batches are all handed out. The batch *out held before goes back to the
  // loader's pool of buffers (at the end of the epoch too: then *out is left
  // empty).
  absl::StatusOr<bool> Next(MiniBatch* out);
  // Ends the current epoch's background work, keeping the threads (idle) for
  // the next StartEpoch: returns once no batch is being made (each is bounded
  // by its calls' deadlines). Batches sampled ahead stay until StartEpoch.
  void Pause();
  // Ends the background threads (idempotent); StartEpoch starts them again.
  void Stop();
  // Stop(), then frees every batch the loader keeps (sampled ahead, and the
  // pool's buffers), so that their memory serves another phase (the trainer's
  // test pass: common/large_buffer.h); a later epoch makes them again.
  void ReleaseBuffers();

  // From the next StartEpoch on, this loader's batches are rank `rank`'s
  // slices of the global batches (see the top of this file); weights, one
  // per rank, positive. INVALID_ARGUMENT for bad weights or rank, or fewer
  // items than ranks. Empty weights: whole batches again.
  absl::Status SetShares(std::vector<int64_t> weights, int rank);
  // Batch `index` of the current epoch: this rank's items and the global
  // batch's (equal without shares).
  BatchShare ShareOf(int64_t index) const;

  int64_t steps_per_epoch() const { return steps_; }
  // The background threads from the next StartEpoch on (at least 1); the
  // batches are the same whatever the number.
  void set_workers(int workers);
  int workers() const { return options_.workers; }
  LoaderStats stats() const;

 private:
  PrefetchLoader(BatchFn make_batch, std::vector<int64_t> items,
                 LoaderOptions options);
  // Global batch `index`'s place in the epoch's order: `count` positions
  // from `begin`, taken modulo the order's length (padding wraps around).
  struct Slice {
    int64_t begin = 0;
    int64_t count = 0;
  };
  Slice GlobalBatchSlice(int64_t index) const;
  // The items of batch `index` of the current epoch: the global batch's,
  // then this rank's slice of them.
  std::vector<int64_t> GlobalBatchSeeds(int64_t index) const;
  std::vector<int64_t> BatchSeeds(int64_t index) const;
  void Work();
  // Keeps `batch`'s buffers in spare_ for a later batch (if it holds any and
  // the pool is not full).
  void Recycle(MiniBatch&& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  BatchFn make_batch_;
  std::vector<int64_t> seeds_;
  LoaderOptions options_;
  int64_t steps_;

  std::vector<int64_t> order_;  // The current epoch's order; written only while
                                // no worker makes a batch.
  // SetShares' weights and rank, and the current epoch's (copied at
  // StartEpoch, read by the workers).
  std::vector<int64_t> next_shares_;
  int next_share_rank_ = 0;
  std::vector<int64_t> shares_;
  int share_rank_ = 0;
  uint64_t epoch_seed_ = 0;
  int64_t consumed_ =
      0;  // Batches handed out this epoch (consumer thread only).
  std::vector<std::thread> workers_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_to_sample_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t consumer_at_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, MiniBatch> ready_ ABSL_GUARDED_BY(mu_);
  // Batches the consumer is done with, whose buffers the workers reuse (a
  // fresh multi-megabyte feature buffer per batch costs a page fault every
  // 4 KiB). Bounded by the batches that can be alive at once (workers +
  // prefetch + 1), all of which return here, across epochs too.
  std::vector<MiniBatch> spare_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;    // The threads end.
  bool active_ ABSL_GUARDED_BY(mu_) = false;  // An epoch's batches are made.
  int busy_ ABSL_GUARDED_BY(mu_) = 0;         // Workers making a batch.
  LoaderStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_LOADER_H_
