// GraphStoreServer::Service: the gRPC handlers of proto/graphstore.proto.
//
// Each handler hands its work to one internal::CallRunner (call_runner.h),
// which authenticates, admits, runs the work inline or on the work queue,
// records the call's statistics and finishes it with the work's status;
// the work itself validates the request (byte lengths, ID counts, fanout,
// message sizes, ownership) before it reads the store. Learned-embedding
// calls are answered by internal::EmbeddingService (embedding_service.h),
// which the feature port shares through feature_port_hooks(), as it shares
// the work queue (its large samples run on the same workers).
//
// Lifecycle: constructed by GraphStoreServer::Bind() before gRPC starts;
// until Serve() every call but Health gets UNAVAILABLE. Included only by the
// server's own files.

#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SERVICE_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "graphstore/internal/call_runner.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/method_stats.h"
#include "graphstore/internal/server_metrics.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn {

// GetFeatures and SampleNeighbors are raw methods: their large responses are
// written straight into a gRPC buffer (internal/features_codec.h) instead of
// through protobuf; their requests are parsed as protobuf messages.
class GraphStoreServer::Service final
    : public proto::GraphStore::WithRawCallbackMethod_SampleNeighbors<
          proto::GraphStore::WithRawCallbackMethod_GetFeatures<
              proto::GraphStore::CallbackService>> {
 public:
  explicit Service(const GraphStoreServerOptions& options);

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
  // What the feature port counts its requests in, answers embedding
  // requests with and runs its large samples on; the port must be shut down
  // before StopWorkers().
  internal::FeaturePortHooks feature_port_hooks();
  // The workers of large calls (GraphStoreServer::workers_for_testing).
  internal::WorkQueue* workers() { return runner_.work_queue(); }
  internal::ConnectionStats* grpc_connection_stats() {
    return &grpc_connections_;
  }

  // The counters the metrics read (internal/server_metrics.h), and the
  // figures a scrape asks for; state() is completed by the caller with what
  // the service does not know (the part label before Serve, connections).
  internal::ServerMetricsSources MetricsSources() const;
  internal::ServerMetricsState MetricsState();

  // Turns new calls away with UNAVAILABLE and waits until the calls already
  // admitted have finished or `deadline` passes. Returns true if drained.
  bool Drain(absl::Time deadline) { return runner_.Drain(deadline); }

  ServerTotals Totals() const;

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx,
                                 const proto::InfoRequest* req,
                                 proto::InfoResponse* resp) override;
  grpc::ServerUnaryReactor* SampleNeighbors(grpc::CallbackServerContext* ctx,
                                            const grpc::ByteBuffer* req,
                                            grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* GetFeatures(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* GetLabels(grpc::CallbackServerContext* ctx,
                                      const proto::NodeIdsRequest* req,
                                      proto::GetLabelsResponse* resp) override;
  grpc::ServerUnaryReactor* GetDegrees(
      grpc::CallbackServerContext* ctx, const proto::NodeIdsRequest* req,
      proto::GetDegreesResponse* resp) override;
  grpc::ServerUnaryReactor* GetSplit(grpc::CallbackServerContext* ctx,
                                     const proto::GetSplitRequest* req,
                                     proto::GetSplitResponse* resp) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* ctx,
                                   const proto::HealthRequest* req,
                                   proto::HealthResponse* resp) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx,
                                  const proto::StatsRequest* req,
                                  proto::StatsResponse* resp) override;
  grpc::ServerUnaryReactor* CreateEmbeddingTable(
      grpc::CallbackServerContext* ctx,
      const proto::CreateEmbeddingTableRequest* req,
      proto::CreateEmbeddingTableResponse* resp) override;
  grpc::ServerUnaryReactor* PullEmbeddings(
      grpc::CallbackServerContext* ctx, const proto::PullEmbeddingsRequest* req,
      proto::PullEmbeddingsResponse* resp) override;
  grpc::ServerUnaryReactor* PushEmbeddingGradients(
      grpc::CallbackServerContext* ctx,
      const proto::PushEmbeddingGradientsRequest* req,
      proto::PushEmbeddingGradientsResponse* resp) override;
  grpc::ServerUnaryReactor* EmbeddingStats(
      grpc::CallbackServerContext* ctx, const proto::EmbeddingStatsRequest* req,
      proto::EmbeddingStatsResponse* resp) override;
  grpc::ServerUnaryReactor* SnapshotEmbeddings(
      grpc::CallbackServerContext* ctx,
      const proto::SnapshotEmbeddingsRequest* req,
      proto::SnapshotEmbeddingsResponse* resp) override;

 private:
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

  // GetLabels and GetDegrees: one int64 per requested ID (GetLabels,
  // per_label_column: the shard's label_columns per ID), read from the store
  // by `read` and packed into `*out` (a field of *resp).
  using ReadInt64s = absl::Status (ShardStore::*)(absl::Span<const NodeId>,
                                                  int64_t*) const;
  template <typename Resp>
  grpc::ServerUnaryReactor* Int64PerId(grpc::CallbackServerContext* ctx,
                                       int method,
                                       const proto::NodeIdsRequest* req,
                                       Resp* resp, ReadInt64s read,
                                       std::string* out, bool per_label_column);

  // Bounds-checks a packed ID array and reads it in place (*ids views
  // `bytes`, which must outlive it) or, if misaligned, through *copy.
  absl::Status ReadIds(const std::string& bytes, std::vector<NodeId>* copy,
                       absl::Span<const NodeId>* ids) const;

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

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SERVICE_H_
