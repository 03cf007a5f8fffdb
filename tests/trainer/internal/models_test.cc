#include "trainer/internal/models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sampler/graph_source.h"
#include "sampler/neighbor_sampler.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn::internal {
namespace {

// Two blocks: 5 input nodes -> 3 -> 2 seeds.
MiniBatch TinyBatch() {
  MiniBatch batch;
  batch.seeds = {10, 11};
  batch.input_nodes = {10, 11, 12, 13, 14};
  Block outer;
  outer.num_src = 5;
  outer.num_dst = 3;
  outer.indptr = {0, 2, 3, 5};
  outer.indices = {1, 3, 4, 0, 4};
  Block inner;
  inner.num_src = 3;
  inner.num_dst = 2;
  inner.indptr = {0, 2, 2};  // Seed 11 has no sampled neighbors.
  inner.indices = {1, 2};
  batch.blocks = {outer, inner};
  batch.feature_dim = 4;
  for (int i = 0; i < 20; ++i)
    batch.features.push_back(static_cast<float>(i % 7) / 7.0f);
  batch.labels = {0, 2};
  batch.degrees = {4, 1, 2, 3, 5};  // In the whole graph (for GCN).
  return batch;
}

TEST(ModelsTest, BlockTensorsAddSelfLoopsAndGcnWeightsFromGraphDegrees) {
  // TinyBatch's degrees are those of the whole graph, not the sampled counts.
  MiniBatch batch = TinyBatch();
  std::vector<BlockTensors> blocks = ToBlockTensors(batch, ModelKind::kGcn);
  ASSERT_EQ(blocks.size(), 2u);
  const BlockTensors& inner = blocks[1];
  EXPECT_TRUE(
      torch::equal(inner.loop_indptr, torch::tensor({0, 3, 4}, torch::kLong)));
  EXPECT_TRUE(torch::equal(inner.loop_indices,
                           torch::tensor({0, 1, 2, 1}, torch::kLong)));
  EXPECT_TRUE(
      torch::equal(inner.loop_dst, torch::tensor({0, 0, 0, 1}, torch::kLong)));
  // dst 0 (degree 4) sampled 2 neighbors (sources 1 and 2, degrees 1 and 2):
  // self 1/5, each neighbor (4/2) / sqrt(5 * (d_j + 1)). dst 1 sampled none:
  // its self loop alone, 1/2.
  std::vector<float> want = {1 / 5.0f, 2 / std::sqrt(5.0f * 2),
                             2 / std::sqrt(5.0f * 3), 1 / 2.0f};
  EXPECT_TRUE(
      torch::allclose(inner.gcn_weight.view({-1}), torch::tensor(want)));
  // Without degrees GCN cannot normalise.
  batch.degrees.clear();
  EXPECT_THROW(ToBlockTensors(batch, ModelKind::kGcn), c10::Error);
  // SAGE needs only the sampled CSR.
  std::vector<BlockTensors> sage =
      ToBlockTensors(TinyBatch(), ModelKind::kSage);
  EXPECT_FALSE(sage[0].loop_indptr.defined());
  EXPECT_TRUE(torch::equal(sage[0].indices,
                           torch::tensor({1, 3, 4, 0, 4}, torch::kLong)));
}

// A random undirected graph of n nodes with features, in memory.
struct RandomGraph {
  std::vector<int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<float> features;
  int64_t n, dim;
  RandomGraph(int64_t nodes, int64_t feature_dim, uint32_t seed)
      : n(nodes), dim(feature_dim) {
    std::mt19937 rng(seed);
    std::vector<std::vector<NodeId>> adj(n);
    for (int64_t e = 0; e < 3 * n; ++e) {
      const NodeId a = rng() % n, b = rng() % n;
      if (a == b) continue;
      adj[a].push_back(b);
      adj[b].push_back(a);
    }
    std::normal_distribution<float> normal;
    for (int64_t v = 0; v < n; ++v) {
      std::sort(adj[v].begin(), adj[v].end());
      adj[v].erase(std::unique(adj[v].begin(), adj[v].end()), adj[v].end());
      indices.insert(indices.end(), adj[v].begin(), adj[v].end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
      for (int64_t j = 0; j < dim; ++j) features.push_back(normal(rng));
    }
  }
  GraphArrays arrays() const {
    GraphArrays a;
    a.indptr = indptr;
    a.indices = indices;
    a.features = features;
    a.feature_dim = dim;
    return a;
  }
  torch::Tensor Features() const {
    return torch::tensor(features).view({n, dim});
  }
  // Kipf & Welling's D^-1/2 (A + I) D^-1/2 over the whole graph, dense.
  torch::Tensor NormalizedAdjacency() const {
    torch::Tensor a = torch::eye(n);
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) a[v][indices[e]] = 1;
    }
    torch::Tensor d = a.sum(1).pow(-0.5);
    return d.view({-1, 1}) * a * d.view({1, -1});
  }
};

// The batch's input feature matrix (a view of its buffer).
torch::Tensor InputFeatures(MiniBatch& batch) {
  return torch::from_blob(
      batch.features.data(),
      {static_cast<int64_t>(batch.input_nodes.size()), batch.feature_dim});
}

// A sampler of features and graph degrees (what every model needs), no labels.
absl::StatusOr<std::unique_ptr<NeighborSampler>> FeatureSampler(
    const GraphSource* source, std::vector<int> fanouts) {
  SamplerOptions sampling;
  sampling.fanouts = std::move(fanouts);
  sampling.fetch_labels = false;
  sampling.fetch_degrees = true;
  return NeighborSampler::Create(source, sampling);
}

// GCN with full neighborhoods must be the paper's full-graph GCN, whatever
// nodes share the batch: the same weights give the same logits as
// A_hat relu(A_hat X W0 + b0) W1 + b1 computed densely.
TEST(ModelsTest, GcnWithFullNeighborhoodsIsKipfWellingInAnyBatch) {
  RandomGraph graph(40, 6, 3);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  ASSERT_OK_AND_ASSIGN(auto sampler, FeatureSampler(source.get(), {-1, -1}));
  ModelOptions options;
  options.kind = ModelKind::kGcn;
  options.hidden = 5;
  std::shared_ptr<GnnModel> model = MakeModel(options, 6, 3, 7);
  model->eval();
  torch::NoGradGuard no_grad;
  auto param = [&](const std::string& name) {
    return model->named_parameters()[name];
  };
  // Biases start at zero; give them values so that they are checked too.
  param("layers.0.bias").uniform_(-1, 1);
  param("layers.1.bias").uniform_(-1, 1);
  torch::Tensor a_hat = graph.NormalizedAdjacency();
  torch::Tensor x = graph.Features();
  torch::Tensor h =
      torch::relu(a_hat.mm(x.mm(param("layers.0.lin.weight").t())) +
                  param("layers.0.bias"));
  torch::Tensor want =
      a_hat.mm(h.mm(param("layers.1.lin.weight").t())) + param("layers.1.bias");

  for (std::vector<NodeId> seeds :
       {std::vector<NodeId>{5}, std::vector<NodeId>{5, 17, 33},
        std::vector<NodeId>{33, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}) {
    SCOPED_TRACE(seeds.size());
    ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(seeds, 1));
    torch::Tensor inputs = InputFeatures(batch);
    torch::Tensor got =
        model->Forward(ToBlockTensors(batch, ModelKind::kGcn), inputs);
    torch::Tensor rows = want.index_select(
        0, torch::tensor(std::vector<int64_t>(seeds.begin(), seeds.end())));
    EXPECT_TRUE(torch::allclose(got, rows, 1e-4, 1e-5)) << "got\n"
                                                        << got << "\nwant\n"
                                                        << rows;
  }
}

// Dense, textbook forms of each model (the papers' equations on the whole
// graph), reading the parameters of `model` by name.
torch::Tensor DenseForward(ModelKind kind, GnnModel& model,
                           const RandomGraph& graph, const torch::Tensor& x,
                           int heads) {
  auto p = [&](const std::string& name) {
    return model.named_parameters()[name];
  };
  const int64_t n = graph.n;
  torch::Tensor adj = torch::zeros({n, n});
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t e = graph.indptr[v]; e < graph.indptr[v + 1]; ++e)
      adj[v][graph.indices[e]] = 1;
  }
  torch::Tensor h = x;
  for (int l = 0; l < 2; ++l) {
    const std::string layer = "layers." + std::to_string(l) + ".";
    torch::Tensor next;
    if (kind == ModelKind::kSage) {
      torch::Tensor mean =
          adj / adj.sum(1, true).clamp_min(1);  // 0 for no neighbors
      next = torch::nn::functional::linear(h, p(layer + "lin_self.weight"),
                                           p(layer + "lin_self.bias")) +
             mean.mm(h).mm(p(layer + "lin_neigh.weight").t());
    } else if (kind == ModelKind::kGcn) {
      next = graph.NormalizedAdjacency().mm(h.mm(p(layer + "lin.weight").t())) +
             p(layer + "bias");
    } else {
      const int64_t head_count = l == 0 ? heads : 1;
      torch::Tensor z = h.mm(p(layer + "lin.weight").t())
                            .view({n, head_count, -1});      // [n, H, out]
      torch::Tensor el = (z * p(layer + "attn_l")).sum(-1);  // [n, H]
      torch::Tensor er = (z * p(layer + "attn_r")).sum(-1);
      // scores[i, j, h] for j in N(i) + i.
      torch::Tensor scores = torch::leaky_relu(
          er.unsqueeze(1) + el.unsqueeze(0), 0.2);  // [n, n, H]
      torch::Tensor mask = (adj + torch::eye(n)).gt(0).unsqueeze(-1);
      torch::Tensor alpha =
          torch::softmax(scores.masked_fill(mask.logical_not(), -1e30), 1);
      torch::Tensor out = torch::einsum("ijh,jhc->ihc", {alpha, z});
      next = (l == 0 ? out.reshape({n, -1}) : out.mean(1)) + p(layer + "bias");
    }
    h = l == 0
            ? (kind == ModelKind::kGat ? torch::elu(next) : torch::relu(next))
            : next;
  }
  return h;
}

// The same initial weights give the same logits as the papers' full-graph
// equations, and then the same training curve: 15 Adam steps on the whole
// graph with full neighborhoods (no dropout, so both runs are deterministic)
// give the same loss at every step.
TEST(ModelsTest, FullNeighborhoodTrainingFollowsThePapersEquations) {
  RandomGraph graph(30, 5, 11);
  std::vector<int64_t> labels(graph.n);
  for (int64_t v = 0; v < graph.n; ++v) labels[v] = (v * 7) % 3;
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  ASSERT_OK_AND_ASSIGN(auto sampler, FeatureSampler(source.get(), {-1, -1}));
  std::vector<NodeId> all(graph.n);
  for (int64_t v = 0; v < graph.n; ++v) all[v] = v;
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(all, 3));
  // Every node is a seed, in order.
  ASSERT_EQ(
      std::vector<NodeId>(batch.input_nodes.begin(), batch.input_nodes.end()),
      all);
  torch::Tensor x = graph.Features();
  torch::Tensor y = torch::tensor(labels);
  torch::Tensor train = torch::arange(0, 20);

  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    SCOPED_TRACE(ModelKindName(kind));
    ModelOptions options;
    options.kind = kind;
    options.hidden = 4;
    options.heads = 3;
    options.dropout = 0;
    options.attn_dropout = 0;
    std::shared_ptr<GnnModel> ours = MakeModel(options, graph.dim, 3, 21);
    std::shared_ptr<GnnModel> dense = MakeModel(options, graph.dim, 3, 21);
    std::vector<BlockTensors> blocks = ToBlockTensors(batch, kind);
    {
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::allclose(ours->Forward(blocks, x),
                                  DenseForward(kind, *dense, graph, x, 3), 1e-4,
                                  1e-5));
    }
    torch::optim::Adam adam_ours(ours->parameters(),
                                 torch::optim::AdamOptions(0.01));
    torch::optim::Adam adam_dense(dense->parameters(),
                                  torch::optim::AdamOptions(0.01));
    for (int step = 0; step < 15; ++step) {
      adam_ours.zero_grad();
      torch::Tensor a = torch::nn::functional::cross_entropy(
          ours->Forward(blocks, x).index_select(0, train),
          y.index_select(0, train));
      a.backward();
      adam_ours.step();
      adam_dense.zero_grad();
      torch::Tensor b = torch::nn::functional::cross_entropy(
          DenseForward(kind, *dense, graph, x, 3).index_select(0, train),
          y.index_select(0, train));
      b.backward();
      adam_dense.step();
      ASSERT_NEAR(a.item<double>(), b.item<double>(), 1e-4 * b.item<double>())
          << "step " << step;
    }
  }
}

// Sampled, the neighbor sum is scaled by degree / sampled: averaged over many
// samples the layer's output approaches the full-neighborhood one.
TEST(ModelsTest, SampledGcnEstimatesTheFullNeighborhoodWithoutBias) {
  RandomGraph graph(60, 4, 9);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  ModelOptions options;
  options.kind = ModelKind::kGcn;
  options.num_layers = 1;
  std::shared_ptr<GnnModel> model = MakeModel(options, 4, 3, 2);
  model->eval();
  torch::NoGradGuard no_grad;
  auto run = [&](int fanout, uint64_t seed) {
    auto sampler = FeatureSampler(source.get(), {fanout});
    EXPECT_TRUE(sampler.ok());
    std::vector<NodeId> seeds = {0, 1, 2, 3, 4, 5};
    auto batch = (*sampler)->Sample(seeds, seed);
    EXPECT_TRUE(batch.ok());
    torch::Tensor inputs = InputFeatures(*batch);
    return model->Forward(ToBlockTensors(*batch, ModelKind::kGcn), inputs)
        .clone();
  };
  torch::Tensor exact = run(-1, 0);
  torch::Tensor mean = torch::zeros_like(exact);
  const int kSamples = 2000;
  for (int s = 0; s < kSamples; ++s) mean += run(2, 100 + s) / kSamples;
  EXPECT_TRUE(torch::allclose(mean, exact, 0.05, 0.05)) << "mean of samples\n"
                                                        << mean << "\nexact\n"
                                                        << exact;
  EXPECT_FALSE(torch::allclose(run(2, 1), exact, 1e-3, 1e-3));
}

TEST(ModelsTest, EveryModelMapsFeaturesToSeedLogitsAndTrainsEveryParameter) {
  MiniBatch batch = TinyBatch();
  for (ModelKind kind :
       {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kMlp}) {
    SCOPED_TRACE(ModelKindName(kind));
    ModelOptions options;
    options.kind = kind;
    options.hidden = 6;
    options.heads = 3;
    options.dropout = 0.5;
    std::shared_ptr<GnnModel> model = MakeModel(options, 4, 3, 42);
    std::vector<BlockTensors> blocks = ToBlockTensors(batch, kind);
    torch::Tensor x =
        torch::from_blob(batch.features.data(), {5, 4}, torch::kFloat);
    model->eval();
    torch::Tensor a = model->Forward(blocks, x);
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_TRUE(torch::equal(
        a, model->Forward(blocks, x)));  // No dropout in eval mode.
    model->train();
    torch::Tensor loss = model->Forward(blocks, x).pow(2).sum();
    loss.backward();
    for (const auto& p : model->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
    }
    // The same seed gives the same parameters.
    std::shared_ptr<GnnModel> twin = MakeModel(options, 4, 3, 42);
    std::shared_ptr<GnnModel> other = MakeModel(options, 4, 3, 43);
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      EXPECT_TRUE(torch::equal(model->parameters()[i], twin->parameters()[i]));
    }
    bool any_differs = false;
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      any_differs |=
          !torch::equal(model->parameters()[i], other->parameters()[i]);
    }
    EXPECT_TRUE(any_differs);
  }
}

// MinParameterCount is a lower bound of every model's parameters (inference
// checks a model.json against its model.pt with it before building the model)
// and counts each layer's weight.
TEST(ModelsTest, MinParameterCountBoundsEveryModel) {
  for (ModelKind kind :
       {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kMlp}) {
    for (int layers : {1, 2, 3}) {
      SCOPED_TRACE(absl::StrCat(ModelKindName(kind), " ", layers, " layers"));
      ModelOptions options;
      options.kind = kind;
      options.num_layers = layers;
      options.hidden = 6;
      options.heads = 3;
      std::shared_ptr<GnnModel> model = MakeModel(options, 5, 4, 1);
      int64_t count = 0;
      for (const torch::Tensor& p : model->parameters()) count += p.numel();
      const int64_t bound = MinParameterCount(options, 5, 4);
      EXPECT_LE(bound, count);
      EXPECT_GE(bound, layers == 1 ? 5 * 4 : 5 * 6 + 6 * 4);
    }
  }
  ModelOptions huge;
  huge.hidden = int64_t{1} << 40;
  huge.num_layers = 64;
  EXPECT_EQ(MinParameterCount(huge, int64_t{1} << 40, int64_t{1} << 40),
            std::numeric_limits<int64_t>::max());
}

TEST(ModelsTest, ProjectIsTheLinearWithAndWithoutGradients) {
  // Rows over several of Project's 8 MB parts, not a multiple of a part, at
  // widths whose parts differ (8192 and 1463 rows), with a bias and without.
  for (const int64_t in : {int64_t{256}, int64_t{1433}}) {
    for (const bool bias : {true, false}) {
      SCOPED_TRACE(absl::StrCat("in ", in, " bias ", bias));
      torch::manual_seed(7);
      torch::nn::Linear linear(torch::nn::LinearOptions(in, 48).bias(bias));
      const int64_t chunk = (int64_t{8} << 20) / (in * 4);
      const torch::Tensor x = torch::randn({3 * chunk + 7, in});
      torch::Tensor expected, chunked;
      {
        torch::NoGradGuard no_grad;
        expected = linear(x);
        chunked = Project(linear, x);
      }
      EXPECT_FALSE(chunked.requires_grad());
      EXPECT_TRUE(torch::equal(chunked, expected));
      // Recording gradients: one call, and the gradient flows.
      const torch::Tensor graded = Project(linear, x.narrow(0, 0, 100));
      EXPECT_TRUE(graded.requires_grad());
      EXPECT_TRUE(torch::equal(graded.detach(), expected.narrow(0, 0, 100)));
    }
  }
}

TEST(ModelsTest, BlockCountMustMatchLayers) {
  ModelOptions options;
  options.num_layers = 3;
  std::shared_ptr<GnnModel> model = MakeModel(options, 4, 3, 1);
  MiniBatch batch = TinyBatch();
  torch::Tensor x =
      torch::from_blob(batch.features.data(), {5, 4}, torch::kFloat);
  EXPECT_THROW(model->Forward(ToBlockTensors(batch, ModelKind::kSage), x),
               c10::Error);
}

}  // namespace
}  // namespace shardgnn::internal
