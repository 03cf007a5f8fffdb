// The task seam of the training loop: what a minibatch is seeded with and what
// is scored. A task owns its training items and how a batch of them becomes a
// MiniBatch (the loader), its decoder modules (added to the model, so that
// checkpoints, gradient sync and model.pt carry them by name), its loss and its
// evaluation; the loop (trainer.cc: epochs, sync, checkpoints, the kept epoch)
// stays task-agnostic.
//
//   node (MakeNodeTask): seed nodes, labels, cross-entropy, accuracy; the
//     final test sampled or exact (layer-wise inference).
//   link (MakeLinkTask): train edges with negatives, target edges excluded
//     from the sampled neighborhoods, a dot or MLP decoder, BCE; ROC-AUC, AP,
//     MRR and Hits@K on the valid/test pairs.
#ifndef SHARDGNN_TRAINER_INTERNAL_TASK_H_
#define SHARDGNN_TRAINER_INTERNAL_TASK_H_

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/graph_source.h"
#include "sampler/loader.h"
#include "sampler/minibatch.h"
#include "sampler/neighbor_sampler.h"
#include "trainer/inference.h"
#include "trainer/internal/input_rows.h"
#include "trainer/internal/models.h"
#include "trainer/trainer.h"

namespace shardgnn {
class GradientSync;
}

namespace shardgnn::internal {

// A minibatch as model input: block tensors and features (the MiniBatch must
// outlive it; its features are transformed in place).
struct BatchTensors {
  std::vector<BlockTensors> blocks;
  torch::Tensor x;    // Untyped graphs.
  TypedInputs typed;  // Typed graphs (x undefined): the model encodes them.
};
// With `rows` (learnable input rows), its last Pull's rows are appended to
// the features (or are the input, when features are ignored). A typed batch
// (MiniBatch::input_types) fills `typed` instead, with `schema` its graph's.
BatchTensors ToTensors(MiniBatch& batch, ModelKind kind,
                       const InputTransform& transform,
                       const InputRows* rows = nullptr,
                       const GraphSchema* schema = nullptr);
// The model's first input: t.x, or the model's encoding of t.typed.
torch::Tensor ModelInput(GnnModel& model, const BatchTensors& t);

// What a run shares with its task; outlives it.
struct TaskContext {
  const GraphSource* source = nullptr;
  const TrainSplits* splits = nullptr;
  const TrainOptions* options = nullptr;
  GradientSync* sync = nullptr;  // May be null (one process).
  InputTransform transform;
  // Learnable input rows (may be null): the trainer pulls a training batch's
  // rows before Loss; tasks pull their evaluation batches' rows themselves
  // (InputRows::Pull with train = false) before ToTensors.
  InputRows* rows = nullptr;
};

// One training step's figures, summed over the epoch.
struct StepFigures {
  double loss_sum = 0;  // Loss x items.
  double items = 0;     // Labeled seeds, or scored pairs.
  double correct = 0;
  double auc_sum = 0;  // Link tasks: ROC-AUC of each batch, summed ...
  double batches = 0;  // ... over this many batches.
};

// A split's figures (summed over ranks: every rank gets the same).
struct TaskEvaluation {
  double score = -1.0;  // Chooses the kept epoch; -1: nothing to score.
  double loss = 0.0;
  // Plain keys without the split's prefix: "acc"; "auc", "ap", "mrr",
  // "hits@20", ...
  std::vector<std::pair<std::string, double>> metrics;
};

enum class EvalSplit { kValid, kTest };

// Micro- and macro-averaged F1 of a classification from per-class counts
// (counts[3c], [3c + 1], [3c + 2]: class c's true positives, false
// positives, false negatives). The macro average is over the classes that
// occur in the labels or the predictions; with one label per node the
// micro average equals the accuracy.
struct F1Scores {
  double micro = 0;
  double macro = 0;
};
F1Scores F1Of(const double* counts, int64_t num_classes);

class Task {
 public:
  virtual ~Task() = default;

  // Checks the splits; the encoder's output width (classes, or the embedding
  // width).
  virtual absl::StatusOr<int64_t> Prepare() = 0;
  // Adds the decoder's modules to `model` (named "decoder.*"); none by
  // default.
  virtual void AddDecoder(GnnModel* model, uint64_t seed) {}
  // The sampler's options adjusted to the task (link tasks fetch no labels).
  virtual SamplerOptions Sampling(SamplerOptions base) const { return base; }
  // The training loader over this rank's items; `loading.steps_per_epoch` 0
  // asks the task for its count (the same on every rank).
  virtual absl::StatusOr<std::unique_ptr<PrefetchLoader>> MakeLoader(
      const NeighborSampler* sampler, LoaderOptions loading) = 0;
  // The loss of a training batch (undefined when nothing in it is scored);
  // adds its figures to *f.
  virtual torch::Tensor Loss(GnnModel& model, MiniBatch& batch,
                             StepFigures* f) = 0;
  // The background sampling threads evaluation may use: the training
  // loader's current count (trainer/internal/pipeline_tuner.h).
  void set_sampler_threads(int threads) { sampler_threads_ = threads; }
  // A split's figures with a sampling evaluation (summed over ranks).
  virtual absl::StatusOr<TaskEvaluation> Evaluate(
      GnnModel& model, EvalSplit split, const NeighborSampler& sampler,
      const std::function<void(int64_t, int64_t)>& progress) = 0;
  // The test figures over full neighborhoods (layer-wise inference).
  virtual absl::StatusOr<TaskEvaluation> EvaluateExact(GnnModel& model) = 0;
  // Frees the buffers validation keeps between epochs (its loader's), once
  // training is over and the test pass comes.
  virtual void ReleaseValidationBuffers() {}

 protected:
  int sampler_threads_ = 1;
};

// Layer-wise inference over full neighborhoods for an exact test (both
// tasks' EvaluateExact): `infer` completed with the run's rank, world, chunk
// size (eval_batch_size), threads, test progress (node rows over all layers),
// the learned rows of context.rows (if any; `config` is completed with them)
// and scratch directory (TrainOptions::scratch_dir, else a temporary one),
// which is removed afterwards (a given one only if nothing else is in it).
absl::StatusOr<InferResult> RunExactTest(
    const TaskContext& context, GnnModel& model, const ModelConfig& config,
    const std::map<std::string, std::vector<NodeId>>& splits,
    InferOptions infer);

std::unique_ptr<Task> MakeNodeTask(const TaskContext& context);
std::unique_ptr<Task> MakeLinkTask(const TaskContext& context);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_TASK_H_
