// Layer-wise inference with a model in memory: what Infer() runs after
// loading model.pt, and what Train() runs for TrainOptions::exact_test.
#ifndef SHARDGNN_TRAINER_INTERNAL_LAYERWISE_H_
#define SHARDGNN_TRAINER_INTERNAL_LAYERWISE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/inference.h"
#include "trainer/internal/models.h"

namespace shardgnn::internal {

// As Infer() (trainer/inference.h), with `model`'s current parameters
// (switched to eval mode) instead of a parameters file; `config` must
// describe `model`.
absl::StatusOr<InferResult> RunLayerwise(
    const GraphSource& source, GnnModel& model, const ModelConfig& config,
    const std::map<std::string, std::vector<NodeId>>& splits,
    const InferOptions& options, GradientSync* sync);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_LAYERWISE_H_
