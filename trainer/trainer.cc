#include "trainer/trainer.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/checksum.h"
#include "common/sampling.h"
#include "common/status.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "trainer/compute_env.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/checkpoint.h"
#include "trainer/internal/layerwise.h"
#include "trainer/internal/models.h"
#include "trainer/internal/parameters_file.h"

namespace shardgnn {

absl::StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "sage" || lower == "graphsage") return ModelKind::kSage;
  if (lower == "gcn") return ModelKind::kGcn;
  if (lower == "gat") return ModelKind::kGat;
  if (lower == "mlp") return ModelKind::kMlp;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown model '", name, "' (expected sage, gcn, gat or mlp)"));
}

const char* ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kSage:
      return "sage";
    case ModelKind::kGcn:
      return "gcn";
    case ModelKind::kGat:
      return "gat";
    case ModelKind::kMlp:
      return "mlp";
  }
  return "?";
}

const char* FeatureNormName(FeatureNorm norm) {
  switch (norm) {
    case FeatureNorm::kNone:
      return "none";
    case FeatureNorm::kRow:
      return "row";
    case FeatureNorm::kStandardize:
      return "standardize";
  }
  return "?";
}

absl::StatusOr<FeatureNorm> ParseFeatureNorm(const std::string& name) {
  for (FeatureNorm norm :
       {FeatureNorm::kNone, FeatureNorm::kRow, FeatureNorm::kStandardize}) {
    if (name == FeatureNormName(norm)) return norm;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown feature scaling '",
                                                 name,
                                                 "' (expected none, row or "
                                                 "standardize)"));
}

ModelDefaults DefaultsFor(ModelKind kind) {
  switch (kind) {
    case ModelKind::kGat:
      // Velickovic et al. 2018: 8 heads of 8, dropout 0.6 on inputs and
      // attention, lr 0.005. Wider heads overfit small graphs within epochs.
      return {8, 8, 0.6, 0.6, 0.005};
    case ModelKind::kSage:
    case ModelKind::kGcn:
    case ModelKind::kMlp:
      break;
  }
  return {256, 8, 0.5, 0.6, 0.01};
}

std::vector<int> DefaultEvalFanouts(const std::vector<int>& fanouts) {
  std::vector<int> eval = fanouts;
  for (int& f : eval) {
    if (f > 0) f = f > std::numeric_limits<int>::max() / 2 ? f : 2 * f;
  }
  return eval;
}

int64_t StepsPerEpoch(int64_t num_seeds, int64_t batch_size,
                      int64_t min_steps) {
  if (batch_size < 1) return 0;
  return std::max((num_seeds + batch_size - 1) / batch_size, min_steps);
}

absl::StatusOr<FeatureNormChoice> ChooseFeatureNorm(const GraphSource& source,
                                                    bool automatic,
                                                    FeatureNorm requested,
                                                    uint64_t seed,
                                                    int64_t sample_size) {
  FeatureNormChoice choice;
  choice.automatic = automatic;
  choice.transform.norm = requested;
  if (!automatic && requested != FeatureNorm::kStandardize) {
    choice.reason = "as requested";
    return choice;
  }
  const int64_t n = source.num_nodes();
  const int64_t dim = source.feature_dim();
  if (n < 1 || dim < 1)
    return absl::InvalidArgumentError("the graph has no node features");
  // Evenly spaced nodes from a seeded offset: spread over every part and the
  // same on every trainer.
  const int64_t k = std::max<int64_t>(1, std::min(n, sample_size));
  const int64_t stride = n / k;
  const int64_t offset =
      static_cast<int64_t>(MixSeed(seed, 0) % static_cast<uint64_t>(stride));
  // In chunks, so that wide features never need a large buffer or call.
  constexpr int64_t kChunk = 256;
  std::vector<NodeId> ids;
  std::vector<float> rows;
  std::vector<double> sum(dim, 0.0), sum_sq(dim, 0.0);
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  for (int64_t begin = 0; begin < k; begin += kChunk) {
    const int64_t count = std::min(kChunk, k - begin);
    ids.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) ids[i] = offset + (begin + i) * stride;
    rows.resize(static_cast<size_t>(count * dim));
    RETURN_IF_ERROR(source.FetchFeatures(ids, rows.data()));
    for (int64_t i = 0; i < count; ++i) {
      const float* row = rows.data() + i * dim;
      for (int64_t c = 0; c < dim; ++c) {
        const float v = row[c];
        if (!std::isfinite(v)) {
          return absl::InvalidArgumentError(
              absl::StrCat("node ", ids[i], " has a non-finite feature value (",
                           v, ") in column ", c, "; fix the input data"));
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum[c] += v;
        sum_sq[c] += static_cast<double>(v) * v;
      }
    }
  }
  choice.sampled_nodes = k;
  choice.min_value = lo;
  choice.max_value = hi;
  if (automatic) {
    choice.transform.norm =
        lo >= 0 ? FeatureNorm::kRow : FeatureNorm::kStandardize;
    choice.reason =
        absl::StrCat(lo >= 0 ? "non-negative" : "signed", " features (range [",
                     lo, ", ", hi, "] over ", k, " sampled nodes)");
  } else {
    choice.reason =
        absl::StrCat("as requested; statistics from ", k, " sampled nodes");
  }
  if (choice.transform.norm == FeatureNorm::kStandardize) {
    choice.transform.shift.resize(dim);
    choice.transform.scale.resize(dim);
    for (int64_t c = 0; c < dim; ++c) {
      const double mean = sum[c] / static_cast<double>(k);
      const double var = std::max(0.0, sum_sq[c] / k - mean * mean);
      const double sd = std::sqrt(var);
      choice.transform.shift[c] = static_cast<float>(mean);
      choice.transform.scale[c] = sd > 1e-6 ? static_cast<float>(1.0 / sd) : 1;
    }
  }
  return choice;
}

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seeds for the different random streams of a run, so that none repeats
// another.
constexpr uint64_t kShuffleStream = 1;
constexpr uint64_t kTrainSampleStream = 2;
constexpr uint64_t kEvalSampleStream = 3;
constexpr uint64_t kModelStream = 4;

absl::Status CheckOptions(const GraphSource& source, const TrainSplits& splits,
                          const TrainOptions& options) {
  if (splits.train.empty())
    return absl::InvalidArgumentError("training needs a non-empty train split");
  if (static_cast<int>(options.fanouts.size()) != options.model.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", options.model.num_layers, " layers but ",
                     options.fanouts.size(), " fanouts were given"));
  }
  if (!options.eval_fanouts.empty() &&
      options.eval_fanouts.size() != options.fanouts.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval fanouts have ", options.eval_fanouts.size(),
        " entries but the model has ", options.model.num_layers, " layers"));
  }
  if (options.model.num_layers < 1 || options.model.hidden < 1 ||
      options.model.heads < 1) {
    return absl::InvalidArgumentError(
        "layers, hidden size and heads must be positive");
  }
  if (options.batch_size < 1 || options.eval_batch_size < 1 ||
      options.epochs < 0 || options.steps_per_epoch < 0) {
    return absl::InvalidArgumentError(
        "batch sizes must be positive, epochs and steps per epoch "
        "non-negative");
  }
  if (options.model.dropout < 0 || options.model.dropout >= 1 ||
      options.model.attn_dropout < 0 || options.model.attn_dropout >= 1) {
    return absl::InvalidArgumentError("dropout rates must be in [0, 1)");
  }
  if (source.feature_dim() < 1)
    return absl::InvalidArgumentError("the graph has no node features");
  if (options.patience < 0 || options.checkpoint_every < 0 ||
      options.min_steps_per_epoch < 0) {
    return absl::InvalidArgumentError(
        "patience, checkpoint interval and minimum steps must not be negative");
  }
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, " is not in a world of ", options.world_size));
  }
  const FeatureTransform& f = options.model.features;
  if (f.norm == FeatureNorm::kStandardize &&
      (static_cast<int64_t>(f.shift.size()) != source.feature_dim() ||
       f.scale.size() != f.shift.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature standardisation has ", f.shift.size(),
        " columns but the graph has ", source.feature_dim(), " features"));
  }
  return absl::OkStatus();
}

// A minibatch as model input: block tensors, features, labels (the MiniBatch
// must outlive it; its features are transformed in place).
struct BatchTensors {
  std::vector<internal::BlockTensors> blocks;
  torch::Tensor x;
  torch::Tensor labels;
};

BatchTensors ToTensors(MiniBatch& batch, const ModelOptions& model,
                       const internal::InputTransform& transform) {
  BatchTensors t;
  t.blocks = internal::ToBlockTensors(batch, model.kind);
  t.x = torch::from_blob(
      batch.features.data(),
      {static_cast<int64_t>(batch.input_nodes.size()), batch.feature_dim},
      torch::kFloat);
  // In place: the batch's feature buffer is consumed once, and reusing it
  // spares a fresh input-sized tensor per step.
  internal::ApplyInputTransform(transform, t.x);
  t.labels = torch::from_blob(const_cast<int64_t*>(batch.labels.data()),
                              {static_cast<int64_t>(batch.labels.size())},
                              torch::kLong);
  return t;
}

class Run {
 public:
  Run(const GraphSource& source, const TrainSplits& splits,
      const TrainOptions& options, GradientSync* sync)
      : source_(source), splits_(splits), options_(options), sync_(sync) {}

  absl::StatusOr<TrainResult> Go() {
    RETURN_IF_ERROR(CheckOptions(source_, splits_, options_));
    SetComputeThreads(options_.torch_threads);
    int64_t num_classes = options_.num_classes;
    if (num_classes <= 0) {
      std::vector<int64_t> labels(splits_.train.size());
      RETURN_IF_ERROR(source_.FetchLabels(splits_.train, labels.data()));
      num_classes = *std::max_element(labels.begin(), labels.end()) + 1;
      if (num_classes < 2)
        return absl::InvalidArgumentError(
            "the train split has fewer than two classes");
    }
    transform_ = internal::MakeInputTransform(options_.model.features);
    // GCN normalises by the graph's degrees (internal::BlockTensors).
    const bool degrees = internal::NeedsOf(options_.model.kind).degrees;
    SamplerOptions train_sampling;
    train_sampling.fanouts = options_.fanouts;
    train_sampling.fetch_degrees = degrees;
    ASSIGN_OR_RETURN(train_sampler_,
                     NeighborSampler::Create(&source_, train_sampling));
    LoaderOptions loading;
    loading.batch_size = options_.batch_size;
    loading.steps_per_epoch =
        options_.steps_per_epoch > 0
            ? options_.steps_per_epoch
            : StepsPerEpoch(static_cast<int64_t>(splits_.train.size()),
                            options_.batch_size, options_.min_steps_per_epoch);
    loading.prefetch = options_.prefetch;
    loading.workers = std::max(1, options_.sampler_threads);
    loading.shuffle_seed = MixSeed(options_.seed, kShuffleStream);
    loading.sample_seed = MixSeed(options_.seed, kTrainSampleStream);
    ASSIGN_OR_RETURN(loader_, PrefetchLoader::Create(train_sampler_.get(),
                                                     splits_.train, loading));
    // Validation runs every epoch and only ranks the epochs: by default it
    // samples as training does. The test runs once: twice the fanouts.
    SamplerOptions valid_sampling = train_sampling;
    SamplerOptions test_sampling = train_sampling;
    if (options_.eval_fanouts.empty()) {
      test_sampling.fanouts = DefaultEvalFanouts(options_.fanouts);
    } else {
      valid_sampling.fanouts = options_.eval_fanouts;
      test_sampling.fanouts = options_.eval_fanouts;
    }
    ASSIGN_OR_RETURN(valid_sampler_,
                     NeighborSampler::Create(&source_, valid_sampling));
    ASSIGN_OR_RETURN(test_sampler_,
                     NeighborSampler::Create(&source_, test_sampling));

    model_ =
        internal::MakeModel(options_.model, source_.feature_dim(), num_classes,
                            MixSeed(options_.seed, kModelStream));
    std::vector<torch::Tensor> params = model_->parameters();
    TrainResult result;
    for (const auto& p : params) result.num_parameters += p.numel();
    torch::optim::Adam optimizer(params,
                                 torch::optim::AdamOptions(options_.lr)
                                     .weight_decay(options_.weight_decay));
    const std::string fingerprint = absl::StrCat(
        ModelKindName(options_.model.kind),
        " layers=", options_.model.num_layers,
        " hidden=", options_.model.hidden, " heads=", options_.model.heads,
        " in=", source_.feature_dim(), " classes=", num_classes,
        " seed=", options_.seed);
    internal::CheckpointState state;
    state.parameters = params;
    const std::string settings = SettingsOf(loader_->steps_per_epoch());
    state.settings = settings;
    bool resumed = false;
    if (options_.resume && !options_.checkpoint_path.empty()) {
      ASSIGN_OR_RETURN(
          resumed, internal::ReadCheckpoint(options_.checkpoint_path,
                                            fingerprint, &state, &optimizer));
      if (sync_ != nullptr) {
        // Ranks write their checkpoints one after another, so a stopped run
        // can leave some one checkpoint ahead: the collectives after it need
        // every rank past writing it. All resume from the latest checkpoint
        // every rank has: the smallest epoch (a histogram of the ranks'
        // epochs, summed).
        std::vector<double> epochs(static_cast<size_t>(options_.epochs) + 2,
                                   0.0);
        const int mine = resumed ? state.epoch : 0;
        epochs[static_cast<size_t>(std::clamp(mine, 0, options_.epochs + 1))] =
            1.0;
        RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(epochs)));
        int common = 0;
        while (common + 1 < static_cast<int>(epochs.size()) &&
               epochs[static_cast<size_t>(common)] == 0.0) {
          ++common;
        }
        if (resumed && state.epoch != common) {
          const std::string previous =
              internal::PreviousCheckpointPath(options_.checkpoint_path);
          ASSIGN_OR_RETURN(
              resumed, internal::ReadCheckpoint(previous, fingerprint, &state,
                                                &optimizer));
          if (!resumed || state.epoch != common) {
            return absl::FailedPreconditionError(absl::StrCat(
                options_.checkpoint_path,
                ": the trainers' checkpoints are "
                "more than one checkpoint apart (this one has no epoch ",
                common, "); resume is not possible"));
          }
        }
      }
      if (resumed) {
        RETURN_IF_ERROR(CheckSettings(state.settings, settings));
        state.settings = settings;
        model_->seed_stream().set_count(state.dropout_count);
        result.resumed_from_epoch = state.epoch;
        if (options_.on_resume) options_.on_resume(state.epoch);
        result.epochs = state.history;
        result.best_val_acc = state.best_val_acc;
        result.best_epoch = state.best_epoch;
      }
    }
    if (sync_ != nullptr) RETURN_IF_ERROR(sync_->BroadcastParameters(params));
    if (!resumed && !options_.checkpoint_path.empty()) {
      // Epoch 0: the starting state, so that a rank one epoch ahead after
      // epoch 1 can step back to it (PreviousCheckpointPath).
      RETURN_IF_ERROR(internal::WriteCheckpoint(options_.checkpoint_path,
                                                fingerprint, state, optimizer));
    }

    result.steps_per_epoch = loader_->steps_per_epoch();
    for (int epoch = state.epoch + 1; epoch <= options_.epochs; ++epoch) {
      ASSIGN_OR_RETURN(EpochStats stats, TrainEpoch(epoch, &optimizer, params));
      if (!std::isfinite(stats.loss)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "training diverged in epoch ", epoch, ": the loss is ", stats.loss,
            "; lower --lr, or check the features' scale (--feature-norm)"));
      }
      const auto eval_start = Clock::now();
      ASSIGN_OR_RETURN(Evaluation valid,
                       Evaluate(*valid_sampler_, splits_.valid));
      stats.val_acc = valid.acc;
      stats.val_loss = valid.loss;
      stats.eval_seconds = SecondsSince(eval_start);
      stats.epoch_seconds += stats.eval_seconds;
      // The best epoch: the highest validation accuracy, ties (frequent: a
      // few hundred validation nodes give a coarse, noisy accuracy) to the
      // lower validation loss, as the GAT paper selects. Without validation
      // nodes (on any rank: the figures are global) the last epoch is kept.
      const bool better = stats.val_acc > result.best_val_acc ||
                          (stats.val_acc == result.best_val_acc &&
                           stats.val_loss < state.best_val_loss);
      if (state.best.empty() || better || stats.val_acc < 0) {
        torch::NoGradGuard no_grad;
        state.best.clear();
        for (const auto& p : params) state.best.push_back(p.detach().clone());
        result.best_val_acc = stats.val_acc;
        state.best_val_loss = stats.val_loss;
        result.best_epoch = epoch;
      }
      result.epochs.push_back(stats);
      // Validation accuracy is the same on every rank (summed counts), so
      // all ranks stop at the same epoch.
      const bool stop = options_.patience > 0 && stats.val_acc >= 0 &&
                        epoch - result.best_epoch >= options_.patience;
      const bool last = stop || epoch == options_.epochs;
      if (!options_.checkpoint_path.empty() &&
          (last || (options_.checkpoint_every > 0 &&
                    epoch % options_.checkpoint_every == 0))) {
        state.epoch = epoch;
        state.dropout_count = model_->seed_stream().count();
        state.best_val_acc = result.best_val_acc;
        state.best_epoch = result.best_epoch;
        state.history = result.epochs;
        const auto c0 = Clock::now();
        RETURN_IF_ERROR(internal::WriteCheckpoint(
            options_.checkpoint_path, fingerprint, state, optimizer));
        result.checkpoint_seconds += SecondsSince(c0);
        std::error_code ec;
        const auto bytes =
            std::filesystem::file_size(options_.checkpoint_path, ec);
        if (!ec) result.checkpoint_bytes = static_cast<int64_t>(bytes);
      }
      if (options_.on_epoch) options_.on_epoch(stats);
      if (stop) {
        result.stopped_early = true;
        break;
      }
    }
    if (!state.best.empty()) {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(state.best[i]);
    }
    {
      Checksum sum;
      for (const torch::Tensor& p : params) {
        const torch::Tensor c = p.detach().contiguous();
        sum.Update(c.data_ptr(), c.numel() * c.element_size());
      }
      result.parameters_checksum = sum.Hex();
    }
    if (!options_.model_path.empty()) {
      RETURN_IF_ERROR(
          internal::WriteParametersFile(options_.model_path, *model_));
    }
    if (options_.exact_test) {
      ASSIGN_OR_RETURN(result.test_acc, ExactTestAccuracy(num_classes));
    } else {
      ASSIGN_OR_RETURN(Evaluation test, Evaluate(*test_sampler_, splits_.test));
      result.test_acc = test.acc;
    }
    return result;
  }

 private:
  absl::StatusOr<EpochStats> TrainEpoch(
      int epoch, torch::optim::Optimizer* optimizer,
      const std::vector<torch::Tensor>& params) {
    const auto epoch_start = Clock::now();
    EpochStats stats;
    stats.epoch = epoch;
    model_->train();
    double loss_sum = 0.0, correct = 0.0, labeled = 0.0;
    double diverged = 0.0;  // A non-finite loss of this rank's batch.
    // The loader shuffles the train seeds for this epoch and samples batches
    // ahead on background threads; the batches do not depend on prefetching.
    const LoaderStats before = loader_->stats();
    loader_->StartEpoch(epoch);
    MiniBatch batch;
    while (true) {
      auto t0 = Clock::now();
      ASSIGN_OR_RETURN(bool more, loader_->Next(&batch));
      if (!more) break;
      stats.sample_seconds += SecondsSince(t0);
      for (const Block& block : batch.blocks)
        stats.sampled_edges += block.num_edges();
      t0 = Clock::now();
      BatchTensors t = ToTensors(batch, options_.model, transform_);
      torch::Tensor logits = model_->Forward(t.blocks, t.x);
      torch::Tensor mask = t.labels.ge(0);
      const int64_t n = mask.sum().item<int64_t>();
      optimizer->zero_grad();
      if (n > 0) {
        torch::Tensor loss = torch::nn::functional::cross_entropy(
            logits, t.labels,
            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
        loss.backward();
        const double value = loss.item<double>();
        if (!std::isfinite(value)) diverged = value;
        loss_sum += value * n;
        correct += logits.argmax(1)
                       .eq(t.labels)
                       .logical_and(mask)
                       .sum()
                       .item<double>();
        labeled += n;
      }
      if (sync_ != nullptr) {
        // Every rank takes part in every allreduce, even with a batch without
        // labels.
        for (const auto& p : params) {
          if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        }
        const auto s0 = Clock::now();
        RETURN_IF_ERROR(sync_->AllreduceGradients(params));
        stats.sync_seconds += SecondsSince(s0);
      }
      // After the step's allreduce, so that the other ranks are not left
      // waiting in it: the non-finite gradients reached them, and they stop
      // at their next step.
      if (!std::isfinite(diverged)) {
        loader_->Stop();
        return absl::FailedPreconditionError(absl::StrCat(
            "training diverged in epoch ", epoch, ", step ", stats.steps + 1,
            ": the loss is ", diverged,
            "; lower --lr, or check the features' scale (--feature-norm)"));
      }
      optimizer->step();
      stats.compute_seconds += SecondsSince(t0);
      ++stats.steps;
      if (options_.on_step)
        options_.on_step(epoch, stats.steps, loader_->steps_per_epoch());
    }
    loader_->Stop();
    stats.sample_busy_seconds =
        loader_->stats().sample_seconds - before.sample_seconds;
    stats.fetch_seconds = loader_->stats().fetch_seconds - before.fetch_seconds;
    stats.loss = labeled > 0 ? loss_sum / labeled : 0.0;
    stats.train_acc = labeled > 0 ? correct / labeled : 0.0;
    stats.epoch_seconds = SecondsSince(epoch_start);
    return stats;
  }

  // The settings a resumed run must share with its checkpoint
  // (TrainOptions::allow_changed_settings), as "key=value" words.
  std::string SettingsOf(int64_t steps_per_epoch) const {
    const ModelOptions& m = options_.model;
    return absl::StrCat(
        "lr=", options_.lr, " weight_decay=", options_.weight_decay,
        " batch_size=", options_.batch_size,
        " steps_per_epoch=", steps_per_epoch,
        " fanouts=", absl::StrJoin(options_.fanouts, ","),
        " eval_fanouts=", absl::StrJoin(options_.eval_fanouts, ","),
        " dropout=", m.dropout, " attn_dropout=", m.attn_dropout,
        " feature_norm=", FeatureNormName(m.features.norm));
  }

  absl::Status CheckSettings(const std::string& saved,
                             const std::string& now) const {
    if (saved.empty() || saved == now) return absl::OkStatus();
    auto parse = [](const std::string& text) {
      std::map<std::string, std::string> m;
      for (absl::string_view word : absl::StrSplit(text, ' ')) {
        std::pair<std::string, std::string> kv = absl::StrSplit(word, '=');
        m[kv.first] = kv.second;
      }
      return m;
    };
    const auto before = parse(saved);
    std::vector<std::string> changes;
    for (const auto& [key, value] : parse(now)) {
      auto it = before.find(key);
      const std::string old = it == before.end() ? "?" : it->second;
      if (old != value) {
        changes.push_back(absl::StrCat(key, " ", old.empty() ? "(none)" : old,
                                       " -> ",
                                       value.empty() ? "(none)" : value));
      }
    }
    if (options_.allow_changed_settings || changes.empty())
      return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        options_.checkpoint_path,
        ": the run would resume with other settings than it was trained with (",
        absl::StrJoin(changes, ", "),
        "); give the same flags, or --allow-changed-settings to continue "
        "with the new ones"));
  }

  // The test accuracy from every node's exact outputs (layer-wise inference
  // over full neighborhoods, each rank computing its share), summed over
  // ranks.
  absl::StatusOr<double> ExactTestAccuracy(int64_t num_classes) {
    ModelConfig config;
    config.model = options_.model;
    config.in_dim = source_.feature_dim();
    config.num_classes = num_classes;
    config.fanouts = options_.fanouts;
    InferOptions infer;
    infer.rank = options_.rank;
    infer.world_size = options_.world_size;
    infer.chunk_nodes = options_.eval_batch_size;
    infer.torch_threads = options_.torch_threads;
    if (options_.on_test_progress) {
      options_.on_test_progress(
          0,
          static_cast<int64_t>(config.model.num_layers) * source_.num_nodes());
      infer.on_progress = [this](const InferProgress& p) {
        options_.on_test_progress(
            static_cast<int64_t>(p.layer - 1) * p.rows + p.rows_done,
            static_cast<int64_t>(p.layers) * p.rows);
      };
    }
    infer.scratch_dir =
        !options_.scratch_dir.empty()
            ? options_.scratch_dir
            : (std::filesystem::temp_directory_path() /
               absl::StrCat("shardgnn-exact-", getpid(), "-", options_.rank))
                  .string();
    absl::StatusOr<InferResult> inferred = internal::RunLayerwise(
        source_, *model_, config, {{"test", splits_.test}}, infer, sync_);
    // The directory too (a given one only if nothing else is in it).
    std::error_code ec;
    if (options_.scratch_dir.empty()) {
      std::filesystem::remove_all(infer.scratch_dir, ec);
    } else {
      std::filesystem::remove(infer.scratch_dir, ec);
    }
    RETURN_IF_ERROR(inferred.status());
    const SplitAccuracy& test = inferred->accuracy.at("test");
    double counts[2] = {static_cast<double>(test.correct),
                        static_cast<double>(test.labeled)};
    if (sync_ != nullptr)
      RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(counts, 2)));
    return counts[1] > 0 ? counts[0] / counts[1] : -1.0;
  }

  struct Evaluation {
    double acc = -1.0;  // -1 without labeled nodes.
    double loss = 0.0;  // Mean cross-entropy over the labeled nodes.
  };

  // Fraction of labeled `nodes` predicted correctly, and their mean loss
  // (summed over ranks with a sync). The next batch is sampled (and its
  // features fetched) on a helper thread while the model runs on the current
  // one.
  absl::StatusOr<Evaluation> Evaluate(
      const NeighborSampler& sampler, const std::vector<NodeId>& nodes,
      const std::function<void(int64_t, int64_t)>& progress = {}) {
    torch::NoGradGuard no_grad;
    model_->eval();
    double counts[3] = {0.0, 0.0, 0.0};  // correct, labeled, loss sum
    const uint64_t seed = MixSeed(options_.seed, kEvalSampleStream);
    const size_t step = static_cast<size_t>(options_.eval_batch_size);
    MiniBatch batches[2];
    auto sample = [&](size_t begin, MiniBatch* batch) {
      const size_t end = std::min(nodes.size(), begin + step);
      return sampler.Sample(
          absl::MakeConstSpan(nodes).subspan(begin, end - begin),
          MixSeed(seed, begin), batch);
    };
    std::future<absl::Status> next;
    if (progress)
      progress(0, static_cast<int64_t>((nodes.size() + step - 1) / step));
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
      BatchTensors t = ToTensors(batch, options_.model, transform_);
      torch::Tensor logits = model_->Forward(t.blocks, t.x);
      torch::Tensor mask = t.labels.ge(0);
      counts[0] +=
          logits.argmax(1).eq(t.labels).logical_and(mask).sum().item<double>();
      const double labeled = mask.sum().item<double>();
      counts[1] += labeled;
      if (progress) {
        progress(static_cast<int64_t>(k) + 1,
                 static_cast<int64_t>((nodes.size() + step - 1) / step));
      }
      if (labeled > 0) {
        counts[2] += torch::nn::functional::cross_entropy(
                         logits, t.labels,
                         torch::nn::functional::CrossEntropyFuncOptions()
                             .ignore_index(-1)
                             .reduction(torch::kSum))
                         .item<double>();
      }
    }
    if (sync_ != nullptr)
      RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(counts, 3)));
    Evaluation e;
    if (counts[1] > 0) {
      e.acc = counts[0] / counts[1];
      e.loss = counts[2] / counts[1];
    }
    return e;
  }

  const GraphSource& source_;
  const TrainSplits& splits_;
  const TrainOptions& options_;
  GradientSync* sync_;
  std::unique_ptr<NeighborSampler> train_sampler_;
  std::unique_ptr<PrefetchLoader> loader_;
  std::unique_ptr<NeighborSampler> valid_sampler_;
  std::unique_ptr<NeighborSampler> test_sampler_;
  std::shared_ptr<internal::GnnModel> model_;
  internal::InputTransform transform_;
};

}  // namespace

absl::StatusOr<TrainResult> Train(const GraphSource& source,
                                  const TrainSplits& splits,
                                  const TrainOptions& options,
                                  GradientSync* sync) {
  try {
    return Run(source, splits, options, sync).Go();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error during training: ",
                                            e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("error during training: ", e.what()));
  }
}

}  // namespace shardgnn
