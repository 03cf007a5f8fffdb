// The storage server's learnable tables (issue 15): the handlers of the
// CreateEmbeddingTable, PullEmbeddings, PushEmbeddingGradients,
// SnapshotEmbeddings and EmbeddingStats calls (proto/graphstore.proto), behind
// the Service's authentication, admission and stats (graphstore/server.cc).
//
// Each table holds the rows of the nodes the shard owns
// (embedding/embedding_table.h). Every request is validated before any work:
// the table and run exist, the run's secret, byte lengths, the ID count
// against max_ids_per_call, ownership (inside EmbeddingTable), and a new
// table's arrays against max_table_bytes. A pull waits for the step clock at
// most until its call's deadline or max_pull_wait, whichever is first.
//
// Run secrets (issue 51). The auth token admits a cluster's clients; the
// run ID names a run but is public (a run directory's embedding_run.json),
// so neither tells one run's trainers from another client of the cluster. A
// table is therefore created with its run's secret (at least
// kMinRunSecretBytes, INVALID_ARGUMENT otherwise: a client older than this
// server sends none), and every call on it must carry the same secret, or
// be refused with PERMISSION_DENIED ("another run's table") before it reads
// or changes anything: pulls (the rows are the run's training state), pushes,
// snapshots, and creates (a join, or a restore, which would put the rows
// back to a snapshot or to the initial table). EmbeddingStats (names and
// figures) stays open, as Stats does. The server keeps the secret's SHA-256
// only, and compares digests in constant time (ConstantTimeEquals), so
// neither its memory nor its files give the secret away. With a snapshot
// directory the digest is also written beside the run's snapshots,
// DIR/<table>/<run ID>/run-secret.sha256 (mode 0600), when the run first
// creates the table there: a run ID stays bound to its secret after its
// table was replaced or the server restarted, so another client cannot
// create a table under that run ID and then read the run's snapshots
// (restore) or overwrite them (snapshot). Snapshots written before run
// secrets (no digest file) are adopted by the first run to create or restore
// the table.
//
// Another run (another run ID) may still replace a table of the same name,
// whatever its secret: that is how a finished, stopped or dead run's table
// is freed (servers outlive runs: `run --servers` twice in a row), and a
// server cannot tell a dead run from one between two steps (refusing while
// the table was used in the last N minutes would keep a crashed run's table
// from the run started after it for N minutes, and still only guess). The
// replaced run's next call is FAILED_PRECONDITION ("belongs to another run
// now"); its rows are lost on this server but not its snapshots, from which
// it resumes (a restore under its run ID and secret replaces the table in
// turn). So a token holder can interrupt another run, but never read its
// rows nor make it train on rows it did not write.
//
// Thread-safe.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_EMBEDDING_SERVICE_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_EMBEDDING_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "embedding/embedding_table.h"
#include "graphstore/shard_format.h"
#include "proto/graphstore.pb.h"

namespace shardgnn::internal {

// A run secret's length bounds (128 bits at least; run_secret in
// proto/graphstore.proto).
inline constexpr size_t kMinRunSecretBytes = 16;
inline constexpr size_t kMaxRunSecretBytes = 1024;
// Beside a run's snapshots: the SHA-256 of its secret, in hex.
inline constexpr char kRunSecretDigestFile[] = "run-secret.sha256";

struct EmbeddingServiceLimits {
  int64_t max_ids_per_call = int64_t{1} << 20;
  // Rows plus optimizer state of all tables (as reserved; pages are used as
  // rows are touched).
  int64_t max_table_bytes = int64_t{64} << 30;
  absl::Duration max_pull_wait = absl::Seconds(120);
  int max_waiting_pulls = 4096;
  // Snapshots: DIR/<table>/<run ID>/epoch-E.emb; empty: none (see
  // GraphStoreServerOptions::embedding_snapshot_dir).
  std::string snapshot_dir;
  // Tables in files there (disk mode; EmbeddingTable::Create); empty: in
  // memory.
  std::string table_dir;
};

// What an EmbeddingTableSpec asks for, checked (INVALID_ARGUMENT naming the
// field).
absl::StatusOr<EmbeddingTableConfig> ConfigFromSpec(
    const proto::EmbeddingTableSpec& spec);
void SpecFromConfig(const EmbeddingTableConfig& config,
                    proto::EmbeddingTableSpec* spec);

// The bytes a table of `rows` rows with `config` reserves (rows, optimizer
// state, per-row bookkeeping).
int64_t EmbeddingTableBytes(const EmbeddingTableConfig& config, int64_t rows);

class EmbeddingService {
 public:
  explicit EmbeddingService(EmbeddingServiceLimits limits);
  // Answers the waiting pulls with UNAVAILABLE and joins the thread.
  ~EmbeddingService();
  EmbeddingService(const EmbeddingService&) = delete;
  EmbeddingService& operator=(const EmbeddingService&) = delete;

  // A new table, the run's table joined, or (req.restore) the table of a
  // snapshot: NOT_FOUND naming the file if the server has none for that
  // epoch; PERMISSION_DENIED if the run's table, or its snapshots, were
  // created with another secret.
  absl::Status Create(const ShardMeta& shard,
                      const proto::CreateEmbeddingTableRequest& req,
                      proto::CreateEmbeddingTableResponse* resp);
  // Writes the run's table to the snapshot directory (see the request in
  // proto/graphstore.proto); FAILED_PRECONDITION without a snapshot
  // directory, or when the trainers' pushes are not at the step.
  absl::Status Snapshot(const proto::SnapshotEmbeddingsRequest& req,
                        proto::SnapshotEmbeddingsResponse* resp);
  // Calls `done` once with the outcome: at once, or when the clock allows
  // (from the service's thread). `req` and `resp` must live until then.
  void Pull(const proto::PullEmbeddingsRequest* req, absl::Time call_deadline,
            proto::PullEmbeddingsResponse* resp,
            std::function<void(absl::Status)> done);
  absl::Status Push(const proto::PushEmbeddingGradientsRequest& req,
                    proto::PushEmbeddingGradientsResponse* resp);
  void Stats(proto::EmbeddingStatsResponse* resp) const;
  // Answers every waiting pull with UNAVAILABLE (the server is shutting
  // down); later pulls are answered at once as usual.
  void CancelWaiting();

 private:
  // The run's table `name`: NOT_FOUND if there is none, FAILED_PRECONDITION
  // if another run's replaced it, PERMISSION_DENIED unless `secret` is the
  // run's.
  absl::StatusOr<std::shared_ptr<EmbeddingTable>> Find(
      const std::string& name, const std::string& run_id,
      const std::string& secret) const;

  // The digest of the secret run `run_id` created table `name` with, kept
  // beside its snapshots: empty if there is none (no snapshot directory, a
  // name that cannot be a file's, or a run not seen here). DATA_LOSS naming
  // the file if it cannot be read.
  absl::StatusOr<std::string> KeptDigest(const std::string& name,
                                         const std::string& run_id) const;
  // Writes `digest` there (when there is a place for it).
  absl::Status KeepDigest(const std::string& name, const std::string& run_id,
                          const std::string& digest) const;

  // DIR/<table>/<run ID> of the snapshot directory: FAILED_PRECONDITION
  // without one, INVALID_ARGUMENT for a name that is not one safe path
  // component.
  absl::StatusOr<std::string> SnapshotDir(const std::string& table,
                                          const std::string& run_id) const;

  struct Waiter {
    std::shared_ptr<EmbeddingTable> table;
    const proto::PullEmbeddingsRequest* req;
    proto::PullEmbeddingsResponse* resp;
    // The request's IDs, read in place (a copy in id_copy only if they are
    // misaligned): the request outlives the waiter.
    absl::Span<const NodeId> ids;
    std::vector<NodeId> id_copy;
    absl::Time since, deadline;
    std::function<void(absl::Status)> done;
  };
  // Reads the rows of a pull the clock allows (or fails it at its deadline).
  static absl::Status Answer(Waiter& w, absl::Time deadline);
  void WaitLoop();

  const EmbeddingServiceLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<EmbeddingTable>> tables_
      ABSL_GUARDED_BY(mu_);
  // Per table name: the SHA-256 of the run secret the table was created
  // with.
  std::map<std::string, std::string> secret_digests_ ABSL_GUARDED_BY(mu_);
  // Per table name: the epoch a resumed run's table was restored from
  // (absent for a fresh table).
  std::map<std::string, int> restored_epoch_ ABSL_GUARDED_BY(mu_);
  // Pull wait time of answered waiters, per table name.
  std::map<std::string, double> waited_seconds_ ABSL_GUARDED_BY(mu_);

  absl::Mutex snapshot_mu_;  // Held while a snapshot is written.

  absl::Mutex wait_mu_;
  std::vector<Waiter> waiting_ ABSL_GUARDED_BY(wait_mu_);
  int64_t clock_ticks_ ABSL_GUARDED_BY(wait_mu_) = 0;  // Pushes applied.
  bool stopping_ ABSL_GUARDED_BY(wait_mu_) = false;
  std::thread thread_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_EMBEDDING_SERVICE_H_
