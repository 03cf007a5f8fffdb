// GraphStoreClient's implementation, shared by graphstore/client.cc (the
// graph calls) and graphstore/client_embeddings.cc (the learned-embedding
// calls): the gRPC channel and stub, the retry policy, the feature port in
// use and the checked answer bounds. Internal: include only from those.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_CLIENT_IMPL_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_CLIENT_IMPL_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "graphstore/client.h"
#include "graphstore/internal/answer_checks.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn {

using Stub = proto::GraphStore::Stub;

inline constexpr char kGetFeaturesMethod[] =
    "/shardgnn.proto.GraphStore/GetFeatures";
inline constexpr char kSampleNeighborsMethod[] =
    "/shardgnn.proto.GraphStore/SampleNeighbors";

namespace internal {

// When a failed call is tried again. UNAVAILABLE is retried after a wait
// that doubles from initial_backoff up to max_backoff, each stretched by a
// random 0-50% (jitter: clients turned away together do not come back
// together), and never past the call's overall deadline (overall_timeout
// from its start; every attempt also has call_timeout). A "server busy"
// answer (the server is alive and shedding load: graphstore/internal/
// work_queue.h) is retried until that deadline; any other UNAVAILABLE (a
// refused or broken connection, a server shutting down) at most
// max_attempts times in all, so that a dead server is named within a few
// hundred milliseconds. Other codes are never retried.
// Whether an UNAVAILABLE answer's message says "server busy" (work_queue.h):
// the server is alive and shedding load.
inline bool SaysServerBusy(absl::string_view message) {
  return absl::StrContains(message, "server busy");
}

class RetryPolicy {
 public:
  explicit RetryPolicy(const GraphStoreClientOptions& options)
      : options_(options),
        deadline_(absl::Now() + options.overall_timeout),
        backoff_(options.initial_backoff) {}

  // The next attempt's deadline.
  absl::Time AttemptDeadline() const {
    return std::min(absl::Now() + options_.call_timeout, deadline_);
  }

  // After a failed attempt: false to give up now; true after waiting for the
  // next attempt.
  bool WaitToRetry(const grpc::Status& status) {
    ++attempts_;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
    busy_ = SaysServerBusy(status.error_message());
    if (!busy_ && attempts_ >= options_.max_attempts) return false;
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const absl::Duration wait =
        backoff_ * (1 + std::uniform_real_distribution<double>(0, 0.5)(rng));
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    // The last attempt comes just before the deadline, with time to answer.
    constexpr absl::Duration kLastAttempt = absl::Milliseconds(20);
    const absl::Duration left = deadline_ - absl::Now();
    if (left <= kLastAttempt) return false;
    absl::SleepFor(std::min(wait, left - kLastAttempt));
    return true;
  }

  // How the retries ended, for the error message ("" after one attempt).
  std::string Summary() const {
    if (attempts_ <= 1) return "";
    return absl::StrCat(" (", attempts_, " attempts",
                        busy_ ? " until the call's deadline" : "", ")");
  }

 private:
  const GraphStoreClientOptions& options_;
  const absl::Time deadline_;
  absl::Duration backoff_;
  int attempts_ = 0;
  bool busy_ = false;
};

}  // namespace internal

class GraphStoreClient::Impl {
 public:
  Impl(std::string address, GraphStoreClientOptions options,
       std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)),
        options_(options),
        authorization_(options.auth_token.empty()
                           ? ""
                           : absl::StrCat("Bearer ", options.auth_token)),
        stub_(proto::GraphStore::NewStub(channel)),
        generic_(channel) {}

  // Calls `rpc` with a deadline, retrying UNAVAILABLE as internal::RetryPolicy
  // says. `timeouts`, if given, replaces the options' call and overall
  // timeouts.
  template <typename Req, typename Resp, typename Rpc>
  absl::Status Call(absl::string_view method, const Req& req, Resp* resp,
                    Rpc rpc,
                    std::optional<absl::Duration> attempt_timeout = {}) {
    GraphStoreClientOptions timeouts = options_;
    if (attempt_timeout) {
      timeouts.call_timeout = *attempt_timeout;
      timeouts.overall_timeout =
          std::max(options_.overall_timeout, *attempt_timeout * 2);
    }
    internal::RetryPolicy retry(timeouts);
    grpc::Status status;
    while (true) {
      grpc::ClientContext ctx;
      Prepare(&ctx, retry.AttemptDeadline());
      status = rpc(stub_.get(), &ctx, req, resp);
      if (status.ok()) return absl::OkStatus();
      if (!retry.WaitToRetry(status)) break;
    }
    return CallError(static_cast<absl::StatusCode>(status.error_code()), method,
                     absl::StrCat(status.error_message(), retry.Summary()));
  }

  // Every call's context: its deadline and, with a token, the
  // authorization metadata. The one place a call is made ready.
  void Prepare(grpc::ClientContext* ctx, absl::Time deadline) const {
    ctx->set_deadline(absl::ToChronoTime(deadline));
    if (!authorization_.empty()) {
      ctx->AddMetadata("authorization", authorization_);
    }
  }

  // A failed call: "ADDRESS: CODE: METHOD: message", with a hint when TLS
  // explains it.
  absl::Status CallError(absl::StatusCode code, absl::string_view method,
                         absl::string_view message) const {
    return absl::Status(
        code, absl::StrCat(address_, ": ", absl::StatusCodeToString(code), ": ",
                           method, ": ", message, TlsHint(code)));
  }

  // What a failed connection means under TLS (gRPC's own message names an
  // SSL error deep inside), or "".
  std::string TlsHint(absl::StatusCode code) const {
    if (code != absl::StatusCode::kUnavailable &&
        code != absl::StatusCode::kDeadlineExceeded) {
      return "";
    }
    if (options_.tls_ca_pem.empty()) return "";
    return " (if TLS is the cause: check that --tls-ca holds the CA that "
           "signed the server's certificate, that the certificate names this "
           "address, and that a server requiring client certificates gets "
           "one: --tls-cert, --tls-key)";
  }

  // The feature port in use, if any.
  std::shared_ptr<internal::FeaturePortClient> feature_port() const {
    absl::MutexLock lock(&port_mu_);
    return feature_port_;
  }
  // The same, or, when a dropped port is due to be asked for again (once per
  // retry period, for one caller), nullptr and *ask_info set.
  std::shared_ptr<internal::FeaturePortClient> FeaturePortForCall(
      bool* ask_info) {
    absl::MutexLock lock(&port_mu_);
    const absl::Time now = absl::Now();
    *ask_info = feature_port_ == nullptr && now >= retry_port_at_;
    if (*ask_info) retry_port_at_ = now + options_.feature_port_retry;
    return feature_port_;
  }
  // Starts using the feature port `port` (0: none) on the server's host.
  void SetFeaturePort(int port) {
    absl::MutexLock lock(&port_mu_);
    // Under TLS, never plain TCP (a server under TLS offers no port).
    if (port <= 0 || !options_.use_feature_port ||
        !options_.tls_ca_pem.empty()) {
      feature_port_ = nullptr;
    } else if (feature_port_ == nullptr || feature_port_->port() != port) {
      feature_port_ = std::make_shared<internal::FeaturePortClient>(
          address_.substr(0, address_.rfind(':')), port, options_.auth_token);
    }
  }
  // Stops using `port` (if it is still the one in use) until
  // options.feature_port_retry has passed.
  void DropFeaturePort(const internal::FeaturePortClient* port) {
    absl::MutexLock lock(&port_mu_);
    if (feature_port_.get() != port) return;
    feature_port_ = nullptr;
    retry_port_at_ = absl::Now() + options_.feature_port_retry;
  }

  absl::Status Error(absl::StatusCode code, absl::string_view method,
                     absl::string_view what) const {
    return absl::Status(code, absl::StrCat(address_, ": ", method, ": ", what));
  }

  // Unpacks a response array, naming the server if it is malformed.
  template <typename T>
  absl::Status Unpack(absl::string_view method, const std::string& bytes,
                      absl::string_view field, size_t expected,
                      std::vector<T>* out) const {
    absl::Status s = wire::Unpack(wire::View(bytes), field, out);
    if (s.ok() && expected != SIZE_MAX && out->size() != expected) {
      s = absl::DataLossError(absl::StrCat(field, " holds ", out->size(),
                                           " values, expected ", expected));
    }
    return Checked(method, s);
  }

  // OK, or a failed check of an answer (internal/answer_checks.h) as
  // DATA_LOSS naming the server and the method.
  absl::Status Checked(absl::string_view method,
                       const absl::Status& check) const {
    if (check.ok()) return check;
    return Error(absl::StatusCode::kDataLoss, method, check.message());
  }

  Stub* stub() { return stub_.get(); }

  // A blocking unary call of `method` (GetFeatures unless told) on raw
  // buffers. It completes on the
  // calling thread (its own completion queue), like a generated sync stub,
  // so no thread hand-off is paid per batch.
  grpc::Status RawCall(grpc::ClientContext* ctx,
                       const grpc::ByteBuffer& request,
                       grpc::ByteBuffer* response,
                       const std::string& method = kGetFeaturesMethod) {
    grpc::CompletionQueue cq;
    grpc::Status status;
    auto rpc = generic_.PrepareUnaryCall(ctx, method, request, &cq);
    rpc->StartCall();
    rpc->Finish(response, &status, /*tag=*/&status);
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok) || !ok) {
      status =
          grpc::Status(grpc::StatusCode::INTERNAL, "completion queue failed");
    }
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return status;
  }

  const GraphStoreClientOptions& options() const { return options_; }

  // What the last good Info() said, for checking later answers against.
  internal::ShardBounds bounds() const {
    absl::MutexLock lock(&bounds_mu_);
    return bounds_;
  }
  void SetBounds(const internal::ShardBounds& bounds) {
    absl::MutexLock lock(&bounds_mu_);
    bounds_ = bounds;
  }

 private:
  std::string address_;
  GraphStoreClientOptions options_;
  std::string authorization_;  // "Bearer TOKEN", or empty.
  std::unique_ptr<Stub> stub_;
  grpc::GenericStub generic_;
  mutable absl::Mutex port_mu_;
  std::shared_ptr<internal::FeaturePortClient> feature_port_
      ABSL_GUARDED_BY(port_mu_);
  // When a dropped port is asked for again; never if none was dropped (so a
  // client that never called Info(), or does not use the port, never asks).
  absl::Time retry_port_at_ ABSL_GUARDED_BY(port_mu_) = absl::InfiniteFuture();
  mutable absl::Mutex bounds_mu_;
  internal::ShardBounds bounds_ ABSL_GUARDED_BY(bounds_mu_);
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_CLIENT_IMPL_H_
