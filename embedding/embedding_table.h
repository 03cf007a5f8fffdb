// Learnable node embeddings held by their owner (issue 15, the parameter-server
// mode): one table holds the rows of the nodes [node_start, node_end) with a
// row-wise sparse optimizer, a step clock per trainer, and the figures a
// server reports.
//
// The same class serves the storage servers (each holds its part's rows) and a
// single process (one table over every node), so a run with one trainer in
// `sync` mode computes exactly what the in-process run computes: the same
// initial rows (a function of the seed, the table's name and the node ID, not
// of which process holds the row), the same updates in the same order.
//
// Rows are created on first touch (pull or push) from that function, and the
// optimizer state of a row on its first update; the arrays are zero-filled
// pages the kernel maps only when written, so a table costs memory for the
// rows the run reaches, not for every row it could.
//
// Updates. A push carries a trainer's sparse gradient for one step: row IDs
// (duplicates allowed: their gradients are summed first) and one gradient row
// each (with config.ordered, held until every trainer has pushed the step,
// then applied in trainer order). It is validated whole before any row
// changes (every ID owned, sizes,
// every value finite): a bad push changes nothing. Rows are updated under
// striped locks, so concurrent pushes from many trainers each apply atomically
// per row and lose no update.
//
// The step clock. Trainer t's pushes carry steps 0, 1, 2, ... in order (one
// per training step, possibly with no rows, so that the clock advances). A
// push for a step already applied is acknowledged and ignored (a retried
// push); one that skips a step is refused. applied_steps() is the number of
// steps whose pushes from every trainer are applied: the minimum over the
// trainers. A pull for step s with staleness K waits until applied_steps() >=
// s - K (K = 0: every push of the steps before s is applied, synchronous
// training; K < 0: never waits, asynchronous).
//
// Thread-safe: any number of threads may pull and push at once.
#ifndef SHARDGNN_EMBEDDING_EMBEDDING_TABLE_H_
#define SHARDGNN_EMBEDDING_EMBEDDING_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/types.h"

namespace shardgnn {

enum class EmbeddingOptimizer {
  kSgd,      // row -= lr * g
  kAdagrad,  // s += g^2 (per element); row -= lr * g / (sqrt(s) + eps)
  // Per-row Adam ("lazy" Adam, as torch.optim.SparseAdam and DistDGL's
  // SparseAdam): m, v and the bias correction's step count are kept per row
  // and advance only when the row is updated.
  kAdam,
};
// "sgd", "adagrad", "adam" (ParseEmbeddingOptimizer reads them back).
const char* EmbeddingOptimizerName(EmbeddingOptimizer optimizer);
absl::StatusOr<EmbeddingOptimizer> ParseEmbeddingOptimizer(
    const std::string& name);

// What every holder of a table's rows must agree on. Trainers of one run send
// the same config to every server.
struct EmbeddingTableConfig {
  std::string name = "node";
  int64_t dim = 0;  // 1 .. kMaxEmbeddingDim.
  EmbeddingOptimizer optimizer = EmbeddingOptimizer::kAdam;
  double lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999;  // Adam.
  double eps = 1e-8;                  // Adagrad and Adam.
  // Initial rows: each element drawn from N(0, init_std^2) by a
  // counter-based generator keyed by (seed, name, node ID, column).
  double init_std = 1.0;
  uint64_t seed = 0;
  // Trainers pushing (the step clock waits for all of them); 1 .. 4096.
  int num_trainers = 1;
  // Identifies the run; a server asked for a table by a run with another ID
  // replaces the table it holds (a new run starts afresh).
  std::string run_id;
  // What proves to a storage server that a call comes from the run that
  // created the table (issue 51): the run ID is public (embedding_run.json),
  // this is not. Every trainer of the run holds the same one; empty for a
  // table in the training process, which nobody else can reach. Not a
  // setting of the table: never compared (EmbeddingConfigDifferences), never
  // written to a snapshot, never kept by a server (it keeps a digest:
  // graphstore/internal/embedding_service.h).
  std::string run_secret;
  // Apply each step's pushes together, in trainer order, once every trainer
  // has pushed that step (synchronous training): the rows then do not depend
  // on which trainer's push arrives first, which matters for Adam and
  // Adagrad (their per-row state makes updates order-dependent), so a run is
  // reproducible with any number of trainers. A step's pushes are held until
  // it is complete; the clock advances when they are applied. A push more
  // than one step beyond the complete ones is refused with
  // FAILED_PRECONDITION: a synchronous trainer pulls a step before pushing
  // it, and a replica of the part may lag the copy it pulled from by one
  // step (sampler/embedding_rows.h), so at most two steps per trainer are
  // ever held.
  bool ordered = false;
};
inline constexpr int64_t kMaxEmbeddingDim = 65536;

// INVALID_ARGUMENT naming the first field out of range.
absl::Status ValidateEmbeddingConfig(const EmbeddingTableConfig& config);
// The fields in which a and b differ, as "dim 64 != 32, lr 0.01 != 0.1";
// empty if equal.
std::string EmbeddingConfigDifferences(const EmbeddingTableConfig& a,
                                       const EmbeddingTableConfig& b);

// The initial value of row `node`, column `col` of a table with `config`
// (what a row holds before its first update).
float InitialEmbeddingValue(const EmbeddingTableConfig& config, NodeId node,
                            int64_t col);

struct EmbeddingTableStats {
  int64_t rows_pulled = 0;
  int64_t rows_pushed = 0;  // Gradient rows received (before summing).
  int64_t pulls = 0;
  int64_t pushes = 0;
  int64_t rows_touched = 0;  // Rows created so far.
  // Time pulls waited for the step clock, summed.
  double pull_wait_seconds = 0;
  // Over pulls: s - applied_steps() when the pull read the rows (0 when
  // synchronous; how stale asynchronous reads were), summed.
  int64_t staleness_sum = 0;
};

// What a snapshot file says it holds (EmbeddingTable::Save).
struct EmbeddingSnapshotHeader {
  EmbeddingTableConfig config;
  NodeId node_start = 0, node_end = 0;
  int64_t step = 0;
};
// The header of the snapshot at `path` (the rows are checked by Load):
// NOT_FOUND if there is none, DATA_LOSS naming the file if malformed.
absl::StatusOr<EmbeddingSnapshotHeader> ReadEmbeddingSnapshotHeader(
    const std::string& path);

// What a snapshot wrote.
struct EmbeddingSnapshotStats {
  int64_t rows = 0;    // Rows written (those created so far).
  int64_t bytes = 0;   // Snapshot files' bytes.
  double seconds = 0;  // Time taken.
};

// A run's snapshots of one table in `dir` (one directory per table and run)
// are DIR/epoch-E.emb.
std::string EmbeddingSnapshotPath(const std::string& dir, int epoch);
// Removes the snapshots in `dir` other than `epoch`'s and the latest one
// before it (a resume may step back one checkpoint; later ones belong to a
// timeline rolled back).
void PruneEmbeddingSnapshots(const std::string& dir, int epoch);

class EmbeddingTable {
 public:
  // The rows of nodes [node_start, node_end). INVALID_ARGUMENT on a bad
  // config or range; RESOURCE_EXHAUSTED naming the array and size if the
  // arrays cannot be reserved.
  //
  // Storage: in memory by default (anonymous pages, used as rows are
  // touched). With `backing_dir` (disk mode, for tables larger than RAM) each
  // array is a file there, reserved whole on disk at once (so a full disk is
  // this error, not a crash later), unlinked at once (nothing is left behind)
  // and mapped shared: the kernel keeps the pages in use in memory and
  // writes the others back to the file, so the table's size is bounded by the
  // disk, its speed by what of it the run touches.
  static absl::StatusOr<std::unique_ptr<EmbeddingTable>> Create(
      const EmbeddingTableConfig& config, NodeId node_start, NodeId node_end,
      const std::string& backing_dir = "");
  ~EmbeddingTable();
  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

  const EmbeddingTableConfig& config() const { return config_; }
  NodeId node_start() const { return node_start_; }
  NodeId node_end() const { return node_end_; }
  int64_t dim() const { return config_.dim; }

  // Writes the row of ids[i] to out[i * dim() ...] once the clock allows
  // (see above: step s, staleness K; K < 0 never waits). INVALID_ARGUMENT
  // naming the first ID not owned (nothing written); DEADLINE_EXCEEDED
  // naming the trainers whose pushes are missing when `deadline` passes
  // first. REQUIRES: out holds ids.size() * dim() floats.
  absl::Status Pull(absl::Span<const NodeId> ids, int64_t step, int staleness,
                    absl::Time deadline, float* out);

  // Applies trainer `trainer`'s gradient for `step` (see above): grads holds
  // ids.size() * dim() floats. INVALID_ARGUMENT for a trainer out of range,
  // a size mismatch, an ID not owned or a non-finite gradient (naming it);
  // FAILED_PRECONDITION for a step beyond the next one of that trainer. OK
  // without change for a step already applied.
  absl::Status Push(int trainer, int64_t step, absl::Span<const NodeId> ids,
                    absl::Span<const float> grads);

  // Snapshots, taken with a run's checkpoints (docs/formats.md, "Embedding
  // snapshots"). Writes the table as of `step` to `path` through a temporary
  // file, fsync and rename: the config, the node range, the step, and every
  // row created so far with its optimizer state (rows never touched are their
  // initial values, a function of the config). FAILED_PRECONDITION unless
  // every trainer's pushes have reached exactly `step` with none held: a
  // snapshot is taken at an epoch boundary, while the trainers wait for it.
  // Pulls may go on meanwhile; pushes wait until it is written.
  absl::Status Save(int64_t step, const std::string& path) const;
  // The table that Save wrote to `path` for a table with `config` over
  // [node_start, node_end) at `step`, its clock at `step`: NOT_FOUND if there
  // is no such file; FAILED_PRECONDITION naming what differs if the file
  // holds another table, run, node range or step; DATA_LOSS naming the file
  // and what is wrong if it is damaged (cut short, a checksum mismatch, an ID
  // out of range or repeated, a value not finite).
  // `backing_dir` as for Create.
  static absl::StatusOr<std::unique_ptr<EmbeddingTable>> Load(
      const std::string& path, const EmbeddingTableConfig& config,
      NodeId node_start, NodeId node_end, int64_t step,
      const std::string& backing_dir = "");
  // Exchanges rows, optimizer state, clock and figures with `other`, which
  // must have the same config and node range (INVALID_ARGUMENT otherwise).
  // REQUIRES: no other thread uses either table meanwhile.
  absl::Status Swap(EmbeddingTable& other);

  // The steps every trainer's pushes have reached (the minimum).
  int64_t applied_steps() const;
  EmbeddingTableStats stats() const;

 private:
  class Impl;
  EmbeddingTable(const EmbeddingTableConfig& config, NodeId node_start,
                 NodeId node_end, std::unique_ptr<Impl> impl);

  const EmbeddingTableConfig config_;
  const NodeId node_start_;
  const NodeId node_end_;
  std::unique_ptr<Impl> impl_;
};

// Makes `dir` if needed, writes `table` as of `step` there as the snapshot of
// `epoch` (EmbeddingTable::Save) and prunes the older ones: what a holder of
// a table does at a checkpoint. UNAVAILABLE if `dir` cannot be made; Save's
// errors otherwise. Not for concurrent calls on one directory.
absl::StatusOr<EmbeddingSnapshotStats> SaveEmbeddingSnapshot(
    const EmbeddingTable& table, const std::string& dir, int epoch,
    int64_t step);

}  // namespace shardgnn

#endif  // SHARDGNN_EMBEDDING_EMBEDDING_TABLE_H_
