#include "trainer/internal/csr_ops.h"

#include <ATen/Parallel.h>

#include <cstdint>
#include <limits>

#include "common/sampling.h"

namespace shardgnn::internal {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr int64_t kDstGrain = 64;

// Per-destination scale: 1/deg for mean aggregation, else 1.
inline float RowScale(const int64_t* indptr, int64_t i, bool mean) {
  const int64_t deg = indptr[i + 1] - indptr[i];
  return mean ? (deg > 0 ? 1.0f / static_cast<float>(deg) : 0.0f) : 1.0f;
}

class CsrAggregateFunction
    : public torch::autograd::Function<CsrAggregateFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor weights, torch::Tensor indptr,
                               torch::Tensor indices, bool mean,
                               bool weighted) {
    x = x.contiguous();
    if (weighted) weights = weights.contiguous();
    const int64_t num_dst = indptr.size(0) - 1;
    const int64_t cols = x.size(1);
    const int64_t heads = weighted ? weights.size(1) : 1;
    const int64_t head_dim = cols / heads;
    torch::Tensor out = torch::zeros({num_dst, cols}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = weighted ? weights.data_ptr<float>() : nullptr;
    const int64_t* ip = indptr.data_ptr<int64_t>();
    const int64_t* jp = indices.data_ptr<int64_t>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, num_dst, kDstGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float* row = op + i * cols;
        for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
          const float* src = xp + jp[e] * cols;
          if (wp == nullptr) {
            for (int64_t c = 0; c < cols; ++c) row[c] += src[c];
          } else {
            for (int64_t h = 0; h < heads; ++h) {
              const float w = wp[e * heads + h];
              for (int64_t c = h * head_dim; c < (h + 1) * head_dim; ++c)
                row[c] += w * src[c];
            }
          }
        }
        const float s = RowScale(ip, i, mean);
        if (s != 1.0f) {
          for (int64_t c = 0; c < cols; ++c) row[c] *= s;
        }
      }
    });
    ctx->save_for_backward({x, weights, indptr, indices});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["weighted"] = weighted;
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    torch::Tensor x = saved[0], weights = saved[1], indptr = saved[2],
                  indices = saved[3];
    const bool mean = ctx->saved_data["mean"].toBool();
    torch::Tensor grad = grad_outputs[0].contiguous();
    const bool weighted = ctx->saved_data["weighted"].toBool();
    const int64_t num_dst = indptr.size(0) - 1;
    const int64_t cols = x.size(1);
    const int64_t heads = weighted ? weights.size(1) : 1;
    const int64_t head_dim = cols / heads;
    const float* gp = grad.data_ptr<float>();
    const float* xp = x.data_ptr<float>();
    const float* wp = weighted ? weights.data_ptr<float>() : nullptr;
    const int64_t* ip = indptr.data_ptr<int64_t>();
    const int64_t* jp = indices.data_ptr<int64_t>();

    torch::Tensor grad_x;
    if (ctx->needs_input_grad(0)) {
      // Scatter: each thread owns a range of columns, so no two threads write
      // the same element.
      grad_x = torch::zeros_like(x);
      float* gx = grad_x.data_ptr<float>();
      const int64_t grain = std::max<int64_t>(8, head_dim);
      at::parallel_for(0, cols, grain, [&](int64_t c0, int64_t c1) {
        for (int64_t i = 0; i < num_dst; ++i) {
          const float s = RowScale(ip, i, mean);
          const float* g = gp + i * cols;
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
            float* dst = gx + jp[e] * cols;
            if (wp == nullptr) {
              for (int64_t c = c0; c < c1; ++c) dst[c] += s * g[c];
            } else {
              for (int64_t c = c0; c < c1; ++c)
                dst[c] += s * wp[e * heads + c / head_dim] * g[c];
            }
          }
        }
      });
    }
    torch::Tensor grad_w;
    if (weighted && ctx->needs_input_grad(1)) {
      grad_w = torch::zeros_like(weights);
      float* gw = grad_w.data_ptr<float>();
      at::parallel_for(0, num_dst, kDstGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float s = RowScale(ip, i, mean);
          const float* g = gp + i * cols;
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
            const float* src = xp + jp[e] * cols;
            for (int64_t h = 0; h < heads; ++h) {
              float dot = 0.0f;
              for (int64_t c = h * head_dim; c < (h + 1) * head_dim; ++c)
                dot += g[c] * src[c];
              gw[e * heads + h] = s * dot;
            }
          }
        }
      });
    }
    return {grad_x,          grad_w,          torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

class EdgeSoftmaxFunction
    : public torch::autograd::Function<EdgeSoftmaxFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor scores,
                               torch::Tensor indptr) {
    scores = scores.contiguous();
    const int64_t num_dst = indptr.size(0) - 1;
    const int64_t heads = scores.size(1);
    torch::Tensor out = torch::empty_like(scores);
    const float* sp = scores.data_ptr<float>();
    const int64_t* ip = indptr.data_ptr<int64_t>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, num_dst, kDstGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t h = 0; h < heads; ++h) {
          float max = -std::numeric_limits<float>::infinity();
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e)
            max = std::max(max, sp[e * heads + h]);
          float sum = 0.0f;
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
            const float v = std::exp(sp[e * heads + h] - max);
            op[e * heads + h] = v;
            sum += v;
          }
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e) op[e * heads + h] /= sum;
        }
      }
    });
    ctx->save_for_backward({out, indptr});
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    torch::Tensor alpha = saved[0], indptr = saved[1];
    torch::Tensor grad = grad_outputs[0].contiguous();
    const int64_t num_dst = indptr.size(0) - 1;
    const int64_t heads = alpha.size(1);
    torch::Tensor grad_s = torch::empty_like(alpha);
    const float* ap = alpha.data_ptr<float>();
    const float* gp = grad.data_ptr<float>();
    const int64_t* ip = indptr.data_ptr<int64_t>();
    float* op = grad_s.data_ptr<float>();
    at::parallel_for(0, num_dst, kDstGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t h = 0; h < heads; ++h) {
          float dot = 0.0f;
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e)
            dot += gp[e * heads + h] * ap[e * heads + h];
          for (int64_t e = ip[i]; e < ip[i + 1]; ++e) {
            op[e * heads + h] = ap[e * heads + h] * (gp[e * heads + h] - dot);
          }
        }
      }
    });
    return {grad_s, torch::Tensor()};
  }
};

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double p,
                               int64_t seed) {
    x = x.contiguous();
    torch::Tensor mask = torch::empty_like(x);
    const int64_t n = x.numel();
    const float scale = static_cast<float>(1.0 / (1.0 - p));
    // Keep an element when its 32-bit uniform draw is at least p * 2^32.
    const uint64_t threshold = static_cast<uint64_t>(p * 4294967296.0);
    float* mp = mask.data_ptr<float>();
    constexpr int64_t kChunk = 4096;
    at::parallel_for(
        0, (n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t chunk = c0; chunk < c1; ++chunk) {
            uint64_t state = MixSeed(static_cast<uint64_t>(seed),
                                     static_cast<uint64_t>(chunk));
            const int64_t end = std::min(n, (chunk + 1) * kChunk);
            for (int64_t k = chunk * kChunk; k < end; k += 2) {
              const uint64_t r = SplitMix64(&state);
              mp[k] = (r & 0xffffffffULL) >= threshold ? scale : 0.0f;
              if (k + 1 < end)
                mp[k + 1] = (r >> 32) >= threshold ? scale : 0.0f;
            }
          }
        });
    ctx->save_for_backward({mask});
    return x * mask;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    torch::Tensor mask = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * mask, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor CsrAggregate(const torch::Tensor& x, const torch::Tensor& weights,
                           const torch::Tensor& indptr,
                           const torch::Tensor& indices, bool mean) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat,
              "CsrAggregate: x must be float [N, C]");
  TORCH_CHECK(indptr.scalar_type() == torch::kLong &&
                  indices.scalar_type() == torch::kLong,
              "CsrAggregate: indptr and indices must be int64");
  TORCH_CHECK(indptr.is_contiguous() && indices.is_contiguous(),
              "CsrAggregate: indptr/indices not contiguous");
  if (weights.defined()) {
    TORCH_CHECK(weights.dim() == 2 && weights.size(0) == indices.size(0) &&
                    x.size(1) % weights.size(1) == 0,
                "CsrAggregate: weights must be [E, H] with H dividing the "
                "feature width");
  }
  // Autograd functions cannot take undefined tensors: an empty placeholder
  // stands for "no weights".
  const bool weighted = weights.defined();
  return CsrAggregateFunction::apply(x,
                                     weighted ? weights : torch::empty({0, 1}),
                                     indptr, indices, mean, weighted);
}

torch::Tensor EdgeSoftmax(const torch::Tensor& scores,
                          const torch::Tensor& indptr) {
  TORCH_CHECK(scores.dim() == 2 && scores.scalar_type() == torch::kFloat,
              "EdgeSoftmax: scores must be float [E, H]");
  return EdgeSoftmaxFunction::apply(scores, indptr);
}

torch::Tensor FastDropout(const torch::Tensor& x, double p, bool training,
                          uint64_t seed) {
  if (!training || p <= 0.0) return x;
  TORCH_CHECK(p < 1.0 && x.scalar_type() == torch::kFloat,
              "FastDropout: p must be in [0, 1) on float input");
  return DropoutFunction::apply(x, p, static_cast<int64_t>(seed));
}

}  // namespace shardgnn::internal
