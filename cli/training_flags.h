// The model and training flags `shardgnn train` takes and `shardgnn run` passes
// through to its trainers, kept in one place so the two commands cannot drift
// apart.
#ifndef SHARDGNN_CLI_TRAINING_FLAGS_H_
#define SHARDGNN_CLI_TRAINING_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "embedding/embedding_table.h"
#include "trainer/trainer.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

// Flags whose default depends on the model (trainer.h DefaultsFor: hidden,
// heads, dropout, lr, epochs, patience) hold a value outside their range (0 or
// -1) until given.
struct TrainingFlags {
  std::string task = "node";                  // node or link.
  std::string decoder = "dot";                // Link tasks: dot or mlp.
  int negatives = 1;                          // Link tasks: per positive.
  std::string negative_sampling = "uniform";  // Link tasks: or degree.
  bool filter_negatives = false;              // Link tasks.
  std::string model = "sage";
  bool model_given = false;  // --model on the command line or in --config.
  // --model-script: the user's TorchScript module (model kind "script");
  // forwarded to trainer processes as an absolute path.
  std::string model_script;
  int epochs = -1;    // -1: the model's default.
  int patience = -1;  // Epochs without a better validation accuracy; 0 = off,
                      // -1: the model's default.
  int64_t min_steps_per_epoch = 10;
  // Optimizer steps per epoch, fixed (0: a pass over the train items); an
  // epoch of a large link task can be millions of edges.
  int64_t steps_per_epoch = 0;
  std::string fanouts = "10,10";
  std::string eval_fanouts;  // Empty: the training fanouts.
  bool exact_test = false;   // Final test by layer-wise inference.
  int64_t batch_size = 1024;
  int64_t hidden = -1;        // -1: the model's default.
  int heads = -1;             // -1: the model's default.
  int num_bases = 0;          // R-GCN; 0: as many as relations, up to 8.
  double dropout = -1;        // -1: the model's default.
  double lr = -1;             // -1: the model's default.
  double weight_decay = -1;   // -1: the task's default.
  double average_decay = -1;  // -1: the task's default.
  uint64_t seed = 0;
  int prefetch = 4;  // Batches sampled ahead of the trainer.
  // Background sampling threads per trainer; 0 = chosen from measurement.
  int sampler_threads = 0;
  int threads = 0;  // Compute threads; 0 = the cores / LOCAL_WORLD_SIZE.
  // Each trainer's part of a step's seeds (TrainOptions::share_weights /
  // adapt_shares): "equal" (each its own part of the train split), "speed"
  // (measured, after every epoch) or one weight per trainer ("2,2,1").
  std::string shares = "equal";
  int64_t cache_mb = 0;  // Feature cache per trainer.
  std::string cache_policy = "static";
  std::string feature_norm = "auto";  // auto, none, row, standardize.
  int checkpoint_every = 1;           // Epochs; 0 = no checkpoints.
  // Seconds between progress lines within an epoch and the final test
  // (rank 0; a line only once that much time passed); 0: none.
  double progress_seconds = 10;
  // HOST:PORT to serve the trainer's Prometheus metrics at while it trains
  // (trainer k of a machine, LOCAL_RANK, takes PORT + k); empty: none.
  std::string metrics_listen;
  // Fetch every feature row through GetFeatures calls, even from servers on
  // this machine that share their feature matrix.
  bool no_shared_memory = false;
  bool no_feature_port = false;
  bool resume = false;  // Continue from the run directory's checkpoints.
  bool allow_changed_settings = false;  // TrainOptions' of the same name.
  // Learned node embeddings (issue 15): the table's width (0: none), whether
  // they replace the features, the update mode and the sparse optimizer.
  int64_t learn_embeddings = 0;
  bool ignore_features = false;
  std::string embedding_sync = "sync";
  std::string embedding_optimizer = "adam";
  double embedding_lr = 0.01;
  // -1: 0.1 with --pretrain-epochs (pre-training from large random rows
  // starts from dot products of several units and does not recover within
  // its epochs), else 1.
  double embedding_init_std = -1;
  // Epochs of self-supervised pre-training of the learned rows before the
  // task, which then reads them frozen (TrainOptions::pretrain_epochs).
  int pretrain_epochs = 0;
};

// Registers the flags on `cmd`.
void AddTrainingFlags(CLI::App* cmd, TrainingFlags* flags);

// The same flags as command-line arguments (for a launcher starting `shardgnn
// train`).
std::vector<std::string> TrainingArgs(const TrainingFlags& flags);

// The run directory's config.toml for subcommand `cmd` (config_file.h
// RunConfigToml): its table, [<name>], of every flag with its resolved value
// (defaults too), as --config reads it back. Flags left unset (empty: a
// model-dependent default) are left out, so that reading the file back
// leaves them unset; with `training` (the command's flags), the values they
// resolve to for this run follow as comments, "# lr = 0.01" (the model's
// defaults: what `report` shows of a run that has no summary.json yet).
// Nothing of that when the flags do not resolve (the command fails on them).
std::string EffectiveConfig(const CLI::App& cmd,
                            const TrainingFlags* training = nullptr);

// Parses "15,10,5" (-1 = all neighbors).
absl::StatusOr<std::vector<int>> ParseFanouts(const std::string& text);

// Storage server addresses from "a:1,b:2" and/or a cluster file (one HOST:PORT
// per line, '#' comments).
absl::StatusOr<std::vector<std::string>> ServerAddresses(
    const std::string& list, const std::string& file);

// TrainOptions from the flags (model kind, fanouts and layers, optimizer,
// seeds), with the model's defaults where a flag was not given. The feature
// transform is left to ChooseFeatures (it looks at the data).
absl::StatusOr<TrainOptions> ToTrainOptions(const TrainingFlags& flags);

// Resolves --feature-norm against `source` (trainer.h ChooseFeatureNorm) into
// options->model.features and returns the line the run prints about it.
absl::StatusOr<std::string> ChooseFeatures(const TrainingFlags& flags,
                                           const GraphSource& source,
                                           TrainOptions* options);

// The embedding table --learn-embeddings asks for (name "node", seeded by
// --seed) for `num_trainers` trainers of run `run_id`, and the update mode's
// staleness (*staleness); INVALID_ARGUMENT naming the bad flag.
absl::StatusOr<EmbeddingTableConfig> EmbeddingConfigFor(
    const TrainingFlags& flags, int num_trainers, const std::string& run_id,
    int* staleness);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_TRAINING_FLAGS_H_
