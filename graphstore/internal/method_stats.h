// Per-method call counters and a latency histogram, for the Stats RPC and
// the Prometheus metrics (server_metrics.h), and connection counters for a
// port. Lock-free (relaxed atomics): Record() is called from every worker
// thread, and readers see each counter on its own (a reader during calls may
// see a call counted in one and not yet in another).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace shardgnn::internal {

class MethodStats {
 public:
  explicit MethodStats(std::string name) : name_(std::move(name)) {}

  // One call answered with `code` (kOk for success) after `latency_us`.
  void Record(double latency_us, absl::StatusCode code, int64_t bytes_in,
              int64_t bytes_out) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (code != absl::StatusCode::kOk) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      auto c = static_cast<int>(code);
      if (c < 0 || c >= kNumCodes)
        c = static_cast<int>(absl::StatusCode::kUnknown);
      errors_by_code_[c].fetch_add(1, std::memory_order_relaxed);
    }
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
  // Calls answered with `code` (not kOk).
  int64_t errors(absl::StatusCode code) const {
    const auto c = static_cast<int>(code);
    if (c <= 0 || c >= kNumCodes) return 0;
    return errors_by_code_[c].load(std::memory_order_relaxed);
  }
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

  // Calls that took under 2^k microseconds (k in [0, 32); the bound is
  // within the bucket resolution: a call of exactly 2^k us counts above it).
  int64_t CallsUnderPowerOfTwoUs(int k) const {
    int64_t n = 0;
    for (int b = 0; b < 4 * k && b < kBuckets; ++b) {
      n += buckets_[b].load(std::memory_order_relaxed);
    }
    return n;
  }

  // absl::StatusCode values are 0 (kOk) to 16 (kUnauthenticated).
  static constexpr int kNumCodes = 17;

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
  std::atomic<int64_t> errors_by_code_[kNumCodes] = {};
};

// Connections of one port: accepted (handed to their server), rejected
// (closed on accept: a cap was reached or the server is stopping) and open
// (accepted and not closed yet, where the server knows it).
struct ConnectionStats {
  std::atomic<int64_t> accepted{0};
  std::atomic<int64_t> rejected{0};
  std::atomic<int64_t> open{0};
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_METHOD_STATS_H_
