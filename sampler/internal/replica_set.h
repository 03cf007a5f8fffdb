// The storage servers that serve one part (its replicas), as one thing to
// call: the failover half of RemoteGraphSource (docs/architecture.md,
// "Failures").
//
// Every replica holds the same shard (the caller checks partition id, part,
// node range and content checksum before building the set), and a node's
// sample is a pure function of (request seed, node), so any live replica
// answers a request exactly as any other: failing over changes no result.
//
// Run(call) runs `call` on a live replica, the one with the fewest calls in
// flight (ties go round the set). If the call fails as a dead, refusing,
// resetting or silent server does (IsReplicaFailure: UNAVAILABLE,
// DEADLINE_EXCEEDED, ...), that replica is marked down (a line on stderr when
// the set has several) and the call is run again on another live replica.
// Errors that any replica would answer alike (INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED for an answer's size, UNAUTHENTICATED, ...) are returned
// as they are. A down replica is probed in the background every
// probe_interval (Health, then Info, which must still describe the same
// shard) and rejoins when it answers: a server restarted on the same address.
//
// When no replica is live, Run waits up to options.server_wait for one to
// come back (one line on stderr saying what it waits for), then fails naming
// the part and every replica's address and last error. With server_wait zero
// and a single replica, the replica's own error is returned unchanged.
//
// Thread-safe; Run may be called from many threads at once.
#ifndef SHARDGNN_SAMPLER_INTERNAL_REPLICA_SET_H_
#define SHARDGNN_SAMPLER_INTERNAL_REPLICA_SET_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "graphstore/client.h"
#include "graphstore/shard_format.h"

namespace shardgnn::internal {

struct ReplicaSetOptions {
  // How often a down replica is probed, and how long one probe may take.
  absl::Duration probe_interval = absl::Milliseconds(500);
  absl::Duration probe_timeout = absl::Seconds(1);
  // How long Run waits for a replica to come back when none is live.
  absl::Duration server_wait = absl::ZeroDuration();
};

// Whether `s`, from a replica, says that the replica (not the request) is at
// fault, so that another replica may answer: UNAVAILABLE, DEADLINE_EXCEEDED,
// CANCELLED, ABORTED, UNKNOWN, INTERNAL and DATA_LOSS (a bad answer).
bool IsReplicaFailure(const absl::Status& s);

// One replica's state, for stats and messages.
struct ReplicaState {
  std::string address;
  bool up = true;
  int64_t calls = 0;     // Calls run on it.
  int64_t failures = 0;  // Calls that failed over from it.
  int64_t rejoins = 0;   // Times it came back after being marked down.
  std::string last_error;
};

class ReplicaSet {
 public:
  // `replicas` serve part `part` and all describe `meta`. REQUIRES: at least
  // one replica.
  ReplicaSet(int part, ShardMeta meta,
             std::vector<std::unique_ptr<GraphStoreClient>> replicas,
             ReplicaSetOptions options);
  // Stops the prober (waits for a probe in progress: at most probe_timeout
  // plus an Info call).
  ~ReplicaSet();
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Runs `call` on a live replica, failing over as described above. `call`
  // must be safe to run again on another replica after it failed on one (it
  // writes its results only where a later run overwrites them).
  absl::Status Run(
      const std::function<absl::Status(GraphStoreClient&)>& call) const;

  int part() const { return part_; }
  size_t size() const { return replicas_.size(); }
  GraphStoreClient& replica(size_t i) const { return *replicas_[i]->client; }
  // The replicas' addresses, comma-separated.
  std::string addresses() const;
  std::vector<ReplicaState> states() const;
  // Calls that failed on one replica and were run again on another.
  int64_t failovers() const { return failovers_.load(); }

 private:
  struct Replica {
    std::unique_ptr<GraphStoreClient> client;
    std::atomic<bool> up{true};
    std::atomic<int> in_flight{0};
    std::atomic<int64_t> calls{0}, failures{0}, rejoins{0};
    std::string last_error;  // Guarded by mu_.
  };

  // A live replica not in `tried`, or -1.
  int Pick(const std::vector<bool>& tried) const;
  void MarkDown(size_t r, const absl::Status& why) const;
  // The error once no replica answered.
  absl::Status AllDown(const absl::Status& last, absl::Duration waited) const;
  // Probes the down replicas until the set is destroyed.
  void ProbeLoop();
  // Whether replica r answers and still serves this part's shard; sets its
  // last error if not.
  bool Probe(size_t r);

  const int part_;
  const ShardMeta meta_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  const ReplicaSetOptions options_;
  mutable std::atomic<uint64_t> next_{0};  // Round-robin start for ties.
  mutable std::atomic<int64_t> failovers_{0};
  mutable std::atomic<bool> waiting_said_{false};

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // A replica went down or up.
  bool stop_ = false;                        // Guarded by mu_.
  std::thread prober_;                       // Last: starts once all is set.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_REPLICA_SET_H_
