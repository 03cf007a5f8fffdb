// How many connections the storage server holds, in all and per client
// address, and which one gives way when they are all taken
// (docs/architecture.md, "Limits": Connections).
//
// The Listener (listener.h) accepts on both ports; the feature port counts
// the connections it serves itself, and GrpcConnections counts those handed
// to gRPC, which closes a connection's descriptor without telling.
//
// The rule: one client address holds at most a share of a port
// (PerAddressCap): a quarter of the gRPC port, so three quarters always stay
// for the others, and half of the feature port, which is a fast path with
// gRPC behind it (an address turned away there loses speed, not service)
// and which a host of many trainers, all at one address under `shardgnn
// run`, fills fastest. When every connection of a port is taken, a newcomer
// takes the place of the connection idle longest (gRPC: no byte received or
// sent; feature port: waiting for its next request, never in one), provided
// it has been idle for at least kMinIdleToEvict (10 s); otherwise the
// newcomer is turned away. So a connection with recent traffic is never
// closed for a newcomer, and an attacker's idle connections go first: they
// are the idlest. 10 s is twice the deadline of an attempt of shardgnn's
// client (5 s), past which a call sends a cancel; only a gRPC call silent
// for longer by design (an embedding snapshot, a pull waiting for the step
// clock) can be cut, and only while the port is full and no connection has
// been idle longer.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardgnn::internal {

// How long a connection must have been without traffic before a newcomer
// may take its place on a full port.
inline constexpr absl::Duration kMinIdleToEvict = absl::Seconds(10);

// `wanted` connections for one port, kept under a quarter of the open-file
// limit (at least 8): the two ports together hold at most half of it, leaving
// the rest to the store's files, gRPC's own descriptors and the process.
int ConnectionsUnderFileLimit(int wanted);

// The connections one client address may hold on a port that holds
// `max_total`: `wanted`, but at most max_total / `parts` (at least 1).
int PerAddressCap(int max_total, int wanted, int parts);
// The shares of the rule above.
inline constexpr int kGrpcAddressParts = 4;
inline constexpr int kFeaturePortAddressParts = 2;

// The gRPC connections the server accepted and handed to gRPC, counted in
// all and per client address (listener.h's PeerKey). An entry is known to be
// gone when its descriptor is closed or now names another file (its inode
// changed). Thread-safe.
//
// gRPC owns the descriptors: a connection's traffic is read from the kernel
// (TCP_INFO: the time since it last received and last sent data), and an
// evicted connection is shut down (shutdown(2): its client sees it close and
// reconnects on its next call; gRPC then closes the descriptor) through a
// duplicate checked to be the same socket, never by a number gRPC may have
// closed and the process reused.
class GrpcConnections {
 public:
  // The per-address cap is PerAddressCap(max_total, max_per_peer,
  // kGrpcAddressParts).
  // `min_idle_to_evict` is the rule's idle time (tests shorten it).
  GrpcConnections(int max_total, int max_per_peer,
                  absl::Duration min_idle_to_evict = kMinIdleToEvict);

  // Records `fd` from `peer` and returns true, or returns false (the caller
  // closes `fd`) if `peer` holds its cap, if every connection is taken and
  // none has been idle for `min_idle_to_evict`, or if `fd` cannot be
  // examined. Only connections still open count. When every connection is
  // taken, the one idle longest (at least `min_idle_to_evict`) is shut down
  // and `fd` takes its place.
  bool Admit(int fd, const std::string& peer);
  // The connections still open (forgets those that are gone first): one
  // fstat per connection, for the metrics, not for every call.
  int Open();
  // Connections shut down to make room for a newcomer.
  int64_t evicted();

 private:
  struct Entry {
    int fd;
    dev_t device;
    ino_t inode;
    std::string peer;
  };
  bool PeerFull(const std::string& peer) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TotalFull() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the entries whose connections are gone.
  void Prune() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees a place: shuts down the connection idle longest, if idle long
  // enough, or forgets one found gone meanwhile. False if none can go.
  bool EvictOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(size_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_total_;
  const int max_per_peer_;
  const int64_t min_idle_ms_;
  absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);
  int64_t evicted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_
