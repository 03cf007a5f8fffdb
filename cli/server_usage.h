// What a distributed run's leader records of its storage servers at every
// epoch line (issue 17): their minor page faults and CPU time, from Stats.
#ifndef SHARDGNN_CLI_SERVER_USAGE_H_
#define SHARDGNN_CLI_SERVER_USAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/cluster_flags.h"
#include "trainer/trainer.h"

namespace shardgnn::cli {

struct ServersUsage {
  int64_t minor_faults = 0;
  double cpu_seconds = 0;
};

// `report` with each epoch's server_minor_faults and server_cpu_seconds: the
// servers' (every address in `addresses`) since the previous epoch ended
// (the first: since training started), also kept in *record by epoch (unset
// where a server did not answer, or was restarted in between). A server's
// calls give up after 2 s: a dead one delays an epoch line no longer.
absl::StatusOr<std::function<void(const EpochStats&)>> WithServerUsage(
    const ClusterFlags& cluster, const std::vector<std::string>& addresses,
    std::function<void(const EpochStats&)> report,
    std::shared_ptr<std::vector<std::optional<ServersUsage>>> record);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_SERVER_USAGE_H_
