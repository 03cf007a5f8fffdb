#include "trainer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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
#include "trainer/internal/parameters_file.h"
#include "trainer/internal/pipeline_tuner.h"
#include "trainer/internal/task.h"

namespace shardgnn {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seeds for the different random streams of a run, so that none repeats
// another.
constexpr uint64_t kShuffleStream = 1;
constexpr uint64_t kTrainSampleStream = 2;
// 3: evaluation sampling (trainer/internal/node_task.cc, link_task.cc).
constexpr uint64_t kModelStream = 4;

class Run {
 public:
  Run(const GraphSource& source, const TrainSplits& splits,
      const TrainOptions& options, GradientSync* sync)
      : source_(source), splits_(splits), options_(options), sync_(sync) {}

  absl::StatusOr<TrainResult> Go() {
    RETURN_IF_ERROR(internal::CheckTrainOptions(source_, options_));
    SetComputeThreads(options_.torch_threads);
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
    // The encoder's output width: the classes, or the embedding width.
    ASSIGN_OR_RETURN(const int64_t num_classes, task_->Prepare());
    // GCN normalises by the graph's degrees (internal::BlockTensors).
    const bool degrees = internal::NeedsOf(options_.model.kind).degrees;
    SamplerOptions train_sampling;
    train_sampling.fanouts = options_.fanouts;
    train_sampling.fetch_degrees = degrees;
    train_sampling.fetch_features = !options_.ignore_features;
    train_sampling = task_->Sampling(train_sampling);
    ASSIGN_OR_RETURN(train_sampler_,
                     NeighborSampler::Create(&source_, train_sampling));
    LoaderOptions loading;
    loading.batch_size = options_.batch_size;
    // 0: as many as the task's items need.
    loading.steps_per_epoch = options_.steps_per_epoch;
    loading.prefetch = options_.prefetch;
    loading.workers = std::max(1, options_.sampler_threads);
    loading.shuffle_seed = MixSeed(options_.seed, kShuffleStream);
    loading.sample_seed = MixSeed(options_.seed, kTrainSampleStream);
    ASSIGN_OR_RETURN(loader_, task_->MakeLoader(train_sampler_.get(), loading));
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

    // The model's input: the features, the learned rows, or both.
    const int64_t in_dim =
        (options_.ignore_features ? 0 : source_.feature_dim()) +
        (rows_ != nullptr ? rows_->dim() : 0);
    model_ = internal::MakeModel(options_.model, in_dim, num_classes,
                                 MixSeed(options_.seed, kModelStream));
    task_->AddDecoder(model_.get(), MixSeed(options_.seed, kModelStream));
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
        " in=", in_dim, " classes=", num_classes, " seed=", options_.seed,
        options_.task == TaskKind::kLink
            ? absl::StrCat(" task=link decoder=",
                           LinkDecoderName(options_.link.decoder))
            : "");
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
      if (rows_ != nullptr) {
        // The tables go back to the epoch the parameters resume from (epoch
        // 0: the initial table), whatever their holders kept since.
        RETURN_IF_ERROR(
            RestoreRows(resumed ? state.epoch : 0, loader_->steps_per_epoch()));
      }
      if (resumed) {
        RETURN_IF_ERROR(CheckSettings(state.settings, settings));
        state.settings = settings;
        model_->seed_stream().set_count(state.dropout_count);
        result.resumed_from_epoch = state.epoch;
        if (options_.on_resume) options_.on_resume(state.epoch);
        result.epochs = state.history;
        average_ = state.average;
        result.best_val_score = state.best_val_acc;
        result.best_epoch = state.best_epoch;
      }
    }
    if (sync_ != nullptr) RETURN_IF_ERROR(sync_->BroadcastParameters(params));
    if (!resumed && !options_.checkpoint_path.empty()) {
      // Epoch 0: the starting state, so that a rank one epoch ahead after
      // epoch 1 can step back to it (PreviousCheckpointPath). The tables'
      // snapshot of it also checks, before any training, that their holders
      // can take snapshots.
      if (rows_ != nullptr) RETURN_IF_ERROR(SnapshotRows(0, &result));
      RETURN_IF_ERROR(internal::WriteCheckpoint(options_.checkpoint_path,
                                                fingerprint, state, optimizer));
    }

    result.steps_per_epoch = loader_->steps_per_epoch();
    internal::PipelineTuner tuner(options_.sampler_threads,
                                  options_.max_sampler_threads);
    loader_->set_workers(tuner.threads());
    for (int epoch = state.epoch + 1; epoch <= options_.epochs; ++epoch) {
      const double cpu_start = CpuSeconds();
      ASSIGN_OR_RETURN(EpochStats stats, TrainEpoch(epoch, &optimizer, params));
      if (options_.prefetch > 0) {
        stats.sampler_threads = loader_->workers();
        // Speed only: the batches are the same with any number of threads.
        internal::PipelineEpoch ran;
        ran.steps = stats.steps;
        ran.step_seconds = stats.compute_seconds + stats.sample_seconds;
        ran.wait_seconds = stats.sample_seconds;
        ran.sample_seconds = stats.sample_busy_seconds;
        loader_->set_workers(tuner.Observe(ran));
        stats.sampler_threads_change = tuner.reason();
      }
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
      UseAverage(params);
      const auto eval_start = Clock::now();
      const int64_t eval_faults = MinorFaults();
      task_->set_sampler_threads(options_.prefetch > 0 ? loader_->workers()
                                                       : 1);
      ASSIGN_OR_RETURN(internal::TaskEvaluation valid,
                       task_->Evaluate(*model_, internal::EvalSplit::kValid,
                                       *valid_sampler_, {}));
      stats.val_score = valid.score;
      stats.val_loss = valid.loss;
      if (options_.task == TaskKind::kNode) {
        stats.val_acc = valid.score;
      } else {
        for (const auto& [key, value] : valid.metrics)
          stats.metrics.emplace_back(absl::StrCat("valid_", key), value);
      }
      stats.eval_seconds = SecondsSince(eval_start);
      stats.eval_minor_faults = MinorFaults() - eval_faults;
      stats.cpu_seconds = CpuSeconds() - cpu_start;
      stats.epoch_seconds += stats.eval_seconds;
      // The best epoch: the highest validation score (accuracy, or AUC),
      // ties (frequent: a few hundred validation nodes give a coarse, noisy
      // accuracy) to the lower validation loss, as the GAT paper selects.
      // Without a validation split (on any rank: the figures are global) the
      // last epoch is kept.
      const bool better = stats.val_score > result.best_val_score ||
                          (stats.val_score == result.best_val_score &&
                           stats.val_loss < state.best_val_loss);
      if (state.best.empty() || better || stats.val_score < 0) {
        torch::NoGradGuard no_grad;
        state.best.clear();
        for (const auto& p : params) state.best.push_back(p.detach().clone());
        result.best_val_score = stats.val_score;
        state.best_val_loss = stats.val_loss;
        result.best_epoch = epoch;
      }
      UseTrained(params);
      result.epochs.push_back(stats);
      // The validation score is the same on every rank (summed counts), so
      // all ranks stop at the same epoch.
      const bool stop = options_.patience > 0 && stats.val_score >= 0 &&
                        epoch - result.best_epoch >= options_.patience;
      const bool last = stop || epoch == options_.epochs;
      if (!options_.checkpoint_path.empty() &&
          (last || (options_.checkpoint_every > 0 &&
                    epoch % options_.checkpoint_every == 0))) {
        state.epoch = epoch;
        state.dropout_count = model_->seed_stream().count();
        state.best_val_acc = result.best_val_score;
        state.best_epoch = result.best_epoch;
        state.history = result.epochs;
        state.average = average_;
        const auto c0 = Clock::now();
        // The tables first: a checkpoint of epoch E exists only once every
        // holder has the snapshot of E that resuming from it needs.
        if (rows_ != nullptr) {
          RETURN_IF_ERROR(SnapshotRows(epoch, &result));
          stats.embedding_snapshot_seconds = SecondsSince(c0);
          stats.embedding_snapshot_bytes = result.embedding_snapshot_bytes;
          result.epochs.back().embedding_snapshot_seconds =
              stats.embedding_snapshot_seconds;
          result.epochs.back().embedding_snapshot_bytes =
              stats.embedding_snapshot_bytes;
        }
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
    result.sampler_threads = options_.prefetch > 0 ? loader_->workers() : 0;
    // With learned embeddings the table has moved on past the best epoch
    // (its rows are not snapshotted yet): the model stays at the last
    // epoch, matching the rows it is tested with.
    if (!state.best.empty() && rows_ == nullptr) {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(state.best[i]);
    }
    if (rows_ != nullptr) {
      RETURN_IF_ERROR(rows_->rows()->Flush());
      if (!result.epochs.empty()) {
        result.best_epoch = result.epochs.back().epoch;
        result.best_val_score = result.epochs.back().val_score;
      }
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
    internal::TaskEvaluation test;
    const auto test_start = Clock::now();
    const int64_t test_faults = MinorFaults();
    int64_t half_faults = -1;  // When half the test batches were done.
    // Training's and validation's tensor sizes do not come again: the test's
    // larger tensors and minibatches (twice the fanouts) take their kept
    // blocks' pages instead of fresh ones. Their loaders' batches go back to
    // the cache first (their feature rows come from it: common/large_buffer.h).
    loader_->ReleaseBuffers();
    loader_epoch_ = 0;  // Stopped: a next epoch starts it again.
    task_->ReleaseValidationBuffers();
    RetireCpuCachedBlocks();
    if (options_.exact_test) {
      ASSIGN_OR_RETURN(test, task_->EvaluateExact(*model_));
    } else {
      ASSIGN_OR_RETURN(
          test, task_->Evaluate(
                    *model_, internal::EvalSplit::kTest, *test_sampler_,
                    [&](int64_t done, int64_t total) {
                      result.test_batches = total;
                      if (half_faults < 0 && total >= 2 && done == total / 2) {
                        half_faults = MinorFaults();
                      }
                      if (options_.on_test_progress)
                        options_.on_test_progress(done, total);
                    }));
    }
    result.test_seconds = SecondsSince(test_start);
    const int64_t end_faults = MinorFaults();
    result.test_minor_faults = end_faults - test_faults;
    if (half_faults >= 0)
      result.test_second_half_minor_faults = end_faults - half_faults;
    for (const auto& [key, value] : test.metrics)
      result.test_metrics.emplace_back(absl::StrCat("test_", key), value);
    if (options_.task == TaskKind::kNode) {
      result.test_acc = test.score;
      result.best_val_acc = result.best_val_score;
    }
    return result;
  }

 private:
  // Starts the training loader on `epoch`'s batches, once, and keeps its
  // figures then: the epoch's sampling is counted from them.
  void StartLoaderEpoch(int epoch) {
    if (loader_epoch_ == epoch) return;
    loader_epoch_start_ = loader_->stats();
    loader_->StartEpoch(epoch);
    loader_epoch_ = epoch;
  }

  absl::StatusOr<EpochStats> TrainEpoch(
      int epoch, torch::optim::Optimizer* optimizer,
      const std::vector<torch::Tensor>& params) {
    const auto epoch_start = Clock::now();
    const int64_t faults_before = MinorFaults();
    EpochStats stats;
    stats.epoch = epoch;
    model_->train();
    internal::StepFigures figures;
    double diverged = 0.0;  // A non-finite loss of this rank's batch.
    // The loader shuffles the train seeds for this epoch and samples batches
    // ahead on background threads (begun during the previous epoch's
    // validation); the batches do not depend on prefetching.
    StartLoaderEpoch(epoch);
    const LoaderStats before = loader_epoch_start_;
    const LearnableRowsStats rows_before =
        rows_ != nullptr ? rows_->rows()->stats() : LearnableRowsStats();
    MiniBatch batch;
    while (true) {
      auto t0 = Clock::now();
      ASSIGN_OR_RETURN(bool more, loader_->Next(&batch));
      if (!more) break;
      stats.sample_seconds += SecondsSince(t0);
      for (const Block& block : batch.blocks)
        stats.sampled_edges += block.num_edges();
      t0 = Clock::now();
      optimizer->zero_grad();
      if (rows_ != nullptr) RETURN_IF_ERROR(rows_->Pull(batch, true));
      torch::Tensor loss = task_->Loss(*model_, batch, &figures);
      if (loss.defined()) {
        loss.backward();
        const double value = loss.item<double>();
        if (!std::isfinite(value)) diverged = value;
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
      UpdateAverage(params);
      // Sent while the next batch computes (at most two steps in flight).
      if (rows_ != nullptr) RETURN_IF_ERROR(rows_->PushStep());
      stats.compute_seconds += SecondsSince(t0);
      ++stats.steps;
      if (options_.on_step)
        options_.on_step(epoch, stats.steps, loader_->steps_per_epoch());
    }
    loader_->Pause();  // Its threads stay for the next epoch.
    if (rows_ != nullptr) {
      const LearnableRowsStats after = rows_->rows()->stats();
      stats.embedding_rows_pulled = after.rows_pulled - rows_before.rows_pulled;
      stats.embedding_rows_pushed = after.rows_pushed - rows_before.rows_pushed;
      stats.embedding_pull_seconds =
          after.pull_seconds - rows_before.pull_seconds;
      stats.embedding_push_wait_seconds =
          after.push_wait_seconds - rows_before.push_wait_seconds;
    }
    stats.sample_busy_seconds =
        loader_->stats().sample_seconds - before.sample_seconds;
    stats.fetch_seconds = loader_->stats().fetch_seconds - before.fetch_seconds;
    stats.loss = figures.items > 0 ? figures.loss_sum / figures.items : 0.0;
    stats.train_acc = figures.items > 0 ? figures.correct / figures.items : 0.0;
    if (figures.batches > 0)
      stats.metrics.emplace_back("train_auc",
                                 figures.auc_sum / figures.batches);
    stats.epoch_seconds = SecondsSince(epoch_start);
    stats.minor_faults = MinorFaults() - faults_before;
    return stats;
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

  // TrainOptions::average_decay: the average after this step.
  void UpdateAverage(const std::vector<torch::Tensor>& params) {
    const double d = options_.average_decay;
    if (d <= 0) return;
    torch::NoGradGuard no_grad;
    if (average_.empty()) {
      for (const auto& p : params) average_.push_back(p.detach().clone());
      return;
    }
    for (size_t i = 0; i < params.size(); ++i)
      average_[i].mul_(d).add_(params[i].detach(), 1.0 - d);
  }

  // Puts the averaged parameters in the model, keeping the trained ones
  // aside (in buffers made once) until UseTrained.
  void UseAverage(const std::vector<torch::Tensor>& params) {
    if (average_.empty()) return;
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      if (trained_.size() <= i) {
        trained_.push_back(params[i].detach().clone());
      } else {
        trained_[i].copy_(params[i]);
      }
      params[i].copy_(average_[i]);
    }
  }

  void UseTrained(const std::vector<torch::Tensor>& params) {
    if (average_.empty()) return;
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(trained_[i]);
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
        " feature_norm=", FeatureNormName(m.features.norm),
        // Only when on: checkpoints from before averaging existed resume.
        options_.average_decay > 0
            ? absl::StrCat(" average_decay=", options_.average_decay)
            : "");
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
      m.emplace("average_decay", "0");  // Written only when on (SettingsOf).
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

  const GraphSource& source_;
  const TrainSplits& splits_;
  const TrainOptions& options_;
  GradientSync* sync_;
  std::unique_ptr<NeighborSampler> train_sampler_;
  std::unique_ptr<PrefetchLoader> loader_;
  int loader_epoch_ = 0;            // The epoch the loader was started on.
  LoaderStats loader_epoch_start_;  // Its figures then.
  std::unique_ptr<NeighborSampler> valid_sampler_;
  std::unique_ptr<NeighborSampler> test_sampler_;
  std::shared_ptr<internal::GnnModel> model_;
  std::unique_ptr<internal::Task> task_;
  std::unique_ptr<internal::InputRows> rows_;  // With learned embeddings.
  // TrainOptions::average_decay: the average (empty before the first step),
  // and the trained parameters while the average is in the model.
  std::vector<torch::Tensor> average_;
  std::vector<torch::Tensor> trained_;
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
