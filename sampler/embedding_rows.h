// Learnable input rows (issue 15; ../shared/DESIGN.md, "Input rows"): a
// minibatch's input nodes take rows of a learnable node embedding table
// besides (or instead of) their stored features. The trainer pulls the rows
// of a batch's input nodes before its forward pass and pushes their gradient
// after backward; the table's owner applies it with a sparse optimizer
// (embedding/embedding_table.h).
//
// Two holders: the table in this process (MakeLocalRows, `train` on a dataset
// directory), and the storage servers, each holding the rows of the nodes it
// owns (MakeRemoteRows): pulls are grouped by owner and sent to all owners
// at once, as feature fetches are; each step's push goes to every server
// (with no rows for a server that owns none of the batch's nodes), so every
// server's step clock advances.
//
// Update modes (`--embedding-sync`), a staleness K: a pull for step s sees
// every push of the steps before s - K from every trainer. K = 0 (`sync`):
// with one trainer the run computes exactly what the in-process run does.
// K > 0 (`bounded:K`): stale synchronous parallel. K < 0 (`async`): pulls
// never wait.
//
// Thread-compatible: one trainer's training thread calls Pull and Push in
// step order (evaluation pulls too); pushes are sent by a thread of the
// remote holder, at most two steps behind.
#ifndef SHARDGNN_SAMPLER_EMBEDDING_ROWS_H_
#define SHARDGNN_SAMPLER_EMBEDDING_ROWS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "embedding/embedding_table.h"

namespace shardgnn {

class RemoteGraphSource;

// "sync" (0), "async" (-1), "bounded:K" (K >= 0).
absl::StatusOr<int> ParseEmbeddingSync(const std::string& text);
std::string EmbeddingSyncName(int staleness);

struct LearnableRowsStats {
  int64_t rows_pulled = 0;
  int64_t rows_pushed = 0;
  int64_t bytes_pulled = 0;  // Row bytes received (or copied, in process).
  int64_t bytes_pushed = 0;  // ID and gradient bytes sent.
  double pull_seconds = 0;   // In Pull, waits for the clock included.
  // Time Push and Flush waited for earlier pushes to be sent.
  double push_wait_seconds = 0;
  // Copies of the table (replicas of a part) this trainer stopped using
  // because they failed (MakeRemoteRows).
  int64_t copies_dropped = 0;
};

class LearnableRows {
 public:
  virtual ~LearnableRows() = default;
  virtual const EmbeddingTableConfig& config() const = 0;
  int64_t dim() const { return config().dim; }
  // The update mode's staleness (see above).
  virtual int staleness() const = 0;

  // Writes the rows of `nodes` as the mode allows at `step` to
  // out + i * dim(). INVALID_ARGUMENT for a node outside the graph;
  // DEADLINE_EXCEEDED naming the trainers a synchronous pull waited for.
  virtual absl::Status Pull(absl::Span<const NodeId> nodes, int64_t step,
                            float* out) = 0;
  // Hands over this trainer's gradient of `step` (steps in order from 0,
  // each once; `grads` holds nodes.size() * dim() floats; nodes may repeat
  // and may be empty), copied before it returns (into buffers reused from
  // step to step). May return before the owners applied it; the error of an
  // earlier push is returned by a later Push, Pull or Flush.
  virtual absl::Status Push(int64_t step, absl::Span<const NodeId> nodes,
                            absl::Span<const float> grads) = 0;
  // Waits until every push handed over is applied; the first error.
  virtual absl::Status Flush() = 0;
  virtual LearnableRowsStats stats() const = 0;

  // Checkpoints (a resumed run; a server restarted mid-run). One trainer of
  // the run calls these while the others wait for it (a barrier before and
  // after), at an epoch boundary.
  //
  // Has every holder write its table as of `step` as the snapshot of `epoch`
  // (embedding/embedding_table.h, EmbeddingTable::Save): every trainer's
  // pushes of the steps before `step` applied and none beyond, so each
  // trainer has Flush()ed before. FAILED_PRECONDITION if a holder keeps no
  // snapshots (a server without --embedding-dir). The figures are summed
  // over the holders (seconds: the longest holder's).
  virtual absl::StatusOr<EmbeddingSnapshotStats> Snapshot(int epoch,
                                                          int64_t step) = 0;
  // Puts every holder's table back to the snapshot of `epoch` taken at
  // `step` (epoch 0: the initial table), replacing whatever it holds now;
  // NOT_FOUND naming the holder and file if one has no such snapshot.
  virtual absl::Status Restore(int epoch, int64_t step) = 0;
};

// A table in this process (over every node), for trainer `trainer` of the
// table's config().num_trainers; trainers in threads of one process may
// share it (each with its own LearnableRows). A pull waits at most `wait`
// for the step clock. Snapshots go to `snapshot_dir`/epoch-E.emb (made when
// needed; empty: Snapshot is refused).
std::unique_ptr<LearnableRows> MakeLocalRows(
    std::shared_ptr<EmbeddingTable> table, int trainer, int staleness,
    absl::Duration wait = absl::Seconds(120), std::string snapshot_dir = "");

// The table on the storage servers behind `source` (which must outlive the
// result): creates it on every server (or joins the run's table: every
// trainer of a run passes the same config; FAILED_PRECONDITION naming the
// differences otherwise). `trainer` is this trainer's rank in [0,
// config.num_trainers). A pull waits at most `wait` for the step clock.
// Replicas: every replica of a part holds a copy of the part's rows; creates,
// pushes, snapshots and restores go to each (RemoteGraphSource::
// ForEachReplica), pulls to any live one. In `sync` the copies apply the same
// pushes in the same order and stay equal, bit for bit (a copy may lag the
// one a pull read by a step, as another trainer's push reaches the copies at
// different times: it holds a push of the step after its incomplete one,
// EmbeddingTableConfig::ordered); in `bounded:K` and
// `async` pushes of different trainers may reach them in other orders, so
// they may differ by float rounding.
//
// Failover: a copy that fails a push or a snapshot as a dead server does
// (internal::IsReplicaFailure), or answers a push, pull or snapshot with
// NOT_FOUND (a replica restarted since holds no table), is dropped by this
// trainer for the rest of the run when another copy of its part is still in
// use: it missed a push, so it is never read again (a line on stderr;
// stats().copies_dropped). Every trainer drops it at its own next push, and
// a restarted replica answers NOT_FOUND to every trainer, so the trainers
// agree. The run goes on from the other copies and computes what it would
// have (in `sync`, bit for bit). Losing the last copy of a part fails the
// push, and the run rolls back to its last checkpoint, as with a single
// server. Restore asks every copy, dropped ones too: a copy that restores is
// used again; one without that epoch's snapshot, or whose snapshot is
// damaged (its checksum fails: DATA_LOSS, said on stderr as the copy is left),
// is dropped, and the part's other copies hold the rows; every copy of a part
// damaged fails the restore, naming the file. Creating the
// table needs every copy (one left out there could be joined by another
// trainer later, which would then wait for this one's pushes there). A copy
// that fails one trainer's pushes but not another's (a network split between
// them) is still used by the other trainer, whose pulls there then wait for
// the first one's pushes until `wait` and fail: the run rolls back.
absl::StatusOr<std::unique_ptr<LearnableRows>> MakeRemoteRows(
    const RemoteGraphSource* source, const EmbeddingTableConfig& config,
    int trainer, int staleness, absl::Duration wait = absl::Seconds(120));

// Writes every row of `rows` as of `step` to `path` (.npy, float32
// [num_nodes, dim]), in chunks: row o of the file is node o's row in the
// original (dataset) ID order, where orig_ids[v] is the original ID of node v
// (a partition's orig_ids.npy; empty: the IDs are the original ones). Written
// to a temporary name and renamed when complete; INVALID_ARGUMENT if
// orig_ids is not a permutation of [0, num_nodes).
absl::Status WriteLearnedEmbeddings(LearnableRows& rows, int64_t num_nodes,
                                    int64_t step,
                                    const std::vector<NodeId>& orig_ids,
                                    const std::string& path);

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_EMBEDDING_ROWS_H_
