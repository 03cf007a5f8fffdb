// How many background sampling threads a trainer's loader runs, chosen from
// measurement (issue 17: a pipeline that keeps up by itself).
//
// One sampling thread keeps up with two compute threads on the 200k reference
// graph, but not with sixteen, nor when every batch waits on remote calls
// between machines: then the training thread waits for batches. After each
// epoch but the process's first (a warm-up: every buffer is touched for the
// first time, caches are cold) the tuner looks at how long the steps waited
// for their batch
// (`LoaderStats::wait_seconds`) against the step time. Above
// `grow_above` (5%) it adds threads for the next epoch: as many as sampling
// one batch on one thread takes compute steps (the loader's busy time per
// batch over the compute time per step), at least one more, up to
// `max_threads` (the machine's share of cores for this trainer). If the added
// threads did not cut the waiting by at least a quarter (the cores were
// already busy: more threads only compete with compute), it goes back to the
// count before and stops growing. It never goes below `min_threads`.
//
// The batches do not depend on the number of threads (sampler/loader.h), so
// the choice changes speed, never results. Compute threads are not moved: the
// order of LibTorch's parallel reductions depends on them, and a run would no
// longer be reproducible from its seed.
#ifndef SHARDGNN_TRAINER_INTERNAL_PIPELINE_TUNER_H_
#define SHARDGNN_TRAINER_INTERNAL_PIPELINE_TUNER_H_

#include <cstdint>
#include <string>

namespace shardgnn::internal {

struct PipelineEpoch {
  int64_t steps = 0;
  double step_seconds = 0;  // The epoch's training steps, waiting included.
  double wait_seconds = 0;  // Of which the training thread waited for batches.
  // The loader's threads' time making the epoch's batches, summed over them.
  double sample_seconds = 0;
};

class PipelineTuner {
 public:
  // Fixed at `threads` when min_threads == max_threads.
  PipelineTuner(int min_threads, int max_threads, double grow_above = 0.05);

  // The threads for the next epoch, given the epoch that just ran with
  // threads(). reason() says why it changed (empty when it did not).
  int Observe(const PipelineEpoch& epoch);

  int threads() const { return threads_; }
  bool automatic() const { return min_ < max_; }
  const std::string& reason() const { return reason_; }

 private:
  int min_;
  int max_;
  double grow_above_;
  int threads_;
  bool warmed_up_ = false;
  bool settled_ = false;
  // The waiting fraction of the last epoch before the last growth and the
  // threads then; < 0: no growth to judge.
  double before_growth_ = -1;
  int threads_before_growth_ = 0;
  std::string reason_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_PIPELINE_TUNER_H_
