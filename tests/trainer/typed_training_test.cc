// Training on a typed (heterogeneous) graph in one process: the R-GCN layer
// against a per-edge reference, a typed batch's inputs through the model's
// per-type input module, and whole runs on a generated typed graph (accuracy
// far above its features alone, reproducible for a seed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

class TypedTrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GeneratorOptions g;
    g.kind = GraphKind::kHeteroSbm;
    g.num_nodes = 6000;
    g.feature_dim = 16;
    g.num_classes = 4;
    g.seed = 3;
    ASSERT_OK(GenerateDataset(g, dir_->Sub("typed")).status());
    auto loaded = LoadDataset(dir_->Sub("typed"));
    ASSERT_OK(loaded.status());
    dataset_ = new Dataset(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete dataset_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_NE(dataset_, nullptr);
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::FromDataset(*dataset_));
    splits_.train = dataset_->splits.at("train");
    splits_.valid = dataset_->splits.at("valid");
    splits_.test = dataset_->splits.at("test");
  }

  TrainOptions Options() const {
    TrainOptions o;
    o.model.kind = ModelKind::kRgcn;
    o.model.hidden = 32;
    o.model.dropout = 0.2;
    o.fanouts = {5, 5};
    o.epochs = 8;
    o.batch_size = 256;
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

testing::TempDir* TypedTrainingTest::dir_ = nullptr;
Dataset* TypedTrainingTest::dataset_ = nullptr;

// The first R-GCN layer on a sampled typed batch equals, node by node,
// W_self h_v + b + sum_r mean_{u in N_r(v)} W_r h_u with W_r from the bases,
// computed here edge by edge from the model's own parameters.
TEST_F(TypedTrainingTest, RgcnLayerIsTheMeanPerRelationOfEachWeight) {
  SamplerOptions sampling;
  sampling.fanouts = {4, 3};
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source_.get(), sampling));
  const std::vector<NodeId> seeds(splits_.train.begin(),
                                  splits_.train.begin() + 20);
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(seeds, 5));
  ModelOptions options;
  options.kind = ModelKind::kRgcn;
  options.hidden = 8;
  options.num_layers = 2;
  options.num_bases = 3;
  auto model = internal::MakeTypedModel(options, *source_->schema(), 4, 1);
  model->eval();
  torch::NoGradGuard no_grad;
  internal::BatchTensors t =
      internal::ToTensors(batch, ModelKind::kRgcn, internal::InputTransform(),
                          nullptr, source_->schema());
  ASSERT_FALSE(t.x.defined());
  torch::Tensor x = internal::ModelInput(*model, t);
  ASSERT_EQ(x.size(0), static_cast<int64_t>(batch.input_nodes.size()));
  ASSERT_EQ(x.size(1), 8);
  // The input module: a paper's row is its features through input.0.
  std::map<std::string, torch::Tensor> p;
  for (const auto& named : model->named_parameters())
    p[named.key()] = named.value();
  ASSERT_TRUE(p.count("input.0.weight")) << "papers have features";
  ASSERT_TRUE(p.count("input.2.weight")) << "venues have learned rows";
  const int64_t first_paper = batch.type_inputs[0][0];
  const NodeId paper = batch.input_nodes[first_paper];
  torch::Tensor features = torch::tensor(std::vector<float>(
      dataset_->type_features[0].begin() + paper * 16,
      dataset_->type_features[0].begin() + (paper + 1) * 16));
  EXPECT_TRUE(torch::allclose(
      x[first_paper], p["input.0.weight"].mv(features) + p["input.0.bias"],
      1e-5, 1e-6));
  ASSERT_FALSE(batch.type_inputs[2].empty()) << "a venue among the inputs";
  const int64_t first_venue = batch.type_inputs[2][0];
  const int64_t venue_local =
      batch.input_nodes[first_venue] - dataset_->manifest.NodeTypeOffset(2);
  EXPECT_TRUE(torch::equal(x[first_venue], p["input.2.weight"][venue_local]));

  torch::Tensor out = model->ForwardLayer(0, t.blocks[0], x);
  const Block& block = batch.blocks[0];
  const int relations = source_->schema()->num_relations();
  torch::Tensor weights = p["layers.0.coefficients"]
                              .mm(p["layers.0.bases"].view({3, -1}))
                              .view({relations, 8, 8});
  for (int64_t i = 0; i < block.num_dst; ++i) {
    torch::Tensor want =
        p["layers.0.lin_self.weight"].mv(x[i]) + p["layers.0.lin_self.bias"];
    std::map<int32_t, std::vector<int64_t>> by_relation;
    for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e)
      by_relation[block.relations[e]].push_back(block.indices[e]);
    for (const auto& [r, sources] : by_relation) {
      torch::Tensor sum = torch::zeros({8});
      for (int64_t u : sources) sum += weights[r].t().mv(x[u]);
      want += sum / static_cast<double>(sources.size());
    }
    // ForwardLayer applies ReLU between layers.
    EXPECT_TRUE(torch::allclose(out[i], torch::relu(want), 1e-4, 1e-5))
        << "destination " << i;
  }
}

// HeteroSAGE's first layer: W_self h_v + b + sum_r W_r mean_{u in N_r(v)}
// h_u, each relation with its own weight.
TEST_F(TypedTrainingTest, HeteroSageLayerSumsAMeanPerRelation) {
  SamplerOptions sampling;
  sampling.fanouts = {4, 3};
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source_.get(), sampling));
  const std::vector<NodeId> seeds(splits_.train.begin(),
                                  splits_.train.begin() + 20);
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(seeds, 6));
  ModelOptions options;
  options.kind = ModelKind::kHeteroSage;
  options.hidden = 8;
  options.num_layers = 2;
  auto model = internal::MakeTypedModel(options, *source_->schema(), 4, 1);
  model->eval();
  torch::NoGradGuard no_grad;
  internal::BatchTensors t = internal::ToTensors(batch, ModelKind::kHeteroSage,
                                                 internal::InputTransform(),
                                                 nullptr, source_->schema());
  torch::Tensor x = internal::ModelInput(*model, t);
  torch::Tensor out = model->ForwardLayer(0, t.blocks[0], x);
  std::map<std::string, torch::Tensor> p;
  for (const auto& named : model->named_parameters())
    p[named.key()] = named.value();
  const Block& block = batch.blocks[0];
  for (int64_t i = 0; i < block.num_dst; ++i) {
    torch::Tensor want =
        p["layers.0.lin_self.weight"].mv(x[i]) + p["layers.0.lin_self.bias"];
    std::map<int32_t, std::vector<int64_t>> by_relation;
    for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e)
      by_relation[block.relations[e]].push_back(block.indices[e]);
    for (const auto& [r, sources] : by_relation) {
      torch::Tensor mean = torch::zeros({8});
      for (int64_t u : sources) mean += x[u];
      mean /= static_cast<double>(sources.size());
      want += p[absl::StrCat("layers.0.lin_neigh.", r, ".weight")].mv(mean);
    }
    EXPECT_TRUE(torch::allclose(out[i], torch::relu(want), 1e-4, 1e-5))
        << "destination " << i;
  }
}

TEST_F(TypedTrainingTest, HeteroSageLearnsTheTypedGraph) {
  TrainOptions o = Options();
  o.model.kind = ModelKind::kHeteroSage;
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source_, splits_, o));
  EXPECT_GT(result.test_acc, 0.85) << result.test_acc;
}

TEST_F(TypedTrainingTest, RgcnLearnsTheTypedGraphReproducibly) {
  ASSERT_OK_AND_ASSIGN(TrainResult a, Train(*source_, splits_, Options()));
  // Four classes: chance is 0.25; the papers' own features are a weak signal
  // (datasets/generators.h), their venues, topics, citations and authors a
  // strong one.
  EXPECT_GT(a.test_acc, 0.85) << a.test_acc;
  // Single-label: micro-F1 is the accuracy; macro-F1 averages the classes.
  std::map<std::string, double> metrics(a.test_metrics.begin(),
                                        a.test_metrics.end());
  EXPECT_DOUBLE_EQ(metrics.at("test_micro_f1"), a.test_acc);
  EXPECT_GT(metrics.at("test_macro_f1"), 0.8);
  EXPECT_LE(metrics.at("test_macro_f1"), 1.0);
  TrainOptions no_prefetch = Options();
  no_prefetch.prefetch = 0;
  ASSERT_OK_AND_ASSIGN(TrainResult b, Train(*source_, splits_, no_prefetch));
  EXPECT_EQ(a.parameters_checksum, b.parameters_checksum);
  EXPECT_EQ(a.test_acc, b.test_acc);
  TrainOptions other_seed = Options();
  other_seed.seed = 12;
  ASSERT_OK_AND_ASSIGN(TrainResult c, Train(*source_, splits_, other_seed));
  EXPECT_NE(a.parameters_checksum, c.parameters_checksum);
}

// Neighbors matter: the same model seeing one sampled neighbor per relation
// and hop, instead of five, scores lower (the labels live in the typed
// neighborhoods more than in the papers' own features).
TEST_F(TypedTrainingTest, TheTypedNeighborhoodIsWhatTheModelLearnsFrom) {
  ASSERT_OK_AND_ASSIGN(TrainResult with, Train(*source_, splits_, Options()));
  TrainOptions one = Options();
  one.fanouts = {1, 1};
  ASSERT_OK_AND_ASSIGN(TrainResult little, Train(*source_, splits_, one));
  EXPECT_GT(with.test_acc, little.test_acc + 0.02)
      << "5 neighbors per relation " << with.test_acc << ", 1 "
      << little.test_acc;
}

// Multi-label targets (HGB IMDB's kind): each labeled paper has the set
// {c, c + 1 mod 4} of its class c. Binary cross-entropy per class learns
// them; the kept epoch is chosen by micro-F1, and the test reports micro-
// and macro-F1 and the fraction of exactly right sets.
TEST_F(TypedTrainingTest, MultiLabelTargetsTrainWithBinaryCrossEntropy) {
  Dataset multi = *dataset_;
  const int64_t classes = multi.manifest.num_classes;
  ASSERT_EQ(classes, 4);
  multi.manifest.multilabel = true;
  multi.labels.assign(multi.num_nodes() * classes, -1);
  for (int64_t v = 0; v < multi.num_nodes(); ++v) {
    const int64_t c = dataset_->labels[v];
    if (c < 0) continue;
    for (int64_t k = 0; k < classes; ++k) multi.labels[v * classes + k] = 0;
    multi.labels[v * classes + c] = 1;
    multi.labels[v * classes + (c + 1) % classes] = 1;
  }
  ASSERT_OK(ValidateDataset(multi));
  ASSERT_OK_AND_ASSIGN(auto source, InMemoryGraphSource::FromDataset(multi));
  ASSERT_EQ(source->label_columns(), 4);
  ASSERT_OK_AND_ASSIGN(TrainResult result, Train(*source, splits_, Options()));
  std::map<std::string, double> metrics(result.test_metrics.begin(),
                                        result.test_metrics.end());
  ASSERT_TRUE(metrics.count("test_micro_f1")) << "multi-label figures";
  EXPECT_EQ(result.test_acc, metrics.at("test_micro_f1"));
  EXPECT_GT(metrics.at("test_micro_f1"), 0.85);
  EXPECT_GT(metrics.at("test_macro_f1"), 0.8);
  EXPECT_GT(metrics.at("test_subset_acc"), 0.75);
  EXPECT_LE(metrics.at("test_subset_acc"), metrics.at("test_micro_f1"));
  EXPECT_EQ(metrics.count("test_acc"), 0u);
  TrainOptions exact = Options();
  exact.exact_test = true;
  EXPECT_THAT(Train(*source, splits_, exact).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("--exact-test")));
}

// F1 from per-class counts, as scikit-learn computes it: labels
// [0, 0, 1, 2, 2, 2], predictions [0, 1, 1, 2, 2, 0] give class 0 TP 1 FP 1
// FN 1, class 1 TP 1 FP 1 FN 0, class 2 TP 2 FP 0 FN 1, class 3 absent:
// f1_score(average="macro") = (1/2 + 2/3 + 4/5) / 3, "micro" = 4/6.
TEST(F1Test, MicroAndMacroAsScikitLearnComputesThem) {
  const double counts[] = {1, 1, 1, 1, 1, 0, 2, 0, 1, 0, 0, 0};
  const internal::F1Scores f1 = internal::F1Of(counts, 4);
  EXPECT_NEAR(f1.macro, (0.5 + 2.0 / 3 + 0.8) / 3, 1e-12);
  EXPECT_NEAR(f1.micro, 4.0 / 6, 1e-12);
  const double none[] = {0, 0, 0};
  EXPECT_EQ(internal::F1Of(none, 1).macro, 0);
}

TEST_F(TypedTrainingTest, UntypedModelsAndTypedOnlyFeaturesAreRefused) {
  TrainOptions sage = Options();
  sage.model.kind = ModelKind::kSage;
  EXPECT_THAT(Train(*source_, splits_, sage).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("use --model rgcn")));
  TrainOptions exact = Options();
  exact.exact_test = true;
  EXPECT_THAT(Train(*source_, splits_, exact).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("--exact-test")));
}

}  // namespace
}  // namespace shardgnn
