// LoadScriptModel / SaveScriptModel (trainer/internal/script_model.h) on
// TorchScript modules built here in C++ (no Python): a module that fits the
// interface trains as a GnnModel over its own tensors, with dropout drawn from
// the model's seeds; every way a module can fail to fit is refused before
// anything trains, with one status naming the file.
#include "trainer/internal/script_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/internal/models.h"

namespace shardgnn::internal {
namespace {

using ::shardgnn::testing::StatusIs;
using ::shardgnn::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kF = 6;  // Input width.
constexpr int64_t kH = 5;  // Hidden width.
constexpr int64_t kC = 4;  // Classes.

// What a test module looks like: layer l is
//   out = (h_dst + mean over in-edges of h_src) @ w<l>, ReLU but for the last,
// h = dropout(x); widths[l] x widths[l + 1] weights.
struct ScriptSpec {
  std::vector<int64_t> widths = {kF, kH, kC};
  double dropout = 0.0;
  bool has_num_layers = true;
  bool has_weights = true;  // The w<l>.
  // Dropout and the mean by torch.ops.shardgnn.* (trainer/internal/
  // script_ops.h) rather than torch's.
  bool shardgnn_ops = false;
  int64_t num_layers = -1;  // -1: widths.size() - 1.
  // Source lines after `out` is computed (indented by 4; `count`, `dst`
  // and `out` in scope) and the return statement.
  std::string edge_code;
  std::string tail = "    return out\n";
  // Called on the module before its methods are defined.
  std::function<void(torch::jit::Module&)> extra;
  // Replaces the whole method source when not empty.
  std::string source;
};

// Deterministic values (no RNG): rows of a sine.
torch::Tensor Values(int64_t rows, int64_t cols, double phase) {
  return torch::sin(torch::arange(rows * cols, torch::kFloat) * 0.37 + phase)
      .view({rows, cols});
}

// torch.* and, as `shardgnn.*`, the operators Python calls as
// torch.ops.shardgnn.* (saved as such).
struct OpsResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string& name, torch::jit::GraphFunction&,
      const torch::jit::SourceRange&) override {
    if (name == "torch")
      return std::make_shared<torch::jit::BuiltinModule>("aten");
    if (name == "shardgnn")
      return std::make_shared<torch::jit::BuiltinModule>("shardgnn");
    return nullptr;
  }
};

torch::jit::Module BuildModule(const ScriptSpec& spec) {
  torch::jit::Module m("__torch__.TestModel");
  m.register_attribute("training", c10::BoolType::get(), true);
  const int64_t layers = static_cast<int64_t>(spec.widths.size()) - 1;
  if (spec.has_num_layers) {
    m.register_attribute("num_layers", c10::IntType::get(),
                         spec.num_layers >= 0 ? spec.num_layers : layers);
  }
  for (int64_t l = 0; spec.has_weights && l < layers; ++l) {
    m.register_parameter(
        absl::StrCat("w", l),
        Values(spec.widths[l], spec.widths[l + 1], static_cast<double>(l)),
        /*is_buffer=*/false);
  }
  if (spec.extra) spec.extra(m);
  if (!spec.source.empty()) {
    m.define(spec.source);
    return m;
  }
  // h = dropout(x); z = h_dst + the mean of h over each destination's
  // in-edges (count: their number).
  const std::string p = absl::StrFormat("%.3f", spec.dropout);
  std::string source =
      "def forward(self, layer: int, x: Tensor, edge_index: Tensor, num_dst: "
      "int, edge_attr: Optional[Tensor]) -> Tensor:\n"
      "    dst = edge_index[1]\n"
      "    count = torch.zeros([num_dst]).index_add_(0, dst, "
      "torch.ones([dst.size(0)]))\n";
  if (spec.shardgnn_ops) {
    absl::StrAppend(
        &source, "    h = shardgnn.dropout(x, ", p, ", self.training)\n",
        "    z = h[:num_dst] + shardgnn.neighbor_mean(h, edge_index, "
        "num_dst)\n");
  } else {
    absl::StrAppend(
        &source, "    h = torch.dropout(x, ", p, ", self.training)\n",
        "    total = torch.zeros([num_dst, h.size(1)]).index_add_(0, dst, "
        "h.index_select(0, edge_index[0]))\n",
        "    z = h[:num_dst] + total / count.clamp(min=1.0).unsqueeze(1)\n");
  }
  absl::StrAppend(&source, "    out = z\n");
  for (int64_t l = 0; l < layers; ++l) {
    absl::StrAppend(&source, "    if layer == ", l, ":\n",
                    "        out = torch.mm(z, self.w", l, ")\n");
  }
  absl::StrAppend(&source, "    if layer < ", layers - 1, ":\n",
                  "        out = torch.relu(out)\n", spec.edge_code, spec.tail);
  m.define(source, std::make_shared<OpsResolver>());
  return m;
}

// Writes the module of `spec` to dir/name; returns its path.
std::string WriteModule(const TempDir& dir, const std::string& name,
                        const ScriptSpec& spec) {
  const std::string path = dir.Sub(name);
  BuildModule(spec).save(path);
  return path;
}

ScriptShape Shape(int num_layers = 2, int64_t in_dim = kF,
                  int64_t num_classes = kC) {
  ScriptShape shape;
  shape.in_dim = in_dim;
  shape.num_classes = num_classes;
  shape.num_layers = num_layers;
  return shape;
}

// LoadScriptModel, an exception it lets out turned into a failed status (so
// that a test expecting a status fails on it rather than ending the binary).
absl::StatusOr<std::shared_ptr<GnnModel>> Load(const std::string& path,
                                               const ScriptShape& shape,
                                               uint64_t seed = 1) {
  try {
    return LoadScriptModel(path, shape, seed);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return absl::UnknownError(absl::StrCat(
        "LoadScriptModel threw ", typeid(e).name(),
        " instead of returning a status: ", what.substr(0, what.find('\n'))));
  }
}

// Two blocks as the sampler makes them (destinations a prefix of sources):
// 5 sources -> 3 -> 2; the second destination of the last block has no
// edges.
std::vector<BlockTensors> TinyBlocks() {
  auto i64 = [](std::vector<int64_t> v) {
    return torch::tensor(v, torch::kLong);
  };
  std::vector<BlockTensors> blocks(2);
  blocks[0].num_src = 5;
  blocks[0].num_dst = 3;
  blocks[0].indptr = i64({0, 2, 3, 5});
  blocks[0].indices = i64({1, 3, 4, 0, 4});
  blocks[1].num_src = 3;
  blocks[1].num_dst = 2;
  blocks[1].indptr = i64({0, 2, 2});
  blocks[1].indices = i64({1, 2});
  return blocks;
}

// The module of ScriptSpec{} (no dropout) computed here, edge by edge.
torch::Tensor Reference(const std::vector<BlockTensors>& blocks,
                        torch::Tensor h, const std::vector<torch::Tensor>& w) {
  for (size_t l = 0; l < blocks.size(); ++l) {
    const BlockTensors& b = blocks[l];
    torch::Tensor z = h.narrow(0, 0, b.num_dst).clone();
    for (int64_t i = 0; i < b.num_dst; ++i) {
      const int64_t begin = b.indptr[i].item<int64_t>();
      const int64_t end = b.indptr[i + 1].item<int64_t>();
      if (end == begin) continue;
      torch::Tensor sum = torch::zeros({h.size(1)});
      for (int64_t e = begin; e < end; ++e)
        sum += h[b.indices[e].item<int64_t>()];
      z[i] += sum / static_cast<double>(end - begin);
    }
    h = torch::mm(z, w[l]);
    if (l + 1 < blocks.size()) h = torch::relu(h);
  }
  return h;
}

torch::Tensor Input() { return Values(5, kF, 0.5); }

TEST(ScriptModelTest, AGoodModuleLoadsAndItsLayersAreTheModules) {
  TempDir dir;
  const std::string path = WriteModule(dir, "good.pt", {});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> model, Load(path, Shape()));
  EXPECT_EQ(model->num_layers(), 2);
  EXPECT_EQ(model->layer_width(0), kH);
  EXPECT_EQ(model->layer_width(1), kC);

  model->eval();
  const std::vector<BlockTensors> blocks = TinyBlocks();
  torch::Tensor out = model->Forward(blocks, Input());
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, kC}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  // edge_index is (sources, destinations): the mean over each destination's
  // in-edges of its sources.
  EXPECT_TRUE(torch::allclose(
      out, Reference(blocks, Input(), {Values(kF, kH, 0), Values(kH, kC, 1)}),
      1e-5, 1e-5))
      << out;

  // The GnnModel's parameters are the module's, under its names: the same
  // tensors (an in-place change is the module's).
  std::map<std::string, torch::Tensor> params;
  for (const auto& named : model->named_parameters())
    params[named.key()] = named.value();
  ASSERT_EQ(params.size(), 2u);
  ASSERT_TRUE(params.count("w0") && params.count("w1"));
  EXPECT_TRUE(params["w0"].requires_grad());
  EXPECT_TRUE(torch::equal(params["w0"], Values(kF, kH, 0)));
  {
    torch::NoGradGuard no_grad;
    params["w1"].mul_(2);
  }
  EXPECT_TRUE(torch::allclose(model->Forward(blocks, Input()), out * 2));
  {
    torch::NoGradGuard no_grad;
    params["w1"].zero_();
  }
  EXPECT_TRUE(
      torch::equal(model->Forward(blocks, Input()), torch::zeros({2, kC})));

  // Gradients reach the module's tensors.
  {
    torch::NoGradGuard no_grad;
    params["w1"].copy_(Values(kH, kC, 1));
  }
  model->Forward(blocks, Input()).sum().backward();
  ASSERT_TRUE(params["w0"].grad().defined());
  EXPECT_GT(params["w0"].grad().abs().sum().item<float>(), 0);
}

TEST(ScriptModelTest, TrainAndEvalReachTheModule) {
  TempDir dir;
  ScriptSpec spec;
  spec.dropout = 0.5;
  const std::string path = WriteModule(dir, "dropout.pt", spec);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> model, Load(path, Shape()));
  const std::vector<BlockTensors> blocks = TinyBlocks();
  model->eval();
  torch::Tensor a = model->Forward(blocks, Input());
  torch::Tensor b = model->Forward(blocks, Input());
  EXPECT_TRUE(torch::equal(a, b));  // No dropout in eval mode.
  EXPECT_TRUE(torch::allclose(
      a, Reference(blocks, Input(), {Values(kF, kH, 0), Values(kH, kC, 1)}),
      1e-5, 1e-5));
  model->train();
  torch::Tensor trained = model->Forward(blocks, Input());
  EXPECT_FALSE(torch::allclose(trained, a)) << "no dropout in training mode";
  model->eval();
  EXPECT_TRUE(torch::equal(model->Forward(blocks, Input()), a));
}

TEST(ScriptModelTest, DropoutIsAFunctionOfTheSeed) {
  TempDir dir;
  ScriptSpec spec;
  spec.dropout = 0.5;
  const std::string path = WriteModule(dir, "dropout.pt", spec);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> a, Load(path, Shape(), 7));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> b, Load(path, Shape(), 7));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> c, Load(path, Shape(), 8));
  const std::vector<BlockTensors> blocks = TinyBlocks();
  for (auto* m : {a.get(), b.get(), c.get()}) {
    m->train();
    EXPECT_EQ(m->seed_stream().count(), 0u);
  }
  std::vector<torch::Tensor> outs_a;
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE(absl::StrCat("call ", call));
    // Interleaved with the other models: each call seeds its own masks.
    torch::Tensor x = a->Forward(blocks, Input());
    torch::Tensor y = b->Forward(blocks, Input());
    torch::Tensor z = c->Forward(blocks, Input());
    EXPECT_TRUE(torch::equal(x, y));
    EXPECT_FALSE(torch::equal(x, z));
    // One seed per training layer call.
    EXPECT_EQ(a->seed_stream().count(), 2u * (call + 1));
    outs_a.push_back(x);
  }
  EXPECT_FALSE(torch::equal(outs_a[0], outs_a[1]));  // Fresh masks per call.
  // Evaluation draws no seeds.
  a->eval();
  a->Forward(blocks, Input());
  EXPECT_EQ(a->seed_stream().count(), 8u);
  // A resumed run restores the count and replays the same masks.
  a->train();
  a->seed_stream().set_count(2);
  EXPECT_TRUE(torch::equal(a->Forward(blocks, Input()), outs_a[1]));
  a->seed_stream().set_count(0);
  EXPECT_TRUE(torch::equal(a->Forward(blocks, Input()), outs_a[0]));
}

// A module calling shardgnn's operators (torch.ops.shardgnn.neighbor_mean,
// .dropout) loads, computes the same layers, and its dropout masks are
// the model's seed's too (drawn from the generator the model seeds).
TEST(ScriptModelTest, ShardgnnOperatorsAreCallableAndSeeded) {
  TempDir dir;
  ScriptSpec spec;
  spec.shardgnn_ops = true;
  spec.dropout = 0.5;
  const std::string path = WriteModule(dir, "ops.pt", spec);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> a, Load(path, Shape(), 7));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> b, Load(path, Shape(), 7));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> c, Load(path, Shape(), 8));
  const std::vector<BlockTensors> blocks = TinyBlocks();
  a->eval();
  const torch::Tensor evaluated = a->Forward(blocks, Input());
  EXPECT_TRUE(torch::allclose(
      evaluated,
      Reference(blocks, Input(), {Values(kF, kH, 0), Values(kH, kC, 1)}), 1e-5,
      1e-5))
      << evaluated;
  EXPECT_TRUE(torch::equal(a->Forward(blocks, Input()), evaluated));
  a->train();
  std::vector<torch::Tensor> outs;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(absl::StrCat("call ", call));
    outs.push_back(a->Forward(blocks, Input()));
    EXPECT_TRUE(torch::equal(b->Forward(blocks, Input()), outs.back()));
    EXPECT_FALSE(torch::equal(c->Forward(blocks, Input()), outs.back()));
    EXPECT_FALSE(torch::allclose(outs.back(), evaluated));
  }
  EXPECT_FALSE(torch::equal(outs[0], outs[1]));
  a->seed_stream().set_count(2);
  EXPECT_TRUE(torch::equal(a->Forward(blocks, Input()), outs[1]));
  // Differentiable: the first layer's weights get gradients through the
  // mean.
  a->Forward(blocks, Input()).sum().backward();
  for (const auto& p : a->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0) << p.key();
  }
}

TEST(ScriptModelTest, SaveWritesTheCurrentParametersAsTorchScript) {
  TempDir dir;
  const std::string path = WriteModule(dir, "good.pt", {});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> model, Load(path, Shape()));
  model->eval();
  const std::vector<BlockTensors> blocks = TinyBlocks();
  const torch::Tensor before = model->Forward(blocks, Input());
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(0.25);
  }
  const torch::Tensor changed = model->Forward(blocks, Input());
  ASSERT_FALSE(torch::allclose(changed, before));
  const std::string saved = dir.Sub("out/saved.pt");
  std::filesystem::create_directories(dir.Sub("out"));
  ASSERT_OK(SaveScriptModel(*model, saved));
  // Written whole: nothing but the file in the directory.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.Sub("out")))
    files.push_back(entry.path().string());
  EXPECT_EQ(files, std::vector<std::string>{saved});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> again, Load(saved, Shape()));
  again->eval();
  EXPECT_TRUE(torch::equal(again->Forward(blocks, Input()), changed));
  // Plain LibTorch reads it too, with the changed parameters.
  torch::jit::Module plain = torch::jit::load(saved);
  EXPECT_TRUE(
      torch::equal(plain.attr("w0").toTensor(), Values(kF, kH, 0) + 0.25));

  // Only a model script's model can be saved as one.
  ModelOptions options;
  std::shared_ptr<GnnModel> sage = MakeModel(options, kF, kC, /*seed=*/1);
  EXPECT_THAT(SaveScriptModel(*sage, dir.Sub("sage.pt")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(dir.Sub("sage.pt")),
                             HasSubstr("not a model script"))));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("sage.pt")));
}

// num_layers may be a TorchScript constant (Final / __constants__) rather
// than an attribute.
TEST(ScriptModelTest, NumLayersMayBeAConstant) {
  TempDir dir;
  ScriptSpec spec;
  spec.has_num_layers = false;
  spec.extra = [](torch::jit::Module& m) {
    m.type()->addConstant("num_layers", int64_t{2});
  };
  const std::string path = WriteModule(dir, "constant.pt", spec);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> model, Load(path, Shape()));
  EXPECT_EQ(model->num_layers(), 2);
}

struct Refusal {
  std::string name;
  ScriptSpec spec;
  ScriptShape shape;
  std::vector<std::string> mentions;
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.name; }

class ScriptModelRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(ScriptModelRefusalTest, IsOneInvalidArgumentNamingTheFile) {
  const Refusal& r = GetParam();
  TempDir dir;
  const std::string path = WriteModule(dir, r.name + ".pt", r.spec);
  absl::StatusOr<std::shared_ptr<GnnModel>> model = Load(path, r.shape);
  EXPECT_THAT(model, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr(path + ": ")));
  for (const auto& m : r.mentions)
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(m));
}

ScriptSpec WithSource(std::string source) {
  ScriptSpec spec;
  spec.source = std::move(source);
  return spec;
}

ScriptSpec WithExtra(std::function<void(torch::jit::Module&)> extra) {
  ScriptSpec spec;
  spec.extra = std::move(extra);
  return spec;
}

ScriptSpec WithTail(std::string tail) {
  ScriptSpec spec;
  spec.tail = std::move(tail);
  return spec;
}

INSTANTIATE_TEST_SUITE_P(
    Interface, ScriptModelRefusalTest,
    ::testing::Values(
        Refusal{"NoForward",
                WithSource("def other(self, x: Tensor) -> Tensor:\n"
                           "    return torch.mm(x, self.w0)\n"),
                Shape(),
                {"has no forward method", "forward(self, layer: int"}},
        Refusal{"WrongSignature",
                WithSource("def forward(self, x: Tensor) -> Tensor:\n"
                           "    return torch.mm(x, self.w0)\n"),
                Shape(),
                {"forward is forward(",
                 "it must be forward(self, layer: int, "
                 "x: Tensor, edge_index: Tensor, "
                 "num_dst: int, edge_attr: "
                 "Optional[Tensor]) -> Tensor"}},
        Refusal{"EdgeAttrNotOptional",
                WithSource("def forward(self, layer: int, x: Tensor, "
                           "edge_index: Tensor, num_dst: int, edge_attr: "
                           "Tensor) -> Tensor:\n"
                           "    return torch.mm(x[:num_dst], self.w0)\n"),
                Shape(),
                {"it must be forward("}},
        Refusal{"NoNumLayers",
                [] {
                  ScriptSpec s;
                  s.has_num_layers = false;
                  return s;
                }(),
                Shape(),
                {"needs an int attribute num_layers"}},
        Refusal{"NumLayersNotAnInt",
                [] {
                  ScriptSpec s = WithExtra([](torch::jit::Module& m) {
                    m.register_attribute("num_layers", c10::FloatType::get(),
                                         2.0);
                  });
                  s.has_num_layers = false;
                  return s;
                }(),
                Shape(),
                {"needs an int attribute num_layers"}},
        Refusal{"NumLayersOtherThanTheFanouts",
                [] {
                  ScriptSpec s;
                  s.num_layers = 3;
                  return s;
                }(),
                Shape(),
                {"the module has 3 layers but the run samples 2", "--fanouts"}},
        Refusal{"NumLayersZero",
                [] {
                  ScriptSpec s;
                  s.num_layers = 0;
                  return s;
                }(),
                Shape(),
                {"num_layers is 0, not within 1..64"}},
        Refusal{"Float64Parameter",
                WithExtra([](torch::jit::Module& m) {
                  m.register_parameter("scale",
                                       torch::ones({1}, torch::kDouble),
                                       /*is_buffer=*/false);
                }),
                Shape(),
                {"parameter scale is Double",
                 "parameters must be float32 on the CPU"}},
        Refusal{"Buffer",
                WithExtra([](torch::jit::Module& m) {
                  m.register_buffer("running_mean", torch::zeros({kH}));
                }),
                Shape(),
                {"has a buffer, running_mean", "neither averages"}},
        Refusal{"NoParameters",
                [] {
                  ScriptSpec s = WithSource(
                      "def forward(self, layer: int, x: Tensor, "
                      "edge_index: Tensor, num_dst: int, edge_attr: "
                      "Optional[Tensor]) -> Tensor:\n"
                      "    return torch.zeros([num_dst, 4])\n");
                  s.has_weights = false;
                  return s;
                }(),
                Shape(),
                {"the module has no parameters to train"}},
        Refusal{"DecoderParameter",
                WithExtra([](torch::jit::Module& m) {
                  torch::jit::Module decoder("__torch__.Decoder");
                  decoder.register_attribute("training", c10::BoolType::get(),
                                             true);
                  decoder.register_parameter("weight", torch::ones({kC, kC}),
                                             /*is_buffer=*/false);
                  m.register_module("decoder", decoder);
                }),
                Shape(),
                {"parameter decoder.weight", "the link task's"}},
        Refusal{"Layer0ExpectsOtherInputs",
                [] {
                  ScriptSpec s;
                  s.widths = {kF + 3, kH, kC};
                  return s;
                }(),
                Shape(),
                {"layer 0 fails on inputs 6 wide",
                 "the run's input: features and learned rows"}},
        Refusal{
            "Layer1ExpectsOtherInputs",
            [] {
              ScriptSpec s;
              s.widths = {kF, kH, kC};
              s.extra = [](torch::jit::Module& m) {
                m.register_parameter("w1", Values(kH + 1, kC, 1),
                                     /*is_buffer=*/false);
              };
              return s;
            }(),
            Shape(),
            {"layer 1 fails on inputs 5 wide", "the previous layer's output"}},
        Refusal{"WrongRowCount",
                WithTail("    return torch.cat([out, out[:1]], 0)\n"),
                Shape(),
                {"layer 0 returns [3, 5] Float for 2 destinations",
                 "float32 [num_dst, width]"}},
        Refusal{"LastWidthNotTheClasses",
                {},
                Shape(2, kF, kC + 3),
                {"the last layer returns 4 columns; the run needs 7"}},
        Refusal{"Int64Output",
                WithTail("    return out.long()\n"),
                Shape(),
                {"layer 0 returns [2, 5] Long"}},
        Refusal{"OneDimensionalOutput",
                WithSource("def forward(self, layer: int, x: Tensor, "
                           "edge_index: Tensor, num_dst: int, edge_attr: "
                           "Optional[Tensor]) -> Tensor:\n"
                           "    return torch.mm(x[:num_dst], self.w0)[0]\n"),
                Shape(),
                {"layer 0 returns [5] Float"}}),
    [](const ::testing::TestParamInfo<Refusal>& info) {
      return info.param.name;
    });

TEST(ScriptModelTest, RefusesWhatIsNotAModuleFile) {
  TempDir dir;
  const std::string missing = dir.Sub("missing.pt");
  EXPECT_THAT(Load(missing, Shape()),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(missing), HasSubstr("no such model "
                                                           "script"))));
  const std::string noise = dir.Sub("noise.pt");
  {
    std::ofstream out(noise, std::ios::binary);
    uint32_t x = 12345;
    for (int i = 0; i < 4096; ++i) {
      x = x * 1664525u + 1013904223u;
      out.put(static_cast<char>(x >> 24));
    }
  }
  EXPECT_THAT(Load(noise, Shape()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(noise + ": "),
                             HasSubstr("not a TorchScript module"))));
  // Tensors saved with torch::save (an archive of a module without methods,
  // as a run's model.pt) have no forward.
  const std::string params = dir.Sub("params.pt");
  torch::save(std::vector<torch::Tensor>{torch::ones({2})}, params);
  EXPECT_THAT(Load(params, Shape()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(params + ": "),
                             HasSubstr("has no forward method"))));
}

constexpr int64_t kD = 3;  // Edge feature width.

// One layer whose output adds the mean of each destination's in-edge
// features, projected to one column by `we` [kD, 1], to every column; a
// call without edge features fails.
ScriptSpec EdgeSpec() {
  ScriptSpec spec;
  spec.widths = {kF, kC};
  spec.extra = [](torch::jit::Module& m) {
    m.register_parameter("we", Values(kD, 1, 2.0), /*is_buffer=*/false);
  };
  spec.edge_code =
      R"JIT(    assert edge_attr is not None, "this module needs edge features"
    e = torch.zeros([num_dst, edge_attr.size(1)]).index_add_(0, dst, edge_attr)
    out = out + torch.mm(e / count.clamp(min=1.0).unsqueeze(1), self.we)
)JIT";
  return spec;
}

// A module that needs edge features, on a graph without (the probe passes
// None), or with other ones: its failure is the probe's.
TEST(ScriptModelTest, AModuleFailingOnTheEdgeFeaturesIsRefused) {
  TempDir dir;
  const std::string path = WriteModule(dir, "edges.pt", EdgeSpec());
  ScriptShape shape = Shape(1);
  EXPECT_THAT(Load(path, shape),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path + ": layer 0 fails on inputs 6 "
                                              "wide"),
                             HasSubstr("needs edge features"))));
  shape.edge_feature_dim = kD + 1;
  EXPECT_THAT(Load(path, shape),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ": layer 0 fails on inputs 6 wide")));
}

// Edge features: the probe passes edge_attr [E, D] when the graph has them,
// and ForwardLayer passes BlockTensors::edge_attr (ToBlockTensors of a
// batch with edge features, kind kScript), row k for edge k.
TEST(ScriptModelTest, EdgeFeaturesReachTheModule) {
  TempDir dir;
  const std::string path = WriteModule(dir, "edges.pt", EdgeSpec());
  ScriptShape shape = Shape(1);
  shape.edge_feature_dim = kD;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> model, Load(path, shape));
  EXPECT_EQ(model->layer_width(0), kC);

  MiniBatch batch;
  batch.seeds = {10, 11, 12};
  batch.input_nodes = {10, 11, 12, 13, 14};
  Block block;
  block.num_src = 5;
  block.num_dst = 3;
  block.indptr = {0, 2, 3, 5};
  block.indices = {1, 3, 4, 0, 4};
  block.edge_feature_dim = kD;
  for (int i = 0; i < 5 * kD; ++i)
    block.edge_features.push_back(static_cast<float>(i % 4) - 1.5f);
  batch.blocks = {block};
  std::vector<BlockTensors> blocks = ToBlockTensors(batch, ModelKind::kScript);
  ASSERT_TRUE(blocks[0].edge_attr.defined());
  model->eval();
  const torch::Tensor out = model->Forward(blocks, Input());
  // By hand: destination i's mean feature row, times we, added to the layer
  // without them.
  torch::Tensor want = Reference(blocks, Input(), {Values(kF, kC, 0)});
  const torch::Tensor features =
      torch::tensor(block.edge_features).view({5, kD});
  const std::vector<std::vector<int64_t>> rows = {{0, 1}, {2}, {3, 4}};
  for (int64_t i = 0; i < 3; ++i) {
    torch::Tensor mean = torch::zeros({kD});
    for (int64_t e : rows[i]) mean += features[e];
    mean /= static_cast<double>(rows[i].size());
    want[i] += torch::mm(mean.view({1, kD}), Values(kD, 1, 2.0)).item<float>();
  }
  EXPECT_TRUE(torch::allclose(out, want, 1e-5, 1e-5)) << out << want;
  // Other features, another output.
  block.edge_features.assign(block.edge_features.size(), 0.5f);
  batch.blocks = {block};
  EXPECT_FALSE(torch::allclose(
      model->Forward(ToBlockTensors(batch, ModelKind::kScript), Input()), out));
}

}  // namespace
}  // namespace shardgnn::internal
