#include "cli/train_output.h"

#include <ATen/Parallel.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "common/file_util.h"
#include "common/peak_rss.h"
#include "common/progress.h"
#include "common/status.h"
#include "trainer/compute_env.h"
#include "trainer/cpu_caching_allocator.h"
#include "trainer/training_metrics.h"

namespace shardgnn::cli {
namespace {

nlohmann::ordered_json EpochJson(const EpochStats& s) {
  nlohmann::ordered_json j;
  j["epoch"] = s.epoch;
  j["steps"] = s.steps;
  j["loss"] = s.loss;
  j["train_acc"] = s.train_acc;
  // Node tasks: validation accuracy; link tasks: the named figures below.
  if (s.metrics.empty()) j["val_acc"] = s.val_acc;
  j["val_loss"] = s.val_loss;
  for (const auto& [key, value] : s.metrics) j[key] = value;
  j["epoch_seconds"] = s.epoch_seconds;
  j["wait_seconds"] = s.sample_seconds;
  j["sample_busy_seconds"] = s.sample_busy_seconds;
  j["fetch_seconds"] = s.fetch_seconds;
  j["compute_seconds"] = s.compute_seconds;
  j["allreduce_seconds"] = s.sync_seconds;
  j["eval_seconds"] = s.eval_seconds;
  j["sampled_edges"] = s.sampled_edges;
  j["minor_faults"] = s.minor_faults;
  j["eval_minor_faults"] = s.eval_minor_faults;
  if (s.server_minor_faults >= 0)
    j["server_minor_faults"] = s.server_minor_faults;
  if (s.server_cpu_seconds >= 0) j["server_cpu_seconds"] = s.server_cpu_seconds;
  j["cpu_seconds"] = s.cpu_seconds;
  j["sampler_threads"] = s.sampler_threads;
  j["share"] = s.share;  // This rank's part of the epoch's train seeds.
  j["seeds_per_second"] = s.seeds_per_second;
  if (!s.sampler_threads_change.empty())
    j["sampler_threads_change"] = s.sampler_threads_change;
  if (s.embedding_rows_pulled > 0) {
    j["embedding_rows_pulled"] = s.embedding_rows_pulled;
    j["embedding_rows_pushed"] = s.embedding_rows_pushed;
    j["embedding_pull_seconds"] = s.embedding_pull_seconds;
    j["embedding_push_wait_seconds"] = s.embedding_push_wait_seconds;
    if (s.embedding_snapshot_bytes > 0) {
      j["embedding_snapshot_seconds"] = s.embedding_snapshot_seconds;
      j["embedding_snapshot_bytes"] = s.embedding_snapshot_bytes;
    }
  }
  return j;
}

// This process's resources and where its epochs' time went: means over the
// epochs after the first (the warm-up), or over the only epoch. Sampling and
// fetch overlap compute when prefetching; `waiting` is the part that did not.
// `train_seeds` counts every trainer's seeds in one epoch.
nlohmann::ordered_json PerformanceJson(const TrainResult& result,
                                       const TrainingFlags& training,
                                       int64_t train_seeds) {
  const auto& all = result.epochs;
  size_t first = all.size() > 1 ? 1 : 0;
  double n = static_cast<double>(all.size() - first);
  EpochStats mean;
  int64_t faults = 0, eval_faults = 0, steps = 0;
  for (size_t i = first; i < all.size(); ++i) {
    faults += all[i].minor_faults;
    eval_faults += all[i].eval_minor_faults;
    steps += all[i].steps;
    mean.epoch_seconds += all[i].epoch_seconds / n;
    mean.sample_busy_seconds += all[i].sample_busy_seconds / n;
    mean.fetch_seconds += all[i].fetch_seconds / n;
    mean.compute_seconds += all[i].compute_seconds / n;
    mean.sync_seconds += all[i].sync_seconds / n;
    mean.sample_seconds += all[i].sample_seconds / n;
    mean.eval_seconds += all[i].eval_seconds / n;
    mean.cpu_seconds += all[i].cpu_seconds / n;
  }
  double step_seconds = mean.epoch_seconds - mean.eval_seconds;
  nlohmann::ordered_json process;
  process["peak_rss_bytes"] = PeakRssBytes();
  process["torch_threads"] = at::get_num_threads();
  process["blas_threads"] = BlasThreads();
  process["omp_wait_policy"] = EnvOrEmpty("OMP_WAIT_POLICY");
  process["openblas_thread_timeout"] = EnvOrEmpty("OPENBLAS_THREAD_TIMEOUT");
  // The loader's threads at the end; how they were chosen.
  process["sampler_threads"] = result.sampler_threads;
  process["sampler_threads_chosen"] =
      training.prefetch > 0 && training.sampler_threads == 0 ? "measured"
                                                             : "flag";
  {
    nlohmann::ordered_json changes = nlohmann::ordered_json::array();
    for (const EpochStats& e : all) {
      if (e.sampler_threads_change.empty()) continue;
      changes.push_back(
          {{"after_epoch", e.epoch}, {"why", e.sampler_threads_change}});
    }
    process["sampler_threads_changes"] = changes;
  }
  process["prefetch"] = training.prefetch;
  {
    // LibTorch's large tensors (trainer/cpu_caching_allocator.h): how much
    // the run took from the system for them, and how often a kept block
    // served a request instead.
    const CpuCachingAllocatorStats a = GetCpuCachingAllocatorStats();
    process["tensor_cache"] = {{"fresh_bytes", a.fresh_bytes},
                               {"moved_bytes", a.moved_bytes},
                               {"cached_bytes", a.cached_bytes},
                               {"allocations", a.allocations},
                               {"reused", a.reused}};
  }
  nlohmann::ordered_json time;
  time["epochs_measured"] = all.size() - first;
  time["epoch_seconds"] = mean.epoch_seconds;
  time["step_seconds"] = step_seconds;
  time["sampling_seconds"] = mean.sample_busy_seconds - mean.fetch_seconds;
  time["fetch_seconds"] = mean.fetch_seconds;
  time["compute_seconds"] = mean.compute_seconds - mean.sync_seconds;
  time["allreduce_seconds"] = mean.sync_seconds;
  time["waiting_seconds"] = mean.sample_seconds;
  time["eval_seconds"] = mean.eval_seconds;
  time["wait_fraction"] =
      step_seconds > 0 ? mean.sample_seconds / step_seconds : 0.0;
  // Fresh pages touched per training step and per epoch's validation
  // (process-wide; issue 17: the steady state should touch none).
  time["minor_faults_per_step"] =
      steps > 0 ? static_cast<double>(faults) / static_cast<double>(steps)
                : 0.0;
  time["eval_minor_faults"] = static_cast<double>(eval_faults) / n;
  // This process's CPU time per epoch (validation included).
  time["cpu_seconds"] = mean.cpu_seconds;
  // The storage servers' (all of them) per step of an epoch, its
  // validation included; only when the leader measured every epoch counted.
  {
    int64_t server_faults = 0, server_steps = 0;
    double server_cpu = 0;
    bool measured = all.size() > first;
    for (size_t i = first; i < all.size(); ++i) {
      if (all[i].server_minor_faults < 0 || all[i].server_cpu_seconds < 0)
        measured = false;
      server_faults += all[i].server_minor_faults;
      server_cpu += all[i].server_cpu_seconds;
      server_steps += all[i].steps;
    }
    if (measured && server_steps > 0) {
      time["server_minor_faults_per_step"] =
          static_cast<double>(server_faults) /
          static_cast<double>(server_steps);
      // Per epoch (validation included): the cores the servers took.
      time["server_cpu_seconds"] = server_cpu / n;
    }
  }
  time["train_seeds_per_epoch"] = train_seeds;
  time["seeds_per_second"] =
      step_seconds > 0 ? static_cast<double>(train_seeds) / step_seconds : 0.0;
  return {{"process", process}, {"epoch_time", time}};
}

}  // namespace

// When this process started, as UTC ISO 8601 ("2026-12-01T13:08:06Z").
absl::Status WriteEmbeddingRunFile(const std::string& run_dir,
                                   const EmbeddingRunFile& run) {
  nlohmann::ordered_json j = {{"run_id", run.run_id},
                              {"partition", run.partition_dir},
                              {"num_nodes", run.num_nodes},
                              {"partition_ids", run.partition_ids}};
  return WriteFileAtomic(JoinPath(run_dir, kEmbeddingRunFile),
                         j.dump(2) + "\n");
}

absl::StatusOr<EmbeddingRunFile> ReadEmbeddingRunFile(
    const std::string& run_dir) {
  const std::string path = JoinPath(run_dir, kEmbeddingRunFile);
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("run_id") || !j["run_id"].is_string() ||
      !j.contains("partition") || !j["partition"].is_string() ||
      !j.contains("num_nodes") || !j["num_nodes"].is_number_integer() ||
      !j.contains("partition_ids") || !j["partition_ids"].is_boolean() ||
      j["num_nodes"].get<int64_t>() < 0) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a run file (run_id, partition, num_nodes)"));
  }
  return EmbeddingRunFile{
      j["run_id"].get<std::string>(), j["partition"].get<std::string>(),
      j["num_nodes"].get<int64_t>(), j["partition_ids"].get<bool>()};
}

absl::Status WriteEmbeddingRunSecret(const std::string& run_dir,
                                     const std::string& secret) {
  return WriteFileAtomic(JoinPath(run_dir, kEmbeddingRunSecretFile),
                         absl::StrCat(secret, "\n"), 0600);
}

absl::StatusOr<std::string> ReadEmbeddingRunSecret(const std::string& run_dir) {
  const std::string path = JoinPath(run_dir, kEmbeddingRunSecretFile);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    }
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot read it: ", std::strerror(errno)));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": group or others may access the run's secret (mode ",
        absl::StrFormat("%03o", st.st_mode & 0777),
        "); it must be readable by its owner only: chmod 600 ", path));
  }
  if (!S_ISREG(st.st_mode) ||
      st.st_size != static_cast<off_t>(kEmbeddingRunSecretHexDigits + 1)) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a run's secret (one line of ",
                     kEmbeddingRunSecretHexDigits, " hex digits)"));
  }
  ASSIGN_OR_RETURN(std::string secret, ReadFileToString(path));
  const bool hex = secret.size() == kEmbeddingRunSecretHexDigits + 1 &&
                   secret.back() == '\n' &&
                   std::all_of(secret.begin(), secret.end() - 1, [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (!hex) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a run's secret (one line of ",
                     kEmbeddingRunSecretHexDigits, " hex digits)"));
  }
  secret.pop_back();
  return secret;
}

std::string StartedAt() {
  static const std::time_t started = std::time(nullptr);
  char text[32];
  std::tm utc{};
  gmtime_r(&started, &utc);
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// What every summary.json holds; callers add where the graph came from.
nlohmann::ordered_json SummaryJson(const TrainResult& result,
                                   const TrainingFlags& training,
                                   const TrainOptions& options, int world_size,
                                   int64_t train_seeds) {
  // With --steps-per-epoch an epoch trains that many batches per trainer,
  // not one pass over the train items.
  if (training.steps_per_epoch > 0) {
    train_seeds = training.steps_per_epoch * options.batch_size * world_size;
  }
  nlohmann::ordered_json summary;
  summary["shardgnn_version"] = kShardgnnVersion;
  summary["git_commit"] = std::string(kGitCommit);
  summary["started_at"] = StartedAt();
  summary["task"] = TaskKindName(options.task);
  if (options.task == TaskKind::kNode) {
    // Multi-label: test_acc is the micro-F1 (the figure that chose the
    // kept epoch), and test_subset_acc the fraction of nodes whose whole set
    // of classes is right.
    summary["test_acc"] = result.test_acc;
    // Sampled tests: micro-F1 (single-label: the accuracy) and macro-F1 (the
    // mean over classes).
    for (const auto& [key, value] : result.test_metrics) {
      if (key == "test_micro_f1" || key == "test_macro_f1" ||
          key == "test_subset_acc") {
        summary[key] = value;
      }
    }
  } else {
    for (const auto& [key, value] : result.test_metrics) summary[key] = value;
  }
  // How the test figures were measured: "exact" (layer-wise inference over
  // full neighborhoods) or "sampled" (with the eval fanouts).
  summary["test_method"] = options.exact_test ? "exact" : "sampled";
  // This trainer's test pass (rank 0's in a data-parallel run).
  summary["test_time"] = {
      {"seconds", result.test_seconds},
      {"minor_faults", result.test_minor_faults},
      {"second_half_minor_faults", result.test_second_half_minor_faults},
      {"batches", result.test_batches}};
  if (options.task == TaskKind::kNode) {
    summary["best_val_acc"] = result.best_val_acc;
  } else {
    summary["best_valid_auc"] = result.best_val_score;
    const LinkOptions& link = options.link;
    summary["link"] = {
        {"decoder", LinkDecoderName(link.decoder)},
        {"negatives", link.negatives},
        {"negative_sampling", NegativeSamplingName(link.negative_sampling)},
        {"filter_negatives", link.filter_negatives}};
  }
  summary["best_epoch"] = result.best_epoch;
  summary["epochs_run"] = result.epochs.size();
  summary["stopped_early"] = result.stopped_early;
  summary["epoch_budget_cut"] = result.budget_cut;
  summary["steps_per_epoch"] = result.steps_per_epoch;
  summary["num_parameters"] = result.num_parameters;
  summary["parameters_checksum"] = result.parameters_checksum;
  summary["world_size"] = world_size;
  const ModelOptions& m = options.model;
  summary["model"] = {{"kind", ModelKindName(m.kind)},
                      {"layers", m.num_layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"dropout", m.dropout},
                      {"lr", options.lr},
                      {"weight_decay", options.weight_decay},
                      {"average_decay", options.average_decay},
                      {"batch_size", options.batch_size},
                      {"feature_norm", FeatureNormName(m.features.norm)}};
  if (m.kind == ModelKind::kScript) {
    // The module's widths and dropout are its own.
    summary["model"]["script"] = m.script_path;
    for (const char* unused : {"hidden", "heads", "dropout"})
      summary["model"].erase(unused);
  }
  summary["checkpoints"] = {{"every_epochs", training.checkpoint_every},
                            {"seconds", result.checkpoint_seconds},
                            {"bytes_per_trainer", result.checkpoint_bytes}};
  double total = 0;
  for (const auto& e : result.epochs) total += e.epoch_seconds;
  summary["train_seconds"] = total;
  // The flags as given, and the model as chosen (a typed graph's default
  // differs from the others').
  TrainingFlags as_run = training;
  as_run.model = ModelKindName(options.model.kind);
  as_run.model_given = true;
  summary["config"] =
      nlohmann::json::parse(nlohmann::json(TrainingArgs(as_run)).dump());
  nlohmann::ordered_json performance =
      PerformanceJson(result, training, train_seeds);
  for (auto& [key, value] : performance.items()) summary[key] = value;
  if (options.task == TaskKind::kLink) {
    // A link task's seeds are its train edges (the positives).
    summary["epoch_time"]["positive_edges_per_second"] =
        summary["epoch_time"]["seeds_per_second"];
  }
  return summary;
}

// Prints one progress line per epoch and appends it to `metrics` (may be
// null, must outlive the callback).
std::function<void(const EpochStats&)> EpochReporter(int epochs,
                                                     std::ofstream* metrics) {
  auto first_loss = std::make_shared<double>(-1.0);
  auto warned = std::make_shared<bool>(false);
  return [epochs, metrics, first_loss, warned](const EpochStats& s) {
    // Node tasks: accuracies; link tasks: ROC-AUC and AP.
    std::string scores =
        absl::StrFormat("train %.3f  val %.3f", s.train_acc, s.val_acc);
    if (!s.metrics.empty()) {
      auto get = [&s](const char* key) {
        for (const auto& [k, v] : s.metrics)
          if (k == key) return v;
        return -1.0;
      };
      scores =
          absl::StrFormat("train auc %.3f  val auc %.3f ap %.3f",
                          get("train_auc"), get("valid_auc"), get("valid_ap"));
    }
    // Learned embeddings: the part of compute spent pulling rows (waits for
    // the other trainers' pushes included) and waiting to hand pushes over.
    const std::string embeddings =
        s.embedding_rows_pulled > 0
            ? absl::StrFormat(", embeddings pull %.2f push wait %.2f",
                              s.embedding_pull_seconds,
                              s.embedding_push_wait_seconds)
            : "";
    // The tables' snapshot with this epoch's checkpoint (a large table's
    // takes a while: say so).
    const std::string snapshot =
        s.embedding_snapshot_bytes > 0
            ? absl::StrFormat(
                  "; embeddings snapshot %.1f MB in %.2fs",
                  static_cast<double>(s.embedding_snapshot_bytes) / 1e6,
                  s.embedding_snapshot_seconds)
            : "";
    std::printf(
        "epoch %3d/%d  loss %.4f  %s  %.2fs (sampling %.2f, "
        "fetch %.2f, compute %.2f, allreduce %.2f, waiting %.2f, eval "
        "%.2f%s%s)\n",
        s.epoch, epochs, s.loss, scores.c_str(), s.epoch_seconds,
        s.sample_busy_seconds - s.fetch_seconds, s.fetch_seconds,
        s.compute_seconds - s.sync_seconds, s.sync_seconds, s.sample_seconds,
        s.eval_seconds, embeddings.c_str(), snapshot.c_str());
    if (!s.sampler_threads_change.empty()) {
      std::printf("  sampler threads from epoch %d: %s\n", s.epoch + 1,
                  s.sampler_threads_change.c_str());
    }
    if (*first_loss < 0) {
      *first_loss = s.loss;
    } else if (!*warned && s.loss > 2 * *first_loss + 0.1) {
      // Loss that climbs is a run going wrong while it still exits 0.
      *warned = true;
      std::printf(
          "warning: the training loss rose from %.4f (first epoch) to %.4f: "
          "the run is diverging; lower --lr or scale the features "
          "(--feature-norm)\n",
          *first_loss, s.loss);
    }
    std::fflush(stdout);
    if (metrics) *metrics << EpochJson(s).dump() << "\n" << std::flush;
  };
}

// Progress lines within long epochs ("epoch 3/10: 42% (120/400 steps, ...,
// ETA 40s)") and the final test, every `seconds` (0: none), on stderr.
void ReportSteps(double seconds, TrainOptions* options) {
  if (!(seconds > 0)) return;
  ProgressOptions line;
  line.interval_seconds = seconds;
  line.mode = ProgressOptions::Mode::kLines;
  auto epoch_progress = std::make_shared<std::unique_ptr<Progress>>();
  auto epoch_seen = std::make_shared<int>(0);
  const int epochs = options->epochs;
  AddStepObserver(options, [=](const StepStats& s) {
    if (s.epoch != *epoch_seen || !*epoch_progress) {
      *epoch_seen = s.epoch;
      *epoch_progress = std::make_unique<Progress>(
          absl::StrCat("epoch ", s.epoch, "/", epochs), s.steps, "steps", line);
    }
    (*epoch_progress)->Update(s.step);
  });
  auto test_progress = std::make_shared<std::unique_ptr<Progress>>();
  const char* unit = options->exact_test ? "node rows" : "batches";
  options->on_test_progress = [=](int64_t done, int64_t total) {
    if (!*test_progress) {
      *test_progress = std::make_unique<Progress>("test", total, unit, line);
    }
    (*test_progress)->Update(done);
  };
}

// The run's settings after defaults were resolved: what a user needs to
// reproduce or compare it.
void PrintSettings(const TrainOptions& o, const std::string& features,
                   int64_t steps_per_epoch) {
  std::string model =
      o.model.kind == ModelKind::kScript
          ? absl::StrCat("script ", o.model.script_path, ", ",
                         o.model.num_layers,
                         " layers (widths and dropout its own)")
          : absl::StrCat(ModelKindName(o.model.kind), ", ", o.model.num_layers,
                         " layers, hidden ", o.model.hidden);
  if (o.model.kind == ModelKind::kGat)
    absl::StrAppend(&model, " x ", o.model.heads, " heads");
  if (o.model.kind == ModelKind::kRgcn) {
    absl::StrAppend(&model, ", ",
                    o.model.num_bases > 0
                        ? absl::StrCat(o.model.num_bases, " bases")
                        : std::string("bases: one per relation, at most 8"));
  }
  if (o.model.kind != ModelKind::kScript)
    absl::StrAppend(&model, ", dropout ", o.model.dropout);
  std::printf(
      "shardgnn train: model %s, lr %g, weight decay %g, batch "
      "%lld, %lld steps per epoch, up to %d epochs%s, %s\n",
      model.c_str(), o.lr, o.weight_decay, static_cast<long long>(o.batch_size),
      static_cast<long long>(steps_per_epoch), o.epochs,
      o.patience > 0 ? absl::StrCat(" (patience ", o.patience, ")").c_str()
                     : "",
      o.average_decay > 0
          ? absl::StrCat("parameters averaged (decay ", o.average_decay, ")")
                .c_str()
          : "parameters as trained (no averaging)");
  std::printf("shardgnn train: %s\n", features.c_str());
  std::string sampling = "sampling on the training thread (--prefetch 0)";
  if (o.prefetch > 0) {
    sampling = absl::StrCat(o.sampler_threads, " sampling thread",
                            o.sampler_threads == 1 ? "" : "s");
    if (o.max_sampler_threads > o.sampler_threads) {
      absl::StrAppend(&sampling,
                      " (more while the steps wait for batches, up "
                      "to ",
                      o.max_sampler_threads, ")");
    }
    absl::StrAppend(&sampling, ", ", o.prefetch, " batches ahead");
  }
  std::printf("shardgnn train: %d compute threads, %s\n", o.torch_threads,
              sampling.c_str());
  std::fflush(stdout);
}

void PrintResult(const TrainResult& result, bool exact) {
  if (result.stopped_early) {
    std::printf(
        "stopped early after epoch %d: no better validation accuracy "
        "for %d epochs\n",
        static_cast<int>(result.epochs.size()),
        static_cast<int>(result.epochs.size()) - result.best_epoch);
  }
  if (result.budget_cut) {
    std::printf(
        "warning: the epoch budget ended the run after epoch %d while "
        "validation could still improve (best at epoch %d); a larger "
        "--epochs may give a better model\n",
        result.epochs.empty() ? 0 : result.epochs.back().epoch,
        result.best_epoch);
  }
  if (result.checkpoint_bytes > 0) {
    std::printf("checkpoints: %.1f MB per trainer, %.2f s writing them\n",
                static_cast<double>(result.checkpoint_bytes) / 1e6,
                result.checkpoint_seconds);
  }
  const bool multilabel = !result.test_metrics.empty() &&
                          result.test_metrics.front().first == "test_micro_f1";
  if (multilabel) {
    std::string figures;
    for (const auto& [key, value] : result.test_metrics) {
      absl::StrAppend(&figures, figures.empty() ? "" : ", ", key.substr(5),
                      absl::StrFormat(" %.4f", value));
    }
    std::printf(
        "test %s (multi-label; best validation micro-F1 %.4f at "
        "epoch %d)\n",
        figures.c_str(), result.best_val_acc, result.best_epoch);
  } else if (!result.test_metrics.empty() &&
             result.test_metrics.front().first != "test_acc") {
    // Link prediction: every test figure on one line.
    std::string figures;
    for (const auto& [key, value] : result.test_metrics) {
      absl::StrAppend(&figures, figures.empty() ? "" : ", ", key.substr(5),
                      absl::StrFormat(" %.4f", value));
    }
    std::printf("test %s (best validation ROC-AUC %.4f at epoch %d)\n",
                figures.c_str(), result.best_val_score, result.best_epoch);
  } else {
    std::string macro;
    for (const auto& [key, value] : result.test_metrics) {
      if (key == "test_macro_f1")
        macro = absl::StrFormat(", macro-F1 %.4f", value);
    }
    std::printf("test accuracy %.4f%s (%sbest validation %.4f at epoch %d)\n",
                result.test_acc, macro.c_str(), exact ? "exact; " : "",
                result.best_val_acc, result.best_epoch);
  }
  std::fflush(stdout);
}

}  // namespace shardgnn::cli
