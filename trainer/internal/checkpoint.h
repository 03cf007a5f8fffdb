// Checkpoints of a training run: everything needed to continue it exactly.
//
// Randomness in a run is counter-based (shuffles and sampling derive from
// (seed, epoch, step), dropout masks from the model's SeedStream), so the "RNG
// state" is the epoch and the SeedStream count. A checkpoint also holds the
// parameters, the optimizer state, the best-on-validation parameters and the
// per-epoch history. Files are written whole (temporary name, then rename).
#ifndef SHARDGNN_TRAINER_INTERNAL_CHECKPOINT_H_
#define SHARDGNN_TRAINER_INTERNAL_CHECKPOINT_H_

#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

struct CheckpointState {
  int epoch = 0;  // Epochs completed.
  uint64_t dropout_count = 0;
  std::vector<torch::Tensor> parameters;
  std::vector<torch::Tensor> best;  // Empty until an epoch completed.
  // The moving average of the parameters (TrainOptions::average_decay);
  // empty without one, or before the first step.
  std::vector<torch::Tensor> average;
  double best_val_acc = -1.0;
  // The best epoch's validation loss (ties of accuracy go to the lower).
  double best_val_loss = std::numeric_limits<double>::infinity();
  int best_epoch = 0;
  std::vector<EpochStats>
      history;  // Loss, accuracies and step counts (timings are not kept).
  // The training settings that do not change the parameters' shapes ("lr=0.01
  // batch_size=1024 ..."), for a resumed run to compare with its own. Empty
  // when read from a checkpoint written before they were kept.
  std::string settings;
};

// Where WriteCheckpoint keeps the checkpoint it replaced (one epoch older).
inline std::string PreviousCheckpointPath(const std::string& path) {
  return path + ".prev";
}

// Writes `state` and `optimizer`'s state to `path` atomically, keeping the
// file it replaces as PreviousCheckpointPath(path). `fingerprint` identifies
// the run's shape (model, sizes, seed); ReadCheckpoint refuses a file with
// another one.
absl::Status WriteCheckpoint(const std::string& path,
                             const std::string& fingerprint,
                             const CheckpointState& state,
                             torch::optim::Optimizer& optimizer);

// Reads `path` into *state (copying parameters into state->parameters' tensors,
// which must have the saved shapes) and `optimizer`. Returns false if there is
// no file; FAILED_PRECONDITION if it belongs to a different run; DATA_LOSS,
// naming the file in one line, if it is damaged (the file ends in a checksum
// of the rest, verified before anything is parsed) or unreadable.
absl::StatusOr<bool> ReadCheckpoint(const std::string& path,
                                    const std::string& fingerprint,
                                    CheckpointState* state,
                                    torch::optim::Optimizer* optimizer);

// ReadCheckpoint of `path`, or, when that file is damaged (DATA_LOSS), of
// PreviousCheckpointPath(path), one checkpoint older, with a warning line on
// stderr naming both; DATA_LOSS naming both files when that one cannot be
// read either.
absl::StatusOr<bool> ReadCheckpointOrPrevious(
    const std::string& path, const std::string& fingerprint,
    CheckpointState* state, torch::optim::Optimizer* optimizer);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_CHECKPOINT_H_
