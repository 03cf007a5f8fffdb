#include "graphstore/internal/server_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/peak_rss.h"
#include "common/status.h"
#include "graphstore/internal/metrics_endpoint.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace shardgnn::internal {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Latency buckets: 2^k microseconds for k in [3, 25], 8 us to 33.6 s, the
// bounds MethodStats's quarter-power-of-two buckets fall on exactly.
constexpr int kFirstBucketLog2Us = 3;
constexpr int kLastBucketLog2Us = 25;

int64_t OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int64_t n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // The directory's own descriptor.
}

// Builds families whose every sample carries the "part" label first.
class Families {
 public:
  explicit Families(std::string part) : part_(std::move(part)) {}

  // A new family; samples go to the last one added.
  void Add(std::string name, std::string help, MetricType type) {
    MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    families_.push_back(std::move(f));
  }
  ClientMetric& Sample(std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric& m = families_.back().metric.emplace_back();
    m.label.push_back({"part", part_});
    for (auto& l : labels) m.label.push_back(std::move(l));
    return m;
  }
  void Counter(double value, std::vector<ClientMetric::Label> labels = {}) {
    Sample(std::move(labels)).counter.value = value;
  }
  void Gauge(double value, std::vector<ClientMetric::Label> labels = {}) {
    Sample(std::move(labels)).gauge.value = value;
  }
  // Adds a family and its one sample.
  void AddCounter(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Counter);
    Counter(value);
  }
  void AddGauge(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Gauge);
    Gauge(value);
  }

  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  std::string part_;
  std::vector<MetricFamily> families_;
};

// The request families of `prefix` (shardgnn_grpc or shardgnn_feature_port),
// one sample per entry of `methods` (with a "method" label if `by_method`).
void AddRequestFamilies(const std::string& prefix, const std::string& what,
                        const std::string& duration_help,
                        const std::vector<const MethodStats*>& methods,
                        bool by_method, Families* out) {
  auto labels = [&](const MethodStats& m) {
    std::vector<ClientMetric::Label> l;
    if (by_method) l.push_back({"method", m.name()});
    return l;
  };
  out->Add(prefix + "_requests_total", what + " answered, errors included",
           MetricType::Counter);
  for (const MethodStats* m : methods) {
    out->Counter(static_cast<double>(m->calls()), labels(*m));
  }
  out->Add(prefix + "_errors_total", what + " answered with an error, by code",
           MetricType::Counter);
  for (const MethodStats* m : methods) {
    for (int c = 1; c < MethodStats::kNumCodes; ++c) {
      const auto code = static_cast<absl::StatusCode>(c);
      const int64_t n = m->errors(code);
      if (n == 0) continue;  // Codes appear once they happen.
      auto l = labels(*m);
      l.push_back({"code", absl::StatusCodeToString(code)});
      out->Counter(static_cast<double>(n), std::move(l));
    }
  }
  out->Add(prefix + "_request_duration_seconds", duration_help,
           MetricType::Histogram);
  for (const MethodStats* m : methods) {
    ClientMetric::Histogram& h = out->Sample(labels(*m)).histogram;
    for (int k = kFirstBucketLog2Us; k <= kLastBucketLog2Us; ++k) {
      ClientMetric::Bucket b;
      b.upper_bound = std::ldexp(1.0, k) * 1e-6;
      b.cumulative_count = static_cast<uint64_t>(m->CallsUnderPowerOfTwoUs(k));
      h.bucket.push_back(b);
    }
    // Read last, so that every bucket is at most the count.
    h.sample_count = static_cast<uint64_t>(m->CallsUnderPowerOfTwoUs(32));
    ClientMetric::Bucket inf;
    inf.upper_bound = std::numeric_limits<double>::infinity();
    inf.cumulative_count = h.sample_count;
    h.bucket.push_back(inf);
    h.sample_sum = m->latency_sum_us() * 1e-6;
  }
  out->Add(prefix + "_request_bytes_total", what + ": request bytes received",
           MetricType::Counter);
  for (const MethodStats* m : methods) {
    out->Counter(static_cast<double>(m->bytes_in()), labels(*m));
  }
  out->Add(prefix + "_response_bytes_total", what + ": response bytes sent",
           MetricType::Counter);
  for (const MethodStats* m : methods) {
    out->Counter(static_cast<double>(m->bytes_out()), labels(*m));
  }
}

void AddConnectionFamilies(const std::string& prefix, const std::string& port,
                           const ConnectionStats& c, int64_t open,
                           Families* out) {
  out->AddGauge(prefix + "_connections", "Connections open on the " + port,
                static_cast<double>(open));
  out->AddCounter(prefix + "_connections_accepted_total",
                  "Connections the " + port + " accepted and served",
                  static_cast<double>(c.accepted.load()));
  out->AddCounter(prefix + "_connections_rejected_total",
                  "Connections the " + port +
                      " closed on accept (a connection cap was reached, or "
                      "the server was stopping)",
                  static_cast<double>(c.rejected.load()));
}

// Every metric of `sources` now, as prometheus-cpp's families.
std::vector<MetricFamily> Collect(const ServerMetricsSources& sources) {
  const ServerMetricsState state = sources.state();
  Families out(state.part >= 0 ? absl::StrCat(state.part) : "");
  AddRequestFamilies("shardgnn_grpc", "gRPC calls",
                     "gRPC calls: time from the start of a call's work to its "
                     "answer (time queued for a worker not included)",
                     sources.grpc_methods, /*by_method=*/true, &out);
  AddConnectionFamilies("shardgnn_grpc", "gRPC port", *sources.grpc_connections,
                        state.grpc_connections_open, &out);
  out.AddGauge("shardgnn_grpc_calls_in_flight",
               "gRPC calls admitted and not answered yet",
               static_cast<double>(state.calls_in_flight));
  out.AddGauge("shardgnn_grpc_calls_queued",
               "Large or disk-mode gRPC calls waiting for a worker",
               static_cast<double>(state.calls_queued));
  AddRequestFamilies("shardgnn_feature_port", "Feature port requests",
                     "Feature port requests: time from a request's header to "
                     "its answer ready to send (sending not included)",
                     {sources.feature_port_requests}, /*by_method=*/false,
                     &out);
  if (sources.feature_port_pulls != nullptr) {
    AddRequestFamilies("shardgnn_feature_port_pull",
                       "Embedding pulls over the feature port",
                       "Embedding pulls over the feature port: time from a "
                       "request's header to its answer ready to send (the "
                       "wait for the step clock included)",
                       {sources.feature_port_pulls}, /*by_method=*/false, &out);
  }
  if (sources.feature_port_pushes != nullptr) {
    AddRequestFamilies(
        "shardgnn_feature_port_push", "Embedding pushes over the feature port",
        "Embedding pushes over the feature port: time from a "
        "request's header to its gradients applied (or held "
        "for the step)",
        {sources.feature_port_pushes}, /*by_method=*/false, &out);
  }
  if (sources.feature_port_samples != nullptr) {
    AddRequestFamilies(
        "shardgnn_feature_port_sample", "Samples over the feature port",
        "Samples over the feature port: time from a request's "
        "header to its answer ready to send",
        {sources.feature_port_samples}, /*by_method=*/false, &out);
  }
  const ConnectionStats& fp = *sources.feature_port_connections;
  AddConnectionFamilies("shardgnn_feature_port", "feature port", fp,
                        fp.open.load(), &out);

  out.AddGauge("shardgnn_server_serving",
               "1 once the shard is loaded and served, 0 while it loads "
               "or the server shuts down",
               state.serving ? 1 : 0);
  out.AddGauge("shardgnn_server_uptime_seconds",
               "Seconds since the server bound its port", state.uptime_seconds);
  out.AddGauge("shardgnn_shard_in_memory",
               "1 in memory mode (serve --memory), 0 in disk mode",
               state.in_memory ? 1 : 0);
  out.AddGauge("shardgnn_shard_nodes", "Nodes the served shard owns",
               static_cast<double>(state.nodes));
  out.AddGauge("shardgnn_shard_edges",
               "Edges (neighbor list entries) of the served shard",
               static_cast<double>(state.edges));
  out.AddGauge("shardgnn_shard_shared_features_bytes",
               "Size of the sealed feature region trainers on this machine "
               "may map (memory mode); 0 if none is offered",
               static_cast<double>(state.shared_features_bytes));
  out.AddGauge("shardgnn_shard_block_cache_bytes",
               "Bytes held by the RocksDB block cache (disk mode)",
               static_cast<double>(state.block_cache_bytes));
  out.AddGauge("shardgnn_shard_block_cache_capacity_bytes",
               "Capacity of the RocksDB block cache (disk mode, serve "
               "--cache-mb)",
               static_cast<double>(state.block_cache_capacity_bytes));
  out.AddGauge("process_resident_memory_bytes",
               "Resident memory of the server process",
               static_cast<double>(ResidentBytes()));
  out.AddGauge("process_open_fds", "Open file descriptors of the process",
               static_cast<double>(OpenFds()));
  return out.Take();
}

std::string RenderMetrics(const ServerMetricsSources& sources) {
  return prometheus::TextSerializer().Serialize(Collect(sources));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& listen_address, ServerMetricsSources sources) {
  auto exporter = std::unique_ptr<MetricsExporter>(new MetricsExporter());
  exporter->sources_ = std::move(sources);
  ASSIGN_OR_RETURN(exporter->endpoint_,
                   MetricsEndpoint::Start(listen_address, [e = exporter.get()] {
                     return RenderMetrics(e->sources_);
                   }));
  return exporter;
}

// endpoint_ goes first (the members' reverse order): its thread, the one
// reader of sources_, is joined before they go.
MetricsExporter::~MetricsExporter() = default;

int MetricsExporter::port() const { return endpoint_->port(); }

}  // namespace shardgnn::internal
