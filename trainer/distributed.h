// Data-parallel process groups: TCPStore rendezvous + c10d::ProcessGroupGloo,
// behind a torch-free interface.
//
// A ProcessGroup joins `world_size` trainer processes. Rank 0 hosts the
// TCPStore at MASTER_ADDR:MASTER_PORT (or all share a FileStore, store_file);
// every rank connects to it, then Gloo pairs connect directly (on 127.0.0.1
// when the master address is a loopback one). Every operation has a deadline
// (`timeout`): a peer that died or never came makes the call fail with
// DEADLINE_EXCEEDED or UNAVAILABLE naming the operation and rank, never a hang;
// a peer that stopped (no heartbeat for `peer_timeout`) makes it fail naming
// that peer. Collectives must be called by every rank in the same order. Not
// thread-safe: use a group from one thread (the training thread).
#ifndef SHARDGNN_TRAINER_DISTRIBUTED_H_
#define SHARDGNN_TRAINER_DISTRIBUTED_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Non-empty: rendezvous through this file (c10d's FileStore) instead of a
  // TCPStore hosted by rank 0 on master_port, for ranks that share a file
  // system and a machine: no store socket listens anywhere. The file must not
  // exist when the first rank starts (a stale one from another group breaks
  // the rendezvous); the last rank to leave removes it.
  std::string store_file;
  // Deadline for the rendezvous and for every collective.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  // Every rank shows it is alive by bumping a counter in the store from a
  // thread of its own, every heartbeat_interval. A rank waiting on a
  // collective looks at the others' counters and fails, naming the rank, when
  // one has not moved for peer_timeout: that process is stopped (SIGSTOP, a
  // debugger), frozen, or its host is unreachable. A rank that is only busy
  // (a long evaluation, a checkpoint) keeps its heartbeat and is waited for up
  // to `timeout`.
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(1)};
};

// Fills rank, world size and master address/port from torchrun's variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) where they are set, on top of
// `defaults`. A malformed value is an error naming the variable.
absl::StatusOr<DistributedOptions> DistributedOptionsFromEnv(
    DistributedOptions defaults);

// Checks ranges: 0 <= rank < world_size, a port in 1..65535.
absl::Status ValidateDistributedOptions(const DistributedOptions& options);

// Whether `status` is a collective that failed or timed out because of another
// trainer (it died, stalled or failed first): the cause lies elsewhere. Such
// errors carry a payload that survives being returned up unchanged.
bool IsPeerFailure(const absl::Status& status);

class ProcessGroup {
 public:
  // Rendezvous with the other ranks. Fails (after at most `timeout`) if they do
  // not all arrive.
  static absl::StatusOr<std::unique_ptr<ProcessGroup>> Connect(
      const DistributedOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int world_size() const;

  // In-place sums over all ranks.
  absl::Status AllreduceSum(float* data, int64_t count);
  absl::Status AllreduceSum(double* data, int64_t count);
  // Makes every rank's `data` equal to `root`'s.
  absl::Status Broadcast(float* data, int64_t count, int root);
  absl::Status Barrier();

 private:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_DISTRIBUTED_H_
