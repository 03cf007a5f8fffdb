// The hook through which the training loop keeps data-parallel replicas
// identical.
//
// A GradientSync implementation (c10d over Gloo for real runs, anything for
// tests) is handed to Train(). The loop calls BroadcastParameters() once before
// the first step and AllreduceGradients() after every backward pass, before the
// optimizer step; every rank must make the same calls in the same order.
// Layer-wise inference (trainer/inference.h) exchanges rows through it too.
// Implementations are used from the training thread only.
#ifndef SHARDGNN_TRAINER_GRADIENT_SYNC_H_
#define SHARDGNN_TRAINER_GRADIENT_SYNC_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

// LibTorch's tensor (torch::Tensor is this class), declared only: a header
// that names it need not make every includer compile <torch/torch.h>
// (cli/train_cmd.cc and cli/infer_cmd.cc included it through here).
namespace at {
class Tensor;
}  // namespace at

namespace shardgnn {

class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // Makes every rank's parameters equal to rank 0's (in place).
  virtual absl::Status BroadcastParameters(
      const std::vector<at::Tensor>& parameters) = 0;
  // Replaces each parameter's gradient with the mean over ranks (in place).
  // Gradients are defined.
  virtual absl::Status AllreduceGradients(
      const std::vector<at::Tensor>& parameters) = 0;
  // Sums `values` over ranks in place (evaluation counts).
  virtual absl::Status AllreduceSum(absl::Span<double> values) = 0;
  // Sums `values` over ranks in place (rows exchanged by layer-wise
  // inference: trainer/inference.h).
  virtual absl::Status AllreduceSum(absl::Span<float> values) = 0;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_GRADIENT_SYNC_H_
