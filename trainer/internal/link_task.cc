// Link prediction (trainer/internal/task.h): minibatches of train edges with
// negatives (sampler/link_batcher.h), the batch's target edges excluded from
// its neighborhoods, a dot or MLP decoder on the endpoints' embeddings, binary
// cross-entropy; ROC-AUC, AP, MRR and Hits@K on the valid/test pairs, each
// rank scoring its share and the scores gathered by a sum-allreduce.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "sampler/link_batcher.h"
#include "trainer/distributed.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/decoder.h"
#include "trainer/internal/task.h"
#include "trainer/link_metrics.h"

namespace shardgnn::internal {
namespace {

constexpr uint64_t kDecoderStream = 5;

class LinkTask : public Task {
 public:
  explicit LinkTask(const TaskContext& context) : c_(context) {}

  absl::StatusOr<int64_t> Prepare() override {
    const TrainSplits& s = *c_.splits;
    const int64_t n = c_.source->num_nodes();
    if (s.train_edges.empty()) {
      return absl::InvalidArgumentError(
          "link prediction needs train edges: the dataset has no edge split "
          "(dataset import/generate --edge-split 0.85,0.05,0.10)");
    }
    for (const auto& [list, name] :
         {std::pair{&s.train_edges, "train edges"},
          std::pair{&s.valid_edges, "valid edges"},
          std::pair{&s.valid_negatives, "valid negative pairs"},
          std::pair{&s.test_edges, "test edges"},
          std::pair{&s.test_negatives, "test negative pairs"}}) {
      RETURN_IF_ERROR(CheckPairs(*list, n, name));
    }
    const LinkOptions& link = c_.options->link;
    if (link.negatives < 1) {
      return absl::InvalidArgumentError(
          "link prediction needs at least one negative per positive");
    }
    ASSIGN_OR_RETURN(negatives_, NegativeSampler::Create(
                                     *c_.source, link.negative_sampling,
                                     s.train_edges, link.filter_negatives));
    return c_.options->model.hidden;
  }

  void AddDecoder(GnnModel* model, uint64_t seed) override {
    AddPairDecoder(model, c_.options->link.decoder, c_.options->model.hidden,
                   MixSeed(seed, kDecoderStream));
  }

  SamplerOptions Sampling(SamplerOptions base) const override {
    base.fetch_labels = false;
    return base;
  }

  absl::StatusOr<std::unique_ptr<PrefetchLoader>> MakeLoader(
      const NeighborSampler* sampler, LoaderOptions loading) override {
    const TrainOptions& o = *c_.options;
    const auto edges = static_cast<int64_t>(c_.splits->train_edges.size() / 2);
    if (loading.steps_per_epoch == 0) {
      // Every rank runs as many steps as the largest share needs.
      const int64_t largest = (edges + o.world_size - 1) / o.world_size;
      loading.steps_per_epoch =
          StepsPerEpoch(largest, o.batch_size, o.min_steps_per_epoch);
    }
    const auto [begin, end] = ShareOf(edges, o.rank, o.world_size);
    if (begin == end) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", o.rank, " has no train edges: ", edges,
                       " edges among ", o.world_size, " trainers"));
    }
    std::vector<int64_t> items(static_cast<size_t>(end - begin));
    for (int64_t e = begin; e < end; ++e) items[e - begin] = e;
    LinkBatchOptions batching;
    batching.negatives = o.link.negatives;
    batching.exclude_targets = o.link.exclude_targets;
    batcher_ = std::make_unique<LinkBatcher>(sampler, c_.splits->train_edges,
                                             negatives_.get(), batching);
    const LinkBatcher* batcher = batcher_.get();
    return PrefetchLoader::Create(
        [batcher](absl::Span<const int64_t> items, uint64_t seed,
                  MiniBatch* out) { return batcher->Make(items, seed, out); },
        std::move(items), loading);
  }

  torch::Tensor Loss(GnnModel& model, MiniBatch& batch,
                     StepFigures* f) override {
    torch::Tensor logits = Scores(model, batch);
    torch::Tensor labels = torch::from_blob(
        batch.pair_labels.data(),
        {static_cast<int64_t>(batch.pair_labels.size())}, torch::kFloat);
    if (logits.numel() == 0) return {};
    torch::Tensor loss =
        torch::binary_cross_entropy_with_logits(logits, labels);
    const auto n = static_cast<double>(logits.numel());
    f->loss_sum += loss.item<double>() * n;
    f->correct += logits.gt(0).eq(labels.gt(0.5)).sum().item<double>();
    f->items += n;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor scores = logits.detach().contiguous();
      const auto num_pos = static_cast<int64_t>(
          std::count(batch.pair_labels.begin(), batch.pair_labels.end(), 1.0f));
      // The batch holds its positives first, then their negatives.
      const double auc =
          RocAuc(absl::MakeConstSpan(scores.data_ptr<float>(), num_pos),
                 absl::MakeConstSpan(scores.data_ptr<float>() + num_pos,
                                     scores.numel() - num_pos));
      if (auc >= 0) {
        f->auc_sum += auc;
        f->batches += 1;
      }
    }
    return loss;
  }

  absl::StatusOr<TaskEvaluation> Evaluate(
      GnnModel& model, EvalSplit split, const NeighborSampler& sampler,
      const std::function<void(int64_t, int64_t)>& progress) override {
    const bool valid = split == EvalSplit::kValid;
    const std::vector<NodeId>& pos =
        valid ? c_.splits->valid_edges : c_.splits->test_edges;
    const std::vector<NodeId>& neg =
        valid ? c_.splits->valid_negatives : c_.splits->test_negatives;
    torch::NoGradGuard no_grad;
    model.eval();
    const TrainOptions& o = *c_.options;
    const auto p = static_cast<int64_t>(pos.size() / 2);
    const auto q = static_cast<int64_t>(neg.size() / 2);
    // Every pair's score, each rank filling its share (zeros elsewhere), then
    // summed over ranks; the losses too.
    std::vector<float> scores(static_cast<size_t>(p + q), 0.0f);
    double loss[2] = {0.0, 0.0};  // sum, pairs
    const uint64_t seed = MixSeed(o.seed, kEvalSampleStream);
    const auto [pb, pe] = ShareOf(p, o.rank, o.world_size);
    const auto [nb, ne] = ShareOf(q, o.rank, o.world_size);
    const int64_t step = std::max<int64_t>(1, o.eval_batch_size / 2);
    const int64_t total_batches =
        (pe - pb + step - 1) / step + (ne - nb + step - 1) / step;
    int64_t done = 0;
    if (progress) progress(0, total_batches);
    MiniBatch batch;
    std::vector<float> labels;
    for (const auto& [list, begin, end, offset, label] :
         {std::tuple{&pos, pb, pe, int64_t{0}, 1.0f},
          std::tuple{&neg, nb, ne, p, 0.0f}}) {
      for (int64_t b = begin; b < end; b += step) {
        const int64_t count = std::min(step, end - b);
        labels.assign(static_cast<size_t>(count), label);
        RETURN_IF_ERROR(SamplePairs(
            sampler, absl::MakeConstSpan(*list).subspan(2 * b, 2 * count),
            labels, MixSeed(seed, static_cast<uint64_t>(offset + b)),
            /*exclude=*/nullptr, &batch));
        if (c_.rows != nullptr) RETURN_IF_ERROR(c_.rows->Pull(batch, false));
        torch::Tensor logits = Scores(model, batch);
        torch::Tensor target = torch::full({count}, label);
        loss[0] += torch::binary_cross_entropy_with_logits(
                       logits, target, {}, {}, at::Reduction::Sum)
                       .item<double>();
        loss[1] += static_cast<double>(count);
        std::copy_n(logits.data_ptr<float>(), count,
                    scores.begin() + offset + b);
        if (progress) progress(++done, total_batches);
      }
    }
    if (c_.sync != nullptr) {
      RETURN_IF_ERROR(c_.sync->AllreduceSum(absl::MakeSpan(scores)));
      RETURN_IF_ERROR(c_.sync->AllreduceSum(absl::MakeSpan(loss, 2)));
    }
    return Figures(scores, p, q, loss[1] > 0 ? loss[0] / loss[1] : 0.0);
  }

  // ROC-AUC, AP, MRR and Hits@K of `scores`: p positives, then q negatives.
  TaskEvaluation Figures(const std::vector<float>& scores, int64_t p, int64_t q,
                         double loss) const {
    const TrainOptions& o = *c_.options;
    TaskEvaluation e;
    if (p == 0 || q == 0) return e;
    const auto positive = absl::MakeConstSpan(scores).subspan(0, p);
    const auto negative = absl::MakeConstSpan(scores).subspan(p, q);
    e.score = RocAuc(positive, negative);
    e.loss = loss;
    e.metrics.emplace_back("auc", e.score);
    e.metrics.emplace_back("ap", AveragePrecision(positive, negative));
    const std::vector<int64_t> ranks =
        PositiveRanksAgainstAll(positive, negative);
    e.metrics.emplace_back("mrr", MeanReciprocalRank(ranks));
    for (int k : o.link.hits_k)
      e.metrics.emplace_back(absl::StrCat("hits@", k), HitsAt(ranks, k));
    return e;
  }

  // The test pairs scored from every node's exact embeddings (layer-wise
  // inference over full neighborhoods, each rank computing its share of
  // every layer; every rank then scores all pairs alike).
  absl::StatusOr<TaskEvaluation> EvaluateExact(GnnModel& model) override {
    const TrainOptions& o = *c_.options;
    ModelConfig config;
    config.model = o.model;
    config.in_dim = c_.source->feature_dim();
    config.num_classes = o.model.hidden;
    config.fanouts = o.fanouts;
    config.task = TaskKind::kLink;
    config.decoder = o.link.decoder;
    const std::vector<NodeId>& pos = c_.splits->test_edges;
    const std::vector<NodeId>& neg = c_.splits->test_negatives;
    InferOptions infer;
    infer.score_pairs = pos;
    infer.score_pairs.insert(infer.score_pairs.end(), neg.begin(), neg.end());
    std::vector<float> scores;
    infer.pair_scores = &scores;
    absl::StatusOr<InferResult> inferred =
        RunExactTest(c_, model, config, {}, std::move(infer));
    RETURN_IF_ERROR(inferred.status());
    const auto p = static_cast<int64_t>(pos.size() / 2);
    const auto q = static_cast<int64_t>(neg.size() / 2);
    if (static_cast<int64_t>(scores.size()) != p + q) {
      return absl::InternalError(absl::StrCat("exact test: ", scores.size(),
                                              " scores for ", p + q, " pairs"));
    }
    double loss = 0.0;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor logits = torch::from_blob(scores.data(), {p + q});
      torch::Tensor target = torch::cat({torch::ones({p}), torch::zeros({q})});
      loss = torch::binary_cross_entropy_with_logits(logits, target)
                 .item<double>();
    }
    return Figures(scores, p, q, loss);
  }

 private:
  // The decoder's logit for each of the batch's pairs.
  torch::Tensor Scores(GnnModel& model, MiniBatch& batch) {
    BatchTensors t =
        ToTensors(batch, c_.options->model.kind, c_.transform, c_.rows);
    torch::Tensor h = model.Forward(t.blocks, t.x);
    const auto n = static_cast<int64_t>(batch.pair_src.size());
    torch::Tensor src =
        torch::from_blob(batch.pair_src.data(), {n}, torch::kLong);
    torch::Tensor dst =
        torch::from_blob(batch.pair_dst.data(), {n}, torch::kLong);
    return ScorePairs(model, c_.options->link.decoder, h.index_select(0, src),
                      h.index_select(0, dst));
  }

  TaskContext c_;
  std::unique_ptr<NegativeSampler> negatives_;
  std::unique_ptr<LinkBatcher> batcher_;
};

}  // namespace

std::unique_ptr<Task> MakeLinkTask(const TaskContext& context) {
  return std::make_unique<LinkTask>(context);
}

}  // namespace shardgnn::internal
