// Per-method call counters and a latency histogram for the Stats RPC.
// Lock-free (relaxed atomics): Record() is called from every worker thread.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

namespace shardgnn::internal {

class MethodStats {
 public:
  explicit MethodStats(std::string name) : name_(std::move(name)) {}

  void Record(double latency_us, bool ok, int64_t bytes_in, int64_t bytes_out) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!ok) errors_.fetch_add(1, std::memory_order_relaxed);
    bytes_in_.fetch_add(bytes_in, std::memory_order_relaxed);
    bytes_out_.fetch_add(bytes_out, std::memory_order_relaxed);
    auto ns = static_cast<int64_t>(latency_us * 1000);
    latency_ns_.fetch_add(ns, std::memory_order_relaxed);
    int64_t max = max_ns_.load(std::memory_order_relaxed);
    while (ns > max && !max_ns_.compare_exchange_weak(max, ns)) {
    }
    buckets_[Bucket(latency_us)].fetch_add(1, std::memory_order_relaxed);
  }

  const std::string& name() const { return name_; }
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  int64_t bytes_in() const { return bytes_in_.load(std::memory_order_relaxed); }
  int64_t bytes_out() const {
    return bytes_out_.load(std::memory_order_relaxed);
  }
  double latency_sum_us() const {
    return static_cast<double>(latency_ns_.load(std::memory_order_relaxed)) /
           1000;
  }
  double latency_max_us() const {
    return static_cast<double>(max_ns_.load(std::memory_order_relaxed)) / 1000;
  }
  // Upper bound of the bucket holding quantile q (0 if no calls); buckets
  // are quarter powers of two, so the bound is within 19% of the truth.
  double LatencyQuantileUs(double q) const {
    int64_t counts[kBuckets];
    int64_t total = 0;
    for (int b = 0; b < kBuckets; ++b) {
      counts[b] = buckets_[b].load(std::memory_order_relaxed);
      total += counts[b];
    }
    if (total == 0) return 0;
    auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(total)));
    int64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += counts[b];
      if (seen >= rank) return std::exp2((b + 1) / 4.0);
    }
    return std::exp2(kBuckets / 4.0);
  }

 private:
  static constexpr int kBuckets = 128;  // Up to 2^32 us.
  static int Bucket(double us) {
    if (us < 1) return 0;
    int b = static_cast<int>(std::log2(us) * 4);
    return b < kBuckets ? b : kBuckets - 1;
  }

  std::string name_;
  std::atomic<int64_t> calls_{0}, errors_{0}, bytes_in_{0}, bytes_out_{0};
  std::atomic<int64_t> latency_ns_{0}, max_ns_{0};
  std::atomic<int64_t> buckets_[kBuckets] = {};
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_
