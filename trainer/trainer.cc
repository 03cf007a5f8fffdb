#include "trainer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/peak_rss.h"
#include "common/sampling.h"
#include "common/status.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "trainer/compute_env.h"
#include "trainer/cpu_caching_allocator.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/check_options.h"
#include "trainer/internal/checkpoint.h"
#include "trainer/internal/models.h"
#include "trainer/internal/parameter_average.h"
#include "trainer/internal/parameters_file.h"
#include "trainer/internal/pipeline_tuner.h"
#include "trainer/internal/pretrain_rows.h"
#include "trainer/internal/resume_settings.h"
#include "trainer/internal/script_model.h"
#include "trainer/internal/share_weights.h"
#include "trainer/internal/task.h"

namespace shardgnn {

namespace {

using Clock = std::chrono::steady_clock;

// What a step trains on: its labeled seeds, or (link tasks) its scored
// pairs.
int64_t CountExamples(const MiniBatch& batch) {
  if (!batch.pair_labels.empty())
    return static_cast<int64_t>(batch.pair_labels.size());
  if (batch.seeds.empty()) return 0;
  // A row per seed (multi-label graphs: a value per class, all -1 when
  // unlabeled).
  const size_t columns = batch.labels.size() / batch.seeds.size();
  int64_t labeled = 0;
  for (size_t i = 0; i < batch.seeds.size() && columns > 0; ++i)
    labeled += batch.labels[i * columns] >= 0 ? 1 : 0;
  return labeled;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The random streams of a run: trainer.h (kShuffleStream ...).

// One call of Train(): the phases below run in the same order on every rank.
// Their collectives (the agreement on the epoch to resume from, the
// parameters' broadcast, each step's gradient allreduce, the barriers of the
// embedding snapshots and of the evaluations' sums) meet the other ranks'
// in lockstep, so no phase may skip or reorder one on some ranks only.
class Run {
 public:
  Run(const GraphSource& source, const TrainSplits& splits,
      const TrainOptions& options, GradientSync* sync)
      : source_(source), splits_(splits), options_(options), sync_(sync) {}

  // Runs the phases in order and stops at the first error.
  absl::StatusOr<TrainResult> Go() {
    RETURN_IF_ERROR(internal::CheckTrainOptions(source_, options_));
    SetComputeThreads(options_.torch_threads);
    ASSIGN_OR_RETURN(const int64_t num_classes, MakeTask());
    RETURN_IF_ERROR(MakeSamplers());
    RETURN_IF_ERROR(CreateModel(num_classes));
    RETURN_IF_ERROR(PretrainRows());
    ASSIGN_OR_RETURN(const bool resumed, Resume());
    RETURN_IF_ERROR(ShareStartingPoint(resumed));
    RETURN_IF_ERROR(EpochLoop());
    RETURN_IF_ERROR(SettleParameters());
    RETURN_IF_ERROR(TestPass());
    return std::move(result_);
  }

 private:
  // The task reads the run's splits and options through one context; it
  // returns the encoder's output width: the classes, or the embedding width.
  absl::StatusOr<int64_t> MakeTask() {
    internal::TaskContext context;
    context.source = &source_;
    context.splits = &splits_;
    context.options = &options_;
    context.sync = sync_;
    context.transform = internal::MakeInputTransform(options_.model.features);
    if (options_.embeddings != nullptr) {
      rows_ = std::make_unique<internal::InputRows>(options_.embeddings,
                                                    options_.ignore_features);
      context.rows = rows_.get();
    }
    task_ = options_.task == TaskKind::kLink ? internal::MakeLinkTask(context)
                                             : internal::MakeNodeTask(context);
    return task_->Prepare();
  }

  // Training's sampler and loader, and validation's and test's samplers:
  // they differ only in their fanouts.
  absl::Status MakeSamplers() {
    SamplerOptions train_sampling;
    train_sampling.fanouts = options_.fanouts;
    if (!options_.relation_fanouts.empty()) {
      if (source_.schema() == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("--fanouts '", options_.relation_fanouts,
                         "' names relations, but the graph has none"));
      }
      ASSIGN_OR_RETURN(
          train_sampling.relation_fanouts,
          ParseRelationFanouts(options_.relation_fanouts, *source_.schema()));
    }
    // GCN normalises by the graph's degrees (internal::BlockTensors).
    train_sampling.fetch_degrees =
        internal::NeedsOf(options_.model.kind).degrees;
    train_sampling.fetch_edge_features =
        internal::NeedsOf(options_.model.kind).edge_features ||
        (options_.model.kind == ModelKind::kScript &&
         source_.edge_feature_dim() > 0);
    train_sampling.fetch_features = !options_.ignore_features;
    train_sampling = task_->Sampling(train_sampling);
    ASSIGN_OR_RETURN(train_sampler_,
                     NeighborSampler::Create(&source_, train_sampling));
    LoaderOptions loading;
    // With shares every rank iterates over the global batches.
    loading.batch_size =
        options_.batch_size * (options_.shares() ? options_.world_size : 1);
    // 0: as many as the task's items need.
    loading.steps_per_epoch = options_.steps_per_epoch;
    loading.prefetch = options_.prefetch;
    loading.workers = std::max(1, options_.sampler_threads);
    loading.shuffle_seed = MixSeed(options_.seed, kShuffleStream);
    loading.sample_seed = MixSeed(options_.seed, kTrainSampleStream);
    ASSIGN_OR_RETURN(loader_, task_->MakeLoader(train_sampler_.get(), loading));
    if (options_.shares()) {
      std::vector<int64_t> weights = options_.share_weights;
      if (weights.empty())
        weights.assign(static_cast<size_t>(options_.world_size), 1);
      shares_ = std::make_unique<internal::ShareWeights>(std::move(weights));
      RETURN_IF_ERROR(loader_->SetShares(shares_->weights(), options_.rank));
    }
    // Validation runs every epoch and only ranks the epochs: by default it
    // samples as training does. The test runs once: twice the fanouts.
    SamplerOptions valid_sampling = train_sampling;
    SamplerOptions test_sampling = train_sampling;
    if (options_.eval_fanouts.empty()) {
      test_sampling.fanouts = DefaultEvalFanouts(options_.fanouts);
      for (std::vector<int>& hop : test_sampling.relation_fanouts)
        hop = DefaultEvalFanouts(hop);
    } else {
      valid_sampling.fanouts = options_.eval_fanouts;
      test_sampling.fanouts = options_.eval_fanouts;
      valid_sampling.relation_fanouts.clear();
      test_sampling.relation_fanouts.clear();
    }
    ASSIGN_OR_RETURN(valid_sampler_,
                     NeighborSampler::Create(&source_, valid_sampling));
    ASSIGN_OR_RETURN(test_sampler_,
                     NeighborSampler::Create(&source_, test_sampling));
    return absl::OkStatus();
  }

  // The model (with the task's decoder), its optimizer, and what a
  // checkpoint of this run is recognised by (fingerprint_, settings_).
  absl::Status CreateModel(int64_t num_classes) {
    // The model's input: the features, the learned rows, or both.
    const int64_t in_dim =
        (options_.ignore_features ? 0 : source_.feature_dim()) +
        (rows_ != nullptr ? rows_->dim() : 0);
    ModelOptions model = options_.model;
    model.edge_feature_dim = source_.edge_feature_dim();
    const uint64_t seed = MixSeed(options_.seed, kModelStream);
    if (model.kind == ModelKind::kScript) {
      ASSIGN_OR_RETURN(model_, internal::LoadScriptModel(
                                   model.script_path,
                                   {in_dim, num_classes, model.num_layers,
                                    model.edge_feature_dim},
                                   seed));
    } else {
      model_ = source_.schema() != nullptr
                   ? internal::MakeTypedModel(model, *source_.schema(),
                                              num_classes, seed)
                   : internal::MakeModel(model, in_dim, num_classes, seed);
    }
    task_->AddDecoder(model_.get(), MixSeed(options_.seed, kModelStream));
    params_ = model_->parameters();
    for (const auto& p : params_) result_.num_parameters += p.numel();
    optimizer_ = std::make_unique<torch::optim::Adam>(
        params_, torch::optim::AdamOptions(options_.lr)
                     .weight_decay(options_.weight_decay));
    fingerprint_ = FingerprintOf(in_dim, num_classes);
    state_.parameters = params_;
    settings_ = internal::ResumeSettings(options_, loader_->steps_per_epoch());
    state_.settings = settings_;
    return absl::OkStatus();
  }

  // The run's shape: a checkpoint with another one cannot be resumed.
  std::string FingerprintOf(int64_t in_dim, int64_t num_classes) const {
    return absl::StrCat(
        ModelKindName(options_.model.kind),
        " layers=", options_.model.num_layers,
        " hidden=", options_.model.hidden, " heads=", options_.model.heads,
        " in=", in_dim, " classes=", num_classes, " seed=", options_.seed,
        options_.model.kind == ModelKind::kScript
            ? absl::StrCat(" parameters=", result_.num_parameters)
            : std::string(),
        source_.schema() != nullptr
            ? absl::StrCat(" relations=", source_.schema()->num_relations(),
                           " bases=", options_.model.num_bases)
            : std::string(),
        options_.task == TaskKind::kLink
            ? absl::StrCat(" task=link decoder=",
                           LinkDecoderName(options_.link.decoder))
            : "");
  }

  // With TrainOptions::resume, reads the checkpoint into state_ and the
  // optimizer (a damaged one: the one before it, said on stderr) and puts
  // the learned-embedding tables back to its epoch. Returns whether the run
  // continues from a checkpoint.
  absl::StatusOr<bool> Resume() {
    if (!options_.resume || options_.checkpoint_path.empty()) return false;
    ASSIGN_OR_RETURN(bool resumed, internal::ReadCheckpointOrPrevious(
                                       options_.checkpoint_path, fingerprint_,
                                       &state_, optimizer_.get()));
    if (sync_ != nullptr) {
      ASSIGN_OR_RETURN(resumed, AgreeOnResumeEpoch(resumed));
    }
    if (TrainedRows()) {
      // The tables go back to the epoch the parameters resume from (epoch
      // 0: the initial table), whatever their holders kept since.
      RETURN_IF_ERROR(
          RestoreRows(resumed ? state_.epoch : 0, loader_->steps_per_epoch()));
    }
    if (resumed) RETURN_IF_ERROR(ContinueFromCheckpoint());
    return resumed;
  }

  // Ranks write their checkpoints one after another, so a stopped run can
  // leave some one checkpoint ahead: the collectives after it need every
  // rank past writing it. All resume from the latest checkpoint every rank
  // has: the smallest epoch (a histogram of the ranks' epochs, summed). A
  // rank ahead steps back to its previous checkpoint.
  absl::StatusOr<bool> AgreeOnResumeEpoch(bool resumed) {
    std::vector<double> epochs(static_cast<size_t>(options_.epochs) + 2, 0.0);
    const int mine = resumed ? state_.epoch : 0;
    epochs[static_cast<size_t>(std::clamp(mine, 0, options_.epochs + 1))] = 1.0;
    RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(epochs)));
    int common = 0;
    while (common + 1 < static_cast<int>(epochs.size()) &&
           epochs[static_cast<size_t>(common)] == 0.0) {
      ++common;
    }
    if (resumed && state_.epoch != common) {
      const std::string previous =
          internal::PreviousCheckpointPath(options_.checkpoint_path);
      ASSIGN_OR_RETURN(resumed,
                       internal::ReadCheckpoint(previous, fingerprint_, &state_,
                                                optimizer_.get()));
      if (!resumed || state_.epoch != common) {
        return absl::FailedPreconditionError(absl::StrCat(
            options_.checkpoint_path,
            ": the trainers' checkpoints are "
            "more than one checkpoint apart (this one has no epoch ",
            common, "); resume is not possible"));
      }
    }
    return resumed;
  }

  // Takes over what the checkpoint read into state_ kept beyond the
  // parameters (the dropout stream, the history, the average, the best epoch
  // so far), once its settings are found to be the run's, or allowed to
  // differ (TrainOptions::allow_changed_settings).
  absl::Status ContinueFromCheckpoint() {
    RETURN_IF_ERROR(
        internal::CheckResumeSettings(options_, state_.settings, settings_));
    state_.settings = settings_;
    model_->seed_stream().set_count(state_.dropout_count);
    result_.resumed_from_epoch = state_.epoch;
    if (options_.on_resume) options_.on_resume(state_.epoch);
    result_.epochs = state_.history;
    average_.Restore(state_.average);
    result_.best_val_score = state_.best_val_acc;
    result_.best_epoch = state_.best_epoch;
    return absl::OkStatus();
  }

  // Every rank starts from rank 0's parameters. A fresh run with checkpoints
  // writes epoch 0, the starting state, so that a rank one epoch ahead after
  // epoch 1 can step back to it (PreviousCheckpointPath). The tables'
  // snapshot of it also checks, before any training, that their holders can
  // take snapshots.
  absl::Status ShareStartingPoint(bool resumed) {
    if (sync_ != nullptr) RETURN_IF_ERROR(sync_->BroadcastParameters(params_));
    if (resumed || options_.checkpoint_path.empty()) return absl::OkStatus();
    if (TrainedRows()) RETURN_IF_ERROR(SnapshotRows(0, &result_));
    return internal::WriteCheckpoint(options_.checkpoint_path, fingerprint_,
                                     state_, *optimizer_);
  }

  // The epochs after the one resumed from: train, validate, keep the best,
  // checkpoint, until the last epoch or until `patience` runs out.
  absl::Status EpochLoop() {
    result_.steps_per_epoch = loader_->steps_per_epoch();
    internal::PipelineTuner tuner(options_.sampler_threads,
                                  options_.max_sampler_threads);
    loader_->set_workers(tuner.threads());
    for (int epoch = state_.epoch + 1; epoch <= options_.epochs; ++epoch) {
      const double cpu_start = CpuSeconds();
      ASSIGN_OR_RETURN(EpochStats stats, TrainEpoch(epoch));
      if (options_.prefetch > 0) TuneSamplerThreads(&tuner, &stats);
      if (options_.adapt_shares && options_.shares())
        RETURN_IF_ERROR(AdaptShares(stats));
      if (!std::isfinite(stats.loss)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "training diverged in epoch ", epoch, ": the loss is ", stats.loss,
            "; lower --lr, or check the features' scale (--feature-norm)"));
      }
      // The next epoch's first batches are sampled while this one validates
      // and checkpoints, so that its first step does not wait for them (the
      // same batches: they depend only on the epoch). Unused if the run
      // stops early; the test pass frees them (ReleaseBuffers).
      if (epoch < options_.epochs) StartLoaderEpoch(epoch + 1);
      // Validated (and kept when best) with the averaged parameters.
      average_.UseAverage(params_);
      RETURN_IF_ERROR(Validate(&stats));
      stats.cpu_seconds = CpuSeconds() - cpu_start;
      KeepIfBest(stats);
      average_.UseTrained(params_);
      result_.epochs.push_back(stats);
      // The validation score is the same on every rank (summed counts), so
      // all ranks stop at the same epoch.
      const bool stop = options_.patience > 0 && stats.val_score >= 0 &&
                        epoch - result_.best_epoch >= options_.patience;
      const bool last = stop || epoch == options_.epochs;
      if (!options_.checkpoint_path.empty() &&
          (last || (options_.checkpoint_every > 0 &&
                    epoch % options_.checkpoint_every == 0))) {
        RETURN_IF_ERROR(Checkpoint(epoch, &stats));
      }
      if (options_.on_epoch) options_.on_epoch(stats);
      if (stop) {
        result_.stopped_early = true;
        break;
      }
    }
    result_.sampler_threads = options_.prefetch > 0 ? loader_->workers() : 0;
    if (!result_.stopped_early && !result_.epochs.empty() &&
        result_.epochs.back().val_score >= 0 &&
        result_.epochs.back().epoch == options_.epochs) {
      result_.budget_cut = options_.patience > 0 ||
                           result_.best_epoch == result_.epochs.back().epoch;
    }
    return absl::OkStatus();
  }

  // Tells the tuner how the epoch's steps waited for batches and gives the
  // loader the threads it chose for the next epoch. Speed only: the batches
  // are the same with any number of threads.
  void TuneSamplerThreads(internal::PipelineTuner* tuner, EpochStats* stats) {
    stats->sampler_threads = loader_->workers();
    internal::PipelineEpoch ran;
    ran.steps = stats->steps;
    ran.step_seconds = stats->compute_seconds + stats->sample_seconds;
    ran.wait_seconds = stats->sample_seconds;
    ran.sample_seconds = stats->sample_busy_seconds;
    loader_->set_workers(tuner->Observe(ran));
    stats->sampler_threads_change = tuner->reason();
  }

  // The validation figures of the parameters in the model, into *stats; its
  // time counts in the epoch's.
  absl::Status Validate(EpochStats* stats) {
    const auto eval_start = Clock::now();
    const int64_t eval_faults = MinorFaults();
    task_->set_sampler_threads(options_.prefetch > 0 ? loader_->workers() : 1);
    ASSIGN_OR_RETURN(internal::TaskEvaluation valid,
                     task_->Evaluate(*model_, internal::EvalSplit::kValid,
                                     *valid_sampler_, {}));
    stats->val_score = valid.score;
    stats->val_loss = valid.loss;
    if (options_.task == TaskKind::kNode) {
      stats->val_acc = valid.score;
    } else {
      for (const auto& [key, value] : valid.metrics)
        stats->metrics.emplace_back(absl::StrCat("valid_", key), value);
    }
    stats->eval_seconds = SecondsSince(eval_start);
    stats->eval_minor_faults = MinorFaults() - eval_faults;
    stats->epoch_seconds += stats->eval_seconds;
    return absl::OkStatus();
  }

  // The best epoch: the highest validation score (accuracy, or AUC), ties
  // (frequent: a few hundred validation nodes give a coarse, noisy accuracy)
  // to the lower validation loss, as the GAT paper selects. Without a
  // validation split (on any rank: the figures are global) the last epoch is
  // kept. Its parameters are copied from the model as they are now.
  void KeepIfBest(const EpochStats& stats) {
    const bool better = stats.val_score > result_.best_val_score ||
                        (stats.val_score == result_.best_val_score &&
                         stats.val_loss < state_.best_val_loss);
    if (state_.best.empty() || better || stats.val_score < 0) {
      torch::NoGradGuard no_grad;
      state_.best.clear();
      for (const auto& p : params_) state_.best.push_back(p.detach().clone());
      result_.best_val_score = stats.val_score;
      state_.best_val_loss = stats.val_loss;
      result_.best_epoch = stats.epoch;
    }
  }

  // Writes the checkpoint of `epoch` (already in result_.epochs). The tables
  // first: a checkpoint of epoch E exists only once every holder has the
  // snapshot of E that resuming from it needs. Their snapshot's figures go
  // into *stats and the epoch's entry in the result, not into the history
  // the checkpoint keeps.
  absl::Status Checkpoint(int epoch, EpochStats* stats) {
    state_.epoch = epoch;
    state_.dropout_count = model_->seed_stream().count();
    state_.best_val_acc = result_.best_val_score;
    state_.best_epoch = result_.best_epoch;
    state_.history = result_.epochs;
    state_.average = average_.average();
    const auto c0 = Clock::now();
    if (TrainedRows()) {
      RETURN_IF_ERROR(SnapshotRows(epoch, &result_));
      stats->embedding_snapshot_seconds = SecondsSince(c0);
      stats->embedding_snapshot_bytes = result_.embedding_snapshot_bytes;
      result_.epochs.back().embedding_snapshot_seconds =
          stats->embedding_snapshot_seconds;
      result_.epochs.back().embedding_snapshot_bytes =
          stats->embedding_snapshot_bytes;
    }
    RETURN_IF_ERROR(internal::WriteCheckpoint(
        options_.checkpoint_path, fingerprint_, state_, *optimizer_));
    result_.checkpoint_seconds += SecondsSince(c0);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(options_.checkpoint_path, ec);
    if (!ec) result_.checkpoint_bytes = static_cast<int64_t>(bytes);
    return absl::OkStatus();
  }

  // Puts the parameters the run ends with in the model (the best epoch's,
  // or the last epoch's with learned embeddings), then checksums them and
  // writes the model file.
  absl::Status SettleParameters() {
    // With learned embeddings the table has moved on past the best epoch
    // (its rows are not snapshotted yet): the model stays at the last
    // epoch, matching the rows it is tested with. Pre-trained rows are
    // frozen: the best epoch's parameters go with them.
    if (!state_.best.empty() && !TrainedRows()) {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < params_.size(); ++i)
        params_[i].copy_(state_.best[i]);
    }
    if (rows_ != nullptr) RETURN_IF_ERROR(rows_->rows()->Flush());
    if (TrainedRows()) {
      if (!result_.epochs.empty()) {
        result_.best_epoch = result_.epochs.back().epoch;
        result_.best_val_score = result_.epochs.back().val_score;
      }
    }
    Checksum sum;
    for (const torch::Tensor& p : params_) {
      const torch::Tensor c = p.detach().contiguous();
      sum.Update(c.data_ptr(), c.numel() * c.element_size());
    }
    result_.parameters_checksum = sum.Hex();
    if (!options_.model_path.empty()) {
      RETURN_IF_ERROR(
          internal::WriteParametersFile(options_.model_path, *model_));
    }
    if (!options_.model_script_path.empty()) {
      RETURN_IF_ERROR(
          internal::SaveScriptModel(*model_, options_.model_script_path));
    }
    return absl::OkStatus();
  }

  // The test figures of the kept parameters (sampled, or exact layer-wise),
  // with the pass's time and page faults.
  absl::Status TestPass() {
    internal::TaskEvaluation test;
    const auto test_start = Clock::now();
    const int64_t test_faults = MinorFaults();
    int64_t half_faults = -1;  // When half the test batches were done.
    ReleaseTrainingMemory();
    if (options_.exact_test) {
      ASSIGN_OR_RETURN(test, task_->EvaluateExact(*model_));
    } else {
      ASSIGN_OR_RETURN(
          test, task_->Evaluate(
                    *model_, internal::EvalSplit::kTest, *test_sampler_,
                    [&](int64_t done, int64_t total) {
                      result_.test_batches = total;
                      if (half_faults < 0 && total >= 2 && done == total / 2) {
                        half_faults = MinorFaults();
                      }
                      if (options_.on_test_progress)
                        options_.on_test_progress(done, total);
                    }));
    }
    result_.test_seconds = SecondsSince(test_start);
    const int64_t end_faults = MinorFaults();
    result_.test_minor_faults = end_faults - test_faults;
    if (half_faults >= 0)
      result_.test_second_half_minor_faults = end_faults - half_faults;
    for (const auto& [key, value] : test.metrics)
      result_.test_metrics.emplace_back(absl::StrCat("test_", key), value);
    if (options_.task == TaskKind::kNode) {
      result_.test_acc = test.score;
      result_.best_val_acc = result_.best_val_score;
    }
    return absl::OkStatus();
  }

  // Training's and validation's tensor sizes do not come again: the test's
  // larger tensors and minibatches (twice the fanouts) take their kept
  // blocks' pages instead of fresh ones. Their loaders' batches go back to
  // the cache first (their feature rows come from it: common/large_buffer.h).
  void ReleaseTrainingMemory() {
    loader_->ReleaseBuffers();
    loader_epoch_ = 0;  // Stopped: a next epoch starts it again.
    task_->ReleaseValidationBuffers();
    RetireCpuCachedBlocks();
  }

  // The next epochs' shares from the ranks' speeds (TrainOptions::
  // adapt_shares; internal/share_weights.h): every rank fills its own slot
  // of a zeroed vector, so the sum is exact and the same on every rank, and
  // so are the weights.
  absl::Status AdaptShares(const EpochStats& stats) {
    if (sync_ == nullptr) return absl::OkStatus();  // One rank: nothing to cut.
    std::vector<double> measured(static_cast<size_t>(options_.world_size), 0.0);
    measured[static_cast<size_t>(options_.rank)] = stats.seeds_per_second;
    RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(measured)));
    shares_->Update(measured);
    return loader_->SetShares(shares_->weights(), options_.rank);
  }

  // Starts the training loader on `epoch`'s batches, once, and keeps its
  // figures then: the epoch's sampling is counted from them.
  void StartLoaderEpoch(int epoch) {
    if (loader_epoch_ == epoch) return;
    loader_epoch_start_ = loader_->stats();
    loader_->StartEpoch(epoch);
    loader_epoch_ = epoch;
  }

  // Counters at the start of an epoch's steps, which its figures are the
  // differences from.
  struct EpochStart {
    Clock::time_point time;
    int64_t minor_faults = 0;
    LoaderStats loader;
    LearnableRowsStats rows;
  };

  // One epoch's training steps over the loader's batches.
  absl::StatusOr<EpochStats> TrainEpoch(int epoch) {
    EpochStart start;
    start.time = Clock::now();
    start.minor_faults = MinorFaults();
    EpochStats stats;
    stats.epoch = epoch;
    model_->train();
    internal::StepFigures figures;
    // The loader shuffles the train seeds for this epoch and samples batches
    // ahead on background threads (begun during the previous epoch's
    // validation); the batches do not depend on prefetching.
    StartLoaderEpoch(epoch);
    start.loader = loader_epoch_start_;
    if (rows_ != nullptr) start.rows = rows_->rows()->stats();
    MiniBatch batch;
    int64_t seeds = 0, global_seeds = 0;
    while (true) {
      const auto t0 = Clock::now();
      ASSIGN_OR_RETURN(bool more, loader_->Next(&batch));
      if (!more) break;
      const BatchShare share = loader_->ShareOf(stats.steps);
      seeds += share.items;
      global_seeds += share.global_items;
      StepStats step;
      step.epoch = epoch;
      step.steps = loader_->steps_per_epoch();
      step.wait_seconds = SecondsSince(t0);
      for (const Block& block : batch.blocks)
        step.sampled_edges += block.num_edges();
      step.examples = CountExamples(batch);
      RETURN_IF_ERROR(TrainStep(epoch, batch, share, &figures, &stats, &step));
      ++stats.steps;
      step.step = stats.steps;
      stats.sample_seconds += step.wait_seconds;
      stats.sampled_edges += step.sampled_edges;
      stats.compute_seconds += step.compute_seconds;
      stats.sync_seconds += step.sync_seconds;
      if (options_.on_step) options_.on_step(step);
    }
    loader_->Pause();  // Its threads stay for the next epoch.
    FinishEpochStats(start, figures, &stats);
    stats.share =
        global_seeds > 0 ? static_cast<double>(seeds) / global_seeds : 1.0;
    if (!options_.shares()) stats.share /= options_.world_size;
    stats.seeds_per_second =
        seeds / std::max(1e-9, stats.epoch_seconds - stats.sync_seconds);
    return stats;
  }

  // One optimizer step on `batch` (this rank's `share` of its step): its
  // loss's gradients, averaged over the ranks, then the step, the average
  // and the learned rows' push.
  absl::Status TrainStep(int epoch, MiniBatch& batch, const BatchShare& share,
                         internal::StepFigures* figures,
                         const EpochStats* stats, StepStats* step) {
    const auto t0 = Clock::now();
    double diverged = 0.0;  // A non-finite loss of this rank's batch.
    optimizer_->zero_grad();
    if (rows_ != nullptr) RETURN_IF_ERROR(rows_->Pull(batch, true));
    torch::Tensor loss = task_->Loss(*model_, batch, figures);
    step->loss = std::numeric_limits<double>::quiet_NaN();
    if (loss.defined()) {
      const double value = loss.item<double>();
      if (options_.shares()) {
        // The ranks' gradients are averaged: weighted by this rank's part
        // of the global batch, their mean is the global batch's mean loss's.
        loss = loss * (static_cast<double>(share.items) * options_.world_size /
                       static_cast<double>(share.global_items));
      }
      loss.backward();
      step->loss = value;
      if (!std::isfinite(value)) diverged = value;
    }
    if (sync_ != nullptr) {
      // Every rank takes part in every allreduce, even with a batch without
      // labels.
      for (const auto& p : params_) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      }
      const auto s0 = Clock::now();
      RETURN_IF_ERROR(sync_->AllreduceGradients(params_));
      step->sync_seconds = SecondsSince(s0);
    }
    // After the step's allreduce, so that the other ranks are not left
    // waiting in it: the non-finite gradients reached them, and they stop
    // at their next step.
    if (!std::isfinite(diverged)) {
      loader_->Stop();
      return absl::FailedPreconditionError(absl::StrCat(
          "training diverged in epoch ", epoch, ", step ", stats->steps + 1,
          ": the loss is ", diverged,
          "; lower --lr, or check the features' scale (--feature-norm)"));
    }
    optimizer_->step();
    average_.Update(params_);
    // Sent while the next batch computes (at most two steps in flight).
    if (rows_ != nullptr) RETURN_IF_ERROR(rows_->PushStep());
    step->compute_seconds = SecondsSince(t0);
    return absl::OkStatus();
  }

  // The epoch's figures that are differences of counters since `start`, and
  // its means over the steps' figures.
  void FinishEpochStats(const EpochStart& start,
                        const internal::StepFigures& figures,
                        EpochStats* stats) {
    if (rows_ != nullptr) {
      const LearnableRowsStats after = rows_->rows()->stats();
      stats->embedding_rows_pulled = after.rows_pulled - start.rows.rows_pulled;
      stats->embedding_rows_pushed = after.rows_pushed - start.rows.rows_pushed;
      stats->embedding_pull_seconds =
          after.pull_seconds - start.rows.pull_seconds;
      stats->embedding_push_wait_seconds =
          after.push_wait_seconds - start.rows.push_wait_seconds;
    }
    stats->sample_busy_seconds =
        loader_->stats().sample_seconds - start.loader.sample_seconds;
    stats->fetch_seconds =
        loader_->stats().fetch_seconds - start.loader.fetch_seconds;
    stats->loss = figures.items > 0 ? figures.loss_sum / figures.items : 0.0;
    stats->train_acc =
        figures.items > 0 ? figures.correct / figures.items : 0.0;
    if (figures.batches > 0)
      stats->metrics.emplace_back("train_auc",
                                  figures.auc_sum / figures.batches);
    stats->epoch_seconds = SecondsSince(start.time);
    stats->minor_faults = MinorFaults() - start.minor_faults;
  }

  // Rank 0 runs `work` while the other ranks wait; then every rank learns
  // whether it succeeded (a barrier carrying the outcome), so that all fail
  // together, rank 0 with its error and the others naming it.
  absl::Status OnRankZero(const std::string& what,
                          const std::function<absl::Status()>& work) {
    absl::Status status;
    if (options_.rank == 0) status = work();
    if (sync_ == nullptr) return status;
    double failed[1] = {status.ok() ? 0.0 : 1.0};
    RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(failed)));
    if (!status.ok()) return status;
    if (failed[0] > 0) {
      return absl::AbortedError(
          absl::StrCat("rank 0 failed to ", what, " (its output says why)"));
    }
    return absl::OkStatus();
  }

  // Whether the run trains learned rows with the model (not frozen after
  // pre-training).
  bool TrainedRows() const { return rows_ != nullptr && !rows_->frozen(); }

  // Pre-trains the learned rows on the graph's structure
  // (TrainOptions::pretrain_epochs), then freezes them at the step the
  // pre-training ended. Every rank makes the same steps (the tables' step
  // clocks keep them in step).
  absl::Status PretrainRows() {
    if (rows_ == nullptr || options_.pretrain_epochs == 0)
      return absl::OkStatus();
    internal::PretrainRowsOptions o;
    o.epochs = options_.pretrain_epochs;
    o.seed = MixSeed(options_.seed, kPretrainStream);
    o.rank = options_.rank;
    o.world_size = options_.world_size;
    const auto start = Clock::now();
    ASSIGN_OR_RETURN(
        std::vector<internal::PretrainEpoch> history,
        internal::PretrainRows(source_, rows_->rows(), o, rows_->step(),
                               [&](const internal::PretrainEpoch& e) {
                                 if (options_.on_pretrain_epoch) {
                                   options_.on_pretrain_epoch(e.epoch, e.loss,
                                                              e.seconds);
                                 }
                               }));
    for (const internal::PretrainEpoch& e : history)
      result_.pretrain_loss.push_back(e.loss);
    result_.pretrain_steps =
        o.epochs * internal::PretrainStepsPerEpoch(source_.num_nodes(), o);
    result_.pretrain_seconds = SecondsSince(start);
    rows_->set_step(rows_->step() + result_.pretrain_steps);
    rows_->Freeze();
    return absl::OkStatus();
  }

  // Puts the learned-embedding tables back to `epoch` and continues the
  // step count from there.
  absl::Status RestoreRows(int epoch, int64_t steps_per_epoch) {
    const int64_t step = static_cast<int64_t>(epoch) * steps_per_epoch;
    RETURN_IF_ERROR(OnRankZero(
        absl::StrCat("restore the learned embeddings of epoch ", epoch),
        [&] { return rows_->rows()->Restore(epoch, step); }));
    rows_->set_step(step);
    return absl::OkStatus();
  }

  // The tables' snapshot of `epoch`: every rank's pushes applied (flushed,
  // then a barrier), rank 0 asks the holders, and nobody pushes a step of
  // the next epoch before it is written.
  absl::Status SnapshotRows(int epoch, TrainResult* result) {
    RETURN_IF_ERROR(rows_->rows()->Flush());
    if (sync_ != nullptr) {
      double none[1] = {0.0};
      RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(none)));
    }
    return OnRankZero(
        absl::StrCat("snapshot the learned embeddings of epoch ", epoch),
        [&]() -> absl::Status {
          ASSIGN_OR_RETURN(EmbeddingSnapshotStats s,
                           rows_->rows()->Snapshot(epoch, rows_->step()));
          result->embedding_snapshot_bytes = s.bytes;
          result->embedding_snapshot_rows = s.rows;
          return absl::OkStatus();
        });
  }

  const GraphSource& source_;
  const TrainSplits& splits_;
  const TrainOptions& options_;
  GradientSync* sync_;
  // The loader's share weights (TrainOptions::shares(); null otherwise).
  std::unique_ptr<internal::ShareWeights> shares_;
  std::unique_ptr<NeighborSampler> train_sampler_;
  std::unique_ptr<PrefetchLoader> loader_;
  int loader_epoch_ = 0;            // The epoch the loader was started on.
  LoaderStats loader_epoch_start_;  // Its figures then.
  std::unique_ptr<NeighborSampler> valid_sampler_;
  std::unique_ptr<NeighborSampler> test_sampler_;
  std::shared_ptr<internal::GnnModel> model_;
  std::unique_ptr<internal::Task> task_;
  std::unique_ptr<internal::InputRows> rows_;  // With learned embeddings.
  std::vector<torch::Tensor> params_;          // The model's, in its order.
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::string fingerprint_;  // FingerprintOf: the run's shape.
  std::string settings_;     // internal::ResumeSettings of the run.
  // What a checkpoint holds besides the optimizer: the epoch reached, the
  // best epoch's parameters, the history.
  internal::CheckpointState state_;
  TrainResult result_;  // Filled in by the phases.
  internal::ParameterAverage average_{options_.average_decay};
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
