#include "cli/train_embeddings.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "cli/train_output.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "trainer/model_config.h"

namespace shardgnn::cli {

// The run's first lines say what the learned embeddings are.
void PrintEmbeddings(const LearnableRows& rows, const char* where) {
  const EmbeddingTableConfig& c = rows.config();
  std::printf(
      "shardgnn train: learned embeddings: %lld wide, held %s, %s updates, "
      "%s lr %g, initial N(0, %g)\n",
      static_cast<long long>(c.dim), where,
      EmbeddingSyncName(rows.staleness()).c_str(),
      EmbeddingOptimizerName(c.optimizer), c.lr, c.init_std * c.init_std);
  std::fflush(stdout);
}

// After the run, on the leader: the learned table written to
// <out>/learned_embeddings.npy (original node order with `orig_ids`, see
// WriteLearnedEmbeddings) and the figures for summary.json["embeddings"],
// with each server's (`remote`, if any).
absl::StatusOr<nlohmann::ordered_json> FinishEmbeddings(
    LearnableRows& rows, const TrainResult& result, int64_t num_nodes,
    const std::vector<NodeId>& orig_ids, const std::string& out_dir,
    const RemoteGraphSource* remote) {
  // Pre-trained rows were frozen after their steps; otherwise every
  // training step pushed.
  const int64_t steps =
      result.pretrain_steps > 0
          ? result.pretrain_steps
          : result.steps_per_epoch * static_cast<int64_t>(result.epochs.size());
  const std::string path = JoinPath(out_dir, kLearnedEmbeddingsFile);
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(
      WriteLearnedEmbeddings(rows, num_nodes, steps, orig_ids, path));
  const double write_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf(
      "shardgnn train: learned embeddings [%lld, %lld] written to %s "
      "(%.1f s)\n",
      static_cast<long long>(num_nodes), static_cast<long long>(rows.dim()),
      path.c_str(), write_seconds);
  const EmbeddingTableConfig& c = rows.config();
  double train_seconds = 0, pull_seconds = 0, push_wait = 0;
  int64_t pulled = 0, pushed = 0;
  for (const EpochStats& e : result.epochs) {
    train_seconds += e.epoch_seconds;
    pull_seconds += e.embedding_pull_seconds;
    push_wait += e.embedding_push_wait_seconds;
    pulled += e.embedding_rows_pulled;
    pushed += e.embedding_rows_pushed;
  }
  auto per_second = [&](int64_t n) {
    return train_seconds > 0 ? static_cast<double>(n) / train_seconds : 0.0;
  };
  nlohmann::ordered_json j;
  j["dim"] = c.dim;
  j["ignore_features"] = false;  // Set by the caller.
  j["sync"] = EmbeddingSyncName(rows.staleness());
  j["optimizer"] = EmbeddingOptimizerName(c.optimizer);
  j["lr"] = c.lr;
  j["init_std"] = c.init_std;
  if (result.pretrain_steps > 0) {
    // Pre-trained, then frozen for the task.
    j["pretrain"] = {{"epochs", result.pretrain_loss.size()},
                     {"steps", result.pretrain_steps},
                     {"seconds", result.pretrain_seconds},
                     {"loss", result.pretrain_loss}};
  }
  j["file"] = kLearnedEmbeddingsFile;
  j["node_order"] =
      orig_ids.empty() && remote != nullptr ? "partition" : "original";
  // This trainer's training steps (not evaluation).
  j["rows_pulled"] = pulled;
  j["rows_pushed"] = pushed;
  j["rows_pulled_per_second"] = per_second(pulled);
  j["rows_pushed_per_second"] = per_second(pushed);
  j["pull_seconds"] = pull_seconds;
  j["push_wait_seconds"] = push_wait;
  // Copies (replicas of a part) this trainer stopped using when they failed.
  j["copies_dropped"] = rows.stats().copies_dropped;
  // The last snapshot taken with the checkpoints (all holders).
  j["snapshot"] = {{"rows", result.embedding_snapshot_rows},
                   {"bytes", result.embedding_snapshot_bytes}};
  if (remote != nullptr) {
    const int parts = remote->book().num_parts();
    std::vector<nlohmann::ordered_json> servers(static_cast<size_t>(parts));
    // Of each part, the copy of the table with the most steps applied: a
    // replica restarted mid-run holds none, or a dropped copy an older one
    // (MakeRemoteRows).
    std::vector<int64_t> best_steps(static_cast<size_t>(parts), -1);
    std::vector<absl::Status> errors(static_cast<size_t>(parts));
    absl::Mutex mu;
    RETURN_IF_ERROR(remote->ForEachReplica(
        {},
        [&](int part, int, GraphStoreClient& server, absl::Span<const NodeId>,
            absl::Span<const size_t>) -> absl::Status {
          auto tables = server.EmbeddingStats();
          absl::MutexLock lock(&mu);
          const size_t p = static_cast<size_t>(part);
          if (!tables.ok()) {
            errors[p] = tables.status();
            return absl::OkStatus();
          }
          for (const auto& t : *tables) {
            if (t.name != c.name || t.applied_steps <= best_steps[p]) continue;
            best_steps[p] = t.applied_steps;
            const EmbeddingTableStats& st = t.stats;
            servers[p] = {
                {"part", part},
                {"address", server.address()},
                {"rows_touched", st.rows_touched},
                {"rows_pulled", st.rows_pulled},
                {"rows_pushed", st.rows_pushed},
                {"pulls", st.pulls},
                {"pushes", st.pushes},
                {"applied_steps", t.applied_steps},
                {"pull_wait_seconds", st.pull_wait_seconds},
                {"mean_staleness", st.pulls > 0
                                       ? static_cast<double>(st.staleness_sum) /
                                             static_cast<double>(st.pulls)
                                       : 0.0}};
          }
          return absl::OkStatus();
        }));
    for (size_t p = 0; p < errors.size(); ++p) {
      if (best_steps[p] < 0 && !errors[p].ok()) return errors[p];
    }
    j["servers"] = servers;
  }
  return j;
}

namespace {

// The ID's two halves and the secret's pieces, as the allreduce carries them.
constexpr uint32_t kIdHalf = (1u << 26) - 1;
constexpr size_t kSecretPieceDigits = 6;  // 24 bits each.
constexpr size_t kSecretPieces =
    (kEmbeddingRunSecretHexDigits + kSecretPieceDigits - 1) /
    kSecretPieceDigits;

// What rank 0 contributes: the run ID's halves and the secret, read back or
// drawn, the secret file written.
struct LeaderRun {
  uint32_t id[2] = {0, 0};
  std::string secret;
};

absl::StatusOr<LeaderRun> LeaderEmbeddingRun(const std::string& out_dir,
                                             bool resume) {
  LeaderRun run;
  bool known_id = false;
  if (resume && !out_dir.empty()) {
    auto file = ReadEmbeddingRunFile(out_dir);
    if (file.ok()) {
      std::vector<std::string> halves = absl::StrSplit(file->run_id, '-');
      if (halves.size() != 2 || !absl::SimpleAtoi(halves[0], &run.id[0]) ||
          !absl::SimpleAtoi(halves[1], &run.id[1]) || run.id[0] > kIdHalf ||
          run.id[1] > kIdHalf) {
        return absl::DataLossError(
            absl::StrCat(JoinPath(out_dir, kEmbeddingRunFile), ": run_id \"",
                         file->run_id, "\" is not two numbers joined by '-'"));
      }
      known_id = true;
      absl::StatusOr<std::string> secret = ReadEmbeddingRunSecret(out_dir);
      if (secret.ok()) {
        run.secret = *std::move(secret);
      } else if (absl::IsNotFound(secret.status())) {
        std::fprintf(stderr,
                     "shardgnn train: %s does not exist (a run started "
                     "before run secrets, or the file was removed): run %s "
                     "continues under a new secret, which servers holding "
                     "its tables under another one refuse\n",
                     JoinPath(out_dir, kEmbeddingRunSecretFile).c_str(),
                     file->run_id.c_str());
      } else {
        return secret.status();
      }
    } else if (!absl::IsNotFound(file.status())) {
      return file.status();
    }
  }
  if (!known_id) {
    std::random_device random;
    run.id[0] = static_cast<uint32_t>(random()) & kIdHalf;
    run.id[1] = static_cast<uint32_t>(random()) & kIdHalf;
  }
  if (run.secret.empty()) {
    ASSIGN_OR_RETURN(const std::string bytes,
                     RandomBytes(kEmbeddingRunSecretHexDigits / 2));
    run.secret = absl::BytesToHexString(bytes);
    if (!out_dir.empty()) {
      RETURN_IF_ERROR(WriteEmbeddingRunSecret(out_dir, run.secret));
    }
  }
  return run;
}

}  // namespace

absl::StatusOr<EmbeddingRun> AgreeOnEmbeddingRun(GradientSync* sync,
                                                 bool leader,
                                                 const std::string& out_dir,
                                                 bool resume) {
  // [0]: rank 0 failed; [1], [2]: the ID's halves; then the secret's pieces.
  double values[3 + kSecretPieces] = {};
  absl::Status failed;
  if (leader) {
    absl::StatusOr<LeaderRun> run = LeaderEmbeddingRun(out_dir, resume);
    if (run.ok()) {
      values[1] = run->id[0];
      values[2] = run->id[1];
      for (size_t i = 0; i < kSecretPieces; ++i) {
        uint32_t piece = 0;
        const std::string digits =
            run->secret.substr(i * kSecretPieceDigits, kSecretPieceDigits);
        if (!absl::SimpleHexAtoi(digits, &piece)) {
          failed = absl::InternalError("the run's secret is not hex");
          break;
        }
        values[3 + i] = piece;
      }
    } else {
      failed = run.status();
    }
    if (!failed.ok()) values[0] = 1;
  }
  RETURN_IF_ERROR(sync->AllreduceSum(absl::MakeSpan(values)));
  if (!failed.ok()) return failed;
  if (values[0] != 0) {
    return absl::FailedPreconditionError(
        "rank 0 could not draw or read back the run's ID and secret (its "
        "error says why)");
  }
  EmbeddingRun run;
  run.run_id = absl::StrCat(static_cast<uint64_t>(values[1]), "-",
                            static_cast<uint64_t>(values[2]));
  for (size_t i = 0; i < kSecretPieces; ++i) {
    const size_t digits =
        std::min(kSecretPieceDigits,
                 kEmbeddingRunSecretHexDigits - i * kSecretPieceDigits);
    absl::StrAppend(&run.secret,
                    absl::StrFormat("%0*x", static_cast<int>(digits),
                                    static_cast<uint32_t>(values[3 + i])));
  }
  return run;
}

}  // namespace shardgnn::cli
