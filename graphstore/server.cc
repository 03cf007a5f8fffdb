#include "graphstore/server.h"

#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <new>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "common/peak_rss.h"
#include "common/status.h"
#include "graphstore/internal/call_runner.h"
#include "graphstore/internal/connection_limits.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/features_codec.h"
#include "graphstore/internal/listener.h"
#include "graphstore/internal/memory_trimmer.h"
#include "graphstore/internal/method_stats.h"
#include "graphstore/internal/server_metrics.h"
#include "graphstore/internal/standard_services.h"
#include "graphstore/internal/wire.h"
#include "graphstore/internal/work_queue.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/server_posix.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn {
namespace {

constexpr char kServerVersion[] = "shardgnn 0.1.0";

enum Method {
  kInfo,
  kSampleNeighbors,
  kGetFeatures,
  kGetLabels,
  kGetDegrees,
  kGetSplit,
  kHealth,
  kStats,
  kCreateEmbeddingTable,
  kPullEmbeddings,
  kPushEmbeddingGradients,
  kEmbeddingStats,
  kSnapshotEmbeddings,
  kFeaturePort,      // GetFeatures over the feature port, not gRPC.
  kFeaturePortPull,  // PullEmbeddings over the feature port.
  kFeaturePortPush,  // PushEmbeddingGradients over the feature port.
  kNumMethods
};
constexpr const char* kMethodNames[kNumMethods] = {"Info",
                                                   "SampleNeighbors",
                                                   "GetFeatures",
                                                   "GetLabels",
                                                   "GetDegrees",
                                                   "GetSplit",
                                                   "Health",
                                                   "Stats",
                                                   "CreateEmbeddingTable",
                                                   "PullEmbeddings",
                                                   "PushEmbeddingGradients",
                                                   "EmbeddingStats",
                                                   "SnapshotEmbeddings",
                                                   "FeaturePort",
                                                   "FeaturePortPull",
                                                   "FeaturePortPush"};

// Memory-mode calls below these sizes run on gRPC's thread (a memcpy or a
// few thousand samples: cheaper than a hand-off); larger ones, and every
// disk-mode call, go to the work queue.
constexpr int64_t kInlineSamples = 1 << 16;
constexpr int64_t kInlineBytes = 1 << 20;

}  // namespace

// GetFeatures is a raw method: its megabyte responses are written straight
// into a gRPC buffer (internal/features_codec.h) instead of through protobuf.
class GraphStoreServer::Service final
    : public proto::GraphStore::WithRawCallbackMethod_GetFeatures<
          proto::GraphStore::CallbackService> {
 public:
  explicit Service(const GraphStoreServerOptions& options)
      : options_(options),
        start_(absl::Now()),
        runner_(std::vector<const char*>(std::begin(kMethodNames),
                                         std::end(kMethodNames)),
                kHealth, options.auth_token, QueueOptions(options),
                [this] { return LoadedStore() != nullptr; }),
        embeddings_(EmbeddingLimits(options)) {}

  // Runs the queued work to the end and joins the workers.
  void StopWorkers() { runner_.StopWorkers(); }
  // Answers the pulls waiting for an embedding table's step clock.
  void CancelWaitingPulls() { embeddings_.CancelWaiting(); }

  // Info advertises `port` (0: none) as the feature port.
  void SetFeaturePort(int port) { feature_port_ = port; }
  // Starts answering calls from `store`; until then only Health answers
  // (serving = false) and other calls get UNAVAILABLE. Called once.
  void Serve(std::shared_ptr<const ShardStore> store) {
    store_ = std::move(store);
    serving_.store(true, std::memory_order_release);
  }
  // What the feature port counts its requests in and answers embedding
  // requests with.
  internal::FeaturePortHooks feature_port_hooks() {
    internal::FeaturePortHooks hooks;
    hooks.features = &runner_.stats(kFeaturePort);
    hooks.pulls = &runner_.stats(kFeaturePortPull);
    hooks.pushes = &runner_.stats(kFeaturePortPush);
    hooks.connections = &feature_port_connections_;
    hooks.embeddings = &embeddings_;
    return hooks;
  }
  internal::ConnectionStats* grpc_connection_stats() {
    return &grpc_connections_;
  }

  // The counters the metrics read (internal/server_metrics.h), and the
  // figures a scrape asks for; state() is completed by the caller with what
  // the service does not know (the part label before Serve, connections).
  internal::ServerMetricsSources MetricsSources() const {
    internal::ServerMetricsSources sources;
    for (int m = 0; m < kNumMethods; ++m) {
      if (m != kFeaturePort && m != kFeaturePortPull && m != kFeaturePortPush) {
        sources.grpc_methods.push_back(&runner_.all_stats()[m]);
      }
    }
    sources.grpc_connections = &grpc_connections_;
    sources.feature_port_requests = &runner_.all_stats()[kFeaturePort];
    sources.feature_port_pulls = &runner_.all_stats()[kFeaturePortPull];
    sources.feature_port_pushes = &runner_.all_stats()[kFeaturePortPush];
    sources.feature_port_connections = &feature_port_connections_;
    return sources;
  }
  internal::ServerMetricsState MetricsState() {
    internal::ServerMetricsState state;
    state.calls_in_flight = runner_.in_flight();
    state.serving = !runner_.draining();
    state.calls_queued = runner_.queued();
    state.uptime_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    const ShardStore* store = LoadedStore();
    state.serving = state.serving && store != nullptr;
    if (store == nullptr) return state;
    const ShardMeta& meta = store->Meta();
    state.part = meta.part_id;
    state.in_memory = store->in_memory();
    state.nodes = meta.node_end - meta.node_start;
    state.edges = meta.num_edges;
    if (auto shared = store->SharedFeatures()) {
      state.shared_features_bytes = static_cast<int64_t>(shared->bytes);
    }
    const BlockCacheUsage cache = store->BlockCache();
    state.block_cache_bytes = cache.bytes;
    state.block_cache_capacity_bytes = cache.capacity;
    return state;
  }

  // Turns new calls away with UNAVAILABLE and waits until the calls already
  // admitted have finished or `deadline` passes. Returns true if drained.
  bool Drain(absl::Time deadline) { return runner_.Drain(deadline); }

  ServerTotals Totals() const {
    ServerTotals t;
    for (const auto& m : runner_.all_stats()) {
      t.calls += m.calls();
      t.errors += m.errors();
      t.bytes_out += m.bytes_out();
    }
    return t;
  }

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx,
                                 const proto::InfoRequest* req,
                                 proto::InfoResponse* resp) override {
    return runner_.Run(ctx, kInfo, req, resp, /*heavy=*/true, [this, resp] {
      const ShardMeta& m = store_->Meta();
      resp->set_part_id(m.part_id);
      resp->set_num_parts(m.num_parts);
      resp->set_node_start(m.node_start);
      resp->set_node_end(m.node_end);
      resp->set_num_nodes_total(m.num_nodes_total);
      resp->set_num_edges(m.num_edges);
      resp->set_feature_dim(m.feature_dim);
      resp->set_num_classes(m.num_classes);
      for (const auto& [name, count] : m.split_counts) {
        (*resp->mutable_split_counts())[name] = count;
      }
      resp->set_partition_id(m.partition_id);
      resp->set_content_checksum(m.content_checksum);
      resp->set_format_version(m.format_version);
      resp->set_server_version(kServerVersion);
      resp->set_in_memory(store_->in_memory());
      if (auto shared = store_->SharedFeatures()) {
        proto::SharedRegion* r = resp->mutable_shared_features();
        r->set_pid(shared->pid);
        r->set_fd(shared->fd);
        r->set_token(shared->token);
        r->set_bytes(shared->bytes);
        r->set_boot_id(shared->boot_id);
      }
      resp->set_feature_port(static_cast<uint32_t>(feature_port_.load()));
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* SampleNeighbors(
      grpc::CallbackServerContext* ctx,
      const proto::SampleNeighborsRequest* req,
      proto::SampleNeighborsResponse* resp) override {
    const int64_t n = static_cast<int64_t>(req->node_ids().size() / 8);
    const int64_t samples = n * std::max(req->fanout(), 32);
    return runner_.Run(
        ctx, kSampleNeighbors, req, resp, Heavy(samples >= kInlineSamples),
        [this, req, resp]() -> absl::Status {
          ASSIGN_OR_RETURN(std::vector<NodeId> ids, ReadIds(req->node_ids()));
          if (req->fanout() < -1 || req->fanout() > options_.max_fanout) {
            return absl::InvalidArgumentError(absl::StrCat(
                "fanout ", req->fanout(), " is outside [-1, ",
                options_.max_fanout, "] (-1 means all neighbors)"));
          }
          // Counts and neighbors are 8 bytes each; keep 4 KiB spare.
          const int64_t message_neighbors =
              (options_.max_message_bytes - 4096) / 8 -
              static_cast<int64_t>(ids.size());
          const int64_t max_neighbors =
              std::min(message_neighbors, options_.max_sampled_per_call);
          const int64_t at_most = static_cast<int64_t>(ids.size()) *
                                  std::max<int64_t>(req->fanout(), 0);
          if (req->replace() && req->fanout() > 0 && at_most > max_neighbors) {
            // Refused before any work; without replace, or for fanout -1,
            // the store counts the true size first.
            return TooManySamples(at_most, max_neighbors);
          }
          SampledNeighbors out;
          absl::Status s =
              store_->SampleNeighbors(ids, req->fanout(), req->replace(),
                                      req->seed(), max_neighbors, &out);
          if (absl::IsResourceExhausted(s)) {
            return TooManySamples(-1, max_neighbors, s.message());
          }
          RETURN_IF_ERROR(s);
          wire::Pack<int64_t>(out.counts, resp->mutable_counts());
          wire::Pack<NodeId>(out.neighbors, resp->mutable_neighbors());
          return absl::OkStatus();
        });
  }

  grpc::ServerUnaryReactor* GetFeatures(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override {
    const ShardStore* store = LoadedStore();
    const int64_t bytes_out = store == nullptr
                                  ? 0
                                  : static_cast<int64_t>(req->Length() / 8) *
                                        store->Meta().feature_dim * 4;
    return runner_.Run(
        ctx, kGetFeatures, req, resp, Heavy(bytes_out >= kInlineBytes),
        [this, req, resp]() -> absl::Status {
          proto::NodeIdsRequest request;
          grpc::ByteBuffer copy(*req);  // Deserialize consumes its input.
          if (!grpc::SerializationTraits<proto::NodeIdsRequest>::Deserialize(
                   &copy, &request)
                   .ok()) {
            return absl::InvalidArgumentError(
                "GetFeatures: request is not a NodeIdsRequest");
          }
          ASSIGN_OR_RETURN(std::vector<NodeId> ids,
                           ReadIds(request.node_ids()));
          const int64_t dim = store_->Meta().feature_dim;
          const int64_t bytes = static_cast<int64_t>(ids.size()) * dim * 4;
          if (bytes > options_.max_message_bytes - 1024) {
            return absl::ResourceExhaustedError(absl::StrFormat(
                "%d feature rows of %d floats are %.1f MiB, over the "
                "%.1f MiB message limit; request fewer IDs per call",
                ids.size(), dim, bytes / 1048576.0,
                options_.max_message_bytes / 1048576.0));
          }
          RETURN_IF_ERROR(store_->CheckOwned(ids));
          return internal::EncodeFeatures(*store_, ids, resp);
        });
  }

  grpc::ServerUnaryReactor* GetLabels(grpc::CallbackServerContext* ctx,
                                      const proto::NodeIdsRequest* req,
                                      proto::GetLabelsResponse* resp) override {
    return runner_.Run(
        ctx, kGetLabels, req, resp,
        Heavy(static_cast<int64_t>(req->node_ids().size()) >= kInlineBytes),
        [this, req, resp]() -> absl::Status {
          ASSIGN_OR_RETURN(std::vector<NodeId> ids, ReadIds(req->node_ids()));
          std::vector<int64_t> labels(ids.size());
          RETURN_IF_ERROR(store_->GetLabels(ids, labels.data()));
          wire::Pack<int64_t>(labels, resp->mutable_labels());
          return absl::OkStatus();
        });
  }

  grpc::ServerUnaryReactor* GetDegrees(
      grpc::CallbackServerContext* ctx, const proto::NodeIdsRequest* req,
      proto::GetDegreesResponse* resp) override {
    return runner_.Run(
        ctx, kGetDegrees, req, resp,
        Heavy(static_cast<int64_t>(req->node_ids().size()) >= kInlineBytes),
        [this, req, resp]() -> absl::Status {
          ASSIGN_OR_RETURN(std::vector<NodeId> ids, ReadIds(req->node_ids()));
          std::vector<int64_t> degrees(ids.size());
          RETURN_IF_ERROR(store_->GetDegrees(ids, degrees.data()));
          wire::Pack<int64_t>(degrees, resp->mutable_degrees());
          return absl::OkStatus();
        });
  }

  grpc::ServerUnaryReactor* GetSplit(grpc::CallbackServerContext* ctx,
                                     const proto::GetSplitRequest* req,
                                     proto::GetSplitResponse* resp) override {
    return runner_.Run(
        ctx, kGetSplit, req, resp, Heavy(true),
        [this, req, resp]() -> absl::Status {
          const auto& counts = store_->Meta().split_counts;
          auto it = counts.find(req->name());
          const int64_t bytes = it == counts.end() ? 0 : it->second * 8;
          if (bytes > options_.max_message_bytes - 1024) {
            return absl::ResourceExhaustedError(absl::StrFormat(
                "split '%s' of %d nodes is %.1f MiB, over the %.1f MiB "
                "message limit",
                req->name(), it->second, bytes / 1048576.0,
                options_.max_message_bytes / 1048576.0));
          }
          ASSIGN_OR_RETURN(std::vector<NodeId> ids,
                           store_->GetSplit(req->name()));
          wire::Pack<NodeId>(ids, resp->mutable_node_ids());
          return absl::OkStatus();
        });
  }

  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* ctx,
                                   const proto::HealthRequest* req,
                                   proto::HealthResponse* resp) override {
    return runner_.Run(ctx, kHealth, req, resp, true, [this, resp] {
      resp->set_serving(LoadedStore() != nullptr);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx,
                                  const proto::StatsRequest* req,
                                  proto::StatsResponse* resp) override {
    return runner_.Run(ctx, kStats, req, resp, true, [this, resp] {
      for (const auto& m : runner_.all_stats()) {
        proto::MethodStats* out = resp->add_methods();
        out->set_method(m.name());
        out->set_calls(m.calls());
        out->set_errors(m.errors());
        out->set_latency_sum_us(m.latency_sum_us());
        out->set_latency_p50_us(m.LatencyQuantileUs(0.5));
        out->set_latency_p99_us(m.LatencyQuantileUs(0.99));
        out->set_latency_max_us(m.latency_max_us());
        out->set_bytes_in(m.bytes_in());
        out->set_bytes_out(m.bytes_out());
      }
      resp->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - start_));
      resp->set_minor_faults(std::max<int64_t>(0, MinorFaults()));
      resp->set_cpu_seconds(std::max(0.0, CpuSeconds()));
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* CreateEmbeddingTable(
      grpc::CallbackServerContext* ctx,
      const proto::CreateEmbeddingTableRequest* req,
      proto::CreateEmbeddingTableResponse* resp) override {
    // A restore reads a snapshot file: off the callback thread.
    return runner_.Run(ctx, kCreateEmbeddingTable, req, resp,
                       /*heavy=*/req->restore(), [this, req, resp] {
                         return embeddings_.Create(store_->Meta(), *req, resp);
                       });
  }

  grpc::ServerUnaryReactor* PullEmbeddings(
      grpc::CallbackServerContext* ctx, const proto::PullEmbeddingsRequest* req,
      proto::PullEmbeddingsResponse* resp) override {
    return runner_.RunDeferred(
        ctx, kPullEmbeddings, req, resp,
        [this, ctx, req, resp](std::function<void(absl::Status)> done) {
          embeddings_.Pull(req, absl::FromChrono(ctx->deadline()), resp,
                           std::move(done));
        });
  }

  grpc::ServerUnaryReactor* PushEmbeddingGradients(
      grpc::CallbackServerContext* ctx,
      const proto::PushEmbeddingGradientsRequest* req,
      proto::PushEmbeddingGradientsResponse* resp) override {
    // Inline: a push never waits, and the pulls waiting for it must not
    // queue it behind other work.
    return runner_.Run(
        ctx, kPushEmbeddingGradients, req, resp, /*heavy=*/false,
        [this, req, resp] { return embeddings_.Push(*req, resp); });
  }

  grpc::ServerUnaryReactor* EmbeddingStats(
      grpc::CallbackServerContext* ctx, const proto::EmbeddingStatsRequest* req,
      proto::EmbeddingStatsResponse* resp) override {
    return runner_.Run(ctx, kEmbeddingStats, req, resp, /*heavy=*/false,
                       [this, resp] {
                         embeddings_.Stats(resp);
                         return absl::OkStatus();
                       });
  }

  grpc::ServerUnaryReactor* SnapshotEmbeddings(
      grpc::CallbackServerContext* ctx,
      const proto::SnapshotEmbeddingsRequest* req,
      proto::SnapshotEmbeddingsResponse* resp) override {
    return runner_.Run(
        ctx, kSnapshotEmbeddings, req, resp, /*heavy=*/true,
        [this, req, resp] { return embeddings_.Snapshot(*req, resp); });
  }

 private:
  static internal::WorkQueueOptions QueueOptions(
      const GraphStoreServerOptions& options) {
    internal::WorkQueueOptions queue;
    queue.num_workers =
        options.num_threads > 0
            ? options.num_threads
            : std::max(2,
                       static_cast<int>(std::thread::hardware_concurrency()));
    // One address may hold all workers but one, so another address's call
    // always finds a worker within one call of its own.
    queue.max_running_per_key = std::max(1, queue.num_workers - 1);
    queue.max_queued_per_key = options.max_queued_per_ip;
    queue.max_queued = std::max(4096, options.max_queued_per_ip);
    return queue;
  }
  static internal::EmbeddingServiceLimits EmbeddingLimits(
      const GraphStoreServerOptions& options) {
    internal::EmbeddingServiceLimits limits;
    limits.max_ids_per_call = options.max_ids_per_call;
    limits.max_table_bytes = options.max_embedding_bytes;
    limits.snapshot_dir = options.embedding_snapshot_dir;
    limits.table_dir = options.embedding_table_dir;
    return limits;
  }

  // Memory mode never blocks (reads are memcpy from arrays), so its small
  // calls run on gRPC's callback thread and skip two thread hand-offs; its
  // large ones, and every disk-mode call (which may wait on I/O), run on the
  // work queue, shared fairly among client addresses.
  bool Heavy(bool large) const {
    const ShardStore* store = LoadedStore();
    return large || store == nullptr || !store->in_memory();
  }

  // The store once Serve() set it (work admitted by Run() may use store_
  // directly); null while the server is loading.
  const ShardStore* LoadedStore() const {
    return serving_.load(std::memory_order_acquire) ? store_.get() : nullptr;
  }

  // RESOURCE_EXHAUSTED for a sample over `limit` neighbor IDs, naming the
  // limit that applies (the per-call cap, or the message size).
  absl::Status TooManySamples(int64_t at_most, int64_t limit,
                              absl::string_view detail = "") const {
    const std::string what =
        at_most >= 0
            ? absl::StrCat("a sample of up to ", at_most, " neighbor IDs")
            : absl::StrCat("the sample (", detail, ")");
    if (limit == options_.max_sampled_per_call) {
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " is over the limit of ", limit,
          " sampled neighbors per call (serve --max-sampled-per-call); "
          "request fewer IDs or a smaller fanout"));
    }
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s is over the %.1f MiB message limit; request fewer IDs or a "
        "smaller fanout",
        what, options_.max_message_bytes / 1048576.0));
  }

  // Decodes and bounds-checks a packed ID array.
  absl::StatusOr<std::vector<NodeId>> ReadIds(const std::string& bytes) const {
    RETURN_IF_ERROR(wire::CheckLength<NodeId>(wire::View(bytes), "node_ids"));
    const int64_t n = static_cast<int64_t>(bytes.size() / sizeof(NodeId));
    if (n > options_.max_ids_per_call) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch of ", n, " IDs exceeds the limit of ",
                       options_.max_ids_per_call, " IDs per call"));
    }
    std::vector<NodeId> ids;
    RETURN_IF_ERROR(wire::Unpack(wire::View(bytes), "node_ids", &ids));
    return ids;
  }

  std::shared_ptr<const ShardStore> store_;  // Set once, by Serve().
  std::atomic<bool> serving_{false};         // Published store_.
  GraphStoreServerOptions options_;
  absl::Time start_;
  // Counted by the gRPC port's Listener and by the feature port.
  internal::ConnectionStats grpc_connections_;
  internal::ConnectionStats feature_port_connections_;
  internal::CallRunner runner_;
  std::atomic<int> feature_port_{0};
  internal::EmbeddingService embeddings_;
};

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

int GraphStoreServer::feature_port() const {
  return feature_port_ == nullptr ? 0 : feature_port_->port();
}

}  // namespace shardgnn
