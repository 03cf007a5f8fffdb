#include "cli/cluster_flags.h"

#include <cmath>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/training_flags.h"
#include "common/file_util.h"
#include "common/status.h"
#include "partition/partition_book.h"

namespace shardgnn::cli {

// "a:1,b:2" and/or a file with one HOST:PORT per line ('#' starts a comment).
absl::StatusOr<std::vector<std::string>> ServerAddresses(
    const std::string& list, const std::string& file) {
  std::vector<std::string> addresses;
  for (absl::string_view a :
       absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    addresses.emplace_back(absl::StripAsciiWhitespace(a));
  }
  if (!file.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
      if (!line.empty()) addresses.emplace_back(line);
    }
  }
  if (addresses.empty())
    return absl::InvalidArgumentError(
        "no storage servers: give --servers or --cluster");
  for (const auto& a : addresses) {
    if (a.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("server address '", a, "' is not HOST:PORT"));
    }
  }
  return addresses;
}

void AddClusterFlags(CLI::App* cmd, ClusterFlags* flags) {
  cmd->add_option("--servers", flags->servers,
                  "Storage servers, HOST:PORT,... (any order)");
  cmd->add_option("--cluster", flags->cluster_file,
                  "File naming the storage servers, one HOST:PORT per line");
  cmd->add_option("--partition", flags->partition_dir,
                  "Partition directory: the servers must serve this partition "
                  "(checked by its id)");
  cmd->add_option("--rank", flags->rank, "Overrides RANK");
  cmd->add_option("--world-size", flags->world_size, "Overrides WORLD_SIZE");
  cmd->add_option("--master-addr", flags->master_addr, "Overrides MASTER_ADDR");
  cmd->add_option("--master-port", flags->master_port, "Overrides MASTER_PORT");
  cmd->add_option("--store-file", flags->store_file,
                  "Meet the other trainers through this file instead of a "
                  "TCPStore on MASTER_PORT (all on one machine; the file must "
                  "not exist yet; `run` uses it)");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Seconds before a rendezvous or collective gives up")
      ->capture_default_str();
  cmd->add_option("--peer-timeout", flags->peer_timeout_seconds,
                  "Seconds without a heartbeat from another trainer (stopped, "
                  "frozen or unreachable) before a collective fails naming it")
      ->capture_default_str();
  cmd->add_option("--server-wait", flags->server_wait_seconds,
                  "Seconds to wait for a replica of a part to come back when "
                  "every replica of it is down, before failing (0: at once)")
      ->capture_default_str();
  cmd->add_option("--hedge-after-ms", flags->hedge_after_ms,
                  "Hedged requests: a call to a part with two live replicas "
                  "or more that has not answered after this many "
                  "milliseconds is sent to another replica too, and the "
                  "first answer is used (0: off; auto: after the part's p95 "
                  "call latency, at least 5 ms)")
      ->capture_default_str();
  AddSecurityFlags(cmd, &flags->security, SecurityRole::kClient);
}

absl::StatusOr<DistributedOptions> DistributedOptionsFor(
    const ClusterFlags& flags) {
  DistributedOptions defaults;
  ASSIGN_OR_RETURN(DistributedOptions dist,
                   DistributedOptionsFromEnv(defaults));
  if (flags.rank >= 0) dist.rank = flags.rank;
  if (flags.world_size >= 0) dist.world_size = flags.world_size;
  if (!flags.master_addr.empty()) dist.master_addr = flags.master_addr;
  if (flags.master_port >= 0) dist.master_port = flags.master_port;
  dist.store_file = flags.store_file;
  if (!(flags.timeout_seconds > 0) || !(flags.peer_timeout_seconds > 0)) {
    return absl::InvalidArgumentError(
        "--timeout and --peer-timeout must be positive");
  }
  dist.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.timeout_seconds * 1000));
  dist.peer_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.peer_timeout_seconds * 1000));
  RETURN_IF_ERROR(ValidateDistributedOptions(dist));
  return dist;
}

absl::StatusOr<std::unique_ptr<RemoteGraphSource>> ConnectToServers(
    const ClusterFlags& flags, bool shared_memory, bool feature_port,
    std::vector<std::string>* addresses) {
  if (!(flags.server_wait_seconds >= 0)) {
    return absl::InvalidArgumentError("--server-wait must be 0 or more");
  }
  ASSIGN_OR_RETURN(*addresses,
                   ServerAddresses(flags.servers, flags.cluster_file));
  RemoteGraphSourceOptions source_options;
  if (!flags.partition_dir.empty()) {
    ASSIGN_OR_RETURN(PartitionManifest manifest,
                     ReadPartitionManifest(flags.partition_dir));
    source_options.expected_partition_id = manifest.partition_id;
  }
  source_options.use_shared_memory = shared_memory;
  source_options.server_wait = absl::Seconds(flags.server_wait_seconds);
  if (flags.hedge_after_ms == "auto") {
    source_options.hedge_adaptive = true;
  } else {
    double ms = 0;
    if (!absl::SimpleAtod(flags.hedge_after_ms, &ms) || !(ms >= 0) ||
        !std::isfinite(ms)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--hedge-after-ms must be a number of milliseconds (0: off) or "
          "auto, not '",
          flags.hedge_after_ms, "'"));
    }
    source_options.hedge_after = absl::Milliseconds(ms);
  }
  source_options.client.use_feature_port = feature_port;
  RETURN_IF_ERROR(ApplySecurityFlags(flags.security, &source_options.client));
  return RemoteGraphSource::Connect(*addresses, source_options);
}

}  // namespace shardgnn::cli
