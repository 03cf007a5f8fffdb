#include "trainer/inference.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "sampler/neighbor_sampler.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/trainer/sbm_graph.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/distributed.h"
#include "trainer/internal/models.h"
#include "trainer/internal/parameters_file.h"
#include "trainer/model_config.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::SbmGraph;
using ::shardgnn::testing::TempDir;

std::map<std::string, std::vector<NodeId>> SplitMap(const TrainSplits& s) {
  return {{"train", s.train}, {"valid", s.valid}, {"test", s.test}};
}

// Trains `kind` briefly on `graph` and saves model.pt and model.json in dir.
ModelConfig TrainAndSave(const SbmGraph& graph, const GraphSource& source,
                         ModelKind kind, const std::string& dir) {
  TrainOptions options;
  options.model.kind = kind;
  options.model.hidden = 8;
  options.model.heads = 2;
  options.fanouts = {5, 5};
  options.epochs = 8;
  options.batch_size = 64;
  options.seed = 3;
  absl::StatusOr<FeatureNormChoice> norm =
      ChooseFeatureNorm(source, /*automatic=*/true, FeatureNorm::kNone, 3);
  EXPECT_OK(norm);
  options.model.features = norm->transform;
  options.model_path = JoinPath(dir, kModelParametersFile);
  absl::StatusOr<TrainResult> result = Train(source, graph.splits, options);
  EXPECT_OK(result);
  ModelConfig config;
  config.model = options.model;
  config.in_dim = source.feature_dim();
  config.num_classes = 4;
  config.fanouts = options.fanouts;
  EXPECT_OK(WriteFileAtomic(JoinPath(dir, kModelConfigFile),
                            ModelConfigToJson(config)));
  return config;
}

// The model's outputs for every node from one minibatch holding the whole
// graph with full neighborhoods: the reference layer-wise inference must
// equal.
torch::Tensor FullGraphLogits(const GraphSource& source,
                              const ModelConfig& config,
                              const std::string& params) {
  auto model =
      internal::MakeModel(config.model, config.in_dim, config.num_classes, 0);
  EXPECT_OK(internal::ReadParametersFile(params, model.get()));
  model->eval();
  SamplerOptions sampling;
  sampling.fanouts = std::vector<int>(config.model.num_layers, -1);
  sampling.fetch_degrees = internal::NeedsOf(config.model.kind).degrees;
  auto sampler = NeighborSampler::Create(&source, sampling);
  EXPECT_OK(sampler);
  std::vector<NodeId> all(static_cast<size_t>(source.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  MiniBatch batch;
  EXPECT_OK((*sampler)->Sample(all, 0, &batch));
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::from_blob(
      batch.features.data(),
      {static_cast<int64_t>(batch.input_nodes.size()), config.in_dim},
      torch::kFloat);
  internal::ApplyInputTransform(
      internal::MakeInputTransform(config.model.features), x);
  return model->Forward(internal::ToBlockTensors(batch, config.model.kind), x)
      .clone();
}

torch::Tensor LoadFloat(const std::string& path) {
  absl::StatusOr<NpyArray<float>> a = ReadNpy<float>(path, 2);
  EXPECT_OK(a);
  return torch::tensor(a->data).view({a->shape[0], a->shape[1]});
}

class InferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::Create(graph_.arrays()));
  }
  InferOptions Options(const std::string& out) const {
    InferOptions o;
    o.chunk_nodes = 70;  // Several chunks per layer, the last one short.
    o.scratch_dir = tmp_.Sub("scratch");
    o.out_dir = out;
    return o;
  }

  TempDir tmp_;
  SbmGraph graph_{500, 4, 10, 3, 17};
  std::unique_ptr<InMemoryGraphSource> source_;
};

// Layer by layer over full neighborhoods, chunk by chunk, the outputs are
// those of one full-graph forward pass, for every model; the split accuracies
// are those of these outputs; the scratch files are gone afterwards.
TEST_F(InferenceTest, LayerwiseEqualsAFullGraphForwardForEveryModel) {
  for (ModelKind kind :
       {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kMlp}) {
    SCOPED_TRACE(ModelKindName(kind));
    const std::string run = tmp_.Sub(ModelKindName(kind));
    std::filesystem::create_directories(run);
    const ModelConfig config = TrainAndSave(graph_, *source_, kind, run);
    ASSERT_OK_AND_ASSIGN(ModelConfig read, ReadModelConfig(run));
    const std::string params = JoinPath(run, kModelParametersFile);
    const std::string out = JoinPath(run, "infer");
    ASSERT_OK_AND_ASSIGN(
        InferResult result,
        Infer(*source_, read, params, SplitMap(graph_.splits), Options(out)));
    const torch::Tensor want = FullGraphLogits(*source_, config, params);
    const torch::Tensor logits = LoadFloat(JoinPath(out, "logits.npy"));
    ASSERT_EQ(logits.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(logits, want, 1e-4, 1e-5))
        << (logits - want).abs().max().item<float>();
    ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> predictions,
                         ReadNpy<int64_t>(JoinPath(out, "predictions.npy"), 1));
    const torch::Tensor argmax = want.argmax(1);
    int64_t agree = 0;
    for (int64_t v = 0; v < want.size(0); ++v)
      agree +=
          predictions.data[static_cast<size_t>(v)] == argmax[v].item<int64_t>();
    EXPECT_GE(agree, want.size(0) - 1);  // A tie within float noise at most.
    const torch::Tensor embeddings = LoadFloat(JoinPath(out, "embeddings.npy"));
    EXPECT_EQ(embeddings.size(0), 500);
    EXPECT_EQ(embeddings.size(1), kind == ModelKind::kGat ? 16 : 8);
    EXPECT_EQ(result.embedding_layer, 1);
    // Test accuracy from the reference logits.
    int64_t correct = 0, labeled = 0;
    for (NodeId v : graph_.splits.test) {
      ++labeled;
      correct += argmax[v].item<int64_t>() == graph_.labels[v];
    }
    EXPECT_NEAR(result.accuracy.at("test").acc,
                static_cast<double>(correct) / labeled, 2.0 / labeled);
    // Chance is 0.25; the features alone (MLP) give little more.
    if (kind != ModelKind::kMlp) {
      EXPECT_GT(result.accuracy.at("test").acc, 0.5);
    }
    EXPECT_TRUE(std::filesystem::is_empty(tmp_.Sub("scratch")));
  }
}

// Rows are written in original ID order: with orig_ids = pi, row pi[v] of the
// output is node v's.
TEST_F(InferenceTest, OutputsAreInOriginalIdOrder) {
  const std::string run = tmp_.Sub("run");
  std::filesystem::create_directories(run);
  const ModelConfig config =
      TrainAndSave(graph_, *source_, ModelKind::kSage, run);
  const std::string params = JoinPath(run, kModelParametersFile);
  ASSERT_OK(
      Infer(*source_, config, params, {}, Options(tmp_.Sub("plain"))).status());
  InferOptions options = Options(tmp_.Sub("permuted"));
  options.orig_ids.resize(500);
  std::iota(options.orig_ids.begin(), options.orig_ids.end(), 0);
  std::shuffle(options.orig_ids.begin(), options.orig_ids.end(),
               std::mt19937(4));
  ASSERT_OK(Infer(*source_, config, params, {}, options).status());
  for (const char* file : {"logits.npy", "embeddings.npy"}) {
    SCOPED_TRACE(file);
    const torch::Tensor plain = LoadFloat(tmp_.Sub("plain/") + file);
    const torch::Tensor permuted = LoadFloat(tmp_.Sub("permuted/") + file);
    const torch::Tensor index = torch::tensor(options.orig_ids, torch::kLong);
    EXPECT_TRUE(torch::equal(permuted.index_select(0, index), plain));
  }
}

// Two ranks, each computing half of every layer and exchanging rows through a
// real c10d group, write what one rank writes.
TEST_F(InferenceTest, TwoRanksWriteWhatOneRankWrites) {
  const std::string run = tmp_.Sub("run");
  std::filesystem::create_directories(run);
  const ModelConfig config =
      TrainAndSave(graph_, *source_, ModelKind::kGcn, run);
  const std::string params = JoinPath(run, kModelParametersFile);
  ASSERT_OK_AND_ASSIGN(InferResult one,
                       Infer(*source_, config, params, SplitMap(graph_.splits),
                             Options(tmp_.Sub("one"))));
  const int port = testing::PickFreePort();
  InferResult results[2];
  auto rank_main = [&](int rank) {
    DistributedOptions dist;
    dist.rank = rank;
    dist.world_size = 2;
    dist.master_port = port;
    dist.timeout = std::chrono::seconds(60);
    absl::StatusOr<std::unique_ptr<ProcessGroup>> group =
        ProcessGroup::Connect(dist);
    ASSERT_OK(group);
    C10dGradientSync sync(group->get());
    InferOptions options = Options(tmp_.Sub("two"));
    options.rank = rank;
    options.world_size = 2;
    options.scratch_dir = tmp_.Sub(absl::StrCat("scratch-", rank));
    absl::StatusOr<InferResult> r = Infer(
        *source_, config, params, SplitMap(graph_.splits), options, &sync);
    ASSERT_OK(r);
    results[rank] = *r;
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  EXPECT_TRUE(torch::allclose(LoadFloat(tmp_.Sub("two/logits.npy")),
                              LoadFloat(tmp_.Sub("one/logits.npy")), 1e-5,
                              1e-6));
  EXPECT_TRUE(torch::allclose(LoadFloat(tmp_.Sub("two/embeddings.npy")),
                              LoadFloat(tmp_.Sub("one/embeddings.npy")), 1e-5,
                              1e-6));
  for (const InferResult& r : results) {
    EXPECT_EQ(r.accuracy.at("test").acc, one.accuracy.at("test").acc);
    EXPECT_LT(r.edges, one.edges);  // Each rank read its half.
  }
}

TEST_F(InferenceTest, RefusesAModelThatDoesNotFitTheGraphOrItsParameters) {
  const std::string run = tmp_.Sub("run");
  std::filesystem::create_directories(run);
  ModelConfig config = TrainAndSave(graph_, *source_, ModelKind::kSage, run);
  const std::string params = JoinPath(run, kModelParametersFile);
  ModelConfig wider = config;
  wider.in_dim += 1;
  wider.model.features.shift.push_back(0);
  wider.model.features.scale.push_back(1);
  absl::StatusOr<InferResult> r =
      Infer(*source_, wider, params, {}, Options(tmp_.Sub("o")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("input features"), std::string::npos)
      << r.status();
  ModelConfig other = config;
  other.model.hidden = 9;
  r = Infer(*source_, other, params, {}, Options(tmp_.Sub("o")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("layers.0.lin_self.weight"),
            std::string::npos)
      << r.status();
  // A model.json far larger than its model.pt is refused before the model is
  // built (hidden 2e9: terabytes of parameters).
  ModelConfig huge = config;
  huge.model.hidden = 2000000000;
  r = Infer(*source_, huge, params, {}, Options(tmp_.Sub("o")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("model.pt holds"), std::string::npos)
      << r.status();
  ASSERT_OK(WriteFileAtomic(tmp_.Sub("garbage.pt"), "not a pickle"));
  r = Infer(*source_, config, tmp_.Sub("garbage.pt"), {},
            Options(tmp_.Sub("o")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("garbage.pt"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("o/logits.npy")));
}

// Train's exact test accuracy is layer-wise inference's over the kept
// parameters (written to model.pt), and differs from a sampled one.
TEST_F(InferenceTest, ExactTestIsTheInferredTestAccuracy) {
  TrainOptions options;
  options.model.hidden = 8;
  options.fanouts = {2, 2};
  // One epoch: the kept parameters are its, whatever the validation (which
  // samples with eval_fanouts too, below) ranks.
  options.epochs = 1;
  options.seed = 8;
  options.model_path = tmp_.Sub("model.pt");
  options.exact_test = true;
  options.scratch_dir = tmp_.Sub("exact-scratch");
  ASSERT_OK_AND_ASSIGN(TrainResult exact,
                       Train(*source_, graph_.splits, options));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("exact-scratch")));
  ModelConfig config;
  config.model = options.model;
  config.in_dim = source_->feature_dim();
  config.num_classes = 4;
  ASSERT_OK_AND_ASSIGN(InferResult inferred,
                       Infer(*source_, config, tmp_.Sub("model.pt"),
                             SplitMap(graph_.splits), Options("")));
  EXPECT_DOUBLE_EQ(exact.test_acc, inferred.accuracy.at("test").acc);
  options.exact_test = false;
  options.eval_fanouts = {1, 1};  // A coarse sample: another figure.
  ASSERT_OK_AND_ASSIGN(TrainResult sampled,
                       Train(*source_, graph_.splits, options));
  EXPECT_EQ(sampled.parameters_checksum, exact.parameters_checksum);
  EXPECT_NE(sampled.test_acc, exact.test_acc);
}

TEST(ModelConfigTest, RoundTripsAndRefusesMalformedFields) {
  ModelConfig c;
  c.model.kind = ModelKind::kGat;
  c.model.num_layers = 3;
  c.model.hidden = 12;
  c.model.heads = 4;
  c.model.features.norm = FeatureNorm::kStandardize;
  c.model.features.shift = {0.5f, -1};
  c.model.features.scale = {2, 0.25f};
  c.in_dim = 2;
  c.num_classes = 5;
  c.fanouts = {10, -1, 5};
  const std::string text = ModelConfigToJson(c);
  ASSERT_OK_AND_ASSIGN(ModelConfig back, ModelConfigFromJson(text, "m.json"));
  EXPECT_EQ(ModelConfigToJson(back), text);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"\"kind\": \"gat\"", "\"kind\": \"transformer\""},
      {"\"hidden\": 12", "\"hidden\": 0"},
      {"\"in_dim\": 2", "\"in_dim\": 3"},  // Statistics of 2 columns.
      {"\"format\": \"shardgnn-model\"", "\"format\": [1]"},
      {"\"layers\": 3", "\"layers\": 2.5"},
  };
  for (const auto& [from, to] : bad) {
    SCOPED_TRACE(to);
    std::string t = text;
    ASSERT_NE(t.find(from), std::string::npos);
    t.replace(t.find(from), from.size(), to);
    absl::StatusOr<ModelConfig> r = ModelConfigFromJson(t, "m.json");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("m.json"), std::string::npos);
  }

  // Pre-trained rows keep the length they are read at.
  c.learned_dim = 8;
  c.learned_file = "learned_embeddings.npy";
  c.learned_row_length = 0.3;
  const std::string with_rows = ModelConfigToJson(c);
  EXPECT_NE(with_rows.find("\"row_length\": 0.3"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(back, ModelConfigFromJson(with_rows, "m.json"));
  EXPECT_EQ(back.learned_row_length, 0.3);
  std::string negative = with_rows;
  negative.replace(negative.find("\"row_length\": 0.3"), 17,
                   "\"row_length\": -1");
  EXPECT_EQ(ModelConfigFromJson(negative, "m.json").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shardgnn
