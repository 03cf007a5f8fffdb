#include "cli/training_flags.h"

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shardgnn::cli {

void AddTrainingFlags(CLI::App* cmd, TrainingFlags* f) {
  cmd->add_option("--model", f->model, "sage, gcn or gat")
      ->capture_default_str();
  cmd->add_option("--epochs", f->epochs, "Training epochs")
      ->capture_default_str();
  cmd->add_option("--fanouts", f->fanouts,
                  "Neighbors sampled per layer, seeds' hop first (-1 = all)")
      ->capture_default_str();
  cmd->add_option("--batch-size", f->batch_size,
                  "Seed nodes per minibatch (per trainer)")
      ->capture_default_str();
  cmd->add_option("--hidden", f->hidden, "Hidden width (per head for GAT)")
      ->capture_default_str();
  cmd->add_option("--heads", f->heads, "GAT attention heads")
      ->capture_default_str();
  cmd->add_option("--dropout", f->dropout, "Dropout rate")
      ->capture_default_str();
  cmd->add_option("--lr", f->lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", f->weight_decay, "Adam weight decay")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed,
                  "Seed for parameters, shuffles, sampling and dropout")
      ->capture_default_str();
  cmd->add_option("--prefetch", f->prefetch,
                  "Minibatches sampled ahead of the trainer (0 = none)")
      ->capture_default_str();
  cmd->add_option("--sampler-threads", f->sampler_threads,
                  "Background sampling threads per trainer")
      ->capture_default_str();
  cmd->add_option(
         "--threads", f->threads,
         "Compute threads (LibTorch intra-op and OpenBLAS; 0 = this "
         "machine's cores shared among its trainers: LOCAL_WORLD_SIZE, "
         "or under `run` the trainers it starts)")
      ->capture_default_str();
  cmd->add_option("--cache-mb", f->cache_mb,
                  "Feature cache per trainer in MiB (0 = none)")
      ->capture_default_str();
  cmd->add_option("--cache-policy", f->cache_policy,
                  "static (hottest by pre-sampling) or clock")
      ->capture_default_str();
  cmd->add_flag("--no-shared-memory", f->no_shared_memory,
                "Fetch features through calls even from storage servers on "
                "this machine (default: map their shared feature matrix)");
  cmd->add_flag("--no-feature-port", f->no_feature_port,
                "Fetch features over gRPC even from storage servers that "
                "offer a feature port (default: use it)");
  cmd->add_flag("--resume", f->resume,
                "Continue an interrupted run from the checkpoints in its run "
                "directory (--out)");
  cmd->add_flag("--normalize-features", f->normalize_features,
                "Row-normalize input features (bag of words)");
}

std::vector<std::string> TrainingArgs(const TrainingFlags& f) {
  std::vector<std::string> args = {"--model",
                                   f.model,
                                   "--epochs",
                                   std::to_string(f.epochs),
                                   "--fanouts",
                                   f.fanouts,
                                   "--batch-size",
                                   std::to_string(f.batch_size),
                                   "--hidden",
                                   std::to_string(f.hidden),
                                   "--heads",
                                   std::to_string(f.heads),
                                   "--dropout",
                                   absl::StrCat(f.dropout),
                                   "--lr",
                                   absl::StrCat(f.lr),
                                   "--weight-decay",
                                   absl::StrCat(f.weight_decay),
                                   "--seed",
                                   std::to_string(f.seed),
                                   "--prefetch",
                                   std::to_string(f.prefetch),
                                   "--sampler-threads",
                                   std::to_string(f.sampler_threads),
                                   "--threads",
                                   std::to_string(f.threads),
                                   "--cache-mb",
                                   std::to_string(f.cache_mb),
                                   "--cache-policy",
                                   f.cache_policy};
  if (f.normalize_features) args.push_back("--normalize-features");
  if (f.resume) args.push_back("--resume");
  if (f.no_shared_memory) args.push_back("--no-shared-memory");
  if (f.no_feature_port) args.push_back("--no-feature-port");
  return args;
}

absl::StatusOr<std::vector<int>> ParseFanouts(const std::string& text) {
  std::vector<int> fanouts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int v;
    if (!absl::SimpleAtoi(part, &v) || v < -1 || v == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fanouts '", text,
          "': each entry must be a positive count or -1 (all neighbors)"));
    }
    fanouts.push_back(v);
  }
  return fanouts;
}

absl::StatusOr<TrainOptions> ToTrainOptions(const TrainingFlags& f) {
  TrainOptions options;
  auto kind = ParseModelKind(f.model);
  if (!kind.ok()) return kind.status();
  auto fanouts = ParseFanouts(f.fanouts);
  if (!fanouts.ok()) return fanouts.status();
  options.model.kind = *kind;
  options.model.num_layers = static_cast<int>(fanouts->size());
  options.model.hidden = f.hidden;
  options.model.heads = f.heads;
  options.model.dropout = f.dropout;
  options.model.normalize_features = f.normalize_features;
  options.fanouts = *fanouts;
  options.batch_size = f.batch_size;
  options.epochs = f.epochs;
  options.lr = f.lr;
  options.weight_decay = f.weight_decay;
  options.seed = f.seed;
  options.prefetch = f.prefetch;
  options.sampler_threads = f.sampler_threads;
  options.torch_threads = f.threads;
  if (f.epochs < 1)
    return absl::InvalidArgumentError("--epochs must be at least 1");
  if (f.batch_size < 1)
    return absl::InvalidArgumentError("--batch-size must be positive");
  return options;
}

}  // namespace shardgnn::cli
