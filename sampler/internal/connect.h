// Finding a partition's storage servers: the first half of
// RemoteGraphSource::Connect (sampler/remote_graph_source.h), which then
// builds its replica sets and shared-memory mappings from what this returns.
//
// ReachServers asks every address for Health, then Info, all at once (a thread
// each, health checks in slices of a second), until all have answered, the
// connect timeout passed, or every part has a server that answered and
// options.spare_replica_wait passed since. Then it checks the answers:
//   * every server serves the same partition (id and number of parts), the
//     run's if options.expected_partition_id is set, and a part within it;
//   * every part describes the same graph (nodes, feature width, classes);
//   * the replicas of a part hold the same shard (node range and content
//     checksum), and no address is given twice;
//   * the parts' node ranges tile [0, num_nodes_total) in part order.
// A server that did not answer (UNAVAILABLE, DEADLINE_EXCEEDED: a dead host,
// one still loading) is left out, in `unreached` with its client, when the
// others cover every part; a part with no server answering fails with the first
// unanswered server's error. Every other error (a bad address, a refusal, a
// failed check) fails at once, naming the address.
#ifndef SHARDGNN_SAMPLER_INTERNAL_CONNECT_H_
#define SHARDGNN_SAMPLER_INTERNAL_CONNECT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "graphstore/client.h"
#include "sampler/remote_graph_source.h"

namespace shardgnn::internal {

// A server left out: its address, why (its last error), and its client, to
// probe until it answers (RemoteGraphSource joins it to its part).
struct UnreachedServer {
  std::string address;
  std::string why;
  std::unique_ptr<GraphStoreClient> client;
};

struct ReachedServers {
  std::string partition_id;
  // Part p's nodes are [ranges[p], ranges[p + 1]); ranges.back() is the
  // graph's node count.
  std::vector<NodeId> ranges;
  // By part: its servers' clients in the order their addresses were given,
  // and the first one's Info.
  std::vector<std::vector<std::unique_ptr<GraphStoreClient>>> replicas;
  std::vector<ServerInfo> infos;
  // The servers left out, in the order their addresses were given.
  std::vector<UnreachedServer> unreached;
};

absl::StatusOr<ReachedServers> ReachServers(
    const std::vector<std::string>& addresses,
    const RemoteGraphSourceOptions& options);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_CONNECT_H_
