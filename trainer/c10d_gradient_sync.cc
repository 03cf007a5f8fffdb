#include "trainer/c10d_gradient_sync.h"

#include <torch/torch.h>

#include <algorithm>

namespace shardgnn {

C10dGradientSync::C10dGradientSync(ProcessGroup* group, int64_t bucket_bytes)
    : group_(group),
      bucket_floats_(std::max<int64_t>(
          1, bucket_bytes / static_cast<int64_t>(sizeof(float)))) {}

template <typename Op>
absl::Status C10dGradientSync::ForEachBucket(
    const std::vector<torch::Tensor>& tensors, Op op) {
  torch::NoGradGuard no_grad;
  size_t first = 0;
  while (first < tensors.size()) {
    // Gather tensors until the bucket is full (a tensor larger than a bucket
    // gets a bucket of its own).
    size_t last = first;
    int64_t floats = 0;
    while (
        last < tensors.size() &&
        (last == first || floats + tensors[last].numel() <= bucket_floats_)) {
      floats += tensors[last].numel();
      ++last;
    }
    buffer_.resize(static_cast<size_t>(floats));
    auto flat = torch::from_blob(buffer_.data(), {floats}, torch::kFloat32);
    int64_t offset = 0;
    for (size_t i = first; i < last; ++i) {
      int64_t n = tensors[i].numel();
      flat.narrow(0, offset, n).copy_(tensors[i].reshape({n}));
      offset += n;
    }
    absl::Status s = op(buffer_.data(), floats);
    if (!s.ok()) return s;
    offset = 0;
    for (size_t i = first; i < last; ++i) {
      int64_t n = tensors[i].numel();
      tensors[i].copy_(flat.narrow(0, offset, n).view(tensors[i].sizes()));
      offset += n;
    }
    first = last;
  }
  return absl::OkStatus();
}

absl::Status C10dGradientSync::BroadcastParameters(
    const std::vector<torch::Tensor>& parameters) {
  if (group_->world_size() == 1) return absl::OkStatus();
  return ForEachBucket(parameters, [&](float* data, int64_t n) {
    return group_->Broadcast(data, n, 0);
  });
}

absl::Status C10dGradientSync::AllreduceGradients(
    const std::vector<torch::Tensor>& parameters) {
  if (group_->world_size() == 1) return absl::OkStatus();
  std::vector<torch::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) {
    // A parameter unused in this step has no gradient yet; every rank must
    // still contribute, so use zeros.
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  const float scale = 1.0f / static_cast<float>(group_->world_size());
  return ForEachBucket(grads, [&](float* data, int64_t n) {
    absl::Status s = group_->AllreduceSum(data, n);
    if (!s.ok()) return s;
    for (int64_t i = 0; i < n; ++i) data[i] *= scale;
    return absl::OkStatus();
  });
}

absl::Status C10dGradientSync::AllreduceSum(absl::Span<double> values) {
  return group_->AllreduceSum(values.data(),
                              static_cast<int64_t>(values.size()));
}

absl::Status C10dGradientSync::AllreduceSum(absl::Span<float> values) {
  return group_->AllreduceSum(values.data(),
                              static_cast<int64_t>(values.size()));
}

}  // namespace shardgnn
