// Node classification (trainer/internal/task.h): seed nodes and their labels,
// cross-entropy, accuracy; the final test sampled or by layer-wise inference.
#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/task.h"

namespace shardgnn::internal {
namespace {

constexpr uint64_t kEvalSampleStream = 3;

torch::Tensor LabelsOf(const MiniBatch& batch) {
  return torch::from_blob(const_cast<int64_t*>(batch.labels.data()),
                          {static_cast<int64_t>(batch.labels.size())},
                          torch::kLong);
}

class NodeTask : public Task {
 public:
  explicit NodeTask(const TaskContext& context) : c_(context) {}

  absl::StatusOr<int64_t> Prepare() override {
    const TrainSplits& splits = *c_.splits;
    if (splits.train.empty())
      return absl::InvalidArgumentError(
          "training needs a non-empty train split");
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
                        o.batch_size, o.min_steps_per_epoch);
    }
    return PrefetchLoader::Create(sampler, c_.splits->train, loading);
  }

  torch::Tensor Loss(GnnModel& model, MiniBatch& batch,
                     StepFigures* f) override {
    BatchTensors t =
        ToTensors(batch, c_.options->model.kind, c_.transform, c_.rows);
    torch::Tensor labels = LabelsOf(batch);
    torch::Tensor logits = model.Forward(t.blocks, t.x);
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
  // (summed over ranks with a sync). The next batch is sampled (and its
  // features fetched) on a helper thread while the model runs on the current
  // one.
  absl::StatusOr<TaskEvaluation> Evaluate(
      GnnModel& model, EvalSplit split, const NeighborSampler& sampler,
      const std::function<void(int64_t, int64_t)>& progress) override {
    const std::vector<NodeId>& nodes =
        split == EvalSplit::kValid ? c_.splits->valid : c_.splits->test;
    torch::NoGradGuard no_grad;
    model.eval();
    double counts[3] = {0.0, 0.0, 0.0};  // correct, labeled, loss sum
    const uint64_t seed = MixSeed(c_.options->seed, kEvalSampleStream);
    const size_t step = static_cast<size_t>(c_.options->eval_batch_size);
    const auto batches_total =
        static_cast<int64_t>((nodes.size() + step - 1) / step);
    // Two batches, one sampled while the other is evaluated; members, so that
    // every evaluation reuses their buffers (no fresh memory per epoch).
    MiniBatch* batches = eval_batches_;
    auto sample = [&](size_t begin, MiniBatch* batch) {
      const size_t end = std::min(nodes.size(), begin + step);
      return sampler.Sample(
          absl::MakeConstSpan(nodes).subspan(begin, end - begin),
          MixSeed(seed, begin), batch);
    };
    std::future<absl::Status> next;
    if (progress) progress(0, batches_total);
    if (!nodes.empty())
      next = std::async(std::launch::async, sample, 0, &batches[0]);
    for (size_t begin = 0, k = 0; begin < nodes.size(); begin += step, ++k) {
      // (On an error return the destructor of a pending future waits for its
      // sampling, which ends: every remote call has a deadline.)
      RETURN_IF_ERROR(next.get());
      MiniBatch& batch = batches[k % 2];
      if (begin + step < nodes.size()) {
        next = std::async(std::launch::async, sample, begin + step,
                          &batches[(k + 1) % 2]);
      }
      if (c_.rows != nullptr) RETURN_IF_ERROR(c_.rows->Pull(batch, false));
      BatchTensors t =
          ToTensors(batch, c_.options->model.kind, c_.transform, c_.rows);
      torch::Tensor labels = LabelsOf(batch);
      torch::Tensor logits = model.Forward(t.blocks, t.x);
      torch::Tensor mask = labels.ge(0);
      counts[0] +=
          logits.argmax(1).eq(labels).logical_and(mask).sum().item<double>();
      const double labeled = mask.sum().item<double>();
      counts[1] += labeled;
      if (progress) progress(static_cast<int64_t>(k) + 1, batches_total);
      if (labeled > 0) {
        counts[2] += torch::nn::functional::cross_entropy(
                         logits, labels,
                         torch::nn::functional::CrossEntropyFuncOptions()
                             .ignore_index(-1)
                             .reduction(torch::kSum))
                         .item<double>();
      }
    }
    if (c_.sync != nullptr)
      RETURN_IF_ERROR(c_.sync->AllreduceSum(absl::MakeSpan(counts, 3)));
    TaskEvaluation e;
    if (counts[1] > 0) {
      e.score = counts[0] / counts[1];
      e.loss = counts[2] / counts[1];
      e.metrics.emplace_back("acc", e.score);
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

 private:
  TaskContext c_;
  int64_t num_classes_ = 0;
  MiniBatch eval_batches_[2];  // Evaluate's, kept for their buffers.
};

}  // namespace

std::unique_ptr<Task> MakeNodeTask(const TaskContext& context) {
  return std::make_unique<NodeTask>(context);
}

}  // namespace shardgnn::internal
