#include "sampler/loader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"

namespace shardgnn {
namespace {
using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

int64_t StepsPerEpoch(int64_t num_seeds, const LoaderOptions& options) {
  if (options.steps_per_epoch > 0) return options.steps_per_epoch;
  return (num_seeds + options.batch_size - 1) / options.batch_size;
}

absl::StatusOr<std::unique_ptr<PrefetchLoader>> PrefetchLoader::Create(
    const NeighborSampler* sampler, std::vector<NodeId> seeds,
    LoaderOptions options) {
  if (sampler == nullptr)
    return absl::InvalidArgumentError("loader: no sampler");
  return Create(
      [sampler](absl::Span<const int64_t> items, uint64_t batch_seed,
                MiniBatch* out) {
        return sampler->Sample(items, batch_seed, out);
      },
      std::move(seeds), options);
}

absl::StatusOr<std::unique_ptr<PrefetchLoader>> PrefetchLoader::Create(
    BatchFn make_batch, std::vector<int64_t> seeds, LoaderOptions options) {
  if (!make_batch) return absl::InvalidArgumentError("loader: no batch maker");
  if (seeds.empty())
    return absl::InvalidArgumentError("loader: no seed nodes to iterate over");
  if (options.batch_size < 1)
    return absl::InvalidArgumentError("loader: batch size must be positive");
  if (options.steps_per_epoch < 0)
    return absl::InvalidArgumentError("loader: negative steps per epoch");
  if (options.prefetch < 0 || options.workers < 1) {
    return absl::InvalidArgumentError(
        "loader: prefetch must be >= 0 and workers >= 1");
  }
  return std::unique_ptr<PrefetchLoader>(
      new PrefetchLoader(std::move(make_batch), std::move(seeds), options));
}

PrefetchLoader::PrefetchLoader(BatchFn make_batch, std::vector<int64_t> seeds,
                               LoaderOptions options)
    : make_batch_(std::move(make_batch)),
      seeds_(std::move(seeds)),
      options_(options),
      steps_(StepsPerEpoch(static_cast<int64_t>(seeds_.size()), options_)) {}

PrefetchLoader::~PrefetchLoader() { Stop(); }

void PrefetchLoader::Pause() {
  std::unique_lock<std::mutex> lock(mu_);
  active_ = false;
  // A worker making a batch finishes it (its calls have deadlines).
  cv_.wait(lock, [&] { return busy_ == 0; });
}

void PrefetchLoader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    active_ = false;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

void PrefetchLoader::ReleaseBuffers() {
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  ready_.clear();
  spare_.clear();
  spare_.shrink_to_fit();
}

void PrefetchLoader::StartEpoch(int64_t epoch) {
  Pause();
  size_t workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers = options_.prefetch > 0 ? static_cast<size_t>(options_.workers) : 0;
  }
  // A changed number of threads (set_workers): start them anew.
  if (workers_.size() != workers) Stop();
  // No worker makes a batch now: the epoch's order, seed and shares can
  // change.
  shares_ = next_shares_;
  share_rank_ = next_share_rank_;
  order_.assign(seeds_.begin(), seeds_.end());
  if (options_.shuffle) {
    uint64_t state =
        MixSeed(options_.shuffle_seed, static_cast<uint64_t>(epoch));
    for (size_t i = order_.size(); i > 1; --i)
      std::swap(order_[i - 1], order_[UniformBelow(&state, i)]);
  }
  epoch_seed_ = MixSeed(options_.sample_seed, static_cast<uint64_t>(epoch));
  consumed_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    active_ = true;
    next_to_sample_ = 0;
    consumer_at_ = 0;
    // Batches sampled but not handed out (an epoch cut short) keep their
    // buffers for this epoch's batches.
    for (auto& [index, batch] : ready_) Recycle(std::move(batch));
    ready_.clear();
    // A kept error stays: a loader that failed once is not trusted again.
  }
  while (workers_.size() < workers) workers_.emplace_back([this] { Work(); });
  cv_.notify_all();
}

void PrefetchLoader::set_workers(int workers) {
  // Read by Recycle under mu_ (the pool's bound) while workers run.
  std::lock_guard<std::mutex> lock(mu_);
  options_.workers = std::max(1, workers);
}

std::vector<int64_t> ShareSizes(int64_t items,
                                absl::Span<const int64_t> weights) {
  const auto ranks = static_cast<int64_t>(weights.size());
  std::vector<int64_t> sizes(weights.size(), 0);
  if (ranks == 0) return sizes;
  // One item each first (while there are enough), the rest by weight.
  const int64_t floor = items >= ranks ? 1 : 0;
  const int64_t rest = items - floor * ranks;
  int64_t total = 0;
  for (int64_t w : weights) total += w;
  // Exact in 128 bits: rest (< 2^40) times a weight (< 2^40 in practice).
  std::vector<std::pair<__int128, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const __int128 product = static_cast<__int128>(rest) * weights[r];
    sizes[r] = floor + static_cast<int64_t>(product / total);
    given += sizes[r];
    remainders.emplace_back(-(product % total), r);
  }
  std::sort(remainders.begin(), remainders.end());
  for (int64_t k = 0; given < items; ++k, ++given)
    ++sizes[remainders[static_cast<size_t>(k % ranks)].second];
  return sizes;
}

absl::Status PrefetchLoader::SetShares(std::vector<int64_t> weights, int rank) {
  if (!weights.empty()) {
    if (rank < 0 || rank >= static_cast<int>(weights.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "loader: rank ", rank, " has no share among ", weights.size()));
    }
    for (int64_t w : weights) {
      if (w < 1 || w > (int64_t{1} << 40))
        return absl::InvalidArgumentError(
            absl::StrCat("loader: share weight ", w, " is not in [1, 2^40]"));
    }
    if (seeds_.size() < weights.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("loader: ", seeds_.size(), " items cannot be shared by ",
                       weights.size(), " ranks"));
    }
  }
  next_shares_ = std::move(weights);
  next_share_rank_ = rank;
  return absl::OkStatus();
}

PrefetchLoader::Slice PrefetchLoader::GlobalBatchSlice(int64_t index) const {
  const auto n = static_cast<int64_t>(order_.size());
  const int64_t b = options_.batch_size;
  if (options_.balanced && options_.steps_per_epoch == 0) {
    // Slices of n / steps_ seeds, give or take one: no short last batch.
    const int64_t begin = index * n / steps_;
    return {begin, (index + 1) * n / steps_ - begin};
  }
  // Consecutive slices of the order (the last natural batch may be short) ...
  const int64_t begin = index * b;
  if (begin + b <= n || (begin < n && steps_ <= (n + b - 1) / b))
    return {begin, std::min(n, begin + b) - begin};
  // ... and past its end (padding to a fixed step count) full batches that
  // wrap around it, distinct seeds each (when n >= b).
  return {begin, std::min(b, n)};
}

BatchShare PrefetchLoader::ShareOf(int64_t index) const {
  BatchShare share;
  share.global_items = GlobalBatchSlice(index).count;
  share.items = shares_.empty()
                    ? share.global_items
                    : ShareSizes(share.global_items,
                                 shares_)[static_cast<size_t>(share_rank_)];
  return share;
}

std::vector<int64_t> PrefetchLoader::BatchSeeds(int64_t index) const {
  std::vector<int64_t> out = GlobalBatchSeeds(index);
  if (shares_.empty()) return out;
  const std::vector<int64_t> sizes =
      ShareSizes(static_cast<int64_t>(out.size()), shares_);
  int64_t begin = 0;
  for (int r = 0; r < share_rank_; ++r) begin += sizes[static_cast<size_t>(r)];
  const int64_t end = begin + sizes[static_cast<size_t>(share_rank_)];
  return std::vector<int64_t>(out.begin() + begin, out.begin() + end);
}

std::vector<int64_t> PrefetchLoader::GlobalBatchSeeds(int64_t index) const {
  const auto n = static_cast<int64_t>(order_.size());
  const Slice slice = GlobalBatchSlice(index);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(slice.count));
  for (int64_t k = 0; k < slice.count; ++k)
    out.push_back(order_[static_cast<size_t>((slice.begin + k) % n)]);
  return out;
}

namespace {

bool HoldsBuffers(const MiniBatch& batch) {
  return batch.features.capacity() != 0 || batch.input_nodes.capacity() != 0;
}

}  // namespace

void PrefetchLoader::Recycle(MiniBatch&& batch) {
  const size_t most =
      static_cast<size_t>(options_.workers + options_.prefetch + 1);
  if (!HoldsBuffers(batch)) return;  // E.g. a moved-from batch.
  if (spare_.size() < most) spare_.push_back(std::move(batch));
}

void PrefetchLoader::Work() {
  MiniBatch batch;  // Holds buffers only while a batch is made (or failed).
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // Bounded: sample at most `prefetch` batches ahead of the consumer.
    cv_.wait(lock, [&] {
      return stop_ || (active_ && error_.ok() && next_to_sample_ < steps_ &&
                       next_to_sample_ < consumer_at_ + options_.prefetch);
    });
    if (stop_) {
      Recycle(std::move(batch));
      return;
    }
    const int64_t index = next_to_sample_++;
    if (!HoldsBuffers(batch) && !spare_.empty()) {
      batch = std::move(spare_.back());
      spare_.pop_back();
    }
    ++busy_;
    lock.unlock();
    std::vector<int64_t> seeds = BatchSeeds(index);
    auto start = Clock::now();
    absl::Status s = make_batch_(
        seeds, MixSeed(epoch_seed_, static_cast<uint64_t>(index)), &batch);
    double seconds = Seconds(Clock::now() - start);
    lock.lock();
    --busy_;
    stats_.sample_seconds += seconds;
    stats_.fetch_seconds += batch.fetch_seconds;
    if (!s.ok()) {
      if (error_.ok()) error_ = s;
    } else {
      ready_.emplace(index, std::move(batch));
      batch = MiniBatch();
    }
    cv_.notify_all();  // The consumer, and Pause().
  }
}

absl::StatusOr<bool> PrefetchLoader::Next(MiniBatch* out) {
  if (consumed_ >= steps_) {
    // The epoch is over: the consumer's last batch keeps its buffers for the
    // next epoch's batches.
    std::lock_guard<std::mutex> lock(mu_);
    Recycle(std::move(*out));
    *out = MiniBatch();
    return false;
  }
  const int64_t index = consumed_;
  if (options_.prefetch == 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_.ok()) return error_;
    }
    auto start = Clock::now();
    absl::Status s =
        make_batch_(BatchSeeds(index),
                    MixSeed(epoch_seed_, static_cast<uint64_t>(index)), out);
    double seconds = Seconds(Clock::now() - start);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.sample_seconds += seconds;
    stats_.fetch_seconds += out->fetch_seconds;
    // Without prefetching the trainer waits for every batch.
    stats_.wait_seconds += seconds;
    if (!s.ok()) {
      error_ = s;
      return s;
    }
    ++stats_.batches;
    ++consumed_;
    return true;
  }
  auto start = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  bool arrived = cv_.wait_for(lock, options_.max_wait, [&] {
    return !error_.ok() || ready_.count(index) > 0;
  });
  stats_.wait_seconds += Seconds(Clock::now() - start);
  // Batches finished before a failure are still handed out; then the error.
  if (ready_.count(index) == 0 && !error_.ok()) return error_;
  if (!arrived) {
    return absl::DeadlineExceededError(
        absl::StrCat("loader: batch ", index, " was not ready within ",
                     options_.max_wait.count(), " ms"));
  }
  auto it = ready_.find(index);
  // The consumer's previous batch goes back to the workers. Every batch
  // alive at once (one per worker, `prefetch` ready, the consumer's) comes
  // back to the pool, so that after the first epoch no batch needs fresh
  // memory.
  std::swap(*out, it->second);
  Recycle(std::move(it->second));
  ready_.erase(it);
  ++stats_.batches;
  ++consumed_;
  consumer_at_ = consumed_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

LoaderStats PrefetchLoader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace shardgnn
