#include "sampler/embedding_rows.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/buffers.h"
#include "common/npy.h"
#include "common/status.h"
#include "sampler/internal/replica_set.h"
#include "sampler/remote_graph_source.h"

namespace shardgnn {
namespace {

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class LocalRows final : public LearnableRows {
 public:
  LocalRows(std::shared_ptr<EmbeddingTable> table, int trainer, int staleness,
            absl::Duration wait, std::string snapshot_dir)
      : table_(std::move(table)),
        trainer_(trainer),
        staleness_(staleness),
        wait_(wait),
        snapshot_dir_(std::move(snapshot_dir)) {}

  const EmbeddingTableConfig& config() const override {
    return table_->config();
  }
  int staleness() const override { return staleness_; }

  absl::Status Pull(absl::Span<const NodeId> nodes, int64_t step,
                    float* out) override {
    const auto t0 = Clock::now();
    RETURN_IF_ERROR(
        table_->Pull(nodes, step, staleness_, absl::Now() + wait_, out));
    stats_.rows_pulled += static_cast<int64_t>(nodes.size());
    stats_.bytes_pulled +=
        static_cast<int64_t>(nodes.size() * sizeof(float)) * dim();
    stats_.pull_seconds += SecondsSince(t0);
    return absl::OkStatus();
  }

  absl::Status Push(int64_t step, absl::Span<const NodeId> nodes,
                    absl::Span<const float> grads) override {
    RETURN_IF_ERROR(table_->Push(trainer_, step, nodes, grads));
    stats_.rows_pushed += static_cast<int64_t>(nodes.size());
    stats_.bytes_pushed += static_cast<int64_t>(nodes.size() * sizeof(NodeId) +
                                                grads.size() * sizeof(float));
    return absl::OkStatus();
  }

  absl::Status Flush() override { return absl::OkStatus(); }
  LearnableRowsStats stats() const override { return stats_; }

  absl::StatusOr<EmbeddingSnapshotStats> Snapshot(int epoch,
                                                  int64_t step) override {
    if (snapshot_dir_.empty()) {
      return absl::FailedPreconditionError(
          "the embedding table in this process has no snapshot directory");
    }
    return SaveEmbeddingSnapshot(*table_, snapshot_dir_, epoch, step);
  }

  absl::Status Restore(int epoch, int64_t step) override {
    std::unique_ptr<EmbeddingTable> restored;
    if (epoch == 0) {
      ASSIGN_OR_RETURN(restored, EmbeddingTable::Create(table_->config(),
                                                        table_->node_start(),
                                                        table_->node_end()));
    } else {
      ASSIGN_OR_RETURN(
          restored,
          EmbeddingTable::Load(EmbeddingSnapshotPath(snapshot_dir_, epoch),
                               table_->config(), table_->node_start(),
                               table_->node_end(), step));
    }
    return table_->Swap(*restored);
  }

 private:
  std::shared_ptr<EmbeddingTable> table_;
  const int trainer_;
  const int staleness_;
  const absl::Duration wait_;
  const std::string snapshot_dir_;
  LearnableRowsStats stats_;
};

// How long one pull call may wait for the step clock before the trainer
// looks at its own pushes' state again (RemoteRows::Pull).
constexpr absl::Duration kPullSlice = absl::Seconds(2);

class RemoteRows final : public LearnableRows {
 public:
  RemoteRows(const RemoteGraphSource* source, EmbeddingTableConfig config,
             int trainer, int staleness, absl::Duration wait)
      : source_(source),
        config_(std::move(config)),
        trainer_(trainer),
        staleness_(staleness),
        wait_(wait),
        sender_([this] { SendLoop(); }) {
    absl::MutexLock lock(&mu_);
    // The table's copies: the replicas at Connect (MakeRemoteRows created it
    // on those); one that joined later holds none, and stays out (past the
    // end of every mask).
    lost_ = source_->InitialReplicas();
  }

  ~RemoteRows() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    sender_.join();
  }

  const EmbeddingTableConfig& config() const override { return config_; }
  int staleness() const override { return staleness_; }

  absl::Status Pull(absl::Span<const NodeId> nodes, int64_t step,
                    float* out) override {
    RETURN_IF_ERROR(FirstError());
    const auto t0 = Clock::now();
    const size_t dim = static_cast<size_t>(config_.dim);
    // The wait for the clock in slices: between them, a failed push of this
    // trainer (which the others may be waiting for, as this pull may wait
    // for theirs) ends it, rather than the whole wait.
    const absl::Time give_up = absl::Now() + wait_;
    while (true) {
      const absl::Duration slice = std::max(
          std::min(kPullSlice, give_up - absl::Now()), absl::Milliseconds(1));
      RemoteGraphSource::ReplicaMask lost;
      const RemoteGraphSource::ReplicaMask* skip = Lost(&lost);
      GoneCopies gone;
      absl::Status s = source_->ForEachOwner(
          nodes, /*all_parts=*/false,
          [&](int part, int replica, GraphStoreClient& server,
              absl::Span<const NodeId> ids,
              absl::Span<const size_t> positions) -> absl::Status {
            // Each part's rows land straight in their places.
            absl::Status r = server.PullEmbeddings(
                config_, ids, step, staleness_, slice, out, positions);
            // A copy without the table (a replica restarted since, or one
            // whose restore found no snapshot) is left; a dead one the
            // replica set fails over from by itself.
            if (absl::IsNotFound(r)) gone.Add({part, replica, r});
            return r;
          },
          skip);
      if (!s.ok() && !gone.empty()) {
        // Asked again of the copies left (each drop leaves one fewer).
        RETURN_IF_ERROR(DropCopies(gone));
        continue;
      }
      if (s.ok()) break;
      // The server's "not yet" (PullEmbeddingsRequest.max_wait_ms).
      const bool not_yet =
          absl::IsFailedPrecondition(s) &&
          absl::StrContains(s.message(), "waits for pushes of trainers");
      if (!not_yet) return s;
      if (absl::Now() >= give_up) {
        return absl::DeadlineExceededError(s.message());
      }
      RETURN_IF_ERROR(FirstError());
    }
    absl::MutexLock lock(&mu_);
    stats_.rows_pulled += static_cast<int64_t>(nodes.size());
    stats_.bytes_pulled +=
        static_cast<int64_t>(nodes.size() * dim * sizeof(float));
    stats_.pull_seconds += SecondsSince(t0);
    return absl::OkStatus();
  }

  absl::Status Push(int64_t step, absl::Span<const NodeId> nodes,
                    absl::Span<const float> grads) override {
    if (grads.size() != nodes.size() * static_cast<size_t>(config_.dim)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding push of step ", step, ": ", grads.size(),
          " gradient values for ", nodes.size(), " rows of ", config_.dim));
    }
    const auto t0 = Clock::now();
    absl::MutexLock lock(&mu_);
    // At most two steps in flight: the one being sent and this one.
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.size() < 2 || !error_.ok();
    };
    mu_.Await(absl::Condition(&room));
    stats_.push_wait_seconds += SecondsSince(t0);
    if (!error_.ok()) return error_;
    // A buffer of an earlier step (its capacity kept: no fresh memory).
    PendingPush push;
    if (!free_.empty()) {
      push = std::move(free_.back());
      free_.pop_back();
    }
    push.step = step;
    // Grown with headroom: a step a little larger than any before still fits
    // (an exact fit would be reallocated, and faulted in afresh, each time).
    ReserveWithHeadroom(&push.nodes, nodes.size());
    ReserveWithHeadroom(&push.grads, grads.size());
    push.nodes.assign(nodes.begin(), nodes.end());
    push.grads.assign(grads.begin(), grads.end());
    queue_.push_back(std::move(push));
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    const auto t0 = Clock::now();
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return (queue_.empty() && !sending_) || !error_.ok();
    };
    mu_.Await(absl::Condition(&idle));
    stats_.push_wait_seconds += SecondsSince(t0);
    return error_;
  }

  LearnableRowsStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

  absl::StatusOr<EmbeddingSnapshotStats> Snapshot(int epoch,
                                                  int64_t step) override {
    RETURN_IF_ERROR(FirstError());
    absl::Mutex figures_mu;
    EmbeddingSnapshotStats out;
    RETURN_IF_ERROR(ForEachCopy(
        {},
        [&](int, int, GraphStoreClient& server, absl::Span<const NodeId>,
            absl::Span<const size_t>) -> absl::Status {
          ASSIGN_OR_RETURN(GraphStoreClient::EmbeddingSnapshotInfo info,
                           server.SnapshotEmbeddings(config_, epoch, step));
          absl::MutexLock lock(&figures_mu);
          out.rows += info.rows;
          out.bytes += info.bytes;
          out.seconds = std::max(out.seconds, info.seconds);
          return absl::OkStatus();
        }));
    return out;
  }

  // Every copy is asked, dropped ones too: those that restore are equal to
  // the others again; one that cannot (a replica restarted after the
  // snapshot, with none of that epoch) no longer holds the run's table, and
  // is dropped by every trainer at its first push or pull. (Every trainer
  // joined the table before: trainer/trainer.cc agrees on the epoch with a
  // collective first.)
  absl::Status Restore(int epoch, int64_t step) override {
    RETURN_IF_ERROR(FirstError());
    {
      absl::MutexLock lock(&mu_);
      for (std::vector<bool>& copies : lost_) {
        std::fill(copies.begin(), copies.end(), false);
      }
    }
    // A copy whose snapshot is damaged (DATA_LOSS: its checksum failed)
    // holds no table after the attempt, as one without the snapshot: it is
    // left, and the part's other copies hold the rows.
    return ForEachCopy(
        {},
        [&](int, int, GraphStoreClient& server, absl::Span<const NodeId>,
            absl::Span<const size_t>) {
          return server.CreateEmbeddingTable(config_, epoch, step);
        },
        /*damaged_is_gone=*/true);
  }

 private:
  struct PendingPush {
    int64_t step;
    std::vector<NodeId> nodes;
    std::vector<float> grads;
  };

  absl::Status FirstError() const {
    absl::MutexLock lock(&mu_);
    return error_;
  }

  // A copy of the table that failed a call, and how.
  struct GoneCopy {
    int part;
    int replica;
    absl::Status why;
  };

  // The copies one call found gone, collected from its per-part threads.
  class GoneCopies {
   public:
    void Add(GoneCopy gone) {
      absl::MutexLock lock(&mu_);
      list_.push_back(std::move(gone));
    }
    bool empty() const {
      absl::MutexLock lock(&mu_);
      return list_.empty();
    }
    std::vector<GoneCopy> Take() {
      absl::MutexLock lock(&mu_);
      return std::move(list_);
    }

   private:
    mutable absl::Mutex mu_;
    std::vector<GoneCopy> list_ ABSL_GUARDED_BY(mu_);
  };

  // The copies this trainer left, as a mask for ForEachOwner/ForEachReplica,
  // in `*mask`: always one, since replicas that joined after Connect (past
  // its ends) hold no copy.
  const RemoteGraphSource::ReplicaMask* Lost(
      RemoteGraphSource::ReplicaMask* mask) const {
    absl::MutexLock lock(&mu_);
    *mask = lost_;
    return mask;
  }

  // DropCopy on each of `gone`; the first error.
  absl::Status DropCopies(GoneCopies& gone) {
    absl::Status first;
    for (const GoneCopy& g : gone.Take()) {
      absl::Status s = DropCopy(g);
      if (first.ok()) first = s;
    }
    return first;
  }

  // Stops using `gone`'s copy when another copy of its part is still in use
  // (a line on stderr); otherwise returns its error: the part's rows are lost
  // with it, and the run rolls back to its last checkpoint.
  absl::Status DropCopy(const GoneCopy& gone) {
    absl::MutexLock lock(&mu_);
    if (gone.replica < 0 || static_cast<size_t>(gone.part) >= lost_.size() ||
        static_cast<size_t>(gone.replica) >= lost_[gone.part].size()) {
      return gone.why;
    }
    std::vector<bool>& copies = lost_[static_cast<size_t>(gone.part)];
    if (copies[static_cast<size_t>(gone.replica)]) return absl::OkStatus();
    const int left =
        static_cast<int>(std::count(copies.begin(), copies.end(), false)) - 1;
    if (left <= 0) return gone.why;
    copies[static_cast<size_t>(gone.replica)] = true;
    ++stats_.copies_dropped;
    const std::string address =
        source_->replicas(gone.part)[static_cast<size_t>(gone.replica)].address;
    std::fprintf(stderr,
                 "shardgnn: embedding table %s: trainer %d leaves the copy of "
                 "part %d's rows on %s (%s); the other %d replica(s) of the "
                 "part hold them for the rest of the run\n",
                 config_.name.c_str(), trainer_, gone.part, address.c_str(),
                 std::string(gone.why.message()).c_str(), left);
    return absl::OkStatus();
  }

  // Runs fn on every copy of each part this trainer still uses
  // (RemoteGraphSource::ForEachReplica); a copy that fails as a gone one does
  // (the replica failed, or holds no table: NOT_FOUND; with
  // `damaged_is_gone`, DATA_LOSS too) is dropped (DropCopy), and the part's
  // other copies go on.
  absl::Status ForEachCopy(absl::Span<const NodeId> nodes,
                           const RemoteGraphSource::OwnerCall& fn,
                           bool damaged_is_gone = false) {
    RemoteGraphSource::ReplicaMask lost;
    const RemoteGraphSource::ReplicaMask* skip = Lost(&lost);
    GoneCopies gone;
    absl::Status s = source_->ForEachReplica(
        nodes,
        [&](int part, int replica, GraphStoreClient& server,
            absl::Span<const NodeId> ids,
            absl::Span<const size_t> positions) -> absl::Status {
          absl::Status r = fn(part, replica, server, ids, positions);
          if (!r.ok() &&
              (internal::IsReplicaFailure(r) || absl::IsNotFound(r) ||
               (damaged_is_gone && absl::IsDataLoss(r)))) {
            gone.Add({part, replica, r});
            return absl::OkStatus();
          }
          return r;
        },
        skip);
    absl::Status dropped = DropCopies(gone);
    return s.ok() ? dropped : s;
  }

  // Sends the queued pushes in step order, each to every server at once.
  void SendLoop() {
    while (true) {
      PendingPush push;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || (!queue_.empty() && error_.ok());
        };
        mu_.Await(absl::Condition(&ready));
        if (stopping_) return;
        push = std::move(queue_.front());
        queue_.pop_front();
        sending_ = true;
      }
      const size_t dim = static_cast<size_t>(config_.dim);
      part_grads_.resize(static_cast<size_t>(source_->book().num_parts()));
      // To every replica of each owning part: each holds a copy.
      absl::Status s = ForEachCopy(
          push.nodes,
          [&](int part, int, GraphStoreClient& server,
              absl::Span<const NodeId> ids,
              absl::Span<const size_t> positions) -> absl::Status {
            std::vector<float>& grads = part_grads_[static_cast<size_t>(part)];
            ReserveWithHeadroom(&grads, ids.size() * dim);
            grads.resize(ids.size() * dim);
            for (size_t i = 0; i < ids.size(); ++i) {
              std::memcpy(grads.data() + i * dim,
                          push.grads.data() + positions[i] * dim,
                          dim * sizeof(float));
            }
            return server.PushEmbeddingGradients(config_, trainer_, push.step,
                                                 ids, grads);
          });
      absl::MutexLock lock(&mu_);
      sending_ = false;
      if (!s.ok() && error_.ok()) {
        error_ = absl::Status(
            s.code(), absl::StrCat("pushing the embedding gradient of step ",
                                   push.step, ": ", s.message()));
      }
      stats_.rows_pushed += static_cast<int64_t>(push.nodes.size());
      stats_.bytes_pushed +=
          static_cast<int64_t>(push.nodes.size() * sizeof(NodeId) +
                               push.grads.size() * sizeof(float));
      free_.push_back(std::move(push));
    }
  }

  const RemoteGraphSource* source_;
  const EmbeddingTableConfig config_;
  const int trainer_;
  const int staleness_;
  const absl::Duration wait_;
  mutable absl::Mutex mu_;
  std::deque<PendingPush> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingPush> free_ ABSL_GUARDED_BY(mu_);  // Sent, for reuse.
  // Each part's gradient rows of the push being sent (sender thread only).
  std::vector<std::vector<float>> part_grads_;
  // The copies (replicas of a part) this trainer no longer uses,
  // [part][replica]: gone from pushes, pulls and snapshots until a restore.
  RemoteGraphSource::ReplicaMask lost_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  LearnableRowsStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread sender_;  // Last: started once the rest is built.
};

}  // namespace

absl::StatusOr<int> ParseEmbeddingSync(const std::string& text) {
  if (text == "sync") return 0;
  if (text == "async") return -1;
  int k = 0;
  if (absl::StartsWith(text, "bounded:") &&
      absl::SimpleAtoi(text.substr(8), &k) && k >= 0 && k <= 1000000) {
    return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--embedding-sync: '", text,
      "' is not one of sync, async, bounded:K (K a number of steps >= 0)"));
}

std::string EmbeddingSyncName(int staleness) {
  if (staleness < 0) return "async";
  if (staleness == 0) return "sync";
  return absl::StrCat("bounded:", staleness);
}

std::unique_ptr<LearnableRows> MakeLocalRows(
    std::shared_ptr<EmbeddingTable> table, int trainer, int staleness,
    absl::Duration wait, std::string snapshot_dir) {
  return std::make_unique<LocalRows>(std::move(table), trainer, staleness, wait,
                                     std::move(snapshot_dir));
}

absl::StatusOr<std::unique_ptr<LearnableRows>> MakeRemoteRows(
    const RemoteGraphSource* source, const EmbeddingTableConfig& config,
    int trainer, int staleness, absl::Duration wait) {
  RETURN_IF_ERROR(ValidateEmbeddingConfig(config));
  if (trainer < 0 || trainer >= config.num_trainers) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer ", trainer, " outside [0, ", config.num_trainers,
                     ") for the embedding table"));
  }
  // On every copy (each replica of a part holds one), strictly: a copy this
  // trainer could not create the table on, another trainer might, and then
  // wait there for this one's pushes.
  const RemoteGraphSource::ReplicaMask copies = source->InitialReplicas();
  RETURN_IF_ERROR(source->ForEachReplica(
      {},
      [&](int, int, GraphStoreClient& server, absl::Span<const NodeId>,
          absl::Span<const size_t>) {
        return server.CreateEmbeddingTable(config);
      },
      &copies));
  return std::unique_ptr<LearnableRows>(
      new RemoteRows(source, config, trainer, staleness, wait));
}

absl::Status WriteLearnedEmbeddings(LearnableRows& rows, int64_t num_nodes,
                                    int64_t step,
                                    const std::vector<NodeId>& orig_ids,
                                    const std::string& path) {
  // inverse[o]: the node whose original ID is o.
  std::vector<NodeId> inverse(static_cast<size_t>(num_nodes));
  if (orig_ids.empty()) {
    for (int64_t v = 0; v < num_nodes; ++v) inverse[static_cast<size_t>(v)] = v;
  } else {
    if (static_cast<int64_t>(orig_ids.size()) != num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("the original IDs cover ", orig_ids.size(),
                       " nodes, the graph has ", num_nodes));
    }
    std::fill(inverse.begin(), inverse.end(), -1);
    for (int64_t v = 0; v < num_nodes; ++v) {
      const NodeId o = orig_ids[static_cast<size_t>(v)];
      if (o < 0 || o >= num_nodes || inverse[static_cast<size_t>(o)] >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("the original IDs are not a permutation of 0..",
                         num_nodes - 1, " (node ", v, " maps to ", o, ")"));
      }
      inverse[static_cast<size_t>(o)] = v;
    }
  }
  const std::string temp = path + ".tmp";
  ASSIGN_OR_RETURN(
      std::unique_ptr<NpyWriter> writer,
      NpyWriter::Create(temp, NpyDtype::kFloat32, {num_nodes, rows.dim()}));
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> buffer;
  absl::Status status;
  for (int64_t o = 0; o < num_nodes && status.ok(); o += kChunk) {
    const int64_t n = std::min(kChunk, num_nodes - o);
    buffer.resize(static_cast<size_t>(n * rows.dim()));
    status = rows.Pull(absl::MakeConstSpan(inverse).subspan(
                           static_cast<size_t>(o), static_cast<size_t>(n)),
                       step, buffer.data());
    if (status.ok()) status = writer->Append(buffer.data(), buffer.size());
  }
  if (status.ok()) status = writer->Close();
  if (status.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(absl::StrCat(
        path,
        ": cannot rename the written file into place: ", std::strerror(errno)));
  }
  if (!status.ok()) std::remove(temp.c_str());
  return status;
}

}  // namespace shardgnn
