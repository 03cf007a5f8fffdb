#include "graphstore/client.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/status.h"
#include "graphstore/internal/answer_checks.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/features_codec.h"
#include "graphstore/internal/health_probe.h"
#include "graphstore/internal/wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn {

using Stub = proto::GraphStore::Stub;

// A snapshot or a restore reads or writes a whole table part on disk.
constexpr absl::Duration kEmbeddingSnapshotTimeout = absl::Minutes(10);

constexpr char kGetFeaturesMethod[] = "/shardgnn.proto.GraphStore/GetFeatures";

namespace {

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
    busy_ = absl::StrContains(status.error_message(), "server busy");
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

}  // namespace

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

  // Calls `rpc` with a deadline, retrying UNAVAILABLE as RetryPolicy says.
  // `timeouts`, if given, replaces the options' call and overall timeouts.
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
    RetryPolicy retry(timeouts);
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

  // A blocking unary GetFeatures call on raw buffers. It completes on the
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

namespace {

proto::NodeIdsRequest IdsRequest(absl::Span<const NodeId> ids) {
  proto::NodeIdsRequest req;
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  return req;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphStoreClient>> GraphStoreClient::Connect(
    const std::string& address, const GraphStoreClientOptions& options) {
  if (address.empty() || address.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not a HOST:PORT server address"));
  }
  if (options.max_attempts < 1 ||
      options.call_timeout <= absl::ZeroDuration() ||
      options.overall_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "GraphStoreClientOptions: max_attempts must be >= 1, call_timeout "
        "and overall_timeout positive");
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // Reconnect quickly to a server that is (re)starting; gRPC's default starts
  // at one second.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // Feature batches are megabytes: a large stream window and frames let a
  // response flow without waiting for window updates.
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 1 << 20);
  args.SetInt(GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20);
  const bool client_cert =
      !options.tls_cert_pem.empty() || !options.tls_key_pem.empty();
  if (client_cert &&
      (options.tls_cert_pem.empty() || options.tls_key_pem.empty())) {
    return absl::InvalidArgumentError(
        "a client certificate needs its private key too (--tls-cert and "
        "--tls-key)");
  }
  if (client_cert && options.tls_ca_pem.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate is for TLS, which needs the CA that signed the "
        "servers' certificates (--tls-ca)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    ssl.pem_private_key = options.tls_key_pem;
    ssl.pem_cert_chain = options.tls_cert_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(address, ": cannot create a channel"));
  }
  auto impl = std::make_unique<Impl>(address, options, channel);
  return std::unique_ptr<GraphStoreClient>(
      new GraphStoreClient(address, std::move(impl)));
}

GraphStoreClient::GraphStoreClient(std::string address,
                                   std::unique_ptr<Impl> impl)
    : address_(std::move(address)), impl_(std::move(impl)) {}
GraphStoreClient::~GraphStoreClient() = default;

absl::Status GraphStoreClient::Health() {
  proto::HealthResponse resp;
  RETURN_IF_ERROR(impl_->Call("Health", proto::HealthRequest(), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->Health(c, q, r); }));
  if (!resp.serving()) {
    return impl_->Error(absl::StatusCode::kUnavailable, "Health",
                        "server is not serving");
  }
  return absl::OkStatus();
}

absl::Status GraphStoreClient::WaitForHealthy(absl::Time deadline) {
  absl::Duration backoff = absl::Milliseconds(10);
  absl::Status last;
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    proto::HealthResponse resp;
    grpc::ClientContext ctx;
    impl_->Prepare(&ctx,
                   absl::Now() + std::min(left, impl_->options().call_timeout));
    // Wait for the connection instead of failing fast while it is down.
    ctx.set_wait_for_ready(true);
    grpc::Status s = impl_->stub()->Health(&ctx, proto::HealthRequest(), &resp);
    if (s.ok() && resp.serving()) return absl::OkStatus();
    last = s.ok() ? absl::UnavailableError("server is not serving yet")
                  : absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                                 s.error_message());
    absl::SleepFor(std::min(backoff, deadline - absl::Now()));
    backoff = std::min(backoff * 2, absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      address_, ": DEADLINE_EXCEEDED: not healthy before the deadline",
      last.ok() ? "" : absl::StrCat(" (last error: ", last.ToString(), ")"),
      impl_->TlsHint(absl::StatusCode::kDeadlineExceeded)));
}

absl::Status GraphStoreClient::ProbeServing(absl::Time deadline) {
  // The standard health check, encoded by hand (internal/health_probe.h).
  grpc::ByteBuffer response_buffer;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, deadline);
  ctx.set_wait_for_ready(true);  // A server restarting: wait to connect.
  grpc::Status s = impl_->RawCall(
      &ctx,
      internal::HealthCheckRequest(proto::GraphStore::service_full_name()),
      &response_buffer, internal::kHealthCheckMethod);
  bool ours_used = false;
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // Not the standard service: our own Health, one attempt.
    ours_used = true;
    proto::HealthResponse ours;
    grpc::ClientContext ours_ctx;
    impl_->Prepare(&ours_ctx, deadline);
    ours_ctx.set_wait_for_ready(true);
    s = impl_->stub()->Health(&ours_ctx, proto::HealthRequest(), &ours);
    if (s.ok() && !ours.serving()) {
      return impl_->Error(absl::StatusCode::kUnavailable, "Health",
                          "server is not serving");
    }
  }
  if (!s.ok()) {
    return impl_->CallError(static_cast<absl::StatusCode>(s.error_code()),
                            "grpc.health.v1.Health/Check", s.error_message());
  }
  if (ours_used) return absl::OkStatus();
  absl::Status answer = internal::CheckHealthResponse(response_buffer);
  if (!answer.ok()) {
    return impl_->Error(answer.code(), "grpc.health.v1.Health/Check",
                        answer.message());
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerInfo> GraphStoreClient::Info() {
  proto::InfoResponse resp;
  RETURN_IF_ERROR(impl_->Call("Info", proto::InfoRequest(), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->Info(c, q, r); }));
  RETURN_IF_ERROR(impl_->Checked(
      "Info", internal::CheckInfo(resp, impl_->options().max_message_bytes)));
  ServerInfo info;
  ShardMeta& m = info.meta;
  m.format_version = resp.format_version();
  m.part_id = resp.part_id();
  m.num_parts = resp.num_parts();
  m.node_start = resp.node_start();
  m.node_end = resp.node_end();
  m.num_nodes_total = resp.num_nodes_total();
  m.num_edges = resp.num_edges();
  m.feature_dim = resp.feature_dim();
  m.num_classes = resp.num_classes();
  for (const auto& [name, count] : resp.split_counts()) {
    m.split_counts[name] = count;
  }
  m.partition_id = resp.partition_id();
  m.content_checksum = resp.content_checksum();
  info.server_version = resp.server_version();
  info.in_memory = resp.in_memory();
  if (resp.has_shared_features()) {
    const proto::SharedRegion& r = resp.shared_features();
    SharedRegionRef ref;
    ref.pid = r.pid();
    ref.fd = r.fd();
    ref.token = r.token();
    ref.bytes = r.bytes();
    ref.boot_id = r.boot_id();
    info.shared_features = ref;
  }
  info.feature_port = static_cast<int>(resp.feature_port());
  impl_->SetBounds(internal::BoundsOf(m));
  impl_->SetFeaturePort(info.feature_port);
  return info;
}

bool GraphStoreClient::UsesFeaturePort() const {
  return impl_->feature_port() != nullptr;
}

absl::StatusOr<SampledNeighbors> GraphStoreClient::SampleNeighbors(
    absl::Span<const NodeId> ids, int fanout, bool replace, uint64_t seed) {
  proto::SampleNeighborsRequest req;
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  req.set_fanout(fanout);
  req.set_replace(replace);
  req.set_seed(seed);
  proto::SampleNeighborsResponse resp;
  RETURN_IF_ERROR(
      impl_->Call("SampleNeighbors", req, &resp,
                  [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
                    return s->SampleNeighbors(c, q, r);
                  }));
  SampledNeighbors out;
  RETURN_IF_ERROR(impl_->Unpack("SampleNeighbors", resp.counts(), "counts",
                                ids.size(), &out.counts));
  RETURN_IF_ERROR(impl_->Unpack("SampleNeighbors", resp.neighbors(),
                                "neighbors", SIZE_MAX, &out.neighbors));
  RETURN_IF_ERROR(
      impl_->Checked("SampleNeighbors",
                     internal::CheckSample(ids, fanout, out, impl_->bounds())));
  return out;
}

std::shared_ptr<internal::FeaturePortClient>
GraphStoreClient::FeaturePortForCall() {
  bool ask_info = false;
  std::shared_ptr<internal::FeaturePortClient> port =
      impl_->FeaturePortForCall(&ask_info);
  if (ask_info) {
    // Errors here change nothing: the call then goes over gRPC, which
    // reports them if the server is really gone.
    (void)Info();
    port = impl_->feature_port();
  }
  return port;
}

absl::Status GraphStoreClient::GetFeatures(absl::Span<const NodeId> ids,
                                           int64_t feature_dim, float* out,
                                           absl::Span<const size_t> rows) {
  if (!rows.empty() && rows.size() != ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("GetFeatures: ", rows.size(),
                                                   " destination rows for ",
                                                   ids.size(), " IDs"));
  }
  std::shared_ptr<internal::FeaturePortClient> port = FeaturePortForCall();
  if (port != nullptr) {
    bool transport_failed = false;
    absl::Status s = port->Fetch(
        ids, feature_dim, out, rows.empty() ? nullptr : rows.data(),
        absl::Now() + impl_->options().call_timeout, &transport_failed);
    if (s.ok()) return s;
    if (!transport_failed) {
      return impl_->CallError(s.code(), "GetFeatures", s.message());
    }
    // Unreachable port (a firewall, a restarted server): use gRPC, which
    // retries and reports a dead server as it does for every other call.
    impl_->DropFeaturePort(port.get());
  }
  // Raw call: rows go from the gRPC buffer to `out` in one copy.
  grpc::ByteBuffer request;
  bool own = false;
  if (!grpc::SerializationTraits<proto::NodeIdsRequest>::Serialize(
           IdsRequest(ids), &request, &own)
           .ok()) {
    return impl_->Error(absl::StatusCode::kInternal, "GetFeatures",
                        "cannot serialize the request");
  }
  grpc::ByteBuffer response;
  RETURN_IF_ERROR(impl_->Call(
      "GetFeatures", request, &response,
      [this](Stub*, grpc::ClientContext* c, const grpc::ByteBuffer& q,
             grpc::ByteBuffer* r) { return impl_->RawCall(c, q, r); }));
  absl::Status s =
      internal::DecodeFeatures(response, ids.size(), feature_dim, out,
                               rows.empty() ? nullptr : rows.data());
  if (!s.ok()) return impl_->Error(s.code(), "GetFeatures", s.message());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> GraphStoreClient::GetFeatures(
    absl::Span<const NodeId> ids, int64_t* feature_dim) {
  proto::GetFeaturesResponse resp;
  RETURN_IF_ERROR(impl_->Call("GetFeatures", IdsRequest(ids), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->GetFeatures(c, q, r); }));
  RETURN_IF_ERROR(impl_->Checked(
      "GetFeatures", internal::CheckFeatureDim(
                         resp.feature_dim(), impl_->options().max_message_bytes,
                         impl_->bounds())));
  std::vector<float> rows;
  RETURN_IF_ERROR(impl_->Unpack(
      "GetFeatures", resp.features(), "features",
      ids.size() * static_cast<size_t>(resp.feature_dim()), &rows));
  *feature_dim = resp.feature_dim();
  return rows;
}

absl::StatusOr<std::vector<int64_t>> GraphStoreClient::GetLabels(
    absl::Span<const NodeId> ids) {
  proto::GetLabelsResponse resp;
  RETURN_IF_ERROR(impl_->Call("GetLabels", IdsRequest(ids), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->GetLabels(c, q, r); }));
  std::vector<int64_t> out;
  RETURN_IF_ERROR(
      impl_->Unpack("GetLabels", resp.labels(), "labels", ids.size(), &out));
  RETURN_IF_ERROR(impl_->Checked(
      "GetLabels", internal::CheckLabels(ids, out, impl_->bounds())));
  return out;
}

absl::StatusOr<std::vector<int64_t>> GraphStoreClient::GetDegrees(
    absl::Span<const NodeId> ids) {
  proto::GetDegreesResponse resp;
  RETURN_IF_ERROR(impl_->Call("GetDegrees", IdsRequest(ids), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->GetDegrees(c, q, r); }));
  std::vector<int64_t> out;
  RETURN_IF_ERROR(
      impl_->Unpack("GetDegrees", resp.degrees(), "degrees", ids.size(), &out));
  RETURN_IF_ERROR(impl_->Checked(
      "GetDegrees", internal::CheckDegrees(ids, out, impl_->bounds())));
  return out;
}

absl::StatusOr<std::vector<NodeId>> GraphStoreClient::GetSplit(
    absl::string_view name) {
  proto::GetSplitRequest req;
  req.set_name(std::string(name));
  proto::GetSplitResponse resp;
  RETURN_IF_ERROR(impl_->Call("GetSplit", req, &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->GetSplit(c, q, r); }));
  std::vector<NodeId> out;
  RETURN_IF_ERROR(
      impl_->Unpack("GetSplit", resp.node_ids(), "node_ids", SIZE_MAX, &out));
  RETURN_IF_ERROR(impl_->Checked(
      "GetSplit", internal::CheckSplit(name, out, impl_->bounds())));
  return out;
}

absl::StatusOr<ServerStats> GraphStoreClient::Stats() {
  proto::StatsResponse resp;
  RETURN_IF_ERROR(impl_->Call("Stats", proto::StatsRequest(), &resp,
                              [](Stub* s, grpc::ClientContext* c, const auto& q,
                                 auto* r) { return s->Stats(c, q, r); }));
  ServerStats out;
  out.uptime_seconds = resp.uptime_seconds();
  if (resp.minor_faults() < 0) {
    return absl::DataLossError(
        absl::StrCat(address(), ": Stats answered negative minor_faults ",
                     resp.minor_faults()));
  }
  out.minor_faults = resp.minor_faults();
  if (!std::isfinite(resp.cpu_seconds()) || resp.cpu_seconds() < 0) {
    return absl::DataLossError(absl::StrCat(
        address(), ": Stats answered cpu_seconds ", resp.cpu_seconds()));
  }
  out.cpu_seconds = resp.cpu_seconds();
  for (const auto& m : resp.methods()) {
    out.methods.push_back({m.method(), m.calls(), m.errors(),
                           m.latency_sum_us(), m.latency_p50_us(),
                           m.latency_p99_us(), m.latency_max_us(), m.bytes_in(),
                           m.bytes_out()});
  }
  return out;
}

absl::Status GraphStoreClient::CreateEmbeddingTable(
    const EmbeddingTableConfig& config, int restore_epoch,
    int64_t restore_step) {
  proto::CreateEmbeddingTableRequest req;
  internal::SpecFromConfig(config, req.mutable_spec());
  std::optional<absl::Duration> timeout;
  if (restore_epoch >= 0) {
    req.set_restore(true);
    req.set_restore_epoch(restore_epoch);
    req.set_restore_step(restore_step);
    timeout = kEmbeddingSnapshotTimeout;
  }
  proto::CreateEmbeddingTableResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "CreateEmbeddingTable", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->CreateEmbeddingTable(c, q, r);
      },
      timeout));
  const internal::ShardBounds b = impl_->bounds();
  if (b.known &&
      (resp.node_start() != b.node_start || resp.node_end() != b.node_end)) {
    return impl_->Checked("CreateEmbeddingTable",
                          absl::DataLossError(absl::StrCat(
                              "the table holds rows [", resp.node_start(), ", ",
                              resp.node_end(), "), not the shard's nodes [",
                              b.node_start, ", ", b.node_end, ")")));
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphStoreClient::EmbeddingSnapshotInfo>
GraphStoreClient::SnapshotEmbeddings(const EmbeddingTableConfig& table,
                                     int epoch, int64_t step) {
  proto::SnapshotEmbeddingsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  req.set_epoch(epoch);
  req.set_step(step);
  proto::SnapshotEmbeddingsResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "SnapshotEmbeddings", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->SnapshotEmbeddings(c, q, r);
      },
      kEmbeddingSnapshotTimeout));
  if (resp.rows() < 0 || resp.bytes() < 0 || !(resp.seconds() >= 0)) {
    return impl_->Checked(
        "SnapshotEmbeddings",
        absl::DataLossError(absl::StrCat("answer has ", resp.rows(), " rows, ",
                                         resp.bytes(), " bytes, ",
                                         resp.seconds(), " seconds")));
  }
  return EmbeddingSnapshotInfo{resp.rows(), resp.bytes(), resp.seconds()};
}

absl::Status GraphStoreClient::PullEmbeddings(const EmbeddingTableConfig& table,
                                              absl::Span<const NodeId> ids,
                                              int64_t step, int staleness,
                                              absl::Duration wait, float* out,
                                              absl::Span<const size_t> rows) {
  if (!rows.empty() && rows.size() != ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PullEmbeddings: ", rows.size(), " row positions for ",
                     ids.size(), " IDs"));
  }
  if (std::shared_ptr<internal::FeaturePortClient> port =
          FeaturePortForCall()) {
    internal::FeaturePortClient::PullSpec spec;
    spec.table = table.name;
    spec.run_id = table.run_id;
    spec.dim = table.dim;
    spec.step = step;
    spec.staleness = staleness;
    spec.max_wait = wait;
    bool transport_failed = false;
    absl::Status s = port->Pull(
        spec, ids, out, rows.empty() ? nullptr : rows.data(),
        absl::Now() + wait + impl_->options().call_timeout, &transport_failed);
    if (s.ok()) return s;
    if (!transport_failed) {
      return impl_->CallError(s.code(), "PullEmbeddings", s.message());
    }
    // Unreachable port: gRPC, as for GetFeatures. One that does not serve
    // pulls (an older server) still serves features.
    if (!absl::IsUnimplemented(s)) impl_->DropFeaturePort(port.get());
  }
  proto::PullEmbeddingsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  req.set_step(step);
  req.set_staleness(staleness);
  if (wait > absl::ZeroDuration()) {
    req.set_max_wait_ms(std::max<int64_t>(1, absl::ToInt64Milliseconds(wait)));
  }
  proto::PullEmbeddingsResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "PullEmbeddings", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->PullEmbeddings(c, q, r);
      },
      wait + impl_->options().call_timeout));
  const size_t expected = ids.size() * static_cast<size_t>(table.dim);
  if (resp.dim() != table.dim ||
      resp.rows().size() != expected * sizeof(float)) {
    return impl_->Checked(
        "PullEmbeddings",
        absl::DataLossError(absl::StrCat(
            "answer has ", resp.rows().size(), " bytes of rows of dimension ",
            resp.dim(), " for ", ids.size(), " IDs of dimension ", table.dim)));
  }
  if (rows.empty()) {
    if (expected > 0)
      std::memcpy(out, resp.rows().data(), expected * sizeof(float));
    return absl::OkStatus();
  }
  const size_t width = static_cast<size_t>(table.dim);
  const auto* received = reinterpret_cast<const float*>(resp.rows().data());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(out + rows[i] * width, received + i * width,
                width * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status GraphStoreClient::PushEmbeddingGradients(
    const EmbeddingTableConfig& table, int trainer, int64_t step,
    absl::Span<const NodeId> ids, absl::Span<const float> gradients) {
  if (std::shared_ptr<internal::FeaturePortClient> port =
          FeaturePortForCall()) {
    internal::FeaturePortClient::PushSpec spec;
    spec.table = table.name;
    spec.run_id = table.run_id;
    spec.trainer = trainer;
    spec.step = step;
    bool transport_failed = false;
    absl::Status s = port->Push(spec, ids, gradients,
                                absl::Now() + impl_->options().call_timeout,
                                &transport_failed);
    if (s.ok()) return s;
    if (!transport_failed) {
      return impl_->CallError(s.code(), "PushEmbeddingGradients", s.message());
    }
    // As for pulls: gRPC, and the port dropped unless it is merely older.
    if (!absl::IsUnimplemented(s)) impl_->DropFeaturePort(port.get());
  }
  proto::PushEmbeddingGradientsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  req.set_trainer(trainer);
  req.set_step(step);
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  wire::Pack<float>(gradients, req.mutable_gradients());
  proto::PushEmbeddingGradientsResponse resp;
  return impl_->Call(
      "PushEmbeddingGradients", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->PushEmbeddingGradients(c, q, r);
      });
}

absl::StatusOr<std::vector<GraphStoreClient::EmbeddingServerStats>>
GraphStoreClient::EmbeddingStats() {
  proto::EmbeddingStatsResponse resp;
  RETURN_IF_ERROR(
      impl_->Call("EmbeddingStats", proto::EmbeddingStatsRequest(), &resp,
                  [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
                    return s->EmbeddingStats(c, q, r);
                  }));
  std::vector<EmbeddingServerStats> out;
  for (const auto& t : resp.tables()) {
    EmbeddingServerStats e;
    e.name = t.name();
    e.dim = t.dim();
    e.stats.rows_pulled = t.rows_pulled();
    e.stats.rows_pushed = t.rows_pushed();
    e.stats.pulls = t.pulls();
    e.stats.pushes = t.pushes();
    e.stats.rows_touched = t.rows_touched();
    e.stats.pull_wait_seconds = t.pull_wait_seconds();
    e.stats.staleness_sum = t.staleness_sum();
    e.applied_steps = t.applied_steps();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace shardgnn
