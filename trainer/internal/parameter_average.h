// The moving average of a model's parameters (TrainOptions::average_decay):
// after every optimizer step avg = d avg + (1 - d) params. Validation, the
// kept best epoch and the test see the average in place of the parameters as
// trained; training continues from the trained ones.
#ifndef SHARDGNN_TRAINER_INTERNAL_PARAMETER_AVERAGE_H_
#define SHARDGNN_TRAINER_INTERNAL_PARAMETER_AVERAGE_H_

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace shardgnn::internal {

// Not thread-safe: one training loop drives it. It keeps copies of the
// parameters it is given (the average, and the trained values while the
// average is in the model); the parameters' tensors stay the caller's, the
// same list in the same order on every call. With a decay of 0 or less
// Update does nothing, so there is no average unless one is restored.
class ParameterAverage {
 public:
  explicit ParameterAverage(double decay) : decay_(decay) {}
  ParameterAverage(const ParameterAverage&) = delete;
  ParameterAverage& operator=(const ParameterAverage&) = delete;

  // Takes in the parameters after an optimizer step (the first step's are
  // the average as they are).
  void Update(const std::vector<torch::Tensor>& params);

  // Puts the average into `params`, keeping the trained values aside (in
  // buffers made once) until UseTrained puts them back. Nothing to do before
  // the first Update.
  void UseAverage(const std::vector<torch::Tensor>& params);
  void UseTrained(const std::vector<torch::Tensor>& params);

  // The average, for a checkpoint (empty before the first Update), and
  // the one a resumed run continues (Restore).
  const std::vector<torch::Tensor>& average() const { return average_; }
  void Restore(std::vector<torch::Tensor> average) {
    average_ = std::move(average);
  }

 private:
  const double decay_;
  std::vector<torch::Tensor> average_;
  std::vector<torch::Tensor> trained_;  // While the average is in the model.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_PARAMETER_AVERAGE_H_
