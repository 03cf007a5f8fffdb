#include "trainer/internal/models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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
  return batch;
}

TEST(ModelsTest, BlockTensorsAddSelfLoopsAndSymmetricGcnWeights) {
  std::vector<BlockTensors> blocks =
      ToBlockTensors(TinyBatch(), ModelKind::kGcn);
  ASSERT_EQ(blocks.size(), 2u);
  const BlockTensors& inner = blocks[1];
  EXPECT_TRUE(
      torch::equal(inner.loop_indptr, torch::tensor({0, 3, 4}, torch::kLong)));
  EXPECT_TRUE(torch::equal(inner.loop_indices,
                           torch::tensor({0, 1, 2, 1}, torch::kLong)));
  EXPECT_TRUE(
      torch::equal(inner.loop_dst, torch::tensor({0, 0, 0, 1}, torch::kLong)));
  // Degrees with self loops: dst 0 has 3, dst 1 has 1; src 0 appears once, src
  // 1 twice, src 2 once.
  std::vector<float> want = {1 / std::sqrt(3.0f * 1), 1 / std::sqrt(3.0f * 2),
                             1 / std::sqrt(3.0f * 1), 1 / std::sqrt(1.0f * 2)};
  EXPECT_TRUE(
      torch::allclose(inner.gcn_weight.view({-1}), torch::tensor(want)));
  // SAGE needs only the sampled CSR.
  std::vector<BlockTensors> sage =
      ToBlockTensors(TinyBatch(), ModelKind::kSage);
  EXPECT_FALSE(sage[0].loop_indptr.defined());
  EXPECT_TRUE(torch::equal(sage[0].indices,
                           torch::tensor({1, 3, 4, 0, 4}, torch::kLong)));
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
