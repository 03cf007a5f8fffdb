// The storage server's gRPC call machinery, the same for every method:
// admission (the auth token, a drain under way, the shard not loaded yet),
// where the work runs (inline, or on the work queue shared fairly among
// client addresses), exceptions turned into statuses, per-method stats, and
// the count of calls in flight that a drain waits for. The handlers in
// graphstore/server.cc say only what a call does.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_CALL_RUNNER_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_CALL_RUNNER_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "graphstore/internal/listener.h"
#include "graphstore/internal/method_stats.h"
#include "graphstore/internal/work_queue.h"
#include "grpcpp/grpcpp.h"

namespace shardgnn::internal {

grpc::Status ToGrpc(const absl::Status& s);
int64_t PayloadBytes(const google::protobuf::Message& m);
int64_t PayloadBytes(const grpc::ByteBuffer& b);

class CallRunner {
 public:
  // One MethodStats per name, indexed as `method` below. Calls of
  // `open_method` (Health) need neither the token nor a loaded shard. With a
  // non-empty `auth_token`, every other call must carry "authorization:
  // Bearer TOKEN"; without one, a call carrying a token is refused (client
  // and server disagree). `loaded` says whether the shard is served yet.
  CallRunner(const std::vector<const char*>& method_names, int open_method,
             const std::string& auth_token, WorkQueueOptions queue,
             std::function<bool()> loaded);
  CallRunner(const CallRunner&) = delete;
  CallRunner& operator=(const CallRunner&) = delete;

  MethodStats& stats(int method) { return stats_[method]; }
  const std::deque<MethodStats>& all_stats() const { return stats_; }

  // The workers heavy calls run on, for work that arrives another way (the
  // feature port's samples); valid until StopWorkers().
  WorkQueue* work_queue() const { return queue_.get(); }
  // Runs the queued work to the end and joins the workers; later heavy calls
  // run inline.
  void StopWorkers() { queue_.reset(); }
  // Turns new calls away with UNAVAILABLE and waits until the calls already
  // admitted have finished or `deadline` passes. Returns true if drained.
  bool Drain(absl::Time deadline);
  bool draining() const;
  int64_t in_flight() const;
  int64_t queued() const;

  // Runs `work` (a function returning absl::Status: inline unless `heavy`,
  // else on the work queue under the client's address), turns any exception
  // into a status, records stats and finishes the call. A full queue
  // answers UNAVAILABLE ("server busy"); a call cancelled while queued is not
  // worked on. `heavy` is a bool, or a function returning one that is called
  // only for an admitted call (authenticated, not draining, shard loaded), on
  // gRPC's thread: judging a call by what it asks may mean reading the
  // request, which a caller without the token must not be able to cost.
  template <typename Req, typename Resp, typename Heavy, typename Work>
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx, int method,
                                const Req* req, Resp* resp, Heavy heavy,
                                Work work);
  // Run for a call answered later: `work` gets a `done` to call exactly once
  // with the outcome, from any thread (embedding pulls waiting for the step
  // clock hold no thread meanwhile).
  template <typename Req, typename Resp, typename Work>
  grpc::ServerUnaryReactor* RunDeferred(grpc::CallbackServerContext* ctx,
                                        int method, const Req* req, Resp* resp,
                                        Work work);

 private:
  // The one place calls are authenticated: OK, or UNAUTHENTICATED saying
  // what is wrong (never the token).
  absl::Status Authenticate(const grpc::CallbackServerContext& ctx,
                            int method) const;
  // Whether a call may start; if so, counts it in flight (Finish uncounts
  // it). Otherwise the status to answer with.
  absl::Status Admit(const grpc::CallbackServerContext& ctx, int method);
  // Records the call, answers it and uncounts it.
  template <typename Req, typename Resp>
  void Finish(grpc::ServerUnaryReactor* reactor, int method, const Req& req,
              Resp* resp, double micros, absl::Status status);
  // Answers a call that was never admitted (or never queued).
  template <typename Req>
  grpc::ServerUnaryReactor* Refuse(grpc::ServerUnaryReactor* reactor,
                                   int method, const Req& req,
                                   const absl::Status& why);
  absl::Status Failed(int method, const char* what) const {
    return absl::InternalError(absl::StrCat(stats_[method].name(), ": ", what));
  }

  std::deque<MethodStats> stats_;  // Not movable: no vector.
  int open_method_;
  std::string expected_authorization_;  // "Bearer TOKEN", if a token is set.
  std::function<bool()> loaded_;
  std::unique_ptr<WorkQueue> queue_;
  mutable absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

template <typename Req, typename Resp>
void CallRunner::Finish(grpc::ServerUnaryReactor* reactor, int method,
                        const Req& req, Resp* resp, double micros,
                        absl::Status status) {
  if (!status.ok()) resp->Clear();  // Message or ByteBuffer.
  stats_[method].Record(micros, status.code(), PayloadBytes(req),
                        PayloadBytes(*resp));
  reactor->Finish(ToGrpc(status));
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

template <typename Req>
grpc::ServerUnaryReactor* CallRunner::Refuse(grpc::ServerUnaryReactor* reactor,
                                             int method, const Req& req,
                                             const absl::Status& why) {
  stats_[method].Record(0, why.code(), PayloadBytes(req), 0);
  reactor->Finish(ToGrpc(why));
  return reactor;
}

template <typename Req, typename Resp, typename Heavy, typename Work>
grpc::ServerUnaryReactor* CallRunner::Run(grpc::CallbackServerContext* ctx,
                                          int method, const Req* req,
                                          Resp* resp, Heavy heavy, Work work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (absl::Status admitted = Admit(*ctx, method); !admitted.ok()) {
    return Refuse(reactor, method, *req, admitted);
  }
  bool is_heavy = false;
  if constexpr (std::is_invocable_r_v<bool, Heavy&>) {
    try {
      is_heavy = heavy();
    } catch (const std::exception& e) {
      Finish(reactor, method, *req, resp, 0, Failed(method, e.what()));
      return reactor;
    }
  } else {
    is_heavy = static_cast<bool>(heavy);
  }
  auto task = [this, ctx, method, req, resp, reactor, work]() mutable {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status;
    try {
      // A call that waited in the queue past its deadline (or whose client
      // left) is not worth the work.
      status = ctx->IsCancelled()
                   ? absl::CancelledError("cancelled while queued")
                   : work();
    } catch (const std::bad_alloc&) {
      status = absl::ResourceExhaustedError(
          absl::StrCat(stats_[method].name(), ": out of memory"));
    } catch (const std::exception& e) {
      status = Failed(method, e.what());
    } catch (...) {
      status = Failed(method, "unknown exception");
    }
    const std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - start;
    Finish(reactor, method, *req, resp, us.count(), std::move(status));
  };
  if (!is_heavy || queue_ == nullptr) {
    task();
    return reactor;
  }
  absl::Status queued =
      queue_->Submit(PeerKeyOfGrpcPeer(ctx->peer()), std::move(task));
  if (!queued.ok()) {
    Refuse(reactor, method, *req, queued);
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  return reactor;
}

template <typename Req, typename Resp, typename Work>
grpc::ServerUnaryReactor* CallRunner::RunDeferred(
    grpc::CallbackServerContext* ctx, int method, const Req* req, Resp* resp,
    Work work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (absl::Status admitted = Admit(*ctx, method); !admitted.ok()) {
    return Refuse(reactor, method, *req, admitted);
  }
  const auto start = std::chrono::steady_clock::now();
  auto done = [this, method, req, resp, reactor, start](absl::Status status) {
    const std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - start;
    Finish(reactor, method, *req, resp, us.count(), std::move(status));
  };
  try {
    work(std::function<void(absl::Status)>(done));
  } catch (const std::exception& e) {
    // Before `done` was handed on: nothing else answers the call.
    done(Failed(method, e.what()));
  }
  return reactor;
}

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_CALL_RUNNER_H_
