#include "trainer/internal/csr_ops.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardgnn::internal {
namespace {

// A random destination-major CSR with some empty rows.
struct RandomCsr {
  int64_t num_src, num_dst;
  torch::Tensor indptr, indices, dst;  // dst: destination of each edge
  RandomCsr(int64_t src, int64_t dsts, int max_degree)
      : num_src(src), num_dst(dsts) {
    torch::Tensor degrees =
        torch::randint(0, max_degree + 1, {num_dst}, torch::kLong);
    indptr = torch::cat({torch::zeros({1}, torch::kLong), degrees.cumsum(0)});
    const int64_t e = indptr[-1].item<int64_t>();
    indices = torch::randint(0, num_src, {e}, torch::kLong);
    dst = torch::repeat_interleave(torch::arange(num_dst), degrees);
  }
};

// out[i] = scale_i * sum_e w[e, head] x[j]: the straightforward index_add
// formulation.
torch::Tensor ReferenceAggregate(const RandomCsr& g, const torch::Tensor& x,
                                 const torch::Tensor& w, bool mean) {
  torch::Tensor msgs = x.index_select(0, g.indices);
  if (w.defined()) {
    const int64_t heads = w.size(1);
    msgs = (msgs.view({-1, heads, x.size(1) / heads}) * w.unsqueeze(-1))
               .view({-1, x.size(1)});
  }
  torch::Tensor out =
      torch::zeros({g.num_dst, x.size(1)}).index_add(0, g.dst, msgs);
  if (mean)
    out = out / (g.indptr.slice(0, 1) - g.indptr.slice(0, 0, -1))
                    .clamp_min(1)
                    .unsqueeze(1)
                    .to(torch::kFloat);
  return out;
}

class CsrOpsTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(3); }
};

TEST_F(CsrOpsTest, AggregateMatchesIndexAddReferenceForwardAndBackward) {
  RandomCsr g(50, 30, 9);
  for (bool mean : {false, true}) {
    for (int heads : {0, 1, 4}) {
      torch::Tensor x = torch::randn({g.num_src, 16}, torch::requires_grad());
      torch::Tensor w = heads == 0 ? torch::Tensor()
                                   : torch::rand({g.indices.size(0), heads},
                                                 torch::requires_grad());
      torch::Tensor probe = torch::randn({g.num_dst, 16});
      torch::Tensor out = CsrAggregate(x, w, g.indptr, g.indices, mean);
      (out * probe).sum().backward();
      torch::Tensor gx = x.grad().clone();
      torch::Tensor gw = heads == 0 ? torch::Tensor() : w.grad().clone();
      x.mutable_grad().zero_();
      if (heads) w.mutable_grad().zero_();
      torch::Tensor ref = ReferenceAggregate(g, x, w, mean);
      (ref * probe).sum().backward();
      SCOPED_TRACE(testing::Message() << "mean=" << mean << " heads=" << heads);
      EXPECT_TRUE(torch::allclose(out, ref, 1e-5, 1e-5));
      EXPECT_TRUE(torch::allclose(gx, x.grad(), 1e-5, 1e-5));
      if (heads) {
        EXPECT_TRUE(torch::allclose(gw, w.grad(), 1e-4, 1e-5));
      }
    }
  }
}

TEST_F(CsrOpsTest, AggregateOfEmptyRowIsZero) {
  torch::Tensor indptr = torch::tensor({0, 0, 2}, torch::kLong);
  torch::Tensor indices = torch::tensor({0, 1}, torch::kLong);
  torch::Tensor x = torch::tensor({{1.0f, 2.0f}, {3.0f, 6.0f}});
  torch::Tensor out = CsrAggregate(x, {}, indptr, indices, true);
  EXPECT_TRUE(torch::equal(out, torch::tensor({{0.0f, 0.0f}, {2.0f, 4.0f}})));
}

TEST_F(CsrOpsTest, EdgeSoftmaxMatchesPerRowSoftmax) {
  RandomCsr g(40, 25, 7);
  torch::Tensor scores =
      torch::randn({g.indices.size(0), 3}, torch::requires_grad());
  torch::Tensor probe = torch::randn({g.indices.size(0), 3});
  torch::Tensor alpha = EdgeSoftmax(scores, g.indptr);
  (alpha * probe).sum().backward();
  torch::Tensor grad = scores.grad().clone();
  scores.mutable_grad().zero_();
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < g.num_dst; ++i) {
    const int64_t b = g.indptr[i].item<int64_t>(),
                  e = g.indptr[i + 1].item<int64_t>();
    rows.push_back(torch::softmax(scores.slice(0, b, e), 0));
  }
  torch::Tensor ref = torch::cat(rows);
  (ref * probe).sum().backward();
  EXPECT_TRUE(torch::allclose(alpha, ref, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(grad, scores.grad(), 1e-5, 1e-6));
}

TEST_F(CsrOpsTest, DropoutKeepsTheRightFractionScalesAndIsSeeded) {
  torch::Tensor x = torch::ones({1000, 100}, torch::requires_grad());
  torch::Tensor a = FastDropout(x, 0.3, true, 7);
  torch::Tensor b = FastDropout(x, 0.3, true, 7);
  torch::Tensor c = FastDropout(x, 0.3, true, 8);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
  const double kept = a.ne(0).sum().item<double>() / a.numel();
  EXPECT_NEAR(kept, 0.7, 0.01);
  EXPECT_TRUE(
      torch::allclose(a.masked_select(a.ne(0)), torch::full({1}, 1.0 / 0.7)));
  a.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), a.detach()));
  EXPECT_TRUE(torch::equal(FastDropout(x, 0.3, false, 7), x));
}

// The mask behaves like independent Bernoulli draws: masks of two seeds, and
// neighbouring elements of one mask, are kept together with probability
// (1-p)^2; backward multiplies an arbitrary gradient by the forward mask.
TEST_F(CsrOpsTest, DropoutMasksAreIndependentAndBackwardReusesTheMask) {
  const double p = 0.4, keep = 1.0 - p;
  torch::Tensor x = torch::ones({300, 1000}, torch::requires_grad());
  torch::Tensor a = FastDropout(x, p, true, 11).ne(0).to(torch::kDouble);
  torch::Tensor b = FastDropout(x, p, true, 12).ne(0).to(torch::kDouble);
  EXPECT_NEAR(a.mean().item<double>(), keep, 0.005);
  EXPECT_NEAR((a * b).mean().item<double>(), keep * keep, 0.005);
  torch::Tensor flat = a.flatten();
  EXPECT_NEAR((flat.slice(0, 1) * flat.slice(0, 0, -1)).mean().item<double>(),
              keep * keep, 0.005);
  // Rows (1000 apart) as well as neighbours.
  EXPECT_NEAR((a.slice(0, 1) * a.slice(0, 0, -1)).mean().item<double>(),
              keep * keep, 0.005);

  torch::Tensor y = torch::randn({257, 129}, torch::requires_grad());
  torch::Tensor out = FastDropout(y, p, true, 5);
  torch::Tensor g = torch::randn({257, 129});
  out.backward(g);
  torch::Tensor mask = out.detach().ne(0).to(torch::kFloat) / keep;
  EXPECT_TRUE(torch::allclose(out.detach(), y.detach() * mask));
  EXPECT_TRUE(torch::allclose(y.grad(), g * mask));
}

}  // namespace
}  // namespace shardgnn::internal
