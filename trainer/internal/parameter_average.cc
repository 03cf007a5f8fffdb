#include "trainer/internal/parameter_average.h"

namespace shardgnn::internal {

void ParameterAverage::Update(const std::vector<torch::Tensor>& params) {
  const double d = decay_;
  if (d <= 0) return;
  torch::NoGradGuard no_grad;
  if (average_.empty()) {
    for (const auto& p : params) average_.push_back(p.detach().clone());
    return;
  }
  for (size_t i = 0; i < params.size(); ++i)
    average_[i].mul_(d).add_(params[i].detach(), 1.0 - d);
}

void ParameterAverage::UseAverage(const std::vector<torch::Tensor>& params) {
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

void ParameterAverage::UseTrained(const std::vector<torch::Tensor>& params) {
  if (average_.empty()) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(trained_[i]);
}

}  // namespace shardgnn::internal
