// What the feature port server's two source files share: the response
// framing, request timing, and the pools of the embedding messages.
// feature_port_server.cc has connections, the handshake, feature rows and
// samples; feature_port_embeddings.cc embedding pulls and pushes. Not for use
// elsewhere.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_SERVER_PARTS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_SERVER_PARTS_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/method_stats.h"
#include "proto/graphstore.pb.h"

namespace shardgnn::internal {
namespace port_server {

// Sends the response header and, when `status` is OK, `bytes` bytes of
// `rows`; otherwise its message (cut to kMaxFeaturePortErrorBytes).
bool SendResponse(int fd, const absl::Status& status, const void* rows,
                  size_t bytes);

// Reads `n` bytes into `s` (its kept capacity is reused).
bool ReadInto(int fd, std::string* s, size_t n);

// Times one request from the moment its header was read and records it in
// `stats` (if not null) once answered.
class RequestTimer {
 public:
  explicit RequestTimer(MethodStats* stats)
      : stats_(stats), start_(std::chrono::steady_clock::now()) {}
  // `bytes_out` is the payload after the response header.
  void Record(absl::StatusCode code, int64_t bytes_in, size_t bytes_out) const {
    if (stats_ == nullptr) return;
    const std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - start_;
    stats_->Record(
        us.count(), code, bytes_in,
        static_cast<int64_t>(sizeof(FeatureResponseHeader) + bytes_out));
  }

 private:
  MethodStats* stats_;
  std::chrono::steady_clock::time_point start_;
};

// Answers a request whose framing cannot be trusted with `why` and returns
// false: the caller closes the connection.
bool Refuse(int fd, const RequestTimer& timer, int64_t bytes_in,
            const absl::Status& why);

// Each embedding pool's bounds (pulls, pushes): free buffers kept in all, and
// the largest set kept.
constexpr size_t kKeptBytes = size_t{256} << 20;
constexpr size_t kMaxSetBytes = size_t{128} << 20;

// Buffers of one kind kept between requests and shared by the connections:
// the largest free set is handed out (a request of any size then rarely
// grows it) and comes back when its lease ends. Bounded: at most
// kKeptBytes of free sets, none over kMaxSetBytes
// (a rare huge request does not pin its memory). Set has `size_t Bytes()`.
// Thread-safe.
template <typename Set>
class KeptPool {
 public:
  struct Return {
    KeptPool* pool;
    void operator()(Set* set) const { pool->Put(std::unique_ptr<Set>(set)); }
  };
  using Lease = std::unique_ptr<Set, Return>;

  Lease Take() { return Lease(TakeSet().release(), Return{this}); }

  // Frees the kept sets when none was taken for `idle`.
  void ReleaseIfIdle(absl::Duration idle) {
    std::vector<Kept> freed;
    absl::MutexLock lock(&mu_);
    if (absl::Now() - last_take_ < idle) return;
    freed.swap(free_);  // Freed after the lock, as `freed` goes.
    kept_bytes_ = 0;
  }

 private:
  struct Kept {
    std::unique_ptr<Set> set;
    size_t bytes;
  };

  std::unique_ptr<Set> TakeSet() {
    absl::MutexLock lock(&mu_);
    last_take_ = absl::Now();
    if (free_.empty()) return std::make_unique<Set>();
    auto largest = std::max_element(
        free_.begin(), free_.end(),
        [](const Kept& a, const Kept& b) { return a.bytes < b.bytes; });
    std::unique_ptr<Set> set = std::move(largest->set);
    kept_bytes_ -= largest->bytes;
    free_.erase(largest);
    return set;
  }

  void Put(std::unique_ptr<Set> set) {
    const size_t bytes = set->Bytes();
    absl::MutexLock lock(&mu_);
    if (bytes > kMaxSetBytes || kept_bytes_ + bytes > kKeptBytes) {
      return;  // `set` is freed as it goes, after the lock.
    }
    kept_bytes_ += bytes;
    free_.push_back({std::move(set), bytes});
  }

  absl::Mutex mu_;
  std::vector<Kept> free_ ABSL_GUARDED_BY(mu_);
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_take_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

struct PullSet {
  proto::PullEmbeddingsRequest request;
  proto::PullEmbeddingsResponse response;
  size_t Bytes() {
    return request.mutable_node_ids()->capacity() +
           response.mutable_rows()->capacity();
  }
};

struct PushSet {
  proto::PushEmbeddingGradientsRequest request;
  size_t Bytes() {
    return request.mutable_node_ids()->capacity() +
           request.mutable_gradients()->capacity();
  }
};

}  // namespace port_server

// The messages of embedding pulls and pushes. A pull's rows come whole from
// the table and a push is read whole, so they are kept between requests (a
// trainer pulls and pushes every step: fresh pages for each cost the server
// thousands of page faults per step), in pools the connections share (the
// first pull of a new connection writes into pages an earlier one touched),
// one for each kind (a pull's buffers never sit idle in a push's set).
struct FeaturePortServer::EmbeddingBuffers {
  port_server::KeptPool<port_server::PullSet> pulls;
  port_server::KeptPool<port_server::PushSet> pushes;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_SERVER_PARTS_H_
