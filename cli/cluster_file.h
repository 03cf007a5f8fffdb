// The cluster file of `shardgnn launch` (TOML): which hosts to reach over
// ssh, what each runs (storage servers for some parts, some trainers), where
// its files go, and the training flags the trainers share. README.md
// ("Launching on many hosts") shows one with every key.
//
// Reading is strict, as a --config file's is: an unknown key, a value of the
// wrong type, a host without an ssh destination or an address, or a part
// listed twice by one host is one error naming the file, line and column.
// Whether the parts fit the partition is checked against it later
// (CheckPartsServed), since the partition is given on the command line.
#ifndef SHARDGNN_CLI_CLUSTER_FILE_H_
#define SHARDGNN_CLI_CLUSTER_FILE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn::cli {

// One [[host]] of the cluster file, with the file-wide defaults filled in.
struct ClusterHost {
  std::string name;        // For output prefixes and messages (default: ssh).
  std::string ssh;         // The ssh destination ("node1", "user@10.0.0.1").
  std::string address;     // Where its servers listen; its trainers' interface.
  int ssh_port = 0;        // 0: ssh's own (its config, else 22).
  std::string user;        // Empty: ssh's own.
  std::string identity;    // Local private key file; empty: ssh's own.
  std::vector<int> parts;  // Parts it serves (one storage server each).
  int trainers = 0;        // Trainer processes it runs.
  std::string work_dir;    // Remote directory for partitions and runs.
  std::string binary;      // Remote path of shardgnn (or a name on PATH).
  std::map<std::string, std::string> env;  // Set for its remote processes.
  std::string where;                       // "cluster.toml:12", for messages.
};

struct ClusterSpec {
  std::string path;  // The file read.
  std::vector<ClusterHost> hosts;
  std::string ssh_config;                // ssh -F FILE; empty: ssh's own.
  std::vector<std::string> ssh_options;  // Extra ssh -o OPTION=VALUE.
  int connect_timeout_seconds = 10;      // ssh ConnectTimeout.
  // ssh ServerAliveInterval; a host silent for 3 of them is given up.
  int alive_interval_seconds = 5;
  int master_port = 29500;  // The trainers' rendezvous, on rank 0's host.
  // [train]: flag name (without "--") and value as text, by name.
  std::vector<std::pair<std::string, std::string>> train_flags;
  std::string train_where;  // "cluster.toml:30" of [train], for messages.

  int TotalTrainers() const;
};

// Parses a cluster file's text; `path` names it in errors and anchors the
// relative local paths in it (ssh_config, identity).
absl::StatusOr<ClusterSpec> ParseClusterFile(absl::string_view text,
                                             const std::string& path);
absl::StatusOr<ClusterSpec> ReadClusterFile(const std::string& path);

// That every part in [0, num_parts) is served by some host and every part a
// host lists exists. INVALID_ARGUMENT naming the file, the host and the part.
absl::Status CheckPartsServed(const ClusterSpec& spec, int num_parts);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_CLUSTER_FILE_H_
