#include "trainer/internal/input_rows.h"

#include <utility>

#include "common/status.h"
#include "trainer/internal/models.h"

namespace shardgnn::internal {

absl::Status InputRows::Pull(const MiniBatch& batch, bool train) {
  const auto n = static_cast<int64_t>(batch.input_nodes.size());
  nodes_.assign(batch.input_nodes.begin(), batch.input_nodes.end());
  pulled_ = torch::empty({n, dim()}, torch::kFloat);
  RETURN_IF_ERROR(
      rows_->Pull(batch.input_nodes, step_, pulled_.data_ptr<float>()));
  train_ = train && !frozen_;
  if (train_) pulled_.requires_grad_(true);
  return absl::OkStatus();
}

torch::Tensor InputRows::Input(const torch::Tensor& features) const {
  const bool alone = ignore_features_ || !features.defined();
  torch::Tensor rows = pulled_;
  if (frozen_) rows = RowsOfLength(pulled_, row_length(!alone));
  if (alone) return rows;
  return torch::cat({features, rows}, 1);
}

absl::Status InputRows::PushStep() {
  if (frozen_) {
    pulled_ = torch::Tensor();
    return absl::OkStatus();
  }
  absl::Span<const NodeId> nodes;
  absl::Span<const float> grads;
  torch::Tensor g;
  if (train_ && pulled_.defined() && pulled_.grad().defined()) {
    g = pulled_.grad().contiguous();
    nodes = nodes_;
    grads = absl::MakeConstSpan(g.data_ptr<float>(),
                                static_cast<size_t>(g.numel()));
  }
  // Copied by Push before it returns.
  RETURN_IF_ERROR(rows_->Push(step_, nodes, grads));
  pulled_ = torch::Tensor();
  train_ = false;
  ++step_;
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
