#include "trainer/training_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/peak_rss.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace shardgnn {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Families whose every sample carries the "rank" label first.
class Families {
 public:
  explicit Families(int rank) : rank_(absl::StrCat(rank)) {}

  // A new family; Sample adds to the last one.
  void Add(std::string name, std::string help, MetricType type) {
    MetricFamily& f = families_.emplace_back();
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
  }
  ClientMetric& Sample(std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric& m = families_.back().metric.emplace_back();
    m.label.push_back({"rank", rank_});
    for (auto& l : labels) m.label.push_back(std::move(l));
    return m;
  }
  // A family of one sample.
  void Counter(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Counter);
    Sample().counter.value = value;
  }
  void Gauge(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Gauge);
    Sample().gauge.value = value;
  }
  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  std::string rank_;
  std::vector<MetricFamily> families_;
};

double Seconds(TrainingMetrics::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void AddStepObserver(TrainOptions* options,
                     std::function<void(const StepStats&)> observer) {
  if (!options->on_step) {
    options->on_step = std::move(observer);
    return;
  }
  options->on_step = [before = std::move(options->on_step),
                      after = std::move(observer)](const StepStats& s) {
    before(s);
    after(s);
  };
}

TrainingMetrics::TrainingMetrics(int rank, int world_size, int epochs)
    : rank_(rank),
      world_size_(world_size),
      epochs_(epochs),
      started_(Clock::now()) {}

void TrainingMetrics::Observe(TrainOptions* options) {
  AddStepObserver(options, [this](const StepStats& s) { Step(s); });
  auto epoch = [before = std::move(options->on_epoch),
                this](const EpochStats& e) {
    if (before) before(e);
    Epoch(e);
  };
  options->on_epoch = std::move(epoch);
  auto test = [before = std::move(options->on_test_progress), this](
                  int64_t done, int64_t total) {
    if (before) before(done, total);
    Test(done, total);
  };
  options->on_test_progress = std::move(test);
}

void TrainingMetrics::Step(const StepStats& step, Clock::time_point now) {
  const double seconds = step.wait_seconds + step.compute_seconds;
  absl::MutexLock lock(&mu_);
  if (!stepped_) {
    stepped_ = true;
    first_step_ = now - std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
  }
  if (step.epoch != epoch_) epoch_examples_ = 0;
  // The last step of an epoch: validation follows.
  phase_ = step.step >= step.steps ? "validating" : "training";
  epoch_ = step.epoch;
  epoch_step_ = step.step;
  epoch_steps_ = step.steps;
  ++steps_;
  examples_ += step.examples;
  epoch_examples_ += step.examples;
  sampled_edges_ += step.sampled_edges;
  wait_seconds_ += step.wait_seconds;
  compute_seconds_ += step.compute_seconds;
  sync_seconds_ += step.sync_seconds;
  for (int b = 0; b < kNumBuckets; ++b) {
    if (seconds <= kStepBuckets[b]) ++step_buckets_[b];
  }
  last_loss_ = step.loss;
  recent_.push_back({now, step.examples});
  const auto window = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(kRateWindowSeconds));
  while (!recent_.empty() && recent_.front().at <= now - window)
    recent_.pop_front();
}

void TrainingMetrics::Epoch(const EpochStats& epoch) {
  absl::MutexLock lock(&mu_);
  have_epoch_ = true;
  last_epoch_ = epoch;
  last_epoch_examples_per_second_ =
      epoch.epoch_seconds > 0
          ? static_cast<double>(epoch_examples_) / epoch.epoch_seconds
          : 0;
}

void TrainingMetrics::Test(int64_t done, int64_t total) {
  absl::MutexLock lock(&mu_);
  phase_ = "testing";
  test_done_ = done;
  test_total_ = total;
}

void TrainingMetrics::Finish(bool ok) {
  absl::MutexLock lock(&mu_);
  phase_ = ok ? "done" : "failed";
}

std::string TrainingMetrics::Render(Clock::time_point now) const {
  Families out(rank_);
  {
    absl::MutexLock lock(&mu_);
    out.Add("shardgnn_trainer_phase",
            "1 for what the trainer does now (starting, training, "
            "validating, testing, done, failed), 0 for the others",
            MetricType::Gauge);
    for (const char* phase :
         {"starting", "training", "validating", "testing", "done", "failed"}) {
      out.Sample({{"phase", phase}}).gauge.value = phase_ == phase ? 1 : 0;
    }
    out.Gauge("shardgnn_trainer_world_size", "Trainers of the run",
              world_size_);
    out.Gauge("shardgnn_trainer_epochs", "The most epochs the run trains",
              epochs_);
    out.Gauge("shardgnn_trainer_epoch",
              "The epoch being trained or validated (from 1; 0 before the "
              "first step)",
              epoch_);
    out.Gauge("shardgnn_trainer_epoch_step", "Steps done in the current epoch",
              static_cast<double>(epoch_step_));
    out.Gauge("shardgnn_trainer_epoch_steps", "Steps of an epoch",
              static_cast<double>(epoch_steps_));
    out.Counter("shardgnn_trainer_steps_total",
                "Training steps (optimizer steps) done",
                static_cast<double>(steps_));
    out.Counter("shardgnn_trainer_examples_total",
                "Examples trained on: labeled seed nodes (node tasks) or "
                "scored node pairs (link tasks)",
                static_cast<double>(examples_));
    out.Counter("shardgnn_trainer_sampled_edges_total",
                "Edges sampled for the training steps",
                static_cast<double>(sampled_edges_));
    out.Counter("shardgnn_trainer_wait_seconds_total",
                "Time the steps waited for minibatches (sampling and "
                "features that did not overlap compute)",
                wait_seconds_);
    out.Counter("shardgnn_trainer_compute_seconds_total",
                "Time in the steps: forward, backward, gradient sync and "
                "optimizer step",
                compute_seconds_);
    out.Counter("shardgnn_trainer_sync_seconds_total",
                "The part of compute spent in gradient synchronisation "
                "(allreduce across the trainers)",
                sync_seconds_);
    out.Add("shardgnn_trainer_step_seconds",
            "Time of a training step: its wait for the minibatch and its "
            "compute",
            MetricType::Histogram);
    ClientMetric::Histogram& h = out.Sample().histogram;
    for (int b = 0; b < kNumBuckets; ++b) {
      ClientMetric::Bucket bucket;
      bucket.upper_bound = kStepBuckets[b];
      bucket.cumulative_count = static_cast<uint64_t>(step_buckets_[b]);
      h.bucket.push_back(bucket);
    }
    ClientMetric::Bucket inf;
    inf.upper_bound = std::numeric_limits<double>::infinity();
    inf.cumulative_count = static_cast<uint64_t>(steps_);
    h.bucket.push_back(inf);
    h.sample_count = static_cast<uint64_t>(steps_);
    h.sample_sum = wait_seconds_ + compute_seconds_;

    // Rates over the steps of the last kRateWindowSeconds (or since the
    // first step began, if that is less).
    const auto window = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(kRateWindowSeconds));
    int64_t recent_steps = 0, recent_examples = 0;
    for (const Recent& r : recent_) {
      if (r.at <= now - window) continue;
      ++recent_steps;
      recent_examples += r.examples;
    }
    const double span =
        stepped_ ? std::min(kRateWindowSeconds, Seconds(now - first_step_)) : 0;
    out.Gauge("shardgnn_trainer_steps_per_second",
              "Training steps per second over the last 10 s",
              span > 0 ? recent_steps / span : 0);
    out.Gauge("shardgnn_trainer_examples_per_second",
              "Examples trained on per second over the last 10 s",
              span > 0 ? recent_examples / span : 0);
    if (steps_ > 0) {
      out.Gauge("shardgnn_trainer_loss",
                "The last step's loss on this trainer's batch (NaN: the batch "
                "had no labels)",
                last_loss_);
    }
    if (have_epoch_) {
      const EpochStats& e = last_epoch_;
      out.Gauge("shardgnn_trainer_last_epoch", "The last epoch finished",
                e.epoch);
      out.Gauge("shardgnn_trainer_epoch_loss",
                "The last finished epoch's mean training loss", e.loss);
      out.Gauge("shardgnn_trainer_epoch_train_accuracy",
                "The last finished epoch's accuracy on its training batches",
                e.train_acc);
      if (e.val_acc >= 0) {
        out.Gauge("shardgnn_trainer_epoch_validation_accuracy",
                  "The last finished epoch's validation accuracy", e.val_acc);
      }
      if (e.val_score >= 0) {
        out.Gauge("shardgnn_trainer_epoch_validation_score",
                  "The last finished epoch's validation figure that chooses "
                  "the kept epoch (accuracy, or ROC-AUC for link tasks)",
                  e.val_score);
      }
      out.Gauge("shardgnn_trainer_epoch_seconds",
                "The last finished epoch's time, validation included",
                e.epoch_seconds);
      out.Gauge("shardgnn_trainer_epoch_examples_per_second",
                "The last finished epoch's examples over its time",
                last_epoch_examples_per_second_);
    }
    if (test_total_ > 0) {
      out.Gauge("shardgnn_trainer_test_done",
                "Test work done (batches, or node rows for an exact test)",
                static_cast<double>(test_done_));
      out.Gauge("shardgnn_trainer_test_total", "Test work in all",
                static_cast<double>(test_total_));
    }
  }
  out.Gauge("shardgnn_trainer_uptime_seconds",
            "Seconds since the trainer's metrics started",
            Seconds(now - started_));
  out.Counter("process_cpu_seconds_total",
              "CPU time of the trainer process, user and system", CpuSeconds());
  out.Gauge("process_resident_memory_bytes",
            "Resident memory of the trainer process",
            static_cast<double>(ResidentBytes()));
  return prometheus::TextSerializer().Serialize(out.Take());
}

}  // namespace shardgnn
