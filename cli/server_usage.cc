#include "cli/server_usage.h"

#include <algorithm>
#include <utility>

#include "cli/security_flags.h"
#include "common/status.h"
#include "graphstore/client.h"

namespace shardgnn::cli {
namespace {

// The servers' minor page faults and CPU seconds so far, summed; nullopt if
// one does not answer.
std::optional<ServersUsage> UsageOf(
    const std::vector<std::unique_ptr<GraphStoreClient>>& servers) {
  ServersUsage sum;
  for (const auto& server : servers) {
    absl::StatusOr<ServerStats> stats = server->Stats();
    if (!stats.ok()) return std::nullopt;
    sum.minor_faults += stats->minor_faults;
    sum.cpu_seconds += stats->cpu_seconds;
  }
  return sum;
}

}  // namespace

absl::StatusOr<std::function<void(const EpochStats&)>> WithServerUsage(
    const ClusterFlags& cluster, const std::vector<std::string>& addresses,
    std::function<void(const EpochStats&)> report,
    std::shared_ptr<std::vector<std::optional<ServersUsage>>> record) {
  GraphStoreClientOptions options;
  RETURN_IF_ERROR(ApplySecurityFlags(cluster.security, &options));
  options.call_timeout = absl::Seconds(2);
  options.overall_timeout = absl::Seconds(2);
  auto servers =
      std::make_shared<std::vector<std::unique_ptr<GraphStoreClient>>>();
  for (const std::string& address : addresses) {
    ASSIGN_OR_RETURN(std::unique_ptr<GraphStoreClient> client,
                     GraphStoreClient::Connect(address, options));
    servers->push_back(std::move(client));
  }
  auto last = std::make_shared<std::optional<ServersUsage>>(UsageOf(*servers));
  return [servers, report = std::move(report), record,
          last](const EpochStats& s) {
    EpochStats with = s;
    const std::optional<ServersUsage> now = UsageOf(*servers);
    std::optional<ServersUsage> used;
    if (now && *last && now->minor_faults >= (*last)->minor_faults &&
        now->cpu_seconds >= (*last)->cpu_seconds) {
      used = ServersUsage{now->minor_faults - (*last)->minor_faults,
                          now->cpu_seconds - (*last)->cpu_seconds};
      with.server_minor_faults = used->minor_faults;
      with.server_cpu_seconds = used->cpu_seconds;
    }
    *last = now;
    if (s.epoch >= 1) {
      record->resize(std::max(record->size(), static_cast<size_t>(s.epoch)));
      (*record)[static_cast<size_t>(s.epoch - 1)] = used;
    }
    report(with);
  };
}

}  // namespace shardgnn::cli
