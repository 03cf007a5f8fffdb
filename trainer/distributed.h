// Data-parallel process groups: TCPStore rendezvous + c10d::ProcessGroupGloo,
// behind a torch-free interface.
//
// A ProcessGroup joins `world_size` trainer processes. Rank 0 hosts the
// TCPStore at MASTER_ADDR:MASTER_PORT (or the launcher already hosts it there:
// torchrun's agent store; or all share a FileStore, store_file); every rank
// connects to it, then Gloo pairs connect directly (on 127.0.0.1 when the
// master address is a loopback one). Every operation has a deadline
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
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  // This trainer's place on its machine and its machine's place in the job
  // (torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK; under Slurm
  // SLURM_LOCALID, the tasks on this node, SLURM_NODEID). They name a trainer
  // in errors; local_world_size is how many trainers share this machine's
  // cores.
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  // Where the rendezvous store is. Empty is an error (ValidateDistributed-
  // Options) unless store_file is set: DistributedOptionsFromEnv empties it
  // when Slurm starts several tasks and MASTER_ADDR is unset, so that such a
  // job refuses to start rather than run each task alone.
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // The launcher already hosts a TCPStore at master_addr:master_port
  // (torchrun's static rendezvous sets TORCHELASTIC_USE_AGENT_STORE=True):
  // every rank, rank 0 included, connects to it as a client, and no trainer
  // listens on master_port.
  bool use_agent_store = false;
  // Prefix of every key the group keeps in the store (not of the store's own
  // bookkeeping). With torchrun's agent store it is the one torch.distributed's
  // workers use, "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>", so that the
  // workers of a restarted attempt never read keys of an earlier one.
  std::string store_prefix;
  // Where rank and world size came from, for messages: "torchrun" (RANK,
  // WORLD_SIZE), "Slurm" (SLURM_PROCID, SLURM_NTASKS) or "" (the defaults).
  std::string launcher;
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

// Fills the options from the launcher's variables, on top of `defaults`:
//  - torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
//    MASTER_ADDR, MASTER_PORT; TORCHELASTIC_USE_AGENT_STORE=True selects the
//    agent's store with the key prefix of TORCHELASTIC_RESTART_COUNT, 0 when
//    unset), where they are set;
//  - when RANK and WORLD_SIZE are both unset and SLURM_PROCID is set, Slurm's:
//    rank SLURM_PROCID, world size SLURM_NTASKS, local rank SLURM_LOCALID,
//    node rank SLURM_NODEID, and the trainers on this node from
//    SLURM_TASKS_PER_NODE (or else SLURM_NTASKS_PER_NODE), read with
//    ParseSlurmTasksPerNode at index SLURM_NODEID (the first count when the
//    list is shorter). MASTER_ADDR and MASTER_PORT as above; with several
//    tasks and no MASTER_ADDR, master_addr is left empty (see there).
// A malformed value is an error naming the variable.
absl::StatusOr<DistributedOptions> DistributedOptionsFromEnv(
    DistributedOptions defaults);

// Slurm's per-node task counts ("2(x3),1" is {2, 2, 2, 1}; "4" is {4}) as a
// list, one count per node. An error (quoting `text`) unless every count is a
// positive integer and every repeat (xN) a positive integer.
absl::StatusOr<std::vector<int>> ParseSlurmTasksPerNode(absl::string_view text);

// Checks ranges: 0 <= rank < world_size, local_world_size >= 1, a port
// in 1..65535, a master address unless store_file is set (the error says how to
// give one, naming Slurm when the ranks came from it).
absl::Status ValidateDistributedOptions(const DistributedOptions& options);

// Whether `status` is a collective that failed or timed out because of another
// trainer (it died, stalled or failed first): the cause lies elsewhere. Such
// errors carry a payload that survives being returned up unchanged.
bool IsPeerFailure(const absl::Status& status);

// [begin, end) of `rank`'s share of n items among `world` ranks: contiguous,
// near-equal (sizes differ by at most one), in rank order, together all n.
// How data-parallel ranks split seed nodes and edges.
inline std::pair<int64_t, int64_t> ShareOf(int64_t n, int rank, int world) {
  return {n * rank / world, n * (rank + 1) / world};
}

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
