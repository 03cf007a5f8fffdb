// The attacks of issue 12 against one storage server, each run on its own
// threads while bench/load's well-behaved clients keep training, from another
// client address (by default [::1], while the well-behaved clients use
// 127.0.0.1, so the server's per-address caps and fairness are what is
// measured).
//
//   idle         ~1000 idle TCP connections on each port, held for the
//                phase; at the end, how many the server had closed (caps)
//                and whether the attacker's address is served again.
//   amplify      SampleNeighbors of thousands of IDs with the largest
//                fanout, with replacement: refused before any sampling
//                (RESOURCE_EXHAUSTED).
//   flood        heavy calls under every cap (4000 IDs, fanout 1000,
//                replace: 4M samples each) on several threads.
//   bigfeatures  GetFeatures of 32 MiB over the feature port on 8
//                connections, which then stay open and idle.
//   unauth       calls without the token, with a wrong one, and feature port
//                connections that send a request instead of the handshake
//                (only against a server with a token).
//
// Not thread-safe: one thread starts and stops an attack.
#ifndef SHARDGNN_BENCH_LOAD_ATTACKS_H_
#define SHARDGNN_BENCH_LOAD_ATTACKS_H_

#include <memory>
#include <string>
#include <vector>

#include "common/types.h"
#include "nlohmann/json.hpp"

namespace shardgnn::bench {

// Where and as what an attacker reaches the server.
struct AttackTarget {
  std::string host;  // The attacker's way to the server: "::1", "127.0.0.1".
  int grpc_port = 0;
  int feature_port = 0;    // 0: none.
  std::string auth_token;  // The server's token; empty if it has none.
  NodeId node_start = 0;   // IDs the server owns: [node_start, node_end).
  NodeId node_end = 0;
  int64_t feature_dim = 0;
};

class Attack {
 public:
  virtual ~Attack() = default;
  virtual const std::string& name() const = 0;
  // Stops the attack (joins its threads, closes its connections) and
  // returns what it did and how the server answered.
  virtual nlohmann::json Stop() = 0;
};

// The names Start() knows, in the order bench/load runs them.
std::vector<std::string> AttackNames();

// Starts attack `name` against `target`; nullptr for an unknown name.
std::unique_ptr<Attack> StartAttack(const std::string& name,
                                    const AttackTarget& target);

}  // namespace shardgnn::bench

#endif  // SHARDGNN_BENCH_LOAD_ATTACKS_H_
