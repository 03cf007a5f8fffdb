#include "trainer/internal/script_ops.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdint>
#include <mutex>

#include "trainer/internal/csr_ops.h"

namespace shardgnn::internal {
namespace {

torch::Tensor Aggregate(const torch::Tensor& x, const torch::Tensor& edge_index,
                        int64_t num_dst, bool mean) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat,
              "shardgnn aggregation: x must be float32 [num_src, F], not ",
              x.sizes(), " ", x.scalar_type());
  TORCH_CHECK(edge_index.dim() == 2 && edge_index.size(0) == 2 &&
                  edge_index.scalar_type() == torch::kLong,
              "shardgnn aggregation: edge_index must be int64 [2, E], not ",
              edge_index.sizes(), " ", edge_index.scalar_type());
  TORCH_CHECK(num_dst >= 0 && num_dst <= x.size(0),
              "shardgnn aggregation: num_dst ", num_dst, " is not within 0..",
              x.size(0), " (the destinations are the first rows of x)");
  const torch::Tensor src = edge_index[0].contiguous();
  const torch::Tensor dst = edge_index[1].contiguous();
  const int64_t edges = dst.numel();
  const int64_t* s = src.data_ptr<int64_t>();
  const int64_t* d = dst.data_ptr<int64_t>();
  torch::Tensor indptr = torch::zeros({num_dst + 1}, torch::kLong);
  int64_t* p = indptr.data_ptr<int64_t>();
  const int64_t num_src = x.size(0);
  for (int64_t e = 0; e < edges; ++e) {
    TORCH_CHECK(d[e] >= 0 && d[e] < num_dst && (e == 0 || d[e] >= d[e - 1]),
                "shardgnn aggregation: edge ", e, "'s destination ", d[e],
                " is not within 0..", num_dst - 1,
                " or the edges are not grouped by destination, ascending");
    TORCH_CHECK(s[e] >= 0 && s[e] < num_src, "shardgnn aggregation: edge ", e,
                "'s source ", s[e], " is not a row of x (", num_src, ")");
    ++p[d[e] + 1];
  }
  for (int64_t i = 0; i < num_dst; ++i) p[i + 1] += p[i];
  return CsrAggregate(x, {}, indptr, src, mean);
}

torch::Tensor NeighborMean(const torch::Tensor& x,
                           const torch::Tensor& edge_index, int64_t num_dst) {
  return Aggregate(x, edge_index, num_dst, /*mean=*/true);
}

torch::Tensor NeighborSum(const torch::Tensor& x,
                          const torch::Tensor& edge_index, int64_t num_dst) {
  return Aggregate(x, edge_index, num_dst, /*mean=*/false);
}

// FastDropout with a seed drawn from the default CPU generator (which the
// trainer seeds before every layer call in training).
torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  TORCH_CHECK(p >= 0 && p < 1, "shardgnn dropout: p ", p,
              " is not within [0, 1)");
  if (!training || p == 0) return x;
  TORCH_CHECK(x.scalar_type() == torch::kFloat,
              "shardgnn dropout: x must be float32, not ", x.scalar_type());
  uint64_t seed;
  {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    seed = generator.get<at::CPUGeneratorImpl>()->random64();
  }
  return FastDropout(x, p, training, seed);
}

}  // namespace

void EnsureScriptOps() {}

TORCH_LIBRARY(shardgnn, m) {
  m.def("neighbor_mean(Tensor x, Tensor edge_index, int num_dst) -> Tensor",
        &NeighborMean);
  m.def("neighbor_sum(Tensor x, Tensor edge_index, int num_dst) -> Tensor",
        &NeighborSum);
  m.def("dropout(Tensor x, float p, bool training) -> Tensor", &Dropout);
}

}  // namespace shardgnn::internal
