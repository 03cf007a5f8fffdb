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
#include "graphstore/internal/client_impl.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/features_codec.h"
#include "graphstore/internal/health_probe.h"
#include "graphstore/internal/tls_check.h"
#include "graphstore/internal/wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn {

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
  bool tls_checked = false;
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    proto::HealthResponse resp;
    grpc::ClientContext ctx;
    impl_->Prepare(&ctx,
                   absl::Now() + std::min(left, impl_->options().call_timeout));
    // Wait for the connection instead of failing fast while it is down;
    // under TLS not the first time, whose failure may be the handshake's
    // (checked below) rather than a server still starting.
    const bool tls = !impl_->options().tls_ca_pem.empty();
    ctx.set_wait_for_ready(!tls || tls_checked);
    grpc::Status s = impl_->stub()->Health(&ctx, proto::HealthRequest(), &resp);
    if (s.ok() && resp.serving()) return absl::OkStatus();
    last = s.ok() ? absl::UnavailableError("server is not serving yet")
                  : absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                                 s.error_message());
    if (!s.ok() && tls && !tls_checked) {
      // gRPC retries a failed handshake as it does a refused connection,
      // until the deadline: one handshake of our own says why at once.
      tls_checked = true;
      const std::string problem = internal::TlsHandshakeProblem(
          address_,
          {impl_->options().tls_ca_pem, impl_->options().tls_cert_pem,
           impl_->options().tls_key_pem},
          std::min(absl::Seconds(2),
                   std::max(deadline - absl::Now(), absl::Milliseconds(100))));
      if (!problem.empty()) {
        return absl::UnauthenticatedError(
            absl::StrCat(address_, ": TLS handshake failed: ", problem));
      }
    }
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
  for (const proto::NodeTypeInfo& t : resp.node_types()) {
    m.node_types.push_back({t.name(), t.count(), t.feature_dim()});
  }
  for (const proto::EdgeTypeInfo& e : resp.edge_types()) {
    m.edge_types.push_back(
        {e.src(), e.relation(), e.dst(), e.count(), e.feature_dim()});
  }
  m.type_starts.assign(resp.type_starts().begin(), resp.type_starts().end());
  m.label_columns = resp.label_columns() == 0 ? 1 : resp.label_columns();
  RETURN_IF_ERROR(impl_->Checked(
      "Info", internal::CheckTypedInfo(m, impl_->options().max_message_bytes)));
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
  SampledNeighbors out;
  RETURN_IF_ERROR(SampleNeighbors(ids, fanout, replace, seed, &out));
  return out;
}

absl::Status GraphStoreClient::SampleNeighbors(absl::Span<const NodeId> ids,
                                               int fanout, bool replace,
                                               uint64_t seed,
                                               SampledNeighbors* out) {
  std::shared_ptr<internal::FeaturePortClient> port = FeaturePortForCall();
  if (port != nullptr) {
    bool transport_failed = false;
    // The most an answer may hold: what the message limit allows.
    const int64_t max_neighbors = impl_->options().max_message_bytes / 8 -
                                  static_cast<int64_t>(ids.size());
    absl::Status s = port->Sample(
        ids, fanout, replace, seed, max_neighbors, out,
        absl::Now() + impl_->options().call_timeout, &transport_failed);
    if (s.ok()) {
      return impl_->Checked(
          "SampleNeighbors",
          internal::CheckSample(ids, fanout, *out, impl_->bounds()));
    }
    // "Server busy" (its workers' queue for this address is full): over
    // gRPC, which retries it until the call's deadline.
    const bool busy = !transport_failed &&
                      s.code() == absl::StatusCode::kUnavailable &&
                      internal::SaysServerBusy(s.message());
    if (!transport_failed && !busy) {
      return impl_->CallError(s.code(), "SampleNeighbors", s.message());
    }
    if (transport_failed) impl_->DropFeaturePort(port.get());
  }
  proto::SampleNeighborsRequest req;
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  req.set_fanout(fanout);
  req.set_replace(replace);
  req.set_seed(seed);
  grpc::ByteBuffer request;
  bool own = false;
  if (!grpc::SerializationTraits<proto::SampleNeighborsRequest>::Serialize(
           req, &request, &own)
           .ok()) {
    return impl_->Error(absl::StatusCode::kInternal, "SampleNeighbors",
                        "cannot serialize the request");
  }
  // Raw call: the answer goes from the gRPC buffer into out's vectors in one
  // copy, reusing their memory.
  grpc::ByteBuffer response;
  RETURN_IF_ERROR(
      impl_->Call("SampleNeighbors", request, &response,
                  [this](Stub*, grpc::ClientContext* c,
                         const grpc::ByteBuffer& q, grpc::ByteBuffer* r) {
                    return impl_->RawCall(c, q, r, kSampleNeighborsMethod);
                  }));
  RETURN_IF_ERROR(impl_->Checked(
      "SampleNeighbors", internal::DecodeSampled(response, ids.size(), out)));
  return impl_->Checked(
      "SampleNeighbors",
      internal::CheckSample(ids, fanout, *out, impl_->bounds()));
}

absl::Status GraphStoreClient::SampleTypedNeighbors(
    absl::Span<const NodeId> ids, absl::Span<const int> fanouts, bool replace,
    uint64_t seed, SampledNeighbors* out) {
  if (fanouts.empty()) {
    // An empty relation_fanouts field would be an untyped request.
    return absl::InvalidArgumentError(
        absl::StrCat(address_, ": SampleNeighbors: no relation fanouts"));
  }
  proto::SampleNeighborsRequest req;
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  std::vector<int32_t> fanouts32(fanouts.begin(), fanouts.end());
  wire::Pack<int32_t>(fanouts32, req.mutable_relation_fanouts());
  req.set_replace(replace);
  req.set_seed(seed);
  grpc::ByteBuffer request;
  bool own = false;
  if (!grpc::SerializationTraits<proto::SampleNeighborsRequest>::Serialize(
           req, &request, &own)
           .ok()) {
    return impl_->Error(absl::StatusCode::kInternal, "SampleNeighbors",
                        "cannot serialize the request");
  }
  grpc::ByteBuffer response;
  RETURN_IF_ERROR(
      impl_->Call("SampleNeighbors", request, &response,
                  [this](Stub*, grpc::ClientContext* c,
                         const grpc::ByteBuffer& q, grpc::ByteBuffer* r) {
                    return impl_->RawCall(c, q, r, kSampleNeighborsMethod);
                  }));
  RETURN_IF_ERROR(impl_->Checked(
      "SampleNeighbors", internal::DecodeSampled(response, ids.size(), out)));
  return impl_->Checked(
      "SampleNeighbors",
      internal::CheckTypedSample(ids, fanouts, *out, impl_->bounds()));
}

absl::Status GraphStoreClient::GetTypeFeatures(int type,
                                               absl::Span<const NodeId> ids,
                                               int64_t feature_dim, float* out,
                                               absl::Span<const size_t> rows) {
  if (!rows.empty() && rows.size() != ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("GetFeatures: ", rows.size(),
                                                   " destination rows for ",
                                                   ids.size(), " IDs"));
  }
  proto::NodeIdsRequest req = IdsRequest(ids);
  req.set_node_type(type);
  grpc::ByteBuffer request;
  bool own = false;
  if (!grpc::SerializationTraits<proto::NodeIdsRequest>::Serialize(
           req, &request, &own)
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
  const internal::ShardBounds bounds = impl_->bounds();
  std::vector<int64_t> out;
  RETURN_IF_ERROR(impl_->Unpack(
      "GetLabels", resp.labels(), "labels",
      ids.size() * static_cast<size_t>(bounds.label_columns), &out));
  RETURN_IF_ERROR(
      impl_->Checked("GetLabels", internal::CheckLabels(ids, out, bounds)));
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

}  // namespace shardgnn
