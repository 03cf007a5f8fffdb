// A run's learnable input rows in the training loop (issue 15): pulls the
// rows of a batch's input nodes from the table (sampler/embedding_rows.h), as
// a leaf tensor that collects their gradient when training, joins them to the
// batch's features as the model's input, and after backward pushes the
// gradient of the step.
//
// Steps: training step s (counted over the whole run from 0) pulls at s and
// pushes s; every training step pushes, also one whose loss had nothing to
// score (with no rows), so that the owners' step clocks advance. Evaluation
// pulls at the next training step (every push of the run's steps so far, as
// the update mode allows), without gradient.
//
// Frozen rows (after pre-training, trainer/internal/pretrain_rows.h): every
// pull reads the table as of the step it was frozen at, without gradient, and
// a step pushes nothing: the rows are inputs like stored features, scaled to
// the L2 length FrozenRowLength (trainer.h) says.
#ifndef SHARDGNN_TRAINER_INTERNAL_INPUT_ROWS_H_
#define SHARDGNN_TRAINER_INTERNAL_INPUT_ROWS_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "sampler/embedding_rows.h"
#include "sampler/minibatch.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

class InputRows {
 public:
  // `rows` is not owned.
  InputRows(LearnableRows* rows, bool ignore_features)
      : rows_(rows), ignore_features_(ignore_features) {}

  int64_t dim() const { return rows_->dim(); }
  bool ignore_features() const { return ignore_features_; }
  int64_t step() const { return step_; }
  // The first training step of a run (0, or after resumed epochs).
  void set_step(int64_t step) { step_ = step; }
  // From now on the rows are read as of step() and not trained (above).
  void Freeze() { frozen_ = true; }
  bool frozen() const { return frozen_; }
  // The length frozen rows are scaled to as input (0: not frozen, as
  // pulled), beside features or alone.
  double row_length(bool with_features) const {
    return frozen_ ? FrozenRowLength(with_features && !ignore_features_) : 0;
  }

  // Pulls the rows of batch.input_nodes (a leaf with gradient for `train`).
  absl::Status Pull(const MiniBatch& batch, bool train);
  // The model's input: `features` (undefined with ignore_features) with the
  // rows of the last Pull appended as columns.
  torch::Tensor Input(const torch::Tensor& features) const;
  // After the training step's backward: pushes the rows' gradient (none if
  // the step computed none) for the step and moves to the next.
  absl::Status PushStep();

  LearnableRows* rows() const { return rows_; }

 private:
  LearnableRows* rows_;
  const bool ignore_features_;
  int64_t step_ = 0;
  std::vector<NodeId> nodes_;  // Of the last Pull.
  torch::Tensor pulled_;       // [nodes, dim]
  bool train_ = false;
  bool frozen_ = false;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_INPUT_ROWS_H_
