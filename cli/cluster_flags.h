// Flags of the commands that run as one of several trainers against storage
// servers (`train`, `infer`): where the servers are and how to reach them,
// and how the trainers meet (torchrun's variables, flags override). One
// parser, so both commands take the same words and give the same errors.
#ifndef SHARDGNN_CLI_CLUSTER_FLAGS_H_
#define SHARDGNN_CLI_CLUSTER_FLAGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/security_flags.h"
#include "sampler/remote_graph_source.h"
#include "trainer/distributed.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

struct ClusterFlags {
  std::string servers;
  std::string cluster_file;
  std::string partition_dir;
  int rank = -1;
  int world_size = -1;
  std::string master_addr;
  int master_port = -1;
  std::string store_file;
  double timeout_seconds = 120;
  double peer_timeout_seconds = 30;
  double server_wait_seconds = 60;
  std::string hedge_after_ms = "0";  // Milliseconds, or "auto".
  SecurityFlags security;
};

// --servers, --cluster, --partition, --rank, --world-size, --master-addr,
// --master-port, --store-file, --timeout, --peer-timeout, --server-wait,
// --hedge-after-ms and the client's security flags.
void AddClusterFlags(CLI::App* cmd, ClusterFlags* flags);

// The launcher's variables (DistributedOptionsFromEnv) with the flags on top,
// checked.
absl::StatusOr<DistributedOptions> DistributedOptionsFor(
    const ClusterFlags& flags);

// Connects to the servers the flags name (checking the partition's id when
// --partition is given). `shared_memory` / `feature_port`: whether features
// may come over shared memory or the servers' feature ports.
absl::StatusOr<std::unique_ptr<RemoteGraphSource>> ConnectToServers(
    const ClusterFlags& flags, bool shared_memory, bool feature_port,
    std::vector<std::string>* addresses);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_CLUSTER_FLAGS_H_
