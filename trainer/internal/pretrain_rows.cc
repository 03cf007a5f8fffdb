#include "trainer/internal/pretrain_rows.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"

namespace shardgnn::internal {
namespace {

absl::Status CheckOptions(const PretrainRowsOptions& o) {
  auto bad = [](const char* field, int64_t value, const char* range) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding pre-training: ", field, " is ", value, "; ", range));
  };
  if (o.epochs < 0) return bad("epochs", o.epochs, "0 or more");
  if (o.batch_size < 1) return bad("batch_size", o.batch_size, "1 or more");
  if (o.walk_length < 1 || o.walk_length > 100)
    return bad("walk_length", o.walk_length, "1 to 100");
  if (o.window < 1) return bad("window", o.window, "1 or more");
  if (o.negatives < 1 || o.negatives > 100)
    return bad("negatives", o.negatives, "1 to 100");
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size)
    return bad("rank", o.rank, "in [0, world_size)");
  return absl::OkStatus();
}

// One step's walks, pairs and negatives, and its push.
class Step {
 public:
  Step(const GraphSource& source, LearnableRows* rows,
       const PretrainRowsOptions& options)
      : source_(source), rows_(rows), options_(options) {}

  // Walks from `starts`, trains on their pairs, pushes `step`; adds the
  // pairs' summed loss and count.
  absl::Status Run(absl::Span<const NodeId> starts, int64_t step,
                   double* loss_sum, int64_t* pairs) {
    const int len = options_.walk_length;
    const auto walks = static_cast<int64_t>(starts.size());
    // walk[b * (len + 1) + i]: the walk's i-th node, -1 once it stopped.
    walk_.assign(static_cast<size_t>(walks * (len + 1)), -1);
    for (int64_t b = 0; b < walks; ++b) walk_[b * (len + 1)] = starts[b];
    for (int i = 1; i <= len; ++i) {
      alive_.clear();
      at_.clear();
      for (int64_t b = 0; b < walks; ++b) {
        const NodeId v = walk_[b * (len + 1) + i - 1];
        if (v < 0) continue;
        alive_.push_back(b);
        at_.push_back(v);
      }
      if (at_.empty()) break;
      RETURN_IF_ERROR(source_.SampleNeighbors(
          at_, 1, /*replace=*/false,
          MixSeed(options_.seed, static_cast<uint64_t>(step) * 128 + i),
          &sampled_));
      if (sampled_.counts.size() != at_.size())
        return absl::InternalError("the sampler answered another node count");
      size_t k = 0;
      for (size_t a = 0; a < at_.size(); ++a) {
        const int64_t count = sampled_.counts[a];
        if (count > 0) {
          const NodeId next = sampled_.neighbors[k];
          if (next < 0 || next >= source_.num_nodes()) {
            return absl::InternalError(
                absl::StrCat("the sampler answered node ", next,
                             " outside the graph's ", source_.num_nodes()));
          }
          walk_[alive_[a] * (len + 1) + i] = next;
        }
        k += static_cast<size_t>(count);
      }
    }
    // Positive pairs within the window, and their negatives.
    src_.clear();
    dst_.clear();
    for (int64_t b = 0; b < walks; ++b) {
      const NodeId* w = walk_.data() + b * (len + 1);
      for (int i = 0; i <= len && w[i] >= 0; ++i) {
        for (int j = i + 1; j <= std::min(len, i + options_.window); ++j) {
          if (w[j] < 0) break;
          src_.push_back(w[i]);
          dst_.push_back(w[j]);
        }
      }
    }
    const auto num_pairs = static_cast<int64_t>(src_.size());
    std::mt19937_64 rng(MixSeed(options_.seed ^ 0x9e3779b97f4a7c15ULL,
                                static_cast<uint64_t>(step)));
    std::uniform_int_distribution<NodeId> any(0, source_.num_nodes() - 1);
    neg_.resize(static_cast<size_t>(num_pairs * options_.negatives));
    for (NodeId& n : neg_) n = any(rng);
    if (num_pairs == 0) return rows_->Push(step, {}, {});

    // The rows of every node the step touches, once each.
    nodes_.assign(src_.begin(), src_.end());
    nodes_.insert(nodes_.end(), dst_.begin(), dst_.end());
    nodes_.insert(nodes_.end(), neg_.begin(), neg_.end());
    std::sort(nodes_.begin(), nodes_.end());
    nodes_.erase(std::unique(nodes_.begin(), nodes_.end()), nodes_.end());
    auto index_of = [&](const std::vector<NodeId>& ids) {
      torch::Tensor t =
          torch::empty({static_cast<int64_t>(ids.size())}, torch::kLong);
      int64_t* out = t.data_ptr<int64_t>();
      for (size_t i = 0; i < ids.size(); ++i) {
        out[i] = std::lower_bound(nodes_.begin(), nodes_.end(), ids[i]) -
                 nodes_.begin();
      }
      return t;
    };
    const int64_t dim = rows_->dim();
    torch::Tensor e =
        torch::empty({static_cast<int64_t>(nodes_.size()), dim}, torch::kFloat);
    RETURN_IF_ERROR(rows_->Pull(nodes_, step, e.data_ptr<float>()));
    e.requires_grad_(true);
    const torch::Tensor eu = e.index_select(0, index_of(src_));
    const torch::Tensor ev = e.index_select(0, index_of(dst_));
    const torch::Tensor en = e.index_select(0, index_of(neg_))
                                 .view({num_pairs, options_.negatives, dim});
    const torch::Tensor pos = (eu * ev).sum(1);
    const torch::Tensor neg = (eu.unsqueeze(1) * en).sum(2);
    const torch::Tensor total =
        torch::softplus(-pos).sum() + torch::softplus(neg).sum();
    const double value = total.item<double>();
    if (!std::isfinite(value)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "embedding pre-training diverged at step ", step, ": the loss is ",
          value, "; lower --embedding-lr or --embedding-init-std"));
    }
    (total / static_cast<double>(num_pairs)).backward();
    const torch::Tensor g = e.grad().contiguous();
    RETURN_IF_ERROR(
        rows_->Push(step, nodes_,
                    absl::MakeConstSpan(g.data_ptr<float>(),
                                        static_cast<size_t>(g.numel()))));
    *loss_sum += value;
    *pairs += num_pairs;
    return absl::OkStatus();
  }

 private:
  const GraphSource& source_;
  LearnableRows* rows_;
  const PretrainRowsOptions& options_;
  std::vector<NodeId> walk_, at_, src_, dst_, neg_, nodes_;
  std::vector<int64_t> alive_;
  SampledNeighbors sampled_;
};

}  // namespace

int64_t PretrainStepsPerEpoch(int64_t num_nodes,
                              const PretrainRowsOptions& options) {
  const int64_t per_step = std::max<int64_t>(1, options.batch_size) *
                           std::max(1, options.world_size);
  return std::max<int64_t>(1, (num_nodes + per_step - 1) / per_step);
}

absl::StatusOr<std::vector<PretrainEpoch>> PretrainRows(
    const GraphSource& source, LearnableRows* rows,
    const PretrainRowsOptions& options, int64_t first_step,
    const std::function<void(const PretrainEpoch&)>& on_epoch) {
  RETURN_IF_ERROR(CheckOptions(options));
  if (rows == nullptr)
    return absl::InvalidArgumentError("embedding pre-training needs a table");
  const int64_t n = source.num_nodes();
  if (n < 1) return absl::InvalidArgumentError("the graph has no nodes");
  const int64_t steps = PretrainStepsPerEpoch(n, options);
  std::vector<NodeId> order(static_cast<size_t>(n));
  std::vector<NodeId> share;
  std::vector<PretrainEpoch> history;
  torch::AutoGradMode grad(true);
  Step step(source, rows, options);
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    // Every trainer draws the same permutation and takes every T-th node.
    std::iota(order.begin(), order.end(), NodeId{0});
    std::mt19937_64 rng(MixSeed(options.seed, static_cast<uint64_t>(epoch)));
    std::shuffle(order.begin(), order.end(), rng);
    share.clear();
    for (int64_t i = options.rank; i < n; i += options.world_size)
      share.push_back(order[i]);
    PretrainEpoch stats;
    stats.epoch = epoch;
    double loss_sum = 0;
    for (int64_t k = 0; k < steps; ++k) {
      const auto begin = std::min<int64_t>(static_cast<int64_t>(share.size()),
                                           k * options.batch_size);
      const auto end = std::min<int64_t>(static_cast<int64_t>(share.size()),
                                         begin + options.batch_size);
      const int64_t s = first_step + (epoch - 1) * steps + k;
      RETURN_IF_ERROR(step.Run(
          absl::MakeConstSpan(share).subspan(static_cast<size_t>(begin),
                                             static_cast<size_t>(end - begin)),
          s, &loss_sum, &stats.pairs));
    }
    RETURN_IF_ERROR(rows->Flush());
    stats.steps = steps;
    stats.loss =
        stats.pairs > 0 ? loss_sum / static_cast<double>(stats.pairs) : 0.0;
    stats.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    history.push_back(stats);
    if (on_epoch) on_epoch(stats);
  }
  return history;
}

}  // namespace shardgnn::internal
