// Edge features in one process (issue 50): the sampler picks the same
// neighbors with their edges as without, each block row of edge features is
// the dataset's row of that edge, the GINE layer equals its per-edge
// definition, and on a generated graph whose labels live only in the edge
// features GINE learns them, where the same model over zeroed edge features
// cannot.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/generators.h"
#include "sampler/graph_source.h"
#include "sampler/neighbor_sampler.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/internal/models.h"
#include "trainer/internal/task.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;

class EdgeFeatureTrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GeneratorOptions g;
    g.kind = GraphKind::kSbm;
    g.num_nodes = 3000;
    g.avg_degree = 12;
    g.feature_dim = 8;
    g.num_classes = 4;
    g.edge_feature_dim = 8;
    g.seed = 5;
    ASSERT_OK(GenerateDataset(g, dir_->Sub("sbm")).status());
    auto loaded = LoadDataset(dir_->Sub("sbm"));
    ASSERT_OK(loaded.status());
    dataset_ = new Dataset(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete dataset_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_NE(dataset_, nullptr);
    ASSERT_EQ(dataset_->manifest.edge_feature_dim, 8);
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::FromDataset(*dataset_));
    splits_.train = dataset_->splits.at("train");
    splits_.valid = dataset_->splits.at("valid");
    splits_.test = dataset_->splits.at("test");
  }

  TrainOptions Options() const {
    TrainOptions o;
    o.model.kind = ModelKind::kGine;
    o.model.hidden = 32;
    o.model.dropout = 0.2;
    o.fanouts = {10, 10};
    o.epochs = 10;
    o.batch_size = 128;
    o.num_classes = dataset_->manifest.num_classes;
    o.seed = 11;
    o.torch_threads = 2;
    return o;
  }

  static testing::TempDir* dir_;
  static Dataset* dataset_;
  std::unique_ptr<InMemoryGraphSource> source_;
  TrainSplits splits_;
};

testing::TempDir* EdgeFeatureTrainingTest::dir_ = nullptr;
Dataset* EdgeFeatureTrainingTest::dataset_ = nullptr;

// Each sampled edge's features are the dataset's row of that CSR entry, and
// sampling with edges picks exactly the neighbors sampling without does.
TEST_F(EdgeFeatureTrainingTest, BlocksCarryTheRowsOfTheSampledEdges) {
  const std::vector<NodeId> seeds(splits_.train.begin(),
                                  splits_.train.begin() + 40);
  SamplerOptions plain;
  plain.fanouts = {5, 3};
  SamplerOptions with = plain;
  with.fetch_edge_features = true;
  ASSERT_OK_AND_ASSIGN(auto a, NeighborSampler::Create(source_.get(), plain));
  ASSERT_OK_AND_ASSIGN(auto b, NeighborSampler::Create(source_.get(), with));
  ASSERT_OK_AND_ASSIGN(MiniBatch x, a->Sample(seeds, 9));
  ASSERT_OK_AND_ASSIGN(MiniBatch y, b->Sample(seeds, 9));
  ASSERT_TRUE(std::equal(x.input_nodes.begin(), x.input_nodes.end(),
                         y.input_nodes.begin(), y.input_nodes.end()));
  const int64_t d = 8;
  int64_t checked = 0;
  for (size_t l = 0; l < y.blocks.size(); ++l) {
    const Block& block = y.blocks[l];
    ASSERT_TRUE(std::equal(block.indices.begin(), block.indices.end(),
                           x.blocks[l].indices.begin(),
                           x.blocks[l].indices.end()));
    EXPECT_TRUE(x.blocks[l].edge_features.empty());
    ASSERT_EQ(block.edge_feature_dim, d);
    ASSERT_EQ(static_cast<int64_t>(block.edge_features.size()),
              block.num_edges() * d);
    for (int64_t i = 0; i < block.num_dst; ++i) {
      const NodeId v = y.input_nodes[i];
      for (int64_t k = block.indptr[i]; k < block.indptr[i + 1]; ++k) {
        const NodeId u = y.input_nodes[block.indices[k]];
        // The CSR entry of u in v's row (rows are sorted, no duplicates).
        auto first = dataset_->indices.begin() + dataset_->indptr[v];
        auto last = dataset_->indices.begin() + dataset_->indptr[v + 1];
        auto at = std::lower_bound(first, last, u);
        ASSERT_TRUE(at != last && *at == u);
        const int64_t e = at - dataset_->indices.begin();
        for (int64_t c = 0; c < d; ++c) {
          ASSERT_EQ(block.edge_features[k * d + c],
                    dataset_->edge_features[0][e * d + c]);
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// The first GINE layer equals, node by node, W_self h_v + b + W_neigh
// mean_u ReLU(h_u + W_edge e_uv + b_edge), computed here edge by edge.
TEST_F(EdgeFeatureTrainingTest, GineLayerIsTheMeanOfEdgeConditionedMessages) {
  SamplerOptions sampling;
  sampling.fanouts = {4, 3};
  sampling.fetch_edge_features = true;
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source_.get(), sampling));
  const std::vector<NodeId> seeds(splits_.train.begin(),
                                  splits_.train.begin() + 20);
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(seeds, 5));
  ModelOptions options;
  options.kind = ModelKind::kGine;
  options.hidden = 6;
  options.num_layers = 2;
  options.edge_feature_dim = 8;
  auto model = internal::MakeModel(options, 8, 4, 1);
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<internal::BlockTensors> blocks =
      internal::ToBlockTensors(batch, ModelKind::kGine);
  torch::Tensor x =
      torch::from_blob(batch.features.data(),
                       {static_cast<int64_t>(batch.input_nodes.size()), 8},
                       torch::kFloat)
          .clone();
  torch::Tensor out = model->ForwardLayer(0, blocks[0], x);
  std::map<std::string, torch::Tensor> p;
  for (const auto& named : model->named_parameters())
    p[named.key()] = named.value();
  const Block& block = batch.blocks[0];
  ASSERT_EQ(out.size(0), block.num_dst);
  for (int64_t i = 0; i < block.num_dst; ++i) {
    torch::Tensor sum = torch::zeros({8});
    const int64_t n = block.indptr[i + 1] - block.indptr[i];
    for (int64_t k = block.indptr[i]; k < block.indptr[i + 1]; ++k) {
      torch::Tensor e = torch::from_blob(
          const_cast<float*>(block.edge_features.data()) + k * 8, {8},
          torch::kFloat);
      sum += torch::relu(x[block.indices[k]] +
                         p["layers.0.lin_edge.weight"].mv(e) +
                         p["layers.0.lin_edge.bias"]);
    }
    torch::Tensor want = p["layers.0.lin_self.weight"].mv(x[i]) +
                         p["layers.0.lin_self.bias"] +
                         p["layers.0.lin_neigh.weight"].mv(
                             sum / static_cast<float>(std::max<int64_t>(n, 1)));
    // The layer's ReLU (not the last layer).
    EXPECT_TRUE(torch::allclose(out[i], torch::relu(want), 1e-4, 1e-5))
        << "destination " << i;
  }
}

// The labels are in the edge features only (datasets/generators.h): GINE
// learns them; the same model over zeroed edge features stays near chance.
TEST_F(EdgeFeatureTrainingTest, GineLearnsWhatOnlyTheEdgeFeaturesSay) {
  ASSERT_OK_AND_ASSIGN(TrainResult with, Train(*source_, splits_, Options()));
  Dataset zeroed = *dataset_;
  std::fill(zeroed.edge_features[0].begin(), zeroed.edge_features[0].end(),
            0.0f);
  ASSERT_OK_AND_ASSIGN(auto blind, InMemoryGraphSource::FromDataset(zeroed));
  ASSERT_OK_AND_ASSIGN(TrainResult without, Train(*blind, splits_, Options()));
  EXPECT_GT(with.test_acc, 0.7) << with.test_acc;
  EXPECT_GT(with.test_acc, without.test_acc + 0.2)
      << with.test_acc << " vs " << without.test_acc;
}

// A graph without edge features is refused, in words.
TEST_F(EdgeFeatureTrainingTest, GineNeedsEdgeFeatures) {
  Dataset none = *dataset_;
  none.edge_features.clear();
  none.manifest.edge_feature_dim = 0;
  ASSERT_OK_AND_ASSIGN(auto plain, InMemoryGraphSource::FromDataset(none));
  absl::StatusOr<TrainResult> result = Train(*plain, splits_, Options());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("--model gine reads edge features; this graph has "
                        "none"));
}

}  // namespace
}  // namespace shardgnn
