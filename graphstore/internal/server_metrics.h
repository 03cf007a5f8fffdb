// Prometheus metrics of a storage server (`shardgnn serve --metrics-listen`),
// served over plain HTTP at GET /metrics. The metric names and their
// meanings: docs/operations.md, "Metrics".
//
// Nothing here runs per call: the server's request paths already count into
// MethodStats and ConnectionStats (method_stats.h) for the Stats RPC and the
// shutdown summary, and a scrape reads those counters and asks the server
// for the figures that are not counters (ServerMetricsState). A server
// without a metrics address starts no exporter at all.
//
// The samples are built as prometheus-cpp's MetricFamily values and written
// by its TextSerializer (prometheus-cpp core), served by a MetricsEndpoint
// (metrics_endpoint.h): each request within 2 s, at most 64 connections at
// once and 8 from one client address, so stalled clients cannot hold off a
// scrape. A scrape is a few dozen atomic loads and a few kilobytes of text.
// prometheus-cpp's headers stay in server_metrics.cc.
//
// The endpoint has no authentication: anyone who reaches it reads the
// figures the Stats RPC answers only with the auth token (calls, errors,
// latency and bytes per method, connections, the shard's size, memory).
// Never graph data, and never the token (docs/operations.md, "Metrics").
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SERVER_METRICS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graphstore/internal/method_stats.h"

namespace shardgnn::internal {

class MetricsEndpoint;

// What a scrape asks the server at that moment.
struct ServerMetricsState {
  bool serving = false;  // False while the shard loads and once shut down.
  int part = -1;         // The "part" label; -1 while unknown (no label).
  bool in_memory = false;
  int64_t nodes = 0;  // Owned by the shard (0 until it serves).
  int64_t edges = 0;
  int64_t shared_features_bytes = 0;  // The region Info offers; 0 if none.
  int64_t block_cache_bytes = 0;      // Disk mode.
  int64_t block_cache_capacity_bytes = 0;
  int64_t grpc_connections_open = 0;
  int64_t calls_in_flight = 0;  // Admitted gRPC calls not finished.
  int64_t calls_queued = 0;     // Waiting for a worker.
  double uptime_seconds = 0;
};

// Where the exporter reads. Every pointer must be set and outlive the
// exporter.
struct ServerMetricsSources {
  std::vector<const MethodStats*> grpc_methods;  // Labelled by name().
  const ConnectionStats* grpc_connections = nullptr;
  const MethodStats* feature_port_requests = nullptr;
  // Embedding pulls and pushes over the feature port; null: none.
  const MethodStats* feature_port_pulls = nullptr;
  const MethodStats* feature_port_pushes = nullptr;
  // Samples over the feature port; null: none.
  const MethodStats* feature_port_samples = nullptr;
  const ConnectionStats* feature_port_connections = nullptr;
  // Called on the exporter's thread; must be thread-safe.
  std::function<ServerMetricsState()> state;
};

// Serves the metrics of `sources`, read at each scrape, at GET /metrics in
// the text exposition format until destroyed (HEAD too; other paths 404,
// other methods 405). Thread-safe.
class MetricsExporter {
 public:
  // Binds `listen_address`, HOST:PORT as the gRPC listen address takes it
  // (an address, "[v6 address]" or a host name; port 0 picks a free port,
  // port() tells which). INVALID_ARGUMENT for an address that is not
  // HOST:PORT, UNAVAILABLE naming the reason when it cannot be bound (in
  // use, not a local address, a name that does not resolve).
  static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(
      const std::string& listen_address, ServerMetricsSources sources);
  // Stops listening and closes the connections open; a scrape being
  // rendered finishes first.
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  int port() const;

 private:
  MetricsExporter() = default;

  ServerMetricsSources sources_;
  std::unique_ptr<MetricsEndpoint> endpoint_;  // Reads sources_.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SERVER_METRICS_H_
