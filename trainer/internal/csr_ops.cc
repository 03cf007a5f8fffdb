#include "trainer/internal/csr_ops.h"

#include <ATen/Parallel.h>

#include <algorithm>
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

// The dropout mask is a pure function of (seed, element index): element k is
// kept when its keyed hash (two LowBias32 rounds) is >= threshold. Nothing is
// stored for backward, which recomputes the same mask; the loop is branch-free
// 32-bit integer arithmetic the compiler vectorises (AVX2 clone where the CPU
// has it).
struct DropoutKey {
  uint32_t s1, s2;     // seed words
  uint32_t threshold;  // keep iff hash >= threshold (= p * 2^32)
  float scale;         // 1 / (1 - p)
};

// lowbias32 (C. Wellons' integer hash search): a bijective 32-bit mixer with
// low bias; two rounds keyed by the seed words decorrelate masks of different
// seeds and neighbouring elements.
inline uint32_t LowBias32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

DropoutKey MakeDropoutKey(double p, int64_t seed, int64_t block) {
  // Elements are masked in blocks of 2^32 so the 32-bit counter never wraps
  // within a key.
  const uint64_t mixed =
      MixSeed(static_cast<uint64_t>(seed), static_cast<uint64_t>(block));
  DropoutKey key;
  key.s1 = static_cast<uint32_t>(mixed);
  key.s2 = static_cast<uint32_t>(mixed >> 32);
  key.threshold =
      static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  key.scale = static_cast<float>(1.0 / (1.0 - p));
  return key;
}

// out[k] = mask(k) * scale * in[k] for k in [begin, end), counting element
// indices from `base` within the key's block.
__attribute__((target_clones("avx2", "default"))) void ApplyDropoutMask(
    const DropoutKey key, const float* __restrict in, float* __restrict out,
    uint32_t base, uint32_t count) {
  for (uint32_t k = 0; k < count; ++k) {
    const uint32_t h = LowBias32(LowBias32((base + k) ^ key.s1) + key.s2);
    // Multiply rather than select: an unconditional load vectorises.
    out[k] = in[k] * (h >= key.threshold ? key.scale : 0.0f);
  }
}

void DropoutKernel(const torch::Tensor& in, torch::Tensor& out, double p,
                   int64_t seed) {
  const int64_t n = in.numel();
  const float* ip = in.data_ptr<float>();
  float* op = out.data_ptr<float>();
  constexpr int64_t kChunk = 1 << 16;
  at::parallel_for(
      0, (n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t chunk = c0; chunk < c1; ++chunk) {
          const int64_t begin = chunk * kChunk;
          const int64_t end = std::min(n, begin + kChunk);
          // kChunk divides 2^32: a chunk never straddles two key blocks.
          const DropoutKey key = MakeDropoutKey(p, seed, begin >> 32);
          ApplyDropoutMask(key, ip + begin, op + begin,
                           static_cast<uint32_t>(begin),
                           static_cast<uint32_t>(end - begin));
        }
      });
}

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, double p,
                               int64_t seed) {
    x = x.contiguous();
    torch::Tensor out = torch::empty_like(x);
    DropoutKernel(x, out, p, seed);
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    torch::Tensor grad = grad_outputs[0].contiguous();
    torch::Tensor grad_x = torch::empty_like(grad);
    DropoutKernel(grad, grad_x, ctx->saved_data["p"].toDouble(),
                  ctx->saved_data["seed"].toInt());
    return {grad_x, torch::Tensor(), torch::Tensor()};
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
