#include "graphstore/internal/service.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/peak_rss.h"
#include "common/status.h"
#include "graphstore/internal/features_codec.h"
#include "graphstore/internal/sample_request.h"
#include "graphstore/internal/slice_pool.h"
#include "graphstore/internal/wire.h"
#include "graphstore/internal/work_queue.h"

namespace shardgnn {
namespace {

internal::SampleLimits SampleLimitsOf(const GraphStoreServerOptions& o) {
  internal::SampleLimits limits;
  limits.max_fanout = o.max_fanout;
  limits.max_sampled_per_call = o.max_sampled_per_call;
  limits.max_message_bytes = o.max_message_bytes;
  return limits;
}

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
  kFeaturePort,        // GetFeatures over the feature port, not gRPC.
  kFeaturePortPull,    // PullEmbeddings over the feature port.
  kFeaturePortPush,    // PushEmbeddingGradients over the feature port.
  kFeaturePortSample,  // SampleNeighbors over the feature port.
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
                                                   "FeaturePortPush",
                                                   "FeaturePortSample"};

// Memory-mode calls below these sizes run on gRPC's thread (a memcpy or a
// few thousand samples, sample_request.h's kInlineSamples: cheaper than a
// hand-off); larger ones, and every disk-mode call, go to the work queue.
constexpr int64_t kInlineBytes = 1 << 20;

internal::WorkQueueOptions QueueOptions(
    const GraphStoreServerOptions& options) {
  internal::WorkQueueOptions queue;
  queue.num_workers =
      options.num_threads > 0
          ? options.num_threads
          : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  // One address may hold all workers but one, so another address's call
  // always finds a worker within one call of its own.
  queue.max_running_per_key = std::max(1, queue.num_workers - 1);
  queue.max_queued_per_key = options.max_queued_per_ip;
  queue.max_queued = std::max(4096, options.max_queued_per_ip);
  return queue;
}
internal::EmbeddingServiceLimits EmbeddingLimits(
    const GraphStoreServerOptions& options) {
  internal::EmbeddingServiceLimits limits;
  limits.max_ids_per_call = options.max_ids_per_call;
  limits.max_table_bytes =
      options.max_embedding_bytes > 0
          ? options.max_embedding_bytes
          : DefaultMaxEmbeddingBytes(!options.embedding_table_dir.empty());
  limits.snapshot_dir = options.embedding_snapshot_dir;
  limits.table_dir = options.embedding_table_dir;
  return limits;
}

}  // namespace

GraphStoreServer::Service::Service(const GraphStoreServerOptions& options)
    : options_(options),
      start_(absl::Now()),
      runner_(std::vector<const char*>(std::begin(kMethodNames),
                                       std::end(kMethodNames)),
              kHealth, options.auth_token, QueueOptions(options),
              [this] { return LoadedStore() != nullptr; }),
      embeddings_(EmbeddingLimits(options)) {}

internal::FeaturePortHooks GraphStoreServer::Service::feature_port_hooks() {
  internal::FeaturePortHooks hooks;
  hooks.features = &runner_.stats(kFeaturePort);
  hooks.pulls = &runner_.stats(kFeaturePortPull);
  hooks.pushes = &runner_.stats(kFeaturePortPush);
  hooks.samples = &runner_.stats(kFeaturePortSample);
  hooks.connections = &feature_port_connections_;
  hooks.embeddings = &embeddings_;
  hooks.workers = runner_.work_queue();
  return hooks;
}

internal::ServerMetricsSources GraphStoreServer::Service::MetricsSources()
    const {
  internal::ServerMetricsSources sources;
  for (int m = 0; m < kNumMethods; ++m) {
    if (m != kFeaturePort && m != kFeaturePortPull && m != kFeaturePortPush &&
        m != kFeaturePortSample) {
      sources.grpc_methods.push_back(&runner_.all_stats()[m]);
    }
  }
  sources.grpc_connections = &grpc_connections_;
  sources.feature_port_requests = &runner_.all_stats()[kFeaturePort];
  sources.feature_port_pulls = &runner_.all_stats()[kFeaturePortPull];
  sources.feature_port_pushes = &runner_.all_stats()[kFeaturePortPush];
  sources.feature_port_samples = &runner_.all_stats()[kFeaturePortSample];
  sources.feature_port_connections = &feature_port_connections_;
  return sources;
}
internal::ServerMetricsState GraphStoreServer::Service::MetricsState() {
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

ServerTotals GraphStoreServer::Service::Totals() const {
  ServerTotals t;
  for (const auto& m : runner_.all_stats()) {
    t.calls += m.calls();
    t.errors += m.errors();
    t.bytes_out += m.bytes_out();
  }
  return t;
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::Info(
    grpc::CallbackServerContext* ctx, const proto::InfoRequest* req,
    proto::InfoResponse* resp) {
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
    for (const NodeType& t : m.node_types) {
      proto::NodeTypeInfo* out = resp->add_node_types();
      out->set_name(t.name);
      out->set_count(t.count);
      out->set_feature_dim(t.feature_dim);
    }
    for (const EdgeType& e : m.edge_types) {
      proto::EdgeTypeInfo* out = resp->add_edge_types();
      out->set_src(e.src);
      out->set_relation(e.relation);
      out->set_dst(e.dst);
      out->set_count(e.count);
      out->set_feature_dim(e.feature_dim);
    }
    for (NodeId start : m.type_starts) resp->add_type_starts(start);
    resp->set_label_columns(m.label_columns);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::SampleNeighbors(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
    grpc::ByteBuffer* resp) {
  // Read once admitted, to judge the call by what it asks as the feature
  // port does (SampleIsHeavy): a whole-neighborhood sample of a few IDs may
  // be millions of neighbors. A caller without the token costs no parse. A
  // request that does not parse is refused in the call.
  struct Parsed {
    proto::SampleNeighborsRequest request;
    bool ok = false;
    std::vector<int> relation_fanouts;  // Typed samples; empty otherwise.
    absl::Status fanouts_status;        // Whether relation_fanouts parsed.
  };
  auto parsed = std::make_shared<Parsed>();
  auto judge = [this, req, parsed] {
    grpc::ByteBuffer copy(*req);  // Deserialize consumes its input.
    parsed->ok =
        grpc::SerializationTraits<proto::SampleNeighborsRequest>::Deserialize(
            &copy, &parsed->request)
            .ok();
    if (!parsed->ok) return Heavy(false);
    const size_t num_ids = parsed->request.node_ids().size() / sizeof(NodeId);
    if (parsed->request.relation_fanouts().empty()) {
      return Heavy(internal::SampleIsHeavy(num_ids, parsed->request.fanout()));
    }
    std::vector<int32_t> fanouts;
    parsed->fanouts_status =
        wire::Unpack<int32_t>(wire::View(parsed->request.relation_fanouts()),
                              "relation_fanouts", &fanouts);
    parsed->relation_fanouts.assign(fanouts.begin(), fanouts.end());
    return Heavy(
        !parsed->fanouts_status.ok() ||
        internal::TypedSampleIsHeavy(num_ids, parsed->relation_fanouts));
  };
  return runner_.Run(
      ctx, kSampleNeighbors, req, resp, judge,
      [this, parsed, resp]() -> absl::Status {
        if (!parsed->ok) {
          return absl::InvalidArgumentError(
              "SampleNeighbors: request is not a SampleNeighborsRequest");
        }
        const proto::SampleNeighborsRequest* request = &parsed->request;
        std::vector<NodeId> id_copy;
        absl::Span<const NodeId> ids;
        RETURN_IF_ERROR(ReadIds(request->node_ids(), &id_copy, &ids));
        SampledNeighbors out;
        absl::Status s;
        if (!request->relation_fanouts().empty()) {
          RETURN_IF_ERROR(parsed->fanouts_status);
          s = internal::SampleTypedWithinLimits(
              *store_, ids, parsed->relation_fanouts, request->replace(),
              request->seed(), SampleLimitsOf(options_), &out);
        } else {
          s = internal::SampleWithinLimits(*store_, ids, request->fanout(),
                                           request->replace(), request->seed(),
                                           SampleLimitsOf(options_), &out);
        }
        if (s.ok()) internal::EncodeSampled(out, resp);
        internal::SampleBufferPool::Shared().Put(std::move(out));
        return s;
      });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::GetFeatures(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
    grpc::ByteBuffer* resp) {
  const ShardStore* store = LoadedStore();
  // A typed shard's rows are as wide as the request's type: judged by the
  // widest.
  int64_t widest = store == nullptr ? 0 : store->Meta().feature_dim;
  if (store != nullptr) {
    for (const NodeType& t : store->Meta().node_types) {
      widest = std::max(widest, t.feature_dim);
    }
  }
  const int64_t bytes_out =
      static_cast<int64_t>(req->Length() / 8) * widest * 4;
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
        std::vector<NodeId> id_copy;
        absl::Span<const NodeId> ids;
        RETURN_IF_ERROR(ReadIds(request.node_ids(), &id_copy, &ids));
        const ShardMeta& meta = store_->Meta();
        const int node_type =
            request.has_node_type() ? request.node_type() : -1;
        if (request.has_node_type() &&
            (!meta.typed() || node_type < 0 ||
             static_cast<size_t>(node_type) >= meta.node_types.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node type ", request.node_type(), " is outside [0, ",
              meta.node_types.size(), ") (the shard's node types)"));
        }
        if (!request.has_node_type() && meta.typed()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "shard ", meta.part_id,
              " is typed: a typed shard's features are per node type (set "
              "node_type)"));
        }
        const int64_t dim =
            node_type >= 0
                ? meta.node_types[static_cast<size_t>(node_type)].feature_dim
                : meta.feature_dim;
        const int64_t bytes = static_cast<int64_t>(ids.size()) * dim * 4;
        if (bytes > options_.max_message_bytes - 1024) {
          return absl::ResourceExhaustedError(absl::StrFormat(
              "%d feature rows of %d floats are %.1f MiB, over the "
              "%.1f MiB message limit; request fewer IDs per call",
              ids.size(), dim, bytes / 1048576.0,
              options_.max_message_bytes / 1048576.0));
        }
        RETURN_IF_ERROR(store_->CheckOwned(ids));
        return internal::EncodeFeatures(*store_, ids, resp, node_type);
      });
}

template <typename Resp>
grpc::ServerUnaryReactor* GraphStoreServer::Service::Int64PerId(
    grpc::CallbackServerContext* ctx, int method,
    const proto::NodeIdsRequest* req, Resp* resp, ReadInt64s read,
    std::string* out, bool per_label_column) {
  return runner_.Run(
      ctx, method, req, resp,
      Heavy(static_cast<int64_t>(req->node_ids().size()) >= kInlineBytes),
      [this, req, read, out, per_label_column]() -> absl::Status {
        std::vector<NodeId> id_copy;
        absl::Span<const NodeId> ids;
        RETURN_IF_ERROR(ReadIds(req->node_ids(), &id_copy, &ids));
        const int64_t per_id =
            per_label_column ? store_->Meta().label_columns : 1;
        const int64_t bytes = static_cast<int64_t>(ids.size()) * per_id * 8;
        if (bytes > options_.max_message_bytes - 1024) {
          return absl::ResourceExhaustedError(absl::StrFormat(
              "%d rows of %d labels are %.1f MiB, over the %.1f MiB message "
              "limit; request fewer IDs per call",
              ids.size(), per_id, bytes / 1048576.0,
              options_.max_message_bytes / 1048576.0));
        }
        std::vector<int64_t> values(ids.size() * static_cast<size_t>(per_id));
        RETURN_IF_ERROR(((*store_).*read)(ids, values.data()));
        wire::Pack<int64_t>(values, out);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::GetLabels(
    grpc::CallbackServerContext* ctx, const proto::NodeIdsRequest* req,
    proto::GetLabelsResponse* resp) {
  return Int64PerId(ctx, kGetLabels, req, resp, &ShardStore::GetLabels,
                    resp->mutable_labels(), /*per_label_column=*/true);
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::GetDegrees(
    grpc::CallbackServerContext* ctx, const proto::NodeIdsRequest* req,
    proto::GetDegreesResponse* resp) {
  return Int64PerId(ctx, kGetDegrees, req, resp, &ShardStore::GetDegrees,
                    resp->mutable_degrees(), /*per_label_column=*/false);
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::GetSplit(
    grpc::CallbackServerContext* ctx, const proto::GetSplitRequest* req,
    proto::GetSplitResponse* resp) {
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

grpc::ServerUnaryReactor* GraphStoreServer::Service::Health(
    grpc::CallbackServerContext* ctx, const proto::HealthRequest* req,
    proto::HealthResponse* resp) {
  return runner_.Run(ctx, kHealth, req, resp, true, [this, resp] {
    resp->set_serving(LoadedStore() != nullptr);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::Stats(
    grpc::CallbackServerContext* ctx, const proto::StatsRequest* req,
    proto::StatsResponse* resp) {
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

grpc::ServerUnaryReactor* GraphStoreServer::Service::CreateEmbeddingTable(
    grpc::CallbackServerContext* ctx,
    const proto::CreateEmbeddingTableRequest* req,
    proto::CreateEmbeddingTableResponse* resp) {
  // A restore reads a snapshot file: off the callback thread.
  return runner_.Run(ctx, kCreateEmbeddingTable, req, resp,
                     /*heavy=*/req->restore(), [this, req, resp] {
                       return embeddings_.Create(store_->Meta(), *req, resp);
                     });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::PullEmbeddings(
    grpc::CallbackServerContext* ctx, const proto::PullEmbeddingsRequest* req,
    proto::PullEmbeddingsResponse* resp) {
  return runner_.RunDeferred(
      ctx, kPullEmbeddings, req, resp,
      [this, ctx, req, resp](std::function<void(absl::Status)> done) {
        embeddings_.Pull(req, absl::FromChrono(ctx->deadline()), resp,
                         std::move(done));
      });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::PushEmbeddingGradients(
    grpc::CallbackServerContext* ctx,
    const proto::PushEmbeddingGradientsRequest* req,
    proto::PushEmbeddingGradientsResponse* resp) {
  // Inline: a push never waits, and the pulls waiting for it must not
  // queue it behind other work.
  return runner_.Run(
      ctx, kPushEmbeddingGradients, req, resp, /*heavy=*/false,
      [this, req, resp] { return embeddings_.Push(*req, resp); });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::EmbeddingStats(
    grpc::CallbackServerContext* ctx, const proto::EmbeddingStatsRequest* req,
    proto::EmbeddingStatsResponse* resp) {
  return runner_.Run(ctx, kEmbeddingStats, req, resp, /*heavy=*/false,
                     [this, resp] {
                       embeddings_.Stats(resp);
                       return absl::OkStatus();
                     });
}

grpc::ServerUnaryReactor* GraphStoreServer::Service::SnapshotEmbeddings(
    grpc::CallbackServerContext* ctx,
    const proto::SnapshotEmbeddingsRequest* req,
    proto::SnapshotEmbeddingsResponse* resp) {
  return runner_.Run(
      ctx, kSnapshotEmbeddings, req, resp, /*heavy=*/true,
      [this, req, resp] { return embeddings_.Snapshot(*req, resp); });
}

// Decodes and bounds-checks a packed ID array.
absl::Status GraphStoreServer::Service::ReadIds(
    const std::string& bytes, std::vector<NodeId>* copy,
    absl::Span<const NodeId>* ids) const {
  RETURN_IF_ERROR(wire::CheckLength<NodeId>(wire::View(bytes), "node_ids"));
  const int64_t n = static_cast<int64_t>(bytes.size() / sizeof(NodeId));
  if (n > options_.max_ids_per_call) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", n, " IDs exceeds the limit of ",
                     options_.max_ids_per_call, " IDs per call"));
  }
  return wire::ViewOrCopy(wire::View(bytes), "node_ids", copy, ids);
}

}  // namespace shardgnn
