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
// probe_interval (gRPC's standard health check, then Info, which must still
// describe the same shard) and rejoins when it answers: a server restarted on
// the same address.
//
// When no replica is live, Run waits up to options.server_wait for one to
// come back (one line on stderr saying what it waits for), then fails naming
// the part and every replica's address and last error. When every replica
// tried answered wrongly (DATA_LOSS: an answer that fails the client's
// checks), it fails at once, saying what was wrong: such a server passes its
// health check, so no wait would bring back a right answer. With server_wait
// zero and a single replica, the replica's own error is returned unchanged.
//
// Hedged calls (options.hedge_after, or hedge_adaptive: the p95 of this
// part's recent calls, at least hedge_floor): Call(call, hedge) with hedge on
// runs its attempts on the set's own threads; when the first has not answered
// after the hedge delay and another replica is live, a second copy goes to
// that replica, and the first answer (or an error any replica would answer
// alike) is returned. The other attempt is not cancelled (a GraphStoreClient
// call cannot be): it runs on to its answer or deadline, and its result is
// dropped; if it fails as a dead or silent server does, its replica is marked
// down. Each attempt writes its result into an object of its own, so hedged
// attempts never share an output buffer, and the caller's inputs must be
// owned by the call (see Call). Run, the zero-copy path that writes into the
// caller's buffers, is never hedged.
//
// A replica may join the set later (Join: a server that did not answer when
// the trainer connected, once it answers and describes the same shard), into
// one of the spare slots the set was made with: it is appended, so indices
// stay, and size() grows. A call uses the replicas there are when it starts;
// a mask (`skip`) made before a replica joined leaves that replica out.
//
// Thread-safe; Run and Call may be called from many threads at once. The
// destructor waits for attempts still running (hedges that lost, or whose
// caller got its answer elsewhere): at most a call deadline.
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
#include "absl/status/statusor.h"
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
  // Hedging (Call with hedge): send a second copy of a call that has not
  // answered after hedge_after; zero: off. With hedge_adaptive, the delay is
  // instead the p95 latency of this part's last 256 answered calls, at least
  // hedge_floor (100 ms until 20 calls have answered).
  absl::Duration hedge_after = absl::ZeroDuration();
  bool hedge_adaptive = false;
  absl::Duration hedge_floor = absl::Milliseconds(5);
};

// Whether `s`, from a replica, says that the replica (not the request) is at
// fault, so that another replica may answer: UNAVAILABLE, DEADLINE_EXCEEDED,
// CANCELLED, ABORTED, UNKNOWN, INTERNAL and DATA_LOSS (a bad answer).
bool IsReplicaFailure(const absl::Status& s);

// One replica's state, for stats and messages.
struct ReplicaState {
  std::string address;
  bool up = true;
  int64_t calls = 0;         // Calls run on it.
  int64_t failures = 0;      // Calls that failed over from it.
  int64_t rejoins = 0;       // Times it came back after being marked down.
  bool joined_late = false;  // Not in the set when it was made (Join).
  int in_flight = 0;         // Attempts running on it now (hedges' losers too).
  std::string last_error;
};

class ReplicaSet {
 public:
  // `replicas` serve part `part` and all describe `meta`; up to
  // `spare_slots` more may Join later. REQUIRES: at least one replica.
  ReplicaSet(int part, ShardMeta meta,
             std::vector<std::unique_ptr<GraphStoreClient>> replicas,
             ReplicaSetOptions options, size_t spare_slots = 0);
  // Stops the prober (waits for a probe in progress: at most probe_timeout
  // plus an Info call).
  ~ReplicaSet();
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Adds *client, whose server answered Info with `meta`, as a live replica
  // with the next index (size() before the call; *client is moved from), and
  // wakes calls waiting for a live replica. Otherwise *client is left as it
  // was: FAILED_PRECONDITION if `meta` is not this part's shard (partition,
  // part, node range, content checksum), ALREADY_EXISTS for an address in the
  // set, RESOURCE_EXHAUSTED when no spare slot is left.
  absl::Status Join(std::unique_ptr<GraphStoreClient>* client,
                    const ShardMeta& meta);

  // Runs `call` on a live replica, failing over as described above. `call`
  // must be safe to run again on another replica after it failed on one (it
  // writes its results only where a later run overwrites them). Runs on the
  // calling thread; never hedged. With `skip` (one flag per replica), the
  // replicas flagged are never called (a learned table's copies a trainer
  // stopped using: sampler/embedding_rows.h), nor those past its end (they
  // joined after it was made); FAILED_PRECONDITION if all are left out.
  absl::Status Run(const std::function<absl::Status(GraphStoreClient&)>& call,
                   const std::vector<bool>* skip = nullptr) const;

  // Whether a call now may be hedged: hedging is on and at least two
  // replicas are live. The caller passes the answer to Call, and prepares the
  // call's inputs accordingly.
  bool ShouldHedge() const;
  // The current hedge delay (options.hedge_after, or the adaptive one).
  absl::Duration HedgeDelay() const;

  // Runs `call` on a live replica, failing over as Run does, and returns its
  // result. Without `hedge` it runs through Run on the calling thread and the
  // result is moved out, not copied. With `hedge` it is hedged as described
  // above. REQUIRES with hedge: `call` owns (or shares ownership of)
  // everything it reads and writes except the client, since a losing
  // attempt may still run after Call returned. *answered_by, if given, gets
  // the address of the replica whose answer (or error) is returned.
  template <typename T>
  absl::StatusOr<T> Call(
      std::function<absl::StatusOr<T>(GraphStoreClient&)> call, bool hedge,
      std::string* answered_by = nullptr) const;

  int part() const { return part_; }
  // The replicas now (those made with, and those that joined since).
  size_t size() const { return size_.load(std::memory_order_acquire); }
  // The replicas the set was made with: indices [0, initial_size()).
  size_t initial_size() const { return initial_size_; }
  // REQUIRES: i < size().
  GraphStoreClient& replica(size_t i) const { return *replicas_[i]->client; }
  // The index of `client` among the replicas, or -1.
  int IndexOf(const GraphStoreClient& client) const;
  // The replicas' addresses, comma-separated.
  std::string addresses() const;
  std::vector<ReplicaState> states() const;
  // Calls that failed on one replica and were run again on another.
  int64_t failovers() const { return failovers_.load(); }
  // Second copies sent by hedged calls, and those that answered first.
  int64_t hedges_sent() const { return hedges_sent_.load(); }
  int64_t hedges_won() const { return hedges_won_.load(); }

 private:
  // One attempt of a hedged call: runs the call on the client and, on
  // success, leaves its result (a T, type-erased) in *result.
  using Attempt =
      std::function<absl::Status(GraphStoreClient&, std::shared_ptr<void>*)>;
  struct Race;
  class AttemptPool;

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
  // Every replica failed this round (the last error `last`): waits, up to
  // options.server_wait since *wait_start (set at the first wait), for one to
  // come back (one not flagged in `skipped`, if given). OK: try them all
  // again; else the AllDown error.
  absl::Status WaitForLive(absl::Time* wait_start, const absl::Status& last,
                           const std::vector<bool>* skipped = nullptr) const;
  // The hedged half of Call: the winning attempt's result in *result.
  absl::Status RunHedged(Attempt attempt, std::shared_ptr<void>* result,
                         std::string* answered_by) const;
  // Runs one attempt of `race` on replica r on the pool.
  void StartAttempt(const std::shared_ptr<Race>& race, size_t r,
                    bool hedge) const;
  // An answered call's latency, for the adaptive hedge delay.
  void RecordLatency(absl::Duration took) const;
  // Probes the down replicas until the set is destroyed.
  void ProbeLoop();
  // Whether replica r answers and still serves this part's shard; sets its
  // last error if not.
  bool Probe(size_t r);
  // Empty if `m` (from `client`'s Info) describes this part's shard, else
  // what differs.
  std::string MismatchWith(const GraphStoreClient& client,
                           const ShardMeta& m) const;

  const int part_;
  const ShardMeta meta_;
  // Every slot, filled ones first: [0, size_) hold replicas (a slot is
  // filled under mu_ before size_ is raised past it), the rest are spare.
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::atomic<size_t> size_{0};
  const ReplicaSetOptions options_;
  const size_t initial_size_;
  mutable std::atomic<uint64_t> next_{0};  // Round-robin start for ties.
  mutable std::atomic<int64_t> failovers_{0};
  mutable std::atomic<int64_t> hedges_sent_{0}, hedges_won_{0};
  mutable std::atomic<bool> waiting_said_{false};

  // Recent latencies (a ring) and their p95 in ns (-1: too few yet), for
  // hedge_adaptive.
  mutable std::mutex latency_mu_;
  mutable std::vector<int64_t> latencies_;  // Guarded by latency_mu_.
  mutable int64_t latencies_seen_ = 0;      // Guarded by latency_mu_.
  mutable std::atomic<int64_t> p95_ns_{-1};

  // Runs hedged calls' attempts; destroyed (joined) first.
  std::unique_ptr<AttemptPool> pool_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // A replica went down or up.
  bool stop_ = false;                        // Guarded by mu_.
  std::thread prober_;                       // Last: starts once all is set.
};

template <typename T>
absl::StatusOr<T> ReplicaSet::Call(
    std::function<absl::StatusOr<T>(GraphStoreClient&)> call, bool hedge,
    std::string* answered_by) const {
  if (!hedge) {
    absl::StatusOr<T> result = absl::UnknownError("no replica was called");
    const absl::Status s = Run([&](GraphStoreClient& c) {
      if (answered_by != nullptr) *answered_by = c.address();
      result = call(c);
      return result.status();
    });
    if (!s.ok()) return s;
    return result;
  }
  std::shared_ptr<void> won;
  const absl::Status s = RunHedged(
      [call = std::move(call)](GraphStoreClient& c,
                               std::shared_ptr<void>* out) -> absl::Status {
        absl::StatusOr<T> r = call(c);
        if (!r.ok()) return r.status();
        *out = std::make_shared<T>(std::move(r).value());
        return absl::OkStatus();
      },
      &won, answered_by);
  if (!s.ok()) return s;
  return std::move(*std::static_pointer_cast<T>(won));
}

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_REPLICA_SET_H_
