// The check of a training run's options against its graph, before anything
// is built (trainer/trainer.cc's Train; defined in trainer/trainer_options.cc,
// which needs no LibTorch).
#ifndef SHARDGNN_TRAINER_INTERNAL_CHECK_OPTIONS_H_
#define SHARDGNN_TRAINER_INTERNAL_CHECK_OPTIONS_H_

#include "absl/status/status.h"
#include "sampler/graph_source.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

// InvalidArgument naming the first option that cannot work: ranges (decay,
// dropout, sizes, rank), the layer count against the fanouts, and what the
// graph offers (features, their standardisation's width).
absl::Status CheckTrainOptions(const GraphSource& source,
                               const TrainOptions& options);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_CHECK_OPTIONS_H_
