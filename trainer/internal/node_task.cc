// Node classification (trainer/internal/task.h): seed nodes and their labels,
// cross-entropy, accuracy; the final test sampled or by layer-wise inference.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "sampler/loader.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/task.h"

namespace shardgnn::internal {
namespace {

torch::Tensor LabelsOf(const MiniBatch& batch) {
  return torch::from_blob(const_cast<int64_t*>(batch.labels.data()),
                          {static_cast<int64_t>(batch.labels.size())},
                          torch::kLong);
}

// A multi-label batch's targets [seeds, classes] (0/1; rows of -1 for
// unlabeled seeds).
torch::Tensor LabelRowsOf(const MiniBatch& batch, int64_t classes) {
  return torch::from_blob(const_cast<int64_t*>(batch.labels.data()),
                          {static_cast<int64_t>(batch.seeds.size()), classes},
                          torch::kLong);
}

// Multi-label counts of `logits` against `rows` (a class is predicted where
// its logit is positive) over the labeled rows: per class true positives,
// false positives, false negatives into per_class (as CountPerClass), and
// the rows whose whole set is right into *exact. Returns the labeled rows.
int64_t CountMultiLabel(const torch::Tensor& logits, const torch::Tensor& rows,
                        double* per_class, double* exact) {
  torch::Tensor labeled = rows.select(1, 0).ge(0);
  torch::Tensor y = rows.index({labeled}).to(torch::kBool);
  torch::Tensor p = logits.index({labeled}).gt(0);
  const int64_t classes = rows.size(1);
  torch::Tensor tp = p.logical_and(y).sum(0);
  torch::Tensor fp = p.logical_and(y.logical_not()).sum(0);
  torch::Tensor fn = p.logical_not().logical_and(y).sum(0);
  for (int64_t c = 0; c < classes; ++c) {
    per_class[3 * c] += tp[c].item<double>();
    per_class[3 * c + 1] += fp[c].item<double>();
    per_class[3 * c + 2] += fn[c].item<double>();
  }
  *exact += p.eq(y).all(1).sum().item<double>();
  return y.size(0);
}

// The mean binary cross-entropy of the labeled rows' classes (undefined
// without any).
torch::Tensor MultiLabelLoss(
    const torch::Tensor& logits, const torch::Tensor& rows,
    torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions o = {}) {
  torch::Tensor labeled = rows.select(1, 0).ge(0);
  return torch::nn::functional::binary_cross_entropy_with_logits(
      logits.index({labeled}), rows.index({labeled}).to(torch::kFloat), o);
}

// Adds each labeled node's outcome to its classes' counts: per class c,
// counts[3c] true positives, counts[3c + 1] false positives (predicted c,
// labeled otherwise), counts[3c + 2] false negatives (labeled c, predicted
// otherwise).
void CountPerClass(const torch::Tensor& predicted, const torch::Tensor& labels,
                   double* counts) {
  const int64_t* p = predicted.data_ptr<int64_t>();
  const int64_t* y = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (y[i] < 0) continue;
    if (p[i] == y[i]) {
      counts[3 * y[i]] += 1;
    } else {
      counts[3 * p[i] + 1] += 1;
      counts[3 * y[i] + 2] += 1;
    }
  }
}

}  // namespace

F1Scores F1Of(const double* counts, int64_t num_classes) {
  double tp = 0, fp = 0, fn = 0, macro = 0;
  int64_t classes = 0;
  for (int64_t c = 0; c < num_classes; ++c) {
    const double t = counts[3 * c], f_p = counts[3 * c + 1],
                 f_n = counts[3 * c + 2];
    tp += t;
    fp += f_p;
    fn += f_n;
    // Classes that occur in the labels or the predictions (scikit-learn's
    // macro average over the labels present).
    if (t + f_p + f_n == 0) continue;
    macro += 2 * t / (2 * t + f_p + f_n);
    ++classes;
  }
  F1Scores f1;
  f1.micro = tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0;
  f1.macro = classes > 0 ? macro / static_cast<double>(classes) : 0;
  return f1;
}

namespace {

class NodeTask : public Task {
 public:
  explicit NodeTask(const TaskContext& context) : c_(context) {}

  absl::StatusOr<int64_t> Prepare() override {
    const TrainSplits& splits = *c_.splits;
    if (splits.train.empty())
      return absl::InvalidArgumentError(
          "training needs a non-empty train split");
    multilabel_ = c_.source->label_columns() > 1;
    if (multilabel_) {
      num_classes_ = c_.source->label_columns();
      return num_classes_;
    }
    num_classes_ = c_.options->num_classes;
    if (num_classes_ <= 0) {
      std::vector<int64_t> labels(splits.train.size());
      RETURN_IF_ERROR(c_.source->FetchLabels(splits.train, labels.data()));
      num_classes_ = *std::max_element(labels.begin(), labels.end()) + 1;
      if (num_classes_ < 2)
        return absl::InvalidArgumentError(
            "the train split has fewer than two classes");
    }
    return num_classes_;
  }

  absl::StatusOr<std::unique_ptr<PrefetchLoader>> MakeLoader(
      const NeighborSampler* sampler, LoaderOptions loading) override {
    const TrainOptions& o = *c_.options;
    if (loading.steps_per_epoch == 0) {
      loading.steps_per_epoch =
          StepsPerEpoch(static_cast<int64_t>(c_.splits->train.size()),
                        loading.batch_size, o.min_steps_per_epoch);
    }
    return PrefetchLoader::Create(sampler, c_.splits->train, loading);
  }

  torch::Tensor Loss(GnnModel& model, MiniBatch& batch,
                     StepFigures* f) override {
    BatchTensors t = ToTensors(batch, c_.options->model.kind, c_.transform,
                               c_.rows, c_.source->schema());
    torch::Tensor logits = model.Forward(t.blocks, ModelInput(model, t));
    if (multilabel_) {
      torch::Tensor rows = LabelRowsOf(batch, num_classes_);
      std::vector<double> ignored(3 * num_classes_);
      double exact = 0;
      const int64_t n =
          CountMultiLabel(logits.detach(), rows, ignored.data(), &exact);
      if (n == 0) return {};
      torch::Tensor loss = MultiLabelLoss(logits, rows);
      f->loss_sum += loss.item<double>() * n;
      f->correct += exact;
      f->items += n;
      return loss;
    }
    torch::Tensor labels = LabelsOf(batch);
    torch::Tensor mask = labels.ge(0);
    const int64_t n = mask.sum().item<int64_t>();
    if (n == 0) return {};
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, labels,
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
    f->loss_sum += loss.item<double>() * n;
    f->correct +=
        logits.argmax(1).eq(labels).logical_and(mask).sum().item<double>();
    f->items += n;
    return loss;
  }

  // Fraction of labeled nodes predicted correctly, and their mean loss
  // (summed over ranks with a sync). The batches are sampled (and their
  // features fetched) ahead by a loader's background threads while the model
  // runs, as in training; each split's loader is kept, with its buffers.
  absl::StatusOr<TaskEvaluation> Evaluate(
      GnnModel& model, EvalSplit split, const NeighborSampler& sampler,
      const std::function<void(int64_t, int64_t)>& progress) override {
    const std::vector<NodeId>& nodes =
        split == EvalSplit::kValid ? c_.splits->valid : c_.splits->test;
    torch::NoGradGuard no_grad;
    model.eval();
    // correct, labeled, loss sum; then per class: true positives, false
    // positives, false negatives (for the F1 scores).
    std::vector<double> counts(3 + 3 * num_classes_, 0.0);
    double* per_class = counts.data() + 3;
    if (!nodes.empty()) {
      ASSIGN_OR_RETURN(PrefetchLoader * loader,
                       EvalLoader(split, nodes, sampler));
      const int64_t batches_total = loader->steps_per_epoch();
      if (progress) progress(0, batches_total);
      // The same batches at every evaluation (epoch 0 of a loader that does
      // not shuffle).
      loader->StartEpoch(0);
      MiniBatch batch;
      for (int64_t k = 1;; ++k) {
        // (An error return stops the loader's threads, which end: every
        // remote call has a deadline.)
        ASSIGN_OR_RETURN(const bool more, loader->Next(&batch));
        if (!more) break;
        if (c_.rows != nullptr) RETURN_IF_ERROR(c_.rows->Pull(batch, false));
        BatchTensors t = ToTensors(batch, c_.options->model.kind, c_.transform,
                                   c_.rows, c_.source->schema());
        torch::Tensor logits = model.Forward(t.blocks, ModelInput(model, t));
        if (multilabel_) {
          torch::Tensor rows = LabelRowsOf(batch, num_classes_);
          const int64_t n =
              CountMultiLabel(logits, rows, per_class, &counts[0]);
          counts[1] += static_cast<double>(n);
          if (n > 0) {
            // Summed over rows: each row's mean over its classes.
            counts[2] += MultiLabelLoss(logits, rows).item<double>() *
                         static_cast<double>(n);
          }
          if (progress) progress(k, batches_total);
          continue;
        }
        torch::Tensor labels = LabelsOf(batch);
        torch::Tensor mask = labels.ge(0);
        torch::Tensor predicted = logits.argmax(1);
        counts[0] +=
            predicted.eq(labels).logical_and(mask).sum().item<double>();
        CountPerClass(predicted, labels, per_class);
        const double labeled = mask.sum().item<double>();
        counts[1] += labeled;
        if (progress) progress(k, batches_total);
        if (labeled > 0) {
          counts[2] += torch::nn::functional::cross_entropy(
                           logits, labels,
                           torch::nn::functional::CrossEntropyFuncOptions()
                               .ignore_index(-1)
                               .reduction(torch::kSum))
                           .item<double>();
        }
      }
      loader->Pause();  // Its threads stay for the next evaluation.
    }
    if (c_.sync != nullptr)
      RETURN_IF_ERROR(c_.sync->AllreduceSum(absl::MakeSpan(counts)));
    TaskEvaluation e;
    if (counts[1] > 0) {
      e.score = counts[0] / counts[1];
      e.loss = counts[2] / counts[1];
      const F1Scores f1 = F1Of(per_class, num_classes_);
      if (multilabel_) {
        // The kept epoch is chosen by micro-F1; "subset_acc" is the fraction
        // of nodes whose whole set of classes is right.
        e.score = f1.micro;
        e.metrics.emplace_back("micro_f1", f1.micro);
        e.metrics.emplace_back("macro_f1", f1.macro);
        e.metrics.emplace_back("subset_acc", counts[0] / counts[1]);
      } else {
        e.metrics.emplace_back("acc", e.score);
        e.metrics.emplace_back("micro_f1", f1.micro);
        e.metrics.emplace_back("macro_f1", f1.macro);
      }
    }
    return e;
  }

  // The test accuracy from every node's exact outputs (layer-wise inference
  // over full neighborhoods, each rank computing its share), summed over
  // ranks.
  absl::StatusOr<TaskEvaluation> EvaluateExact(GnnModel& model) override {
    const TrainOptions& o = *c_.options;
    ModelConfig config;
    config.model = o.model;
    config.in_dim = c_.source->feature_dim();
    config.num_classes = num_classes_;
    config.fanouts = o.fanouts;
    absl::StatusOr<InferResult> inferred = RunExactTest(
        c_, model, config, {{"test", c_.splits->test}}, InferOptions());
    RETURN_IF_ERROR(inferred.status());
    const SplitAccuracy& test = inferred->accuracy.at("test");
    double counts[2] = {static_cast<double>(test.correct),
                        static_cast<double>(test.labeled)};
    if (c_.sync != nullptr)
      RETURN_IF_ERROR(c_.sync->AllreduceSum(absl::MakeSpan(counts, 2)));
    TaskEvaluation e;
    if (counts[1] > 0) {
      e.score = counts[0] / counts[1];
      e.metrics.emplace_back("acc", e.score);
    }
    return e;
  }

  void ReleaseValidationBuffers() override { eval_loaders_[0] = {}; }

 private:
  // The loader of `split`'s nodes with `sampler`, kept for its buffers (made
  // again only when the sampler or the number of threads changes): as many
  // threads as training uses now, a batch ahead per thread (a thread samples
  // only batches within `prefetch` of the consumer), so at most threads + 1
  // batches are alive.
  absl::StatusOr<PrefetchLoader*> EvalLoader(EvalSplit split,
                                             const std::vector<NodeId>& nodes,
                                             const NeighborSampler& sampler) {
    EvalLoaderSlot& slot = eval_loaders_[split == EvalSplit::kValid ? 0 : 1];
    const int threads = std::max(1, sampler_threads_);
    if (slot.loader == nullptr || slot.sampler != &sampler ||
        slot.loader->workers() != threads) {
      const TrainOptions& o = *c_.options;
      LoaderOptions loading;
      loading.batch_size = o.eval_batch_size;
      loading.shuffle = false;
      // Batches of one size (within a seed): a short last batch's smaller
      // tensors would take fresh blocks from the caching allocator in the
      // test pass, which runs once (issue 17).
      loading.balanced = true;
      loading.sample_seed = MixSeed(o.seed, kEvalSampleStream);
      loading.workers = threads;
      loading.prefetch = threads;
      slot.loader.reset();
      ASSIGN_OR_RETURN(slot.loader,
                       PrefetchLoader::Create(&sampler, nodes, loading));
      slot.sampler = &sampler;
    }
    return slot.loader.get();
  }

  struct EvalLoaderSlot {
    const NeighborSampler* sampler = nullptr;
    std::unique_ptr<PrefetchLoader> loader;
  };

  TaskContext c_;
  int64_t num_classes_ = 0;
  bool multilabel_ = false;
  EvalLoaderSlot eval_loaders_[2];  // Validation, test.
};

}  // namespace

std::unique_ptr<Task> MakeNodeTask(const TaskContext& context) {
  return std::make_unique<NodeTask>(context);
}

}  // namespace shardgnn::internal
