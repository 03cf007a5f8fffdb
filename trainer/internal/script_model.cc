#include "trainer/internal/script_model.h"

#include <torch/script.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/sampling.h"
#include "trainer/internal/script_ops.h"

namespace shardgnn::internal {
namespace {

constexpr char kInterface[] =
    "forward(self, layer: int, x: Tensor, edge_index: Tensor, num_dst: int, "
    "edge_attr: Optional[Tensor]) -> Tensor";

// The first line of a LibTorch error: the rest is TorchScript's traceback.
std::string FirstLine(const c10::Error& e) {
  const std::string what = e.what_without_backtrace();
  return what.substr(0, what.find('\n'));
}

// What an error raised inside a module's code says: TorchScript's
// interpreter puts its own line first and the traceback, and the module's
// error ("RuntimeError: mat1 and mat2 shapes cannot be multiplied ...")
// last.
std::string ScriptError(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what =
      c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  if (what.find("TorchScript interpreter") == std::string::npos)
    return what.substr(0, what.find('\n'));
  const size_t end = what.find_last_not_of(" \n");
  if (end == std::string::npos) return what;
  const size_t newline = what.rfind('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return what.substr(begin, end + 1 - begin);
}

// Every parameter of the module is also one of the GnnModel, under the same
// dotted name: the same tensor, so the optimizer's in-place updates are the
// module's.
void MirrorParameter(torch::nn::Module& root, const std::string& name,
                     const torch::Tensor& tensor) {
  std::vector<std::string> parts = absl::StrSplit(name, '.');
  torch::nn::Module* node = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    std::shared_ptr<torch::nn::Module> child;
    for (const auto& named : node->named_children()) {
      if (named.key() == parts[i]) child = named.value();
    }
    if (child == nullptr) {
      child = node->register_module(
          parts[i], std::make_shared<torch::nn::Module>(parts[i]));
    }
    node = child.get();
  }
  node->register_parameter(parts.back(), tensor, /*requires_grad=*/true);
}

class ScriptModel : public GnnModel {
 public:
  ScriptModel(torch::jit::Module script, std::vector<int64_t> widths,
              uint64_t seed)
      : script_(std::move(script)),
        widths_(std::move(widths)),
        seeds_(MixSeed(seed, 1)) {
    for (const auto& named : script_.named_parameters(/*recurse=*/true))
      MirrorParameter(*this, named.name, named.value);
  }

  int num_layers() const override { return static_cast<int>(widths_.size()); }
  int64_t layer_width(int l) const override {
    return widths_[static_cast<size_t>(l)];
  }

  torch::Tensor ForwardLayer(int l, const BlockTensors& b,
                             const torch::Tensor& h) override {
    TORCH_CHECK(l >= 0 && l < num_layers(), "no layer ", l);
    if (is_training()) SeedDropout(seeds_.Next());
    torch::Tensor dst = b.edge_dst;
    if (!dst.defined()) {
      dst = torch::repeat_interleave(b.indptr.narrow(0, 1, b.num_dst) -
                                     b.indptr.narrow(0, 0, b.num_dst));
    }
    torch::Tensor edge_index = torch::stack({b.indices, dst});
    std::vector<c10::IValue> args{static_cast<int64_t>(l), h, edge_index,
                                  b.num_dst};
    args.emplace_back(b.edge_attr.defined() ? c10::IValue(b.edge_attr)
                                            : c10::IValue());
    c10::IValue result;
    try {
      result = script_.forward(std::move(args));
    } catch (const std::exception& e) {
      // One line that says what failed, as a c10::Error the trainer reports.
      TORCH_CHECK(false, "the model script's layer ", l,
                  " failed: ", ScriptError(e));
    }
    TORCH_CHECK(result.isTensor(), "the model script's layer ", l,
                " returned a ", result.tagKind(), ", not a tensor");
    torch::Tensor out = result.toTensor();
    TORCH_CHECK(out.dim() == 2 && out.size(0) == b.num_dst &&
                    out.size(1) == widths_[static_cast<size_t>(l)] &&
                    out.scalar_type() == torch::kFloat,
                "the model script's layer ", l, " returned ", out.sizes(), " ",
                out.scalar_type(), " where float32 [", b.num_dst, ", ",
                widths_[static_cast<size_t>(l)], "] was expected");
    return out;
  }

  void train(bool on) override {
    GnnModel::train(on);
    script_.train(on);
  }

  SeedStream& seed_stream() override { return seeds_; }
  torch::jit::Module& script() { return script_; }

 private:
  static void SeedDropout(uint64_t seed) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(seed);
  }

  torch::jit::Module script_;
  std::vector<int64_t> widths_;
  SeedStream seeds_;
};

absl::Status CheckSignature(const std::string& path,
                            const torch::jit::Module& script) {
  const auto method = script.find_method("forward");
  if (!method.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the module has no forward method; it needs ",
                     kInterface, " (docs/formats.md, \"Model scripts\")"));
  }
  const c10::FunctionSchema& schema = method->function().getSchema();
  const std::vector<std::string> expected = {"int", "Tensor", "Tensor", "int",
                                             "Optional[Tensor]"};
  bool fits = schema.arguments().size() == expected.size() + 1 &&
              schema.returns().size() == 1 &&
              schema.returns()[0].type()->annotation_str() == "Tensor";
  for (size_t i = 0; fits && i < expected.size(); ++i)
    fits = schema.arguments()[i + 1].type()->annotation_str() == expected[i];
  if (fits) return absl::OkStatus();
  std::ostringstream theirs;
  theirs << schema;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": forward is ", theirs.str(), "; it must be ",
                   kInterface, " (docs/formats.md, \"Model scripts\")"));
}

absl::StatusOr<int> NumLayersOf(const std::string& path,
                                const torch::jit::Module& script) {
  c10::IValue value;
  if (script.hasattr("num_layers")) {
    value = script.attr("num_layers");
  } else if (script.type()->hasConstant("num_layers")) {
    value = script.type()->getConstant("num_layers");
  }
  if (!value.isInt()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": the module needs an int attribute num_layers (self.num_layers = "
        "2 in __init__): the trainer samples one block per layer"));
  }
  const int64_t n = value.toInt();
  if (n < 1 || n > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": num_layers is ", n, ", not within 1..64"));
  }
  return static_cast<int>(n);
}

absl::Status CheckTensors(const std::string& path,
                          const torch::jit::Module& script) {
  int64_t count = 0;
  for (const auto& named : script.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = named.value;
    if (!p.device().is_cpu() || p.scalar_type() != torch::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": parameter ", named.name, " is ",
          c10::toString(p.scalar_type()), " on ", p.device().str(),
          "; parameters must be float32 on the CPU (model.float().cpu() "
          "before scripting)"));
    }
    if (named.name == "decoder" || named.name.rfind("decoder.", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": parameter ", named.name,
          ": the name decoder is the link task's (rename the submodule)"));
    }
    ++count;
  }
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the module has no parameters to train"));
  }
  for (const auto& named : script.named_buffers(/*recurse=*/true)) {
    if (!named.value.defined()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the module has a buffer, ", named.name,
        "; the trainer neither averages buffers over the trainers nor keeps "
        "them in checkpoints (BatchNorm's running statistics: use LayerNorm, "
        "or BatchNorm with track_running_stats=False)"));
  }
  return absl::OkStatus();
}

// Runs each layer once on a block of three sources and two destinations
// (the second without edges) and returns the layers' output widths.
absl::StatusOr<std::vector<int64_t>> ProbeWidths(const std::string& path,
                                                 torch::jit::Module& script,
                                                 const ScriptShape& shape,
                                                 int num_layers) {
  torch::NoGradGuard no_grad;
  script.eval();
  const torch::Tensor edge_index =
      torch::tensor(std::vector<int64_t>{1, 2, 0, 0}).view({2, 2});
  c10::IValue edge_attr;
  if (shape.edge_feature_dim > 0)
    edge_attr = torch::zeros({2, shape.edge_feature_dim});
  std::vector<int64_t> widths;
  int64_t in = shape.in_dim;
  for (int l = 0; l < num_layers; ++l) {
    const torch::Tensor x =
        torch::linspace(-1, 1, 3 * in, torch::kFloat).view({3, in});
    c10::IValue result;
    try {
      result =
          script.forward({int64_t{l}, x, edge_index, int64_t{2}, edge_attr});
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": layer ", l, " fails on inputs ", in, " wide",
                       l == 0 ? " (the run's input: features and learned rows)"
                              : " (the previous layer's output)",
                       shape.edge_feature_dim > 0
                           ? absl::StrCat(" with edge features ",
                                          shape.edge_feature_dim, " wide")
                           : std::string(" and edge_attr None"),
                       ": ", ScriptError(e)));
    }
    if (!result.isTensor() || result.toTensor().dim() != 2 ||
        result.toTensor().size(0) != 2 ||
        result.toTensor().scalar_type() != torch::kFloat ||
        result.toTensor().size(1) < 1) {
      std::ostringstream got;
      if (result.isTensor()) {
        got << result.toTensor().sizes() << " "
            << result.toTensor().scalar_type();
      } else {
        got << "a " << result.tagKind();
      }
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": layer ", l, " returns ", got.str(),
                       " for 2 destinations; it must return float32 [num_dst, "
                       "width]"));
    }
    in = result.toTensor().size(1);
    widths.push_back(in);
  }
  if (widths.back() != shape.num_classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the last layer returns ", widths.back(),
        " columns; the run needs ", shape.num_classes,
        " (the graph's classes, or the link task's embedding width)"));
  }
  script.train();
  return widths;
}

}  // namespace

absl::StatusOr<std::shared_ptr<GnnModel>> LoadScriptModel(
    const std::string& path, const ScriptShape& shape, uint64_t seed) {
  EnsureScriptOps();  // Scripts may call torch.ops.shardgnn.*.
  if (!std::ifstream(path).good()) {
    return absl::NotFoundError(
        absl::StrCat(path, ": no such model script (--model-script)"));
  }
  torch::jit::Module script;
  try {
    script = torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": not a TorchScript module (torch.jit.script(model).save(path) "
        "writes one): ",
        FirstLine(e)));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a TorchScript module: ", e.what()));
  }
  if (auto s = CheckSignature(path, script); !s.ok()) return s;
  absl::StatusOr<int> layers = NumLayersOf(path, script);
  if (!layers.ok()) return layers.status();
  if (*layers != shape.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the module has ", *layers, " layers but the run samples ",
        shape.num_layers, " (--fanouts gives one fanout per layer)"));
  }
  if (auto s = CheckTensors(path, script); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> widths =
      ProbeWidths(path, script, shape, *layers);
  if (!widths.ok()) return widths.status();
  return std::make_shared<ScriptModel>(std::move(script), std::move(*widths),
                                       seed);
}

absl::Status SaveScriptModel(GnnModel& model, const std::string& path) {
  auto* scripted = dynamic_cast<ScriptModel*>(&model);
  if (scripted == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the model is not a model script"));
  }
  std::ostringstream bytes;
  try {
    scripted->script().save(bytes);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot save the model script: ", FirstLine(e)));
  }
  return WriteFileAtomic(path, bytes.str());
}

}  // namespace shardgnn::internal
