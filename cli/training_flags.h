// The model and training flags `shardgnn train` takes and `shardgnn run` passes
// through to its trainers, kept in one place so the two commands cannot drift
// apart.
#ifndef SHARDGNN_CLI_TRAINING_FLAGS_H_
#define SHARDGNN_CLI_TRAINING_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/trainer.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

struct TrainingFlags {
  std::string model = "sage";
  int epochs = 20;
  std::string fanouts = "10,10";
  int64_t batch_size = 1024;
  int64_t hidden = 256;
  int heads = 8;
  double dropout = 0.5;
  double lr = 0.01;
  double weight_decay = 5e-4;
  uint64_t seed = 0;
  int prefetch = 4;         // Batches sampled ahead of the trainer.
  int sampler_threads = 1;  // Background sampling threads per trainer.
  int threads = 0;       // Compute threads; 0 = the cores / LOCAL_WORLD_SIZE.
  int64_t cache_mb = 0;  // Feature cache per trainer.
  std::string cache_policy = "static";
  bool normalize_features = false;
  // Fetch every feature row through GetFeatures calls, even from servers on
  // this machine that share their feature matrix.
  bool no_shared_memory = false;
  bool no_feature_port = false;
  bool resume = false;  // Continue from the run directory's checkpoints.
};

// Registers the flags on `cmd`.
void AddTrainingFlags(CLI::App* cmd, TrainingFlags* flags);

// The same flags as command-line arguments (for a launcher starting `shardgnn
// train`).
std::vector<std::string> TrainingArgs(const TrainingFlags& flags);

// Parses "15,10,5" (-1 = all neighbors).
absl::StatusOr<std::vector<int>> ParseFanouts(const std::string& text);

// Storage server addresses from "a:1,b:2" and/or a cluster file (one HOST:PORT
// per line, '#' comments).
absl::StatusOr<std::vector<std::string>> ServerAddresses(
    const std::string& list, const std::string& file);

// TrainOptions from the flags (model kind, fanouts and layers, optimizer,
// seeds).
absl::StatusOr<TrainOptions> ToTrainOptions(const TrainingFlags& flags);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_TRAINING_FLAGS_H_
