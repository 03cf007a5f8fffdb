#include "trainer/internal/input_rows.h"

#include <utility>

#include "common/status.h"

namespace shardgnn::internal {

absl::Status InputRows::Pull(const MiniBatch& batch, bool train) {
  const auto n = static_cast<int64_t>(batch.input_nodes.size());
  nodes_ = batch.input_nodes;
  pulled_ = torch::empty({n, dim()}, torch::kFloat);
  RETURN_IF_ERROR(
      rows_->Pull(batch.input_nodes, step_, pulled_.data_ptr<float>()));
  train_ = train;
  if (train) pulled_.requires_grad_(true);
  return absl::OkStatus();
}

torch::Tensor InputRows::Input(const torch::Tensor& features) const {
  if (ignore_features_ || !features.defined()) return pulled_;
  return torch::cat({features, pulled_}, 1);
}

absl::Status InputRows::PushStep() {
  std::vector<NodeId> nodes;
  std::vector<float> grads;
  if (train_ && pulled_.defined() && pulled_.grad().defined()) {
    torch::Tensor g = pulled_.grad().contiguous();
    nodes = std::move(nodes_);
    grads.assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  pulled_ = torch::Tensor();
  train_ = false;
  RETURN_IF_ERROR(rows_->Push(step_, std::move(nodes), std::move(grads)));
  ++step_;
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
