// Autograd-aware kernels over a block's CSR arrays (destination-major):
// neighbor aggregation, edge softmax and a fast dropout. They replace dense
// adjacency products: memory and time are linear in the number of edges.
//
// Tensors: indptr int64 [num_dst + 1], indices int64 [E] (local source
// indices), features float32 contiguous. Kernels parallelise over destinations
// (or feature columns in backward) with at::parallel_for.
#ifndef SHARDGNN_TRAINER_INTERNAL_CSR_OPS_H_
#define SHARDGNN_TRAINER_INTERNAL_CSR_OPS_H_

#include <torch/torch.h>

namespace shardgnn::internal {

// out[i, c] = scale_i * sum_{e in row i} w[e, c / (C / H)] * x[indices[e], c]
// for x [num_src, C].
//   weights: undefined (all ones) or float [E, H] with C % H == 0 (per-head
//   weights, e.g. attention). mean: scale_i = 1 / deg_i (0 for a destination
//   without neighbors), else 1.
// Differentiable in x and weights.
torch::Tensor CsrAggregate(const torch::Tensor& x, const torch::Tensor& weights,
                           const torch::Tensor& indptr,
                           const torch::Tensor& indices, bool mean);

// Softmax of scores [E, H] over each destination's edges, per head.
// Differentiable.
torch::Tensor EdgeSoftmax(const torch::Tensor& scores,
                          const torch::Tensor& indptr);

// Inverted dropout with a counter-based mask (LibTorch's bernoulli_ runs
// serially without MKL): whether element k is kept is a pure function of
// (`seed`, k), so runs are reproducible, threads never share a generator, and
// no mask is stored: backward recomputes it. Identity when !training or p == 0.
torch::Tensor FastDropout(const torch::Tensor& x, double p, bool training,
                          uint64_t seed);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_CSR_OPS_H_
