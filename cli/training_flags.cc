#include "cli/training_flags.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/config_file.h"
#include "common/status.h"
#include "sampler/embedding_rows.h"
#include "sampler/graph_schema.h"

namespace shardgnn::cli {

void AddTrainingFlags(CLI::App* cmd, TrainingFlags* f) {
  cmd->add_option("--task", f->task,
                  "node (classify nodes by their labels) or link (predict "
                  "edges; needs a dataset with an edge split: dataset "
                  "import/generate --edge-split)")
      ->capture_default_str();
  cmd->add_option("--decoder", f->decoder,
                  "Link tasks: how a pair is scored from its endpoints' "
                  "embeddings: dot (inner product) or mlp (an MLP on their "
                  "elementwise product)")
      ->capture_default_str();
  cmd->add_option("--negatives", f->negatives,
                  "Link tasks: negative pairs per train edge")
      ->capture_default_str();
  cmd->add_option("--negative-sampling", f->negative_sampling,
                  "Link tasks: how negative destinations are drawn: uniform, "
                  "or degree (proportional to degree^0.75)")
      ->capture_default_str();
  cmd->add_flag("--filter-negatives", f->filter_negatives,
                "Link tasks: redraw a negative pair that is a train edge or a "
                "self loop");
  cmd->add_option("--model", f->model,
                  "sage, gcn, gat or mlp; gine for graphs with edge "
                  "features (in one process); rgcn or heterosage for typed "
                  "graphs")
      ->capture_default_str();
  cmd->add_option("--model-script", f->model_script,
                  "Train your own model: a TorchScript module file (made with "
                  "torch.jit.script(model).save(path); the interface is in "
                  "docs/formats.md, \"Model scripts\"; "
                  "examples/custom_model/make_model.py makes some)");
  cmd->add_option("--epochs", f->epochs,
                  "Training epochs, at most (default 200: runs stop on "
                  "--patience long before; the end of a run says when this "
                  "budget ended it while validation could still improve)");
  cmd->add_option("--patience", f->patience,
                  "Stop after this many epochs without a better validation "
                  "score (0 = train every epoch; default 20); the best "
                  "epoch's parameters are kept either way");
  cmd->add_option("--min-steps-per-epoch", f->min_steps_per_epoch,
                  "Fewest optimizer steps per epoch: with few train nodes an "
                  "epoch passes over them several times")
      ->capture_default_str();
  cmd->add_option("--steps-per-epoch", f->steps_per_epoch,
                  "Optimizer steps per epoch, fixed: fewer cut the pass over "
                  "the train nodes or edges short, more wrap around it (0 = "
                  "one pass, at least --min-steps-per-epoch)")
      ->capture_default_str();
  cmd->add_option("--fanouts", f->fanouts,
                  "Neighbors sampled per layer, seeds' hop first (-1 = all); "
                  "typed graphs: every relation alike, or per relation and "
                  "layer, e.g. 'writes=10,cites=5,2;writes=5,2' (a bare N "
                  "for the relations not named, else 0)")
      ->capture_default_str();
  cmd->add_option("--eval-fanouts", f->eval_fanouts,
                  "Fanouts for validation and test (default: twice --fanouts; "
                  "-1,-1 = exact)");
  cmd->add_flag("--exact-test", f->exact_test,
                "Compute the final test accuracy exactly, by layer-wise "
                "inference over full neighborhoods (as `shardgnn infer`), "
                "instead of sampling with the eval fanouts");
  cmd->add_option("--batch-size", f->batch_size,
                  "Seed nodes per minibatch (per trainer)")
      ->capture_default_str();
  cmd->add_option("--hidden", f->hidden,
                  "Hidden width, per head for GAT (default: sage, gcn 256; "
                  "gat 8)");
  cmd->add_option("--heads", f->heads, "GAT attention heads (default 8)");
  cmd->add_option("--num-bases", f->num_bases,
                  "R-GCN: the bases every relation's weight combines (0: as "
                  "many as relations, at most 8)");
  cmd->add_option("--dropout", f->dropout,
                  "Dropout rate (default: sage, gcn 0.5; gat 0.6; link tasks "
                  "0)");
  cmd->add_option("--lr", f->lr,
                  "Adam learning rate (default: sage, gcn 0.01; gat 0.005)");
  cmd->add_option("--weight-decay", f->weight_decay,
                  "Adam weight decay (default: node tasks 5e-4; link tasks 0, "
                  "as GAE)");
  cmd->add_option("--average-decay", f->average_decay,
                  "Validate, keep and test a moving average of the parameters "
                  "over the steps, avg = d * avg + (1 - d) * params after "
                  "each (0 = the parameters as trained; default: gcn 0.9 on "
                  "node tasks, about 10 steps; otherwise 0)");
  cmd->add_option("--seed", f->seed,
                  "Seed for parameters, shuffles, sampling and dropout")
      ->capture_default_str();
  cmd->add_option("--prefetch", f->prefetch,
                  "Minibatches sampled ahead of the trainer (0 = none)")
      ->capture_default_str();
  cmd->add_option("--sampler-threads", f->sampler_threads,
                  "Background sampling threads per trainer (0 = chosen from "
                  "measurement: one, more while the steps wait for batches, "
                  "up to this machine's cores per trainer)")
      ->capture_default_str();
  cmd->add_option(
         "--threads", f->threads,
         "Compute threads (LibTorch intra-op and OpenBLAS; 0 = this "
         "machine's cores shared among its trainers: LOCAL_WORLD_SIZE, "
         "or under `run` the trainers it starts)")
      ->capture_default_str();
  cmd->add_option(
         "--shares", f->shares,
         "Each trainer's part of a step's train seeds: equal (each trains "
         "its own part of the train split), speed (every trainer draws from "
         "the whole split; the parts follow the trainers' measured speeds, "
         "re-measured every epoch, for clusters whose machines differ) or a "
         "weight per trainer, e.g. 2,2,1")
      ->capture_default_str();
  cmd->add_option("--cache-mb", f->cache_mb,
                  "Feature cache per trainer in MiB (0 = none)")
      ->capture_default_str();
  cmd->add_option("--cache-policy", f->cache_policy,
                  "static (hottest by pre-sampling) or clock")
      ->capture_default_str();
  cmd->add_option("--feature-norm", f->feature_norm,
                  "Input feature scaling: auto (row-l2 for non-negative "
                  "features, standardize for signed ones), none, row (divide "
                  "by the row's L1 norm), row-l2 (by its L2 norm) or "
                  "standardize (column z-scores)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", f->checkpoint_every,
                  "Write the run's checkpoints every N epochs and after the "
                  "last (0 = none; --resume needs them)")
      ->capture_default_str();
  cmd->add_option("--progress-seconds", f->progress_seconds,
                  "A progress line (steps, rate, ETA) every this many "
                  "seconds within a long epoch and the final test (0: none)")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", f->metrics_listen,
                  "Serve this trainer's Prometheus metrics (step time, "
                  "throughput, waiting, loss) at http://HOST:PORT/metrics "
                  "while it trains; port 0 picks a free one, and with a fixed "
                  "port trainer k of a machine (LOCAL_RANK) takes PORT + k");
  cmd->add_flag("--no-shared-memory", f->no_shared_memory,
                "Fetch features through calls even from storage servers on "
                "this machine (default: map their shared feature matrix)");
  cmd->add_flag("--no-feature-port", f->no_feature_port,
                "Fetch features over gRPC even from storage servers that "
                "offer a feature port (default: use it)");
  cmd->add_flag("--resume", f->resume,
                "Continue an interrupted run from the checkpoints in its run "
                "directory (--out)");
  cmd->add_flag("--allow-changed-settings", f->allow_changed_settings,
                "With --resume: continue even if lr, batch size, fanouts, "
                "dropout or feature scaling differ from the checkpoint's");
  cmd->add_option("--learn-embeddings", f->learn_embeddings,
                  "Learn a node embedding of this width with the model, held "
                  "by the storage servers (in this process with --dataset) "
                  "and appended to the features (0 = none)")
      ->check(CLI::Range(int64_t{0}, kMaxEmbeddingDim))
      ->capture_default_str();
  cmd->add_flag("--ignore-features", f->ignore_features,
                "With --learn-embeddings: the learned embedding is the whole "
                "input (for graphs without useful features)");
  cmd->add_option("--embedding-sync", f->embedding_sync,
                  "How learned embeddings are updated: sync (a step sees every "
                  "earlier push), bounded:K (at most K steps stale) or async "
                  "(never waits)")
      ->capture_default_str();
  cmd->add_option("--embedding-optimizer", f->embedding_optimizer,
                  "Sparse optimizer of the learned embeddings, applied by "
                  "their holder: adam, adagrad or sgd")
      ->capture_default_str();
  cmd->add_option("--embedding-lr", f->embedding_lr,
                  "Learning rate of the learned embeddings")
      ->capture_default_str();
  cmd->add_option("--embedding-init-std", f->embedding_init_std,
                  "Standard deviation of the learned embeddings' initial "
                  "values (normal, seeded by --seed; default 1, or 0.1 with "
                  "--pretrain-epochs)");
  cmd->add_option("--pretrain-epochs", f->pretrain_epochs,
                  "With --learn-embeddings: first pre-train the learned rows "
                  "on the graph's structure for this many epochs (DeepWalk's "
                  "objective over short walks from every node), then train "
                  "the model on them frozen (0 = none: the rows are trained "
                  "with the model)")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  // Kept for scripts written before --feature-norm.
  cmd->add_flag_callback(
      "--normalize-features", [f] { f->feature_norm = "row"; },
      "Same as --feature-norm row");
}

std::vector<std::string> TrainingArgs(const TrainingFlags& f) {
  std::vector<std::string> args = {"--task",
                                   f.task,
                                   "--decoder",
                                   f.decoder,
                                   "--negatives",
                                   std::to_string(f.negatives),
                                   "--negative-sampling",
                                   f.negative_sampling,
                                   "--min-steps-per-epoch",
                                   std::to_string(f.min_steps_per_epoch),
                                   "--steps-per-epoch",
                                   std::to_string(f.steps_per_epoch),
                                   "--fanouts",
                                   f.fanouts,
                                   "--batch-size",
                                   std::to_string(f.batch_size),
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
                                   f.cache_policy,
                                   "--shares",
                                   f.shares,
                                   "--feature-norm",
                                   f.feature_norm,
                                   "--checkpoint-every",
                                   std::to_string(f.checkpoint_every),
                                   "--progress-seconds",
                                   absl::StrCat(f.progress_seconds)};
  if (f.learn_embeddings > 0) {
    for (auto& a : std::vector<std::string>{
             "--learn-embeddings", std::to_string(f.learn_embeddings),
             "--embedding-sync", f.embedding_sync, "--embedding-optimizer",
             f.embedding_optimizer, "--embedding-lr",
             absl::StrCat(f.embedding_lr), "--pretrain-epochs",
             std::to_string(f.pretrain_epochs)}) {
      args.push_back(a);
    }
    if (f.embedding_init_std >= 0) {  // Unset: resolved by the trainer.
      args.push_back("--embedding-init-std");
      args.push_back(absl::StrCat(f.embedding_init_std));
    }
  }
  if (f.model_given) {  // Unset: the trainer picks by the graph (typed?).
    args.push_back("--model");
    args.push_back(f.model);
  }
  if (!f.model_script.empty()) {  // Trainers may start in another directory.
    std::error_code error;
    const std::filesystem::path absolute =
        std::filesystem::absolute(f.model_script, error);
    args.push_back("--model-script");
    args.push_back(error ? f.model_script : absolute.string());
  }
  if (f.ignore_features) args.push_back("--ignore-features");
  // Model-dependent defaults stay unset, for the trainer to resolve.
  if (f.exact_test) args.push_back("--exact-test");
  if (!f.eval_fanouts.empty()) {
    args.push_back("--eval-fanouts");
    args.push_back(f.eval_fanouts);
  }
  if (f.epochs >= 0) {
    args.push_back("--epochs");
    args.push_back(std::to_string(f.epochs));
  }
  if (f.patience >= 0) {
    args.push_back("--patience");
    args.push_back(std::to_string(f.patience));
  }
  if (f.hidden > 0) {
    args.push_back("--hidden");
    args.push_back(std::to_string(f.hidden));
  }
  if (f.heads > 0) {
    args.push_back("--heads");
    args.push_back(std::to_string(f.heads));
  }
  if (f.num_bases > 0) {
    args.push_back("--num-bases");
    args.push_back(std::to_string(f.num_bases));
  }
  if (f.dropout >= 0) {
    args.push_back("--dropout");
    args.push_back(absl::StrCat(f.dropout));
  }
  if (f.weight_decay >= 0) {
    args.push_back("--weight-decay");
    args.push_back(absl::StrCat(f.weight_decay));
  }
  if (f.average_decay >= 0) {
    args.push_back("--average-decay");
    args.push_back(absl::StrCat(f.average_decay));
  }
  if (f.lr > 0) {
    args.push_back("--lr");
    args.push_back(absl::StrCat(f.lr));
  }
  if (f.filter_negatives) args.push_back("--filter-negatives");
  if (f.resume) args.push_back("--resume");
  if (f.allow_changed_settings) args.push_back("--allow-changed-settings");
  if (f.no_shared_memory) args.push_back("--no-shared-memory");
  if (f.no_feature_port) args.push_back("--no-feature-port");
  if (!f.metrics_listen.empty()) {
    args.push_back("--metrics-listen");
    args.push_back(f.metrics_listen);
  }
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

std::string EffectiveConfig(const CLI::App& cmd,
                            const TrainingFlags* training) {
  if (training == nullptr) return RunConfigToml(cmd, {});
  absl::StatusOr<TrainOptions> options = ToTrainOptions(*training);
  if (!options.ok()) return RunConfigToml(cmd, {});  // The command fails.
  return RunConfigToml(
      cmd, {{"epochs", absl::StrCat(options->epochs)},
            {"patience", absl::StrCat(options->patience)},
            {"hidden", absl::StrCat(options->model.hidden)},
            {"heads", absl::StrCat(options->model.heads)},
            {"dropout", absl::StrCat(options->model.dropout)},
            {"lr", absl::StrCat(options->lr)},
            {"weight-decay", absl::StrCat(options->weight_decay)},
            {"average-decay", absl::StrCat(options->average_decay)}});
}

absl::StatusOr<TrainOptions> ToTrainOptions(const TrainingFlags& f) {
  TrainOptions options;
  options.on_resume = [](int epoch) {
    std::printf("shardgnn train: resumed from the checkpoints of epoch %d\n",
                epoch);
    std::fflush(stdout);
  };
  auto kind = ParseModelKind(f.model);
  if (!kind.ok()) return kind.status();
  if (!f.model_script.empty()) {
    if (f.model_given && *kind != ModelKind::kScript) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model-script trains the module in ", f.model_script,
          "; it replaces --model ", f.model, " (give one of them)"));
    }
    kind = ModelKind::kScript;
    options.model.script_path = f.model_script;
  } else if (*kind == ModelKind::kScript) {
    return absl::InvalidArgumentError(
        "--model script needs --model-script FILE (a TorchScript module)");
  }
  absl::StatusOr<std::vector<int>> fanouts;
  if (IsRelationFanoutSpec(f.fanouts)) {
    // Resolved against the graph's relations when the run starts; a layer
    // per ';'.
    options.relation_fanouts = f.fanouts;
    fanouts = std::vector<int>(
        std::count(f.fanouts.begin(), f.fanouts.end(), ';') + 1, 1);
  } else {
    fanouts = ParseFanouts(f.fanouts);
  }
  if (!fanouts.ok()) return fanouts.status();
  if (!f.eval_fanouts.empty()) {
    auto eval = ParseFanouts(f.eval_fanouts);
    if (!eval.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--eval-fanouts: ", eval.status().message()));
    }
    if (eval->size() != fanouts->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--eval-fanouts '", f.eval_fanouts, "' has ", eval->size(),
          " layers but --fanouts '", f.fanouts, "' has ", fanouts->size()));
    }
    options.eval_fanouts = *eval;
  }
  options.exact_test = f.exact_test;
  if (f.ignore_features && f.learn_embeddings == 0) {
    return absl::InvalidArgumentError(
        "--ignore-features needs --learn-embeddings DIM (the learned "
        "embedding replaces the features)");
  }
  options.ignore_features = f.ignore_features;
  if (f.pretrain_epochs > 0 && f.learn_embeddings == 0) {
    return absl::InvalidArgumentError(
        "--pretrain-epochs pre-trains learned embeddings: give "
        "--learn-embeddings DIM too");
  }
  options.pretrain_epochs = f.pretrain_epochs;
  options.on_pretrain_epoch = [](int epoch, double loss, double seconds) {
    std::printf(
        "shardgnn train: embedding pre-training epoch %d: loss %.4f (%.1f s)\n",
        epoch, loss, seconds);
    std::fflush(stdout);
  };
  if (f.learn_embeddings > 0) {
    // Checked before any server or dataset is touched.
    int staleness = 0;
    absl::Status checked =
        EmbeddingConfigFor(f, /*num_trainers=*/1, "check", &staleness).status();
    if (!checked.ok()) return checked;
  }
  auto task = ParseTaskKind(f.task);
  if (!task.ok()) return task.status();
  options.task = *task;
  auto decoder = ParseLinkDecoder(f.decoder);
  if (!decoder.ok()) return decoder.status();
  options.link.decoder = *decoder;
  auto negative_sampling = ParseNegativeSampling(f.negative_sampling);
  if (!negative_sampling.ok()) return negative_sampling.status();
  options.link.negative_sampling = *negative_sampling;
  if (f.negatives < 1) {
    return absl::InvalidArgumentError(
        "--negatives must be at least 1 (negative pairs per train edge)");
  }
  options.link.negatives = f.negatives;
  options.link.filter_negatives = f.filter_negatives;
  const ModelDefaults defaults = DefaultsFor(*kind);
  options.model.kind = *kind;
  options.model.num_layers = static_cast<int>(fanouts->size());
  options.model.hidden = f.hidden > 0 ? f.hidden : defaults.hidden;
  options.model.heads = f.heads > 0 ? f.heads : defaults.heads;
  options.model.num_bases = f.num_bases;
  // Link prediction trains without dropout and weight decay by default, as
  // GAE (Kipf & Welling 2016) does: the pairs' targets are the graph itself,
  // and dropped inputs blur the embeddings the decoder compares.
  const bool link = options.task == TaskKind::kLink;
  options.model.dropout =
      f.dropout >= 0 ? f.dropout : (link ? 0.0 : defaults.dropout);
  options.model.attn_dropout = defaults.attn_dropout;
  options.fanouts = *fanouts;
  options.batch_size = f.batch_size;
  options.epochs = f.epochs >= 0 ? f.epochs : defaults.epochs;
  options.patience = f.patience >= 0 ? f.patience : defaults.patience;
  options.min_steps_per_epoch = f.min_steps_per_epoch;
  options.steps_per_epoch = f.steps_per_epoch;
  options.checkpoint_every = f.checkpoint_every;
  options.lr = f.lr > 0 ? f.lr : defaults.lr;
  options.weight_decay =
      f.weight_decay >= 0 ? f.weight_decay : (link ? 0.0 : 5e-4);
  // Averaging measured on node tasks (docs/benchmarks.md); the learned rows
  // on the servers are not averaged.
  options.average_decay =
      f.average_decay >= 0
          ? f.average_decay
          : (link || f.learn_embeddings > 0 ? 0.0 : defaults.average_decay);
  options.seed = f.seed;
  options.prefetch = f.prefetch;
  // 0: TrainOptionsFor (cli/train_cmd.cc) sets the range of the choice.
  options.sampler_threads = std::max(1, f.sampler_threads);
  if (f.sampler_threads < 0)
    return absl::InvalidArgumentError("--sampler-threads must not be negative");
  if (f.prefetch < 0)
    return absl::InvalidArgumentError("--prefetch must not be negative");
  options.torch_threads = f.threads;
  // -1 (unset): the model's default.
  if (f.epochs == 0 || f.epochs < -1)
    return absl::InvalidArgumentError("--epochs must be at least 1");
  if (f.patience < -1)
    return absl::InvalidArgumentError("--patience must not be negative");
  if (f.average_decay >= 1)
    return absl::InvalidArgumentError(
        "--average-decay must be below 1 (0 = no averaging)");
  if (f.batch_size < 1)
    return absl::InvalidArgumentError("--batch-size must be positive");
  if (f.steps_per_epoch < 0)
    return absl::InvalidArgumentError(
        "--steps-per-epoch must not be negative (0: one pass)");
  if (f.min_steps_per_epoch < 1)
    return absl::InvalidArgumentError("--min-steps-per-epoch must be positive");
  if (f.checkpoint_every < 0)
    return absl::InvalidArgumentError(
        "--checkpoint-every must not be negative");
  if (!(f.progress_seconds >= 0))
    return absl::InvalidArgumentError("--progress-seconds must be 0 or more");
  if (f.resume && f.checkpoint_every == 0)
    return absl::InvalidArgumentError(
        "--resume needs checkpoints; it cannot go with --checkpoint-every 0");
  // -1 is "unset" (the model's default); 0 is no width, head count or step.
  if (f.hidden == 0 || f.hidden < -1)
    return absl::InvalidArgumentError("--hidden must be at least 1");
  if (f.heads == 0 || f.heads < -1)
    return absl::InvalidArgumentError("--heads must be at least 1");
  if (f.num_bases < 0 || f.num_bases > 1024)
    return absl::InvalidArgumentError("--num-bases must be in [0, 1024]");
  // -1 is "unset" (the model's or task's default, as a config.toml of a run
  // records it); any other negative value is a mistake, not a default.
  if (f.dropout >= 1 || (f.dropout < 0 && f.dropout != -1))
    return absl::InvalidArgumentError("--dropout must be in [0, 1)");
  if (f.weight_decay < 0 && f.weight_decay != -1)
    return absl::InvalidArgumentError("--weight-decay must not be negative");
  if (f.average_decay < 0 && f.average_decay != -1)
    return absl::InvalidArgumentError(
        "--average-decay must be in [0, 1) (0 = no averaging)");
  if (f.cache_mb < 0)
    return absl::InvalidArgumentError(
        "--cache-mb must not be negative (0 = no cache)");
  if (f.threads < 0)
    return absl::InvalidArgumentError(
        "--threads must not be negative (0 = this machine's cores shared "
        "among its trainers)");
  if (f.lr == 0 || (f.lr < 0 && f.lr != -1))
    return absl::InvalidArgumentError("--lr must be positive");
  if (f.shares == "speed") {
    options.adapt_shares = true;
  } else if (f.shares != "equal") {
    for (absl::string_view part : absl::StrSplit(f.shares, ',')) {
      double weight = 0;
      if (!absl::SimpleAtod(part, &weight) || !(weight > 0) || weight > 1e6) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--shares '", f.shares,
            "': expected equal, speed or positive weights, one per trainer "
            "(e.g. 2,2,1)"));
      }
      options.share_weights.push_back(std::llround(weight * 1000));
    }
  }
  if (f.feature_norm != "auto" && !ParseFeatureNorm(f.feature_norm).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--feature-norm '", f.feature_norm,
                     "': expected auto, none, row or standardize"));
  }
  return options;
}

absl::StatusOr<std::string> ChooseFeatures(const TrainingFlags& f,
                                           const GraphSource& source,
                                           TrainOptions* options) {
  if (f.ignore_features) {
    options->model.features = FeatureTransform();
    return std::string("features: ignored (--ignore-features)");
  }
  const bool automatic = f.feature_norm == "auto";
  FeatureNorm requested = FeatureNorm::kNone;
  if (!automatic) {
    auto parsed =
        ParseFeatureNorm(f.feature_norm);  // Checked by ToTrainOptions.
    if (!parsed.ok()) return parsed.status();
    requested = *parsed;
  }
  auto choice = ChooseFeatureNorm(source, automatic, requested, options->seed);
  if (!choice.ok()) return choice.status();
  options->model.features = choice->transform;
  return absl::StrCat("features: ", FeatureNormName(choice->transform.norm),
                      choice->automatic ? " (auto: " : " (", choice->reason,
                      ")");
}

absl::StatusOr<EmbeddingTableConfig> EmbeddingConfigFor(
    const TrainingFlags& f, int num_trainers, const std::string& run_id,
    int* staleness) {
  ASSIGN_OR_RETURN(*staleness, ParseEmbeddingSync(f.embedding_sync));
  EmbeddingTableConfig config;
  config.name = "node";
  config.dim = f.learn_embeddings;
  auto optimizer = ParseEmbeddingOptimizer(f.embedding_optimizer);
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--embedding-optimizer: ", optimizer.status().message()));
  }
  config.optimizer = *optimizer;
  config.lr = f.embedding_lr;
  config.eps = config.optimizer == EmbeddingOptimizer::kAdagrad ? 1e-10 : 1e-8;
  config.init_std = f.embedding_init_std >= 0 ? f.embedding_init_std
                    : f.pretrain_epochs > 0   ? 0.1
                                              : 1.0;
  config.seed = f.seed;
  config.num_trainers = num_trainers;
  config.run_id = run_id;
  // Synchronous runs apply each step's pushes in trainer order: reproducible
  // whichever trainer's push arrives first.
  config.ordered = *staleness == 0;
  if (absl::Status s = ValidateEmbeddingConfig(config); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("learned embeddings: ", s.message()));
  }
  return config;
}

}  // namespace shardgnn::cli
