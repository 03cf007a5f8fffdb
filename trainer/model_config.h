// A trained model's description, model.json in a run directory: what it takes
// to rebuild the model around the parameters saved beside it (model.pt, named
// tensors; trainer/internal/parameters_file.h) without the training flags.
// Written by rank 0 at the end of `shardgnn train`, read by `shardgnn infer`
// and by anything outside shardgnn (docs/formats.md).
#ifndef SHARDGNN_TRAINER_MODEL_CONFIG_H_
#define SHARDGNN_TRAINER_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/trainer.h"

namespace shardgnn {

inline constexpr char kModelConfigFile[] = "model.json";
inline constexpr char kModelParametersFile[] = "model.pt";
// A model script's run (`--model-script`): the module, TorchScript, with
// the trained parameters (model.pt holds them too, by name).
inline constexpr char kModelScriptFile[] = "model_script.pt";
// The learned node embeddings of a run that learned them (float32 [N, D],
// original node ID order).
inline constexpr char kLearnedEmbeddingsFile[] = "learned_embeddings.npy";

struct ModelConfig {
  // Kind, layers, hidden width, heads and the input feature scaling (with its
  // statistics); dropout rates are kept for the record (inference runs
  // without dropout).
  ModelOptions model;
  int64_t in_dim = 0;        // Input features per node.
  int64_t num_classes = 0;   // Outputs of the last layer (link tasks: the
                             // embedding width).
  std::vector<int> fanouts;  // What the model was trained with.
  // Link models: the last layer's outputs are node embeddings, and a pair is
  // scored by `decoder` (model.pt holds its parameters, decoder.*).
  TaskKind task = TaskKind::kNode;
  LinkDecoder decoder = LinkDecoder::kDot;
  // Models over learned node embeddings (`--learn-embeddings`, issue 15):
  // a node's input is its features (none with ignore_features), transformed
  // as `model.features` says, with its learned row appended. The rows are
  // the file `learned_file` of the run directory (float32 [N, learned_dim],
  // in original node ID order). learned_dim 0: no learned rows.
  int64_t learned_dim = 0;
  bool ignore_features = false;
  std::string learned_file;
  // Pre-trained (frozen) rows are read scaled to this L2 length
  // (FrozenRowLength, trainer.h); 0: as they are (rows trained with the
  // model).
  double learned_row_length = 0;

  // The first layer's input width.
  int64_t input_dim() const {
    return (ignore_features ? 0 : in_dim) + learned_dim;
  }
};

std::string ModelConfigToJson(const ModelConfig& config);

// Parses and checks model.json text (`path` names it in errors): the format
// tag and version, a known kind, positive sizes within bounds, feature
// statistics as wide as in_dim, and a learned rows file that is a plain name
// in the run directory. INVALID_ARGUMENT naming the file and field.
absl::StatusOr<ModelConfig> ModelConfigFromJson(const std::string& text,
                                                const std::string& path);

// Reads <run_dir>/model.json; NOT_FOUND (saying the run has not finished, or
// predates model files) when it is missing.
absl::StatusOr<ModelConfig> ReadModelConfig(const std::string& run_dir);

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_MODEL_CONFIG_H_
