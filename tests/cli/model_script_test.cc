// `--model-script FILE` through the real binary, with modules written by
// examples/custom_model/make_model.py (Debian's python3-torch): GIN trains on
// Cora across 2 storage servers and 2 trainers and `infer` reads the run's
// model_script.pt; a run stopped and resumed trains what a run never stopped
// does (with shardgnn's dropout operator and with torch's); flags and modules
// that do not fit are one error line naming them, and a module failing in
// inference ends `infer` with a status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using testing::Finished;
using ::testing::HasSubstr;
using testing::LastErrorLine;
using testing::Lines;
using ::testing::Not;
using testing::RunShardgnn;
using testing::TempDir;

constexpr char kPython[] = "/usr/bin/python3";

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(std::ifstream(path), nullptr,
                               /*allow_exceptions=*/false);
}

// Runs /usr/bin/python3 with `args`; its exit status and output.
Finished RunPython(std::vector<std::string> args) {
  SubprocessOptions options;
  options.name = "python3";
  options.argv = {kPython};
  for (auto& a : args) options.argv.push_back(std::move(a));
  options.max_kept_lines = 10000;
  Finished result;
  auto child = Subprocess::Start(std::move(options));
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return result;
  std::optional<int> status = (*child)->Wait(std::chrono::seconds(120));
  result.exit_status =
      status.value_or((*child)->Terminate(std::chrono::seconds(1)));
  result.output = (*child)->Tail(10000);
  return result;
}

class ModelScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1"),
              0)
        << "/usr/bin/python3 cannot import torch: these tests write their "
           "modules with examples/custom_model/make_model.py, which needs "
           "Debian's python3-torch (scripts/test.sh installs it)";
    Finished imported = RunShardgnn(
        {"-q", "dataset", "import", "--format", "ogb", "--undirected",
         "--input", testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
         cora_});
    ASSERT_EQ(imported.exit_status, 0) << imported.output;
  }

  // make_model.py --model `kind` for Cora's inputs (or `in_dim`) and
  // `classes` outputs, into dir_/name; its path. The module calls shardgnn's
  // operators (torch.ops.shardgnn.*, as make_model.py makes it in a built
  // checkout), or plain torch's with `plain`.
  std::string MakeModule(const std::string& name, const std::string& kind,
                         int classes, int in_dim = 1433, bool plain = false,
                         std::vector<std::string> extra = {}) {
    const std::string out = dir_.Sub(name);
    std::vector<std::string> args = {SHARDGNN_MAKE_MODEL_PY,
                                     "--model",
                                     kind,
                                     "--in-dim",
                                     std::to_string(in_dim),
                                     "--classes",
                                     std::to_string(classes),
                                     "--out",
                                     out,
                                     "--ops-library",
                                     plain ? "none" : SHARDGNN_OPS_LIBRARY};
    args.insert(args.end(), extra.begin(), extra.end());
    Finished made = RunPython(args);
    EXPECT_EQ(made.exit_status, 0) << made.output;
    EXPECT_TRUE(std::filesystem::exists(out)) << made.output;
    EXPECT_THAT(made.output,
                HasSubstr(plain ? "plain torch" : "torch.ops.shardgnn"));
    return out;
  }

  // Trains `gin` for 4 epochs, and for 2 then --resume to 4: the same.
  void ExpectResumeIsExact(const std::string& gin);

  TempDir dir_;
  const std::string cora_ = dir_.Sub("cora");
};

// As users run it: `shardgnn run --model-script` with the default 2 storage
// servers and 2 trainers; the run directory holds the trained module, which
// `shardgnn infer` reads.
TEST_F(ModelScriptTest, GinTrainsCoraDistributedAndInferenceReadsIt) {
  const std::string gin = MakeModule("gin.pt", "gin", 7);
  const std::string out = dir_.Sub("run");
  Finished ran = RunShardgnn({"run", "--dataset", cora_, "--model-script", gin,
                              "--out", out, "--work-dir", dir_.Sub("work"),
                              "--epochs", "30", "--patience", "10", "--timeout",
                              "30", "--progress-seconds", "0"});
  ASSERT_EQ(ran.exit_status, 0) << ran.output;
  EXPECT_THAT(ran.output,
              HasSubstr(absl::StrCat("model script ", gin, ", 2 layers")));
  const nlohmann::json summary = ReadJson(out + "/summary.json");
  ASSERT_TRUE(summary.is_object()) << ran.output;
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["model"]["kind"], "script");
  EXPECT_EQ(summary["model"]["script"], gin);
  // The module's widths and dropout are its own: not the flags' defaults.
  for (const char* key : {"hidden", "heads", "dropout"})
    EXPECT_FALSE(summary["model"].contains(key)) << key;
  // Seven classes: chance is about 0.14.
  EXPECT_GT(summary["test_acc"].get<double>(), 0.70) << summary.dump(1);

  const nlohmann::json model = ReadJson(out + "/model.json");
  EXPECT_EQ(model["kind"], "script");
  EXPECT_EQ(model["script"], "model_script.pt");
  const std::string saved = out + "/model_script.pt";
  ASSERT_TRUE(std::filesystem::exists(saved));
  // A TorchScript module, the user's with its trained parameters.
  Finished loaded = RunPython(
      {"-c",
       "import sys, torch\n"
       "torch.ops.load_library(sys.argv[3])\n"
       "a = torch.jit.load(sys.argv[1]); b = torch.jit.load(sys.argv[2])\n"
       "assert a.num_layers == 2, a.num_layers\n"
       "pa, pb = dict(a.named_parameters()), dict(b.named_parameters())\n"
       "assert sorted(pa) == sorted(pb), (sorted(pa), sorted(pb))\n"
       "assert any(not torch.equal(pa[k], pb[k]) for k in pa), 'untrained'\n"
       "print('loaded', len(pa))\n",
       saved, gin, SHARDGNN_OPS_LIBRARY});
  EXPECT_EQ(loaded.exit_status, 0) << loaded.output;
  EXPECT_THAT(loaded.output, HasSubstr("loaded "));

  const std::string inferred = dir_.Sub("infer");
  Finished infer =
      RunShardgnn({"infer", out, "--dataset", cora_, "--out", inferred});
  ASSERT_EQ(infer.exit_status, 0) << infer.output;
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> predictions,
                       ReadNpy<int64_t>(inferred + "/predictions.npy", 1));
  EXPECT_EQ(predictions.shape, std::vector<int64_t>{2708});
  for (int64_t p : predictions.data) {
    ASSERT_GE(p, 0);
    ASSERT_LT(p, 7);
  }
  const nlohmann::json infer_json = ReadJson(inferred + "/infer.json");
  EXPECT_EQ(infer_json["model"], "script");
  EXPECT_GT(infer_json["test_acc"].get<double>(), 0.70) << infer_json.dump(1);
}

// In one process with checkpoints: 2 epochs then --resume to 4 train what 4
// epochs in one go do, epoch by epoch (the module's dropout masks replayed
// from the checkpointed seed count), to the same kept parameters: with
// shardgnn's dropout operator and with torch's.
void ModelScriptTest::ExpectResumeIsExact(const std::string& gin) {
  auto train = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "-q", "train", "--dataset", cora_,    "--model-script",
        gin,  "--out", out,         "--seed", "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunShardgnn(args);
  };
  const std::string whole = dir_.Sub("whole");
  const std::string part = dir_.Sub("part");
  Finished w = train(whole, {"--epochs", "4"});
  ASSERT_EQ(w.exit_status, 0) << w.output;
  Finished first = train(part, {"--epochs", "2"});
  ASSERT_EQ(first.exit_status, 0) << first.output;
  ASSERT_TRUE(std::filesystem::exists(part + "/checkpoints/rank-0.ckpt"));
  Finished resumed = train(part, {"--epochs", "4", "--resume"});
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;

  auto epochs = [](const std::string& run) {
    std::ifstream in(run + "/metrics.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(nlohmann::json::parse(line, nullptr, false));
    return lines;
  };
  const std::vector<nlohmann::json> a = epochs(whole), b = epochs(part);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t e = 0; e < 4; ++e) {
    SCOPED_TRACE(absl::StrCat("epoch ", e + 1));
    EXPECT_EQ(b[e]["epoch"], a[e]["epoch"]);
    EXPECT_EQ(b[e]["loss"], a[e]["loss"]);
    EXPECT_EQ(b[e]["val_acc"], a[e]["val_acc"]);
    EXPECT_EQ(b[e]["val_loss"], a[e]["val_loss"]);
  }
  const nlohmann::json sa = ReadJson(whole + "/summary.json");
  const nlohmann::json sb = ReadJson(part + "/summary.json");
  ASSERT_TRUE(sa.contains("parameters_checksum"));
  EXPECT_EQ(sb["parameters_checksum"], sa["parameters_checksum"]);
  EXPECT_EQ(sb["best_epoch"], sa["best_epoch"]);
  EXPECT_EQ(sb["test_acc"], sa["test_acc"]);
}

TEST_F(ModelScriptTest, AResumedRunTrainsWhatAWholeRunDoes) {
  const std::string gin =
      MakeModule("gin.pt", "gin", 7, 1433, /*plain=*/false, {"--hidden", "64"});
  ExpectResumeIsExact(gin);
}

TEST_F(ModelScriptTest, AResumedRunTrainsWhatAWholeRunDoesWithTorchsDropout) {
  const std::string gin =
      MakeModule("gin.pt", "gin", 7, 1433, /*plain=*/true, {"--hidden", "64"});
  ExpectResumeIsExact(gin);
}

// --model-script and --model are one choice: both (unless --model script)
// or --model script alone is one error line, before anything starts.
TEST_F(ModelScriptTest, ModelAndModelScriptAreOneChoice) {
  const std::string module = dir_.Sub("m.pt");  // Never read.
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> mentions;
  };
  const std::vector<Case> cases = {
      {{"train", "--dataset", cora_, "--model", "gcn", "--model-script",
        module},
       {"--model-script trains the module in " + module,
        "it replaces --model gcn"}},
      {{"run", "--dataset", cora_, "--model", "gcn", "--model-script", module,
        "--work-dir", dir_.Sub("work")},
       {"it replaces --model gcn"}},
      {{"train", "--dataset", cora_, "--model", "script"},
       {"--model script needs --model-script FILE"}},
      {{"run", "--dataset", cora_, "--model", "script", "--work-dir",
        dir_.Sub("work")},
       {"--model script needs --model-script FILE"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrJoin(c.args, " "));
    Finished f = RunShardgnn(c.args);
    EXPECT_EQ(f.exit_status, 1) << f.output;
    const std::vector<std::string> lines = Lines(f.output);
    ASSERT_EQ(lines.size(), 1u) << f.output;
    EXPECT_THAT(lines[0], HasSubstr("shardgnn: error: "));
    for (const auto& m : c.mentions) EXPECT_THAT(lines[0], HasSubstr(m));
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("work")));
}

// A module whose logits are not the graph's classes fails the run before it
// trains, naming the module and the width wanted; the failed run's directory
// (config.toml, an empty metrics.jsonl) is then used by a run that fits.
TEST_F(ModelScriptTest, AModuleOfOtherWidthFailsAndTheDirectoryIsReused) {
  const std::string five = MakeModule("five.pt", "sage", 5);
  const std::string seven = MakeModule("seven.pt", "sage", 7);
  const std::string out = dir_.Sub("run");
  auto run = [&](const std::string& module) {
    return RunShardgnn({"run", "--dataset", cora_, "--model-script", module,
                        "--out", out, "--work-dir", dir_.Sub("work"),
                        "--epochs", "2", "--timeout", "30",
                        "--progress-seconds", "0"});
  };
  Finished failed = run(five);
  EXPECT_NE(failed.exit_status, 0) << failed.output;
  EXPECT_THAT(LastErrorLine(failed.output),
              AllOf(HasSubstr(five + ": the last layer returns 5 columns"),
                    HasSubstr("the run needs 7")))
      << failed.output;
  EXPECT_THAT(failed.output, Not(HasSubstr("epoch   1/2")));
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));

  Finished ran = run(seven);
  ASSERT_EQ(ran.exit_status, 0) << ran.output;
  const nlohmann::json summary = ReadJson(out + "/summary.json");
  EXPECT_EQ(summary["epochs_run"], 2) << ran.output;
  EXPECT_EQ(summary["model"]["script"], seven);
  std::ifstream metrics(out + "/metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  EXPECT_EQ(lines, 2);
}

// A module that fails on the run's inputs (made for 100 features; Cora has
// 1,433) is one error line naming it and the width, not LibTorch's traceback.
TEST_F(ModelScriptTest, AModuleFailingOnTheInputsIsOneLineNamingIt) {
  const std::string narrow = MakeModule("narrow.pt", "gin", 7, /*in_dim=*/100);
  Finished f =
      RunShardgnn({"train", "--dataset", cora_, "--model-script", narrow,
                   "--epochs", "1", "--checkpoint-every", "0"});
  EXPECT_EQ(f.exit_status, 1) << f.output;
  EXPECT_THAT(LastErrorLine(f.output),
              HasSubstr(narrow + ": layer 0 fails on inputs 1433 wide"))
      << f.output;
  EXPECT_THAT(f.output, Not(HasSubstr("Traceback of TorchScript")));
  EXPECT_THAT(f.output, Not(HasSubstr("epoch 1/1")));
}

// A module reading edge features trains in one process on a graph with
// them; `infer` of that run (whose layer-wise inference passes none) ends
// with a status, not an abort.
TEST_F(ModelScriptTest, AnEdgeFeatureModuleIsRefusedByLayerwiseInference) {
  const std::string graph = dir_.Sub("edges");
  Finished made =
      RunShardgnn({"-q", "dataset", "generate", "--kind", "sbm", "--nodes",
                   "1000", "--classes", "4", "--features", "8",
                   "--edge-features", "4", "--out", graph});
  ASSERT_EQ(made.exit_status, 0) << made.output;
  const std::string module = dir_.Sub("edges.pt");
  // TorchScript reads the class from its file.
  const std::string script = dir_.Sub("edges_module.py");
  ASSERT_OK(WriteFileAtomic(
      script,
      "import sys, torch\n"
      "from typing import Optional\n"
      "class M(torch.nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.num_layers = 1\n"
      "        self.w = torch.nn.Parameter(torch.full((8, 4), 0.1))\n"
      "        self.we = torch.nn.Parameter(torch.full((4, 1), 0.1))\n"
      "    def forward(self, layer: int, x: torch.Tensor,\n"
      "                edge_index: torch.Tensor, num_dst: int,\n"
      "                edge_attr: Optional[torch.Tensor]) -> torch.Tensor:\n"
      "        assert edge_attr is not None, 'needs edge features'\n"
      "        e = torch.zeros(num_dst, edge_attr.size(1)).index_add_(\n"
      "            0, edge_index[1], edge_attr)\n"
      "        return x[:num_dst] @ self.w + e @ self.we\n"
      "torch.jit.script(M()).save(sys.argv[1])\n"));
  Finished written = RunPython({script, module});
  ASSERT_EQ(written.exit_status, 0) << written.output;
  const std::string out = dir_.Sub("run");
  Finished trained = RunShardgnn(
      {"-q", "train", "--dataset", graph, "--model-script", module, "--fanouts",
       "5", "--epochs", "2", "--checkpoint-every", "0", "--out", out});
  ASSERT_EQ(trained.exit_status, 0) << trained.output;
  // Layer-wise inference does not pass edge features to a script yet: a
  // refusal that says so, not a crash or predictions from other inputs.
  Finished inferred = RunShardgnn(
      {"infer", out, "--dataset", graph, "--out", dir_.Sub("infer")});
  EXPECT_EQ(inferred.exit_status, 1) << inferred.output;
  EXPECT_THAT(inferred.output, Not(HasSubstr("terminate called")));
  EXPECT_THAT(LastErrorLine(inferred.output), HasSubstr("edge features"))
      << inferred.output;
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("infer/predictions.npy")));
  // Nor does --exact-test: refused before training.
  Finished exact = RunShardgnn(
      {"-q", "train", "--dataset", graph, "--model-script", module, "--fanouts",
       "5", "--epochs", "1", "--checkpoint-every", "0", "--exact-test"});
  EXPECT_EQ(exact.exit_status, 1) << exact.output;
  EXPECT_THAT(LastErrorLine(exact.output), HasSubstr("--exact-test"))
      << exact.output;
}

}  // namespace
}  // namespace shardgnn
