// A user's TorchScript module as a GnnModel (`--model-script model.pt`):
// loaded and checked against the documented interface (docs/formats.md,
// "Model scripts") before training starts, its parameters trained by the
// trainer as the built-in models' are (the optimizer, allreduce,
// checkpoints, model.pt), and saved back as TorchScript with them.
#ifndef SHARDGNN_TRAINER_INTERNAL_SCRIPT_MODEL_H_
#define SHARDGNN_TRAINER_INTERNAL_SCRIPT_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/internal/models.h"

namespace shardgnn::internal {

// What the run needs of the module.
struct ScriptShape {
  int64_t in_dim = 0;       // Layer 0's input width.
  int64_t num_classes = 0;  // The last layer's output width.
  int num_layers = 0;       // The number of fanouts.
  // The graph's edge features (0: none; forward gets edge_attr None).
  int64_t edge_feature_dim = 0;
};

// Loads the TorchScript module at `path` and checks, before anything trains:
// that it is TorchScript; that it has an int attribute (or constant)
// `num_layers` equal to shape.num_layers; that its forward is
//   forward(self, layer: int, x: Tensor, edge_index: Tensor, num_dst: int,
//           edge_attr: Optional[Tensor]) -> Tensor;
// that it has parameters, all float32 on the CPU, and no buffers (the
// trainer neither averages nor checkpoints buffers); and, by running every
// layer once on a three-node block in eval mode, that layer 0 takes inputs
// shape.in_dim wide, that each layer returns a float32 [num_dst, width]
// matrix and the last one shape.num_classes columns. Each failure is one
// INVALID_ARGUMENT naming `path` and what does not fit (NOT_FOUND for a
// missing file).
//
// The model's parameters are the module's own tensors (updated in place by
// the optimizer), named as in the module (their names in checkpoints and
// model.pt), all trained. Layer l calls forward(l, h, edge_index, num_dst,
// edge_attr) with edge_index [2, E] (sources, destinations: PyG's
// source-to-target order) built from the block (an error the module raises
// becomes a c10::Error saying the layer and the module's own message); in
// training mode the
// default CPU generator (what dropout in the module draws from) is first
// seeded from a SeedStream seeded with `seed`, so a run is a function of
// its seed and resumes exactly.
absl::StatusOr<std::shared_ptr<GnnModel>> LoadScriptModel(
    const std::string& path, const ScriptShape& shape, uint64_t seed);

// Writes the module of `model` (made by LoadScriptModel) with its current
// parameters to `path` as TorchScript, through a temporary name renamed
// when complete. INVALID_ARGUMENT for another model.
absl::Status SaveScriptModel(GnnModel& model, const std::string& path);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_SCRIPT_MODEL_H_
