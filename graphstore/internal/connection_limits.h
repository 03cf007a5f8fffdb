// How many connections the storage server holds, in all and per client
// address (docs/architecture.md, "Limits": Connections).
//
// The Listener (listener.h) accepts on both ports; the feature port counts
// the connections it serves itself, and GrpcConnections counts those handed
// to gRPC, which closes a connection's descriptor without telling.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shardgnn::internal {

// `wanted` connections for one port, kept under a quarter of the open-file
// limit (at least 8): the two ports together hold at most half of it, leaving
// the rest to the store's files, gRPC's own descriptors and the process.
int ConnectionsUnderFileLimit(int wanted);

// The gRPC connections the server accepted and handed to gRPC, counted in
// all and per client address (listener.h's PeerKey). An entry is known to be
// gone when its descriptor is closed or now names another file (its inode
// changed). Thread-safe.
class GrpcConnections {
 public:
  GrpcConnections(int max_total, int max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}

  // Records `fd` from `peer` and returns true, or false if a cap is reached
  // (counting only connections still open) or `fd` cannot be examined.
  bool Admit(int fd, const std::string& peer);
  // The connections still open (forgets those that are gone first): one
  // fstat per connection, for the metrics, not for every call.
  int Open();

 private:
  struct Entry {
    int fd;
    ino_t inode;
    std::string peer;
  };
  bool Full(const std::string& peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the entries whose connections are gone.
  void Prune() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_total_;
  const int max_per_peer_;
  absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_CONNECTION_LIMITS_H_
