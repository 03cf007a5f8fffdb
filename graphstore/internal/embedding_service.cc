#include "graphstore/internal/embedding_service.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/buffers.h"
#include "common/file_util.h"
#include "common/status.h"
#include "graphstore/internal/wire.h"

namespace shardgnn::internal {

absl::StatusOr<EmbeddingTableConfig> ConfigFromSpec(
    const proto::EmbeddingTableSpec& spec) {
  EmbeddingTableConfig config;
  config.name = spec.name();
  config.dim = spec.dim();
  ASSIGN_OR_RETURN(config.optimizer, ParseEmbeddingOptimizer(spec.optimizer()));
  config.lr = spec.lr();
  config.beta1 = spec.beta1();
  config.beta2 = spec.beta2();
  config.eps = spec.eps();
  config.init_std = spec.init_std();
  config.seed = spec.seed();
  config.num_trainers = spec.num_trainers();
  config.run_id = spec.run_id();
  config.ordered = spec.ordered();
  RETURN_IF_ERROR(ValidateEmbeddingConfig(config));
  return config;
}

void SpecFromConfig(const EmbeddingTableConfig& config,
                    proto::EmbeddingTableSpec* spec) {
  spec->set_name(config.name);
  spec->set_dim(config.dim);
  spec->set_optimizer(EmbeddingOptimizerName(config.optimizer));
  spec->set_lr(config.lr);
  spec->set_beta1(config.beta1);
  spec->set_beta2(config.beta2);
  spec->set_eps(config.eps);
  spec->set_init_std(config.init_std);
  spec->set_seed(config.seed);
  spec->set_num_trainers(config.num_trainers);
  spec->set_run_id(config.run_id);
  spec->set_ordered(config.ordered);
}

int64_t EmbeddingTableBytes(const EmbeddingTableConfig& config, int64_t rows) {
  int64_t per_element = 1;  // The row.
  if (config.optimizer == EmbeddingOptimizer::kAdagrad) per_element = 2;
  if (config.optimizer == EmbeddingOptimizer::kAdam) per_element = 3;
  // Per row: the elements (float) and up to 16 bytes of bookkeeping.
  const double bytes =
      static_cast<double>(rows) *
      (static_cast<double>(config.dim) * 4.0 * per_element + 16.0);
  return bytes >= 9e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

namespace {

// A call on run `run_id`'s table `table` whose secret is not the run's.
absl::Status SecretRefused(const std::string& table,
                           const std::string& run_id) {
  return absl::PermissionDeniedError(absl::StrCat(
      "embedding table ", table, " of run ", run_id,
      ": the call's run secret is not the run's, so this is another run's "
      "table (the run ID is public, the secret is not: every trainer of a "
      "run learns it from rank 0, and a resumed run reads it back from its "
      "run directory's embedding_run.secret)"));
}

}  // namespace

absl::Status EmbeddingService::Create(
    const ShardMeta& shard, const proto::CreateEmbeddingTableRequest& req,
    proto::CreateEmbeddingTableResponse* resp) {
  ASSIGN_OR_RETURN(EmbeddingTableConfig config, ConfigFromSpec(req.spec()));
  if (req.run_secret().size() < kMinRunSecretBytes ||
      req.run_secret().size() > kMaxRunSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding table ", config.name, " of run ", config.run_id,
        req.run_secret().empty()
            ? ": no run secret (a client older than this server sends none)"
            : absl::StrCat(": a run secret of ", req.run_secret().size(),
                           " bytes"),
        "; a table is created with its run's secret of at least ",
        kMinRunSecretBytes, " bytes (at most ", kMaxRunSecretBytes,
        "), which every call on it must then carry"));
  }
  const std::string digest = Sha256(req.run_secret());
  resp->set_node_start(shard.node_start);
  resp->set_node_end(shard.node_end);
  std::string snapshot;  // The file a restore loads (none for epoch 0).
  if (req.restore()) {
    if (req.restore_epoch() < 0 || req.restore_step() < 0 ||
        (req.restore_epoch() == 0 && req.restore_step() != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("embedding table ", config.name, ": restore of epoch ",
                       req.restore_epoch(), " at step ", req.restore_step(),
                       " (epochs and steps are >= 0; epoch 0 is step 0)"));
    }
    if (req.restore_epoch() > 0) {
      ASSIGN_OR_RETURN(const std::string dir,
                       SnapshotDir(config.name, config.run_id));
      snapshot = EmbeddingSnapshotPath(dir, req.restore_epoch());
    }
  }
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(config.name);
  if (it != tables_.end() && it->second->config().run_id == config.run_id) {
    auto held = secret_digests_.find(config.name);
    if (held == secret_digests_.end() ||
        !ConstantTimeEquals(digest, held->second)) {
      return SecretRefused(config.name, config.run_id);
    }
    const std::string differences =
        EmbeddingConfigDifferences(config, it->second->config());
    if (!differences.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "embedding table ", config.name,
          " exists for this run with other settings (asked vs held: ",
          differences, "); every trainer of a run must pass the same ",
          "embedding flags"));
    }
    // A restore replaces the table unless it is that restore, untouched
    // since (a trainer of the run asking again).
    auto restored = restored_epoch_.find(config.name);
    const bool join =
        !req.restore() || (restored != restored_epoch_.end() &&
                           restored->second == req.restore_epoch() &&
                           it->second->stats().pushes == 0 &&
                           it->second->applied_steps() == req.restore_step());
    if (join) {
      resp->set_created(false);
      resp->set_run_secret_checked(true);
      return absl::OkStatus();
    }
  } else {
    // The run's table is not held here (none, or another run's): its
    // snapshots may be, bound to its secret.
    ASSIGN_OR_RETURN(const std::string kept,
                     KeptDigest(config.name, config.run_id));
    if (!kept.empty() && !ConstantTimeEquals(digest, kept)) {
      return SecretRefused(config.name, config.run_id);
    }
    if (kept.empty()) {
      RETURN_IF_ERROR(KeepDigest(config.name, config.run_id, digest));
    }
  }
  // Other tables plus this one, within the limit (a replaced table's bytes
  // are released with it).
  int64_t total =
      EmbeddingTableBytes(config, shard.node_end - shard.node_start);
  for (const auto& [name, table] : tables_) {
    if (name == config.name) continue;
    total += EmbeddingTableBytes(table->config(),
                                 table->node_end() - table->node_start());
  }
  if (total > limits_.max_table_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "embedding table ", config.name, " of dimension ", config.dim, " for ",
        shard.node_end - shard.node_start, " rows needs ", total,
        " bytes with the server's other tables, above its limit of ",
        limits_.max_table_bytes, " (serve --max-embedding-mb)"));
  }
  if (it != tables_.end()) tables_.erase(it);  // Released (or replaced).
  std::unique_ptr<EmbeddingTable> table;
  if (!snapshot.empty()) {
    auto loaded =
        EmbeddingTable::Load(snapshot, config, shard.node_start, shard.node_end,
                             req.restore_step(), limits_.table_dir);
    if (absl::IsNotFound(loaded.status())) {
      return absl::NotFoundError(absl::StrCat(
          "this server has no snapshot of embedding table ", config.name,
          " of run ", config.run_id, " at epoch ", req.restore_epoch(), " (",
          snapshot, "; it keeps the last two snapshotted epochs of a run)"));
    }
    ASSIGN_OR_RETURN(table, std::move(loaded));
  } else {
    ASSIGN_OR_RETURN(
        table, EmbeddingTable::Create(config, shard.node_start, shard.node_end,
                                      limits_.table_dir));
  }
  tables_[config.name] = std::move(table);
  secret_digests_[config.name] = digest;
  if (req.restore()) {
    restored_epoch_[config.name] = req.restore_epoch();
  } else {
    restored_epoch_.erase(config.name);
  }
  waited_seconds_.erase(config.name);  // The figures of the new table only.
  resp->set_created(true);
  resp->set_run_secret_checked(true);
  return absl::OkStatus();
}

namespace {

// Letters, digits, '.', '_', '-'; not starting with '.'; at most 128: a
// name that is one path component and nothing else.
bool IsPathSafe(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> EmbeddingService::SnapshotDir(
    const std::string& table, const std::string& run_id) const {
  if (limits_.snapshot_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "embedding table ", table,
        ": this server keeps no snapshots (start it with serve "
        "--embedding-dir DIR to checkpoint runs with learned embeddings)"));
  }
  for (const std::string* name : {&table, &run_id}) {
    if (!IsPathSafe(*name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", *name,
          "\" cannot name a snapshot (a table name or run ID of letters, "
          "digits, '.', '_' and '-', at most 128, not starting with '.')"));
    }
  }
  return JoinPath(JoinPath(limits_.snapshot_dir, table), run_id);
}

absl::StatusOr<std::string> EmbeddingService::KeptDigest(
    const std::string& name, const std::string& run_id) const {
  absl::StatusOr<std::string> dir = SnapshotDir(name, run_id);
  if (!dir.ok()) return std::string();  // No snapshots either.
  const std::string path = JoinPath(*dir, kRunSecretDigestFile);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::string();
  absl::StatusOr<std::string> text = ReadFileToString(path);
  const auto hex = [](char c) {
    return absl::ascii_isxdigit(static_cast<unsigned char>(c));
  };
  if (!text.ok() || text->size() != 2 * kHmacBytes + 1 ||
      (*text)[2 * kHmacBytes] != '\n' ||
      !std::all_of(text->begin(), text->end() - 1, hex)) {
    return absl::DataLossError(absl::StrCat(
        path, " is not the digest of run ", run_id,
        "'s secret (64 hex digits and a newline); the server does not know "
        "which run may use its snapshots"));
  }
  return absl::HexStringToBytes(text->substr(0, 2 * kHmacBytes));
}

absl::Status EmbeddingService::KeepDigest(const std::string& name,
                                          const std::string& run_id,
                                          const std::string& digest) const {
  absl::StatusOr<std::string> dir = SnapshotDir(name, run_id);
  if (!dir.ok()) return absl::OkStatus();  // Nowhere to keep snapshots.
  std::error_code ec;
  std::filesystem::create_directories(*dir, ec);
  absl::Status written =
      ec ? absl::UnavailableError(ec.message())
         : WriteFileAtomic(JoinPath(*dir, kRunSecretDigestFile),
                           absl::StrCat(absl::BytesToHexString(digest), "\n"),
                           0600);
  if (!written.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "embedding table ", name, " of run ", run_id,
        ": cannot keep the digest of the run's secret beside its snapshots in ",
        *dir, ": ", written.message()));
  }
  return absl::OkStatus();
}

absl::Status EmbeddingService::Snapshot(
    const proto::SnapshotEmbeddingsRequest& req,
    proto::SnapshotEmbeddingsResponse* resp) {
  if (req.epoch() < 0 || req.step() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding table ", req.table(), ": snapshot of epoch ", req.epoch(),
        " at step ", req.step(), " (epochs and steps are >= 0)"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<EmbeddingTable> table,
                   Find(req.table(), req.run_id(), req.run_secret()));
  ASSIGN_OR_RETURN(const std::string dir,
                   SnapshotDir(req.table(), req.run_id()));
  absl::MutexLock lock(&snapshot_mu_);  // One writer of a directory.
  ASSIGN_OR_RETURN(EmbeddingSnapshotStats saved,
                   SaveEmbeddingSnapshot(*table, dir, req.epoch(), req.step()));
  resp->set_rows(saved.rows);
  resp->set_bytes(saved.bytes);
  resp->set_seconds(saved.seconds);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<EmbeddingTable>> EmbeddingService::Find(
    const std::string& name, const std::string& run_id,
    const std::string& secret) const {
  const std::string digest = Sha256(secret);
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no embedding table ", name,
        " on this server (CreateEmbeddingTable first; a restarted server "
        "holds none until the run resumes from its last checkpoint, which "
        "restores the table from the server's snapshot: shardgnn run does "
        "so by itself, trainers started by hand need --resume)"));
  }
  if (it->second->config().run_id != run_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "embedding table ", name, " belongs to another run now (run ",
        it->second->config().run_id, ", not ", run_id, ")"));
  }
  auto held = secret_digests_.find(name);
  if (held == secret_digests_.end() ||
      !ConstantTimeEquals(digest, held->second)) {
    return SecretRefused(name, run_id);
  }
  return it->second;
}

EmbeddingService::EmbeddingService(EmbeddingServiceLimits limits)
    : limits_(limits), thread_([this] { WaitLoop(); }) {}

EmbeddingService::~EmbeddingService() {
  CancelWaiting();
  {
    absl::MutexLock lock(&wait_mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Status EmbeddingService::Answer(Waiter& w, absl::Time deadline) {
  std::string* rows = w.resp->mutable_rows();
  const size_t bytes =
      w.ids.size() * static_cast<size_t>(w.table->dim()) * sizeof(float);
  ReserveWithHeadroom(rows, bytes);  // Kept: feature_port.h.
  rows->resize(bytes);
  absl::Status pulled =
      w.table->Pull(w.ids, w.req->step(), w.req->staleness(), deadline,
                    reinterpret_cast<float*>(rows->data()));
  if (absl::IsDeadlineExceeded(pulled) && w.req->max_wait_ms() > 0) {
    // A client waiting in slices: the clock not there yet is a state of the
    // run, not a server failing to answer (which a replica set would fail
    // over from).
    return absl::FailedPreconditionError(pulled.message());
  }
  RETURN_IF_ERROR(pulled);
  w.resp->set_dim(w.table->dim());
  w.resp->set_applied_steps(w.table->applied_steps());
  return absl::OkStatus();
}

void EmbeddingService::Pull(const proto::PullEmbeddingsRequest* req,
                            absl::Time call_deadline,
                            proto::PullEmbeddingsResponse* resp,
                            std::function<void(absl::Status)> done) {
  Waiter w;
  w.req = req;
  w.resp = resp;
  w.since = absl::Now();
  // Answered a little before the call's deadline, so that the client gets
  // the server's explanation rather than its own timeout.
  w.deadline = std::min(call_deadline - absl::Milliseconds(200),
                        w.since + limits_.max_pull_wait);
  if (req->max_wait_ms() > 0) {
    w.deadline =
        std::min(w.deadline, w.since + absl::Milliseconds(req->max_wait_ms()));
  }
  absl::Status checked = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(w.table,
                     Find(req->table(), req->run_id(), req->run_secret()));
    RETURN_IF_ERROR(wire::CheckLength<NodeId>(req->node_ids(), "node_ids"));
    const int64_t n =
        static_cast<int64_t>(req->node_ids().size() / sizeof(NodeId));
    if (n > limits_.max_ids_per_call) {
      return absl::InvalidArgumentError(
          absl::StrCat("PullEmbeddings: ", n, " IDs, above the limit of ",
                       limits_.max_ids_per_call, " IDs per call"));
    }
    if (req->step() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PullEmbeddings: negative step ", req->step()));
    }
    return wire::ViewOrCopy(wire::View(req->node_ids()), "node_ids", &w.id_copy,
                            &w.ids);
  }();
  if (!checked.ok()) {
    done(checked);
    return;
  }
  const bool ready = req->staleness() < 0 ||
                     w.table->applied_steps() >= req->step() - req->staleness();
  if (ready) {
    // Answered now: the deadline only matters if the clock went backwards,
    // which it cannot.
    done(Answer(w, w.deadline));
    return;
  }
  w.done = std::move(done);
  absl::Status refused;
  {
    absl::MutexLock lock(&wait_mu_);
    // Again under the lock pushes take after applying: a push between the
    // first look and here has advanced the clock, or will wake the loop.
    if (w.table->applied_steps() < req->step() - req->staleness()) {
      if (static_cast<int>(waiting_.size()) < limits_.max_waiting_pulls) {
        waiting_.push_back(std::move(w));
        return;
      }
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "PullEmbeddings: ", waiting_.size(),
          " pulls already wait for the step clock (the server's limit)"));
    }
  }
  w.done(refused.ok() ? Answer(w, w.deadline) : refused);
}

void EmbeddingService::CancelWaiting() {
  std::vector<Waiter> cancelled;
  {
    absl::MutexLock lock(&wait_mu_);
    cancelled.swap(waiting_);
  }
  for (Waiter& w : cancelled) {
    w.done(absl::UnavailableError(
        "server is shutting down (the pull waited for the step clock)"));
  }
}

void EmbeddingService::WaitLoop() {
  int64_t seen_ticks = 0;
  while (true) {
    std::vector<Waiter> answer;
    std::vector<bool> expired;
    {
      absl::MutexLock lock(&wait_mu_);
      absl::Time next = absl::InfiniteFuture();
      for (const Waiter& w : waiting_) next = std::min(next, w.deadline);
      auto woken = [this, seen_ticks]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(wait_mu_) {
                         return stopping_ || clock_ticks_ != seen_ticks;
                       };
      // Wakes on a push, at the earliest deadline, and every 100 ms (a
      // table's clock can also advance through a retried push).
      wait_mu_.AwaitWithDeadline(
          absl::Condition(&woken),
          std::min(next, absl::Now() + absl::Milliseconds(100)));
      if (stopping_) return;
      seen_ticks = clock_ticks_;
      const absl::Time now = absl::Now();
      for (size_t i = 0; i < waiting_.size();) {
        Waiter& w = waiting_[i];
        const bool ready =
            w.table->applied_steps() >= w.req->step() - w.req->staleness();
        if (ready || now >= w.deadline) {
          expired.push_back(!ready);
          answer.push_back(std::move(w));
          waiting_[i] = std::move(waiting_.back());
          waiting_.pop_back();
        } else {
          ++i;
        }
      }
    }
    for (size_t i = 0; i < answer.size(); ++i) {
      Waiter& w = answer[i];
      const double waited = absl::ToDoubleSeconds(absl::Now() - w.since);
      {
        absl::MutexLock lock(&mu_);
        // Not if the table was replaced meanwhile (another run's figures).
        auto it = tables_.find(w.table->config().name);
        if (it != tables_.end() && it->second == w.table) {
          waited_seconds_[w.table->config().name] += waited;
        }
      }
      // An expired waiter's Pull fails at once, naming the missing pushes.
      w.done(Answer(w, expired[i] ? absl::Now() : w.deadline));
    }
  }
}

absl::Status EmbeddingService::Push(
    const proto::PushEmbeddingGradientsRequest& req,
    proto::PushEmbeddingGradientsResponse* resp) {
  ASSIGN_OR_RETURN(std::shared_ptr<EmbeddingTable> table,
                   Find(req.table(), req.run_id(), req.run_secret()));
  RETURN_IF_ERROR(wire::CheckLength<NodeId>(req.node_ids(), "node_ids"));
  RETURN_IF_ERROR(wire::CheckLength<float>(req.gradients(), "gradients"));
  const int64_t n =
      static_cast<int64_t>(req.node_ids().size() / sizeof(NodeId));
  if (n > limits_.max_ids_per_call) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushEmbeddingGradients: ", n, " IDs, above the limit of ",
                     limits_.max_ids_per_call, " IDs per call"));
  }
  const int64_t floats =
      static_cast<int64_t>(req.gradients().size() / sizeof(float));
  if (floats != n * table->dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PushEmbeddingGradients: ", floats, " gradient values for ", n,
        " IDs of dimension ", table->dim(), " (expected ", n * table->dim(),
        "; do all trainers use the same --learn-embeddings?)"));
  }
  // Read in place: a push carries megabytes of gradients every step.
  std::vector<NodeId> id_copy;
  absl::Span<const NodeId> ids;
  RETURN_IF_ERROR(
      wire::ViewOrCopy(wire::View(req.node_ids()), "node_ids", &id_copy, &ids));
  std::vector<float> grad_copy;
  absl::Span<const float> grads;
  RETURN_IF_ERROR(wire::ViewOrCopy(wire::View(req.gradients()), "gradients",
                                   &grad_copy, &grads));
  RETURN_IF_ERROR(table->Push(req.trainer(), req.step(), ids, grads));
  resp->set_applied_steps(table->applied_steps());
  absl::MutexLock lock(&wait_mu_);
  ++clock_ticks_;  // Wakes the waiting pulls.
  return absl::OkStatus();
}

void EmbeddingService::Stats(proto::EmbeddingStatsResponse* resp) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, table] : tables_) {
    const EmbeddingTableStats s = table->stats();
    proto::EmbeddingTableStats* t = resp->add_tables();
    t->set_name(name);
    t->set_dim(table->dim());
    t->set_rows_pulled(s.rows_pulled);
    t->set_rows_pushed(s.rows_pushed);
    t->set_pulls(s.pulls);
    t->set_pushes(s.pushes);
    t->set_rows_touched(s.rows_touched);
    auto waited = waited_seconds_.find(name);
    t->set_pull_wait_seconds(
        s.pull_wait_seconds +
        (waited != waited_seconds_.end() ? waited->second : 0.0));
    t->set_staleness_sum(s.staleness_sum);
    t->set_applied_steps(table->applied_steps());
  }
}

}  // namespace shardgnn::internal
