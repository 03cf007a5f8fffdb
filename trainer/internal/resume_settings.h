// The training settings a resumed run must share with its checkpoint
// (TrainOptions::allow_changed_settings): those that do not change the
// parameters' shapes (the checkpoint's fingerprint covers those) but would
// make the continued run another run than the one checkpointed.
#ifndef SHARDGNN_TRAINER_INTERNAL_RESUME_SETTINGS_H_
#define SHARDGNN_TRAINER_INTERNAL_RESUME_SETTINGS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

// `options`' settings as "key=value" words ("lr=0.01 batch_size=1024 ..."),
// with the loader's `steps_per_epoch`; what a checkpoint keeps
// (CheckpointState::settings).
std::string ResumeSettings(const TrainOptions& options,
                           int64_t steps_per_epoch);

// OK if `saved` (a checkpoint's ResumeSettings; empty: written before they
// were kept) equals `now`, or if options.allow_changed_settings. Otherwise
// fails with FailedPrecondition naming options.checkpoint_path and every
// setting that changed, old and new.
[[nodiscard]] absl::Status CheckResumeSettings(const TrainOptions& options,
                                               const std::string& saved,
                                               const std::string& now);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_RESUME_SETTINGS_H_
