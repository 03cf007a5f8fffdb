#include "graphstore/server.h"

#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/peak_rss.h"
#include "common/status.h"
#include "graphstore/internal/connection_limits.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/listener.h"
#include "graphstore/internal/memory_trimmer.h"
#include "graphstore/internal/server_metrics.h"
#include "graphstore/internal/service.h"
#include "graphstore/internal/standard_services.h"
#include "graphstore/internal/tls_check.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/server_posix.h"

namespace shardgnn {

namespace {

// The limits Bind() refuses before it binds anything.
absl::Status CheckOptions(const GraphStoreServerOptions& options) {
  if (options.feature_port_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature port connections ",
                     options.feature_port_connections, " must be >= 1"));
  }
  if (options.feature_port < -1 || options.feature_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature port ", options.feature_port,
                     " is outside [-1, 65535] (0 picks a free port, -1 "
                     "turns the feature port off)"));
  }
  if (options.max_message_bytes < (1 << 20) ||
      options.max_message_bytes > (int64_t{2} << 30) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes ", options.max_message_bytes,
                     " is outside [1 MiB, 2 GiB)"));
  }
  if (options.max_sampled_per_call < 1 || options.max_connections < 1 ||
      options.max_connections_per_ip < 1 ||
      options.feature_port_connections_per_ip < 1 ||
      options.max_queued_per_ip < 1 ||
      options.idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max_sampled_per_call, max_connections, max_connections_per_ip, "
        "feature_port_connections_per_ip, max_queued_per_ip and idle_timeout "
        "must be positive");
  }
  if (!options.tls_cert_pem.empty()) {
    // A certificate out of its dates is refused by every client (after each
    // waited for its connect deadline): refused here at once.
    std::string warning;
    RETURN_IF_ERROR(internal::CheckCertificateDates(
        options.tls_cert_pem, "the server's certificate (--tls-cert)",
        absl::Now(), absl::Hours(24 * 14), &warning));
    if (!warning.empty()) {
      std::fprintf(stderr, "shardgnn: warning: %s\n", warning.c_str());
    }
  }
  if (options.max_embedding_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_embedding_bytes ", options.max_embedding_bytes,
                     " must be >= 0 (0: the default)"));
  }
  const int64_t memory = PhysicalMemoryBytes();
  if (options.embedding_table_dir.empty() && memory > 0 &&
      options.max_embedding_bytes > memory) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the learnable tables' limit (--max-embedding-mb ",
        options.max_embedding_bytes >> 20, ") is above this machine's memory (",
        memory >> 20,
        " MiB): tables that large need --embedding-table-dir (on disk)"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t DefaultMaxEmbeddingBytes(bool tables_on_disk) {
  if (tables_on_disk) return int64_t{64} << 30;
  const int64_t memory = PhysicalMemoryBytes();
  return memory > 0 ? memory / 2 : int64_t{32} << 30;
}

absl::StatusOr<std::unique_ptr<GraphStoreServer>> GraphStoreServer::Start(
    std::shared_ptr<const ShardStore> store,
    const GraphStoreServerOptions& options) {
  if (store == nullptr) {
    return absl::InvalidArgumentError("GraphStoreServer: no store");
  }
  GraphStoreServerOptions labelled = options;
  if (labelled.metrics_part < 0) labelled.metrics_part = store->Meta().part_id;
  ASSIGN_OR_RETURN(std::unique_ptr<GraphStoreServer> server, Bind(labelled));
  RETURN_IF_ERROR(server->Serve(std::move(store)));
  return server;
}

absl::StatusOr<std::unique_ptr<GraphStoreServer>> GraphStoreServer::Bind(
    const GraphStoreServerOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  std::string host = options.listen_address;
  size_t colon = host.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(host.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address,
                     " (address in use, or not HOST:PORT?)"));
  }
  host.resize(colon);
  const bool tls = !options.tls_cert_pem.empty() ||
                   !options.tls_key_pem.empty() ||
                   !options.tls_client_ca_pem.empty();
  if (tls && (options.tls_cert_pem.empty() || options.tls_key_pem.empty())) {
    return absl::InvalidArgumentError(
        "TLS needs both the server's certificate and its private key "
        "(--tls-cert and --tls-key)");
  }
  auto server = std::unique_ptr<GraphStoreServer>(new GraphStoreServer());
  server->tls_ = tls;
  server->options_ = options;
  server->host_ = host;
  internal::EnableStandardServices();
  grpc::ServerBuilder builder;
  int tls_port = 0;
  if (tls) {
    // gRPC 1.51 takes no TLS connection from a descriptor: under TLS it
    // binds and accepts itself.
    grpc::SslServerCredentialsOptions ssl(
        options.tls_client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = options.tls_client_ca_pem;
    ssl.pem_key_cert_pairs.push_back(
        {options.tls_key_pem, options.tls_cert_pem});
    builder.AddListeningPort(options.listen_address,
                             grpc::SslServerCredentials(ssl), &tls_port);
  } else {
    // gRPC never accepts by itself (its accept loop stops for good after one
    // EMFILE): connections come through a Listener, which admits them under
    // the caps and hands them to gRPC.
    auto listener = internal::Listener::Bind(host, port, "gRPC port");
    if (!listener.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options.listen_address,
                       " (address in use, or not HOST:PORT?): ",
                       listener.status().message()));
    }
    server->listener_ = std::move(listener).value();
  }
  server->service_ = std::make_unique<Service>(options);
  if (!tls) {
    server->connections_ = std::make_unique<internal::GrpcConnections>(
        internal::ConnectionsUnderFileLimit(options.max_connections),
        options.max_connections_per_ip);
  }
  // Before gRPC starts: a bad or busy metrics address fails at once, with
  // nothing to undo but the bound port.
  RETURN_IF_ERROR(server->StartMetrics());

  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // Large stream windows and frames for megabyte responses (see client.cc).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 1 << 20);
  // A connection without calls for this long is closed (GOAWAY; clients
  // reconnect on their next call), and so is one that never speaks.
  const int idle_ms = static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(options.idle_timeout), INT32_MAX));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, idle_ms);
  // Calls at once on one connection (more wait in the client).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 256);
  // Reflection is gRPC's one synchronous service here: a single polling
  // thread is plenty for it.
  builder.SetSyncServerOption(grpc::ServerBuilder::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS, 1);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || (tls && tls_port == 0)) {
    if (server->server_ != nullptr) server->server_->Shutdown();
    if (server->listener_ != nullptr) server->listener_->Stop();
    server->metrics_.reset();  // It reads the work queue.
    server->service_->StopWorkers();
    server->shut_down_ = true;  // Nothing left for the destructor to do.
    if (tls) {
      return absl::UnavailableError(absl::StrCat(
          "cannot serve TLS on ", options.listen_address,
          " (address in use, or a certificate or key gRPC does not accept?)"));
    }
    return absl::InternalError("gRPC server did not start");
  }
  // gRPC's health service starts with "" SERVING. Under TLS gRPC already
  // accepts, but a probe's handshake takes far longer than reaching here.
  internal::SetServingStatus(server->server_.get(), false);
  Service* service = server->service_.get();
  server->trimmer_ = std::make_unique<internal::MemoryTrimmer>(
      [service] { return service->Totals().calls; });
  if (tls) {
    server->port_ = tls_port;
    server->address_ = absl::StrCat(host, ":", server->port_);
    return server;  // No feature port: it does not speak TLS.
  }
  server->listener_->Start([s = server.get()](int fd, const std::string& peer) {
    internal::ConnectionStats* counts = s->service_->grpc_connection_stats();
    if (!s->connections_->Admit(fd, peer)) {
      counts->rejected.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    counts->accepted.fetch_add(1, std::memory_order_relaxed);
    const int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    grpc::AddInsecureChannelFromFd(s->server_.get(), fd);
    return true;
  });
  server->port_ = server->listener_->port();
  server->address_ = absl::StrCat(host, ":", server->port_);
  return server;
}

absl::Status GraphStoreServer::StartMetrics() {
  if (options_.metrics_listen_address.empty()) return absl::OkStatus();
  internal::ServerMetricsSources sources = service_->MetricsSources();
  sources.state = [this] {
    internal::ServerMetricsState state = service_->MetricsState();
    if (state.part < 0) state.part = options_.metrics_part;
    if (connections_ != nullptr) {
      state.grpc_connections_open = connections_->Open();
    }
    return state;
  };
  ASSIGN_OR_RETURN(metrics_,
                   internal::MetricsExporter::Start(
                       options_.metrics_listen_address, std::move(sources)));
  metrics_port_ = metrics_->port();
  return absl::OkStatus();
}

absl::Status GraphStoreServer::Serve(std::shared_ptr<const ShardStore> store) {
  if (store == nullptr) {
    return absl::InvalidArgumentError("GraphStoreServer: no store");
  }
  absl::Status status;
  {
    absl::MutexLock lock(&lifecycle_mu_);
    if (serving_ || shut_down_) {
      return absl::FailedPreconditionError(
          "GraphStoreServer::Serve: already serving, or shut down");
    }
    if (!tls_ && options_.feature_port >= 0) {
      internal::FeaturePortLimits limits;
      limits.max_ids_per_call = options_.max_ids_per_call;
      limits.max_message_bytes = options_.max_message_bytes;
      limits.max_fanout = options_.max_fanout;
      limits.max_sampled_per_call = options_.max_sampled_per_call;
      limits.max_connections = internal::ConnectionsUnderFileLimit(
          options_.feature_port_connections);
      limits.max_connections_per_ip = options_.feature_port_connections_per_ip;
      limits.idle_timeout = options_.idle_timeout;
      auto port = internal::FeaturePortServer::Start(
          host_, options_.feature_port, store, limits,
          service_->feature_port_hooks(), options_.auth_token);
      if (port.ok()) {
        feature_port_ = std::move(port).value();
        service_->SetFeaturePort(feature_port_->port());
      }
      status = port.status();
    }
    if (status.ok()) {
      service_->Serve(std::move(store));
      serving_ = true;
      internal::SetServingStatus(server_.get(), true);
      return absl::OkStatus();
    }
  }
  Shutdown(absl::Now());
  return status;
}

void TuneAllocatorForServing() {
  // A fixed threshold also turns off glibc's dynamic one.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  // ... and with it the dynamic trim threshold, which then stays at 128 KiB:
  // glibc would give back the top of a heap after nearly every big answer and
  // fault it in again for the next (about 1,200 minor faults per training
  // step on the 200k reference graph). 8 MiB keeps a few answers' worth; 64
  // MiB kept too much after a flood (LoadBenchSmokeAllAttacks). The
  // MemoryTrimmer gives memory back once calls stop or resident memory grows.
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

void GraphStoreServer::Shutdown(absl::Time deadline) {
  if (shut_down_.exchange(true) || server_ == nullptr) return;
  absl::MutexLock lock(&lifecycle_mu_);
  // Probes and load balancers see the server going before anything stops:
  // health checks on connections already open answer NOT_SERVING (and
  // Watch streams are told) while calls drain.
  internal::SetServingStatus(server_.get(), false);
  // Drain first: gRPC's own graceful shutdown also waits, up to its
  // deadline, for idle clients to acknowledge GOAWAY, which a client process
  // without a call in progress may take seconds to do. Once the admitted
  // calls are done, gRPC gets a short grace period in which calls still
  // arriving are turned away with UNAVAILABLE (retryable) rather than
  // cancelled. Calls still running at the deadline are cancelled; the
  // workers run until every call has finished.
  // The feature port answers the requests it has read and closes; a client
  // whose connection closes falls back to gRPC, which answers UNAVAILABLE
  // (retryable) while draining.
  trimmer_.reset();
  if (listener_ != nullptr) listener_->Stop();
  if (feature_port_ != nullptr) feature_port_->BeginShutdown();
  // Pulls waiting for a step clock would hold the drain to their deadline:
  // answered UNAVAILABLE now (the trainers retry, or fail over).
  service_->CancelWaitingPulls();
  service_->Drain(deadline);
  if (feature_port_ != nullptr) feature_port_->Shutdown(deadline);
  server_->Shutdown(absl::ToChronoTime(
      std::min(deadline, absl::Now() + absl::Milliseconds(250))));
  server_->Wait();
  metrics_.reset();  // It reads the work queue.
  service_->StopWorkers();
}

GraphStoreServer::~GraphStoreServer() { Shutdown(absl::Now()); }

ServerTotals GraphStoreServer::Totals() const { return service_->Totals(); }

internal::WorkQueue* GraphStoreServer::workers_for_testing() const {
  return service_->workers();
}

int GraphStoreServer::feature_port() const {
  return feature_port_ == nullptr ? 0 : feature_port_->port();
}

}  // namespace shardgnn
