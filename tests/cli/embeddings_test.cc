// Learned node embeddings through the CLI (issue 15): `shardgnn run` with
// --learn-embeddings on the bundled Cora (2 storage servers, 2 trainers, real
// child processes), what it writes, and the flags it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/npy.h"
#include "nlohmann/json.hpp"
#include "tests/cli/run_fixture.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using ::testing::Not;
using testing::ReportedTestAccuracy;
using testing::RunShardgnn;
using testing::RunTest;
using testing::StartShardgnn;

TEST_F(RunTest, LearnsEmbeddingsOnTheServersAndWritesThem) {
  const std::string out = dir_.Sub("run");
  std::vector<std::string> args = RunArgs(out, "4");
  for (const char* a :
       {"--learn-embeddings", "16", "--ignore-features", "--embedding-sync",
        "bounded:1", "--checkpoint-every", "2"}) {
    args.push_back(a);
  }
  Finished run = RunShardgnn(args);
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("learned embeddings: 16 wide, held on the storage "
                        "servers, bounded:1 updates, adam lr 0.01"));
  EXPECT_THAT(run.output, HasSubstr("features: ignored (--ignore-features)"));
  EXPECT_THAT(run.output, HasSubstr("embeddings pull "));
  // Epochs 2 and 4 checkpointed, the tables' snapshot with them.
  EXPECT_THAT(run.output, HasSubstr("; embeddings snapshot ")) << run.output;
  // Featureless Cora: above chance (7 classes), far from the 0.8 with
  // features.
  EXPECT_GT(ReportedTestAccuracy(run.output), 0.25) << run.output;

  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object());
  const auto& e = summary["embeddings"];
  ASSERT_TRUE(e.is_object()) << summary.dump(1);
  EXPECT_EQ(e["dim"], 16);
  EXPECT_EQ(e["sync"], "bounded:1");
  EXPECT_EQ(e["ignore_features"], true);
  EXPECT_EQ(e["node_order"], "original");
  EXPECT_GT(e["rows_pushed"].get<int64_t>(), 0);
  // Both servers' clocks reached every step of the run.
  const int64_t steps = summary["steps_per_epoch"].get<int64_t>() * 4;
  ASSERT_EQ(e["servers"].size(), 2u);
  int64_t touched = 0;
  for (const auto& s : e["servers"]) {
    EXPECT_EQ(s["applied_steps"].get<int64_t>(), steps) << s.dump();
    EXPECT_GT(s["rows_pushed"].get<int64_t>(), 0);
    touched += s["rows_touched"].get<int64_t>();
  }
  EXPECT_EQ(touched, 2708);  // The export pulled every row.

  ASSERT_OK_AND_ASSIGN(NpyArray<float> rows,
                       ReadNpy<float>(out + "/learned_embeddings.npy", 2));
  ASSERT_EQ(rows.shape, (std::vector<int64_t>{2708, 16}));
  for (float v : rows.data) ASSERT_TRUE(std::isfinite(v));
  // Per metrics.jsonl line: the rows of the epoch's steps.
  std::ifstream metrics(out + "/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_GT(j["embedding_rows_pulled"].get<int64_t>(), 0) << line;
    EXPECT_EQ(j.contains("embedding_snapshot_bytes"),
              j["epoch"].get<int>() % 2 == 0)
        << line;
    ++lines;
  }
  EXPECT_EQ(lines, 4);

  // `embeddings export` reads the servers' last snapshots (epoch 4, taken
  // with the last checkpoint): the rows the run wrote at its end.
  const std::string exported = dir_.Sub("exported.npy");
  Finished export_run =
      RunShardgnn({"embeddings", "export", out, "--out", exported});
  ASSERT_EQ(export_run.exit_status, 0) << export_run.output;
  EXPECT_THAT(export_run.output, HasSubstr("epoch 4 (step "));
  EXPECT_THAT(export_run.output, HasSubstr("from 2 snapshot file(s)"));
  EXPECT_THAT(export_run.output, HasSubstr("original node ID order"));
  ASSERT_OK_AND_ASSIGN(NpyArray<float> again, ReadNpy<float>(exported, 2));
  EXPECT_EQ(again.shape, rows.shape);
  EXPECT_EQ(again.data, rows.data);
  // Epoch 2's snapshot is kept too (a resume may step back one checkpoint),
  // and differs; epoch 0's is gone.
  Finished epoch2 = RunShardgnn({"embeddings", "export", out, "--out",
                                 dir_.Sub("epoch2.npy"), "--epoch", "2"});
  ASSERT_EQ(epoch2.exit_status, 0) << epoch2.output;
  ASSERT_OK_AND_ASSIGN(NpyArray<float> earlier,
                       ReadNpy<float>(dir_.Sub("epoch2.npy"), 2));
  EXPECT_NE(earlier.data, rows.data);
  for (const auto& [flags, error] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{out, "--out", exported}, "exists; choose another --out"},
           {{out, "--out", dir_.Sub("e0.npy"), "--epoch", "0"},
            "epoch 0 is not snapshotted"},
           {{dir_.Sub("work"), "--out", dir_.Sub("e1.npy")},
            "is not the directory of a run with learned embeddings"}}) {
    std::vector<std::string> args = {"embeddings", "export"};
    args.insert(args.end(), flags.begin(), flags.end());
    Finished bad = RunShardgnn(args);
    EXPECT_NE(bad.exit_status, 0) << bad.output;
    EXPECT_THAT(bad.output, HasSubstr(error)) << bad.output;
  }

  // Inference runs the model over the learned rows the run wrote (its
  // model.json names them): every node's exact outputs, and a test accuracy
  // near the run's sampled one (featureless: far above chance only with the
  // learned rows).
  // The bundled Cora the run imported.
  std::string cora;
  for (const auto& entry :
       std::filesystem::directory_iterator(work_dir_ + "/datasets")) {
    cora = entry.path().string();
  }
  ASSERT_FALSE(cora.empty());
  Finished infer =
      RunShardgnn({"infer", out, "--dataset", cora, "--out", dir_.Sub("inf")});
  ASSERT_EQ(infer.exit_status, 0) << infer.output;
  auto inferred = nlohmann::json::parse(
      std::ifstream(dir_.Sub("inf") + "/infer.json"), nullptr,
      /*allow_exceptions=*/false);
  ASSERT_TRUE(inferred.is_object()) << infer.output;
  EXPECT_NEAR(inferred["test_acc"].get<double>(),
              ReportedTestAccuracy(run.output), 0.1)
      << infer.output;
  EXPECT_GT(inferred["test_acc"].get<double>(), 0.25) << infer.output;
  ASSERT_OK_AND_ASSIGN(
      NpyArray<int64_t> predicted,
      ReadNpy<int64_t>(dir_.Sub("inf") + "/predictions.npy", 1));
  EXPECT_EQ(predicted.data.size(), 2708u);
  // Rows of another width than the model's are refused, naming the file.
  ASSERT_OK(WriteNpy(out + "/learned_embeddings.npy",
                     std::vector<int64_t>{2708, 3},
                     std::vector<float>(2708 * 3)));
  Finished wrong = RunShardgnn(
      {"infer", out, "--dataset", cora, "--out", dir_.Sub("inf-wrong")});
  EXPECT_NE(wrong.exit_status, 0);
  EXPECT_THAT(wrong.output,
              HasSubstr("learned_embeddings.npy: shape [2708, 3]"))
      << wrong.output;
}

// A table in the training process (`train --dataset`) snapshots into the run
// directory; `embeddings export` reads it back without a server, and a
// resumed run restores it.
TEST_F(RunTest, InProcessEmbeddingsSnapshotResumeAndExport) {
  // The bundled Cora, imported by a short run.
  Finished run = RunShardgnn(RunArgs(dir_.Sub("import"), "1"));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  std::string dataset;
  for (const auto& entry :
       std::filesystem::directory_iterator(work_dir_ + "/datasets")) {
    dataset = entry.path().string();
  }
  ASSERT_FALSE(dataset.empty());
  const std::string out = dir_.Sub("in-process");
  auto train = [&](const std::string& epochs, bool resume) {
    std::vector<std::string> args = {
        "train", "--dataset",          dataset, "--out",
        out,     "--epochs",           epochs,  "--patience",
        "0",     "--learn-embeddings", "4"};
    if (resume) args.push_back("--resume");
    return RunShardgnn(args);
  };
  Finished first = train("2", false);
  ASSERT_EQ(first.exit_status, 0) << first.output;
  EXPECT_TRUE(
      std::filesystem::exists(out + "/embedding_snapshots/epoch-2.emb"));
  // Nobody else reaches a table in the training process: no secret.
  EXPECT_FALSE(std::filesystem::exists(out + "/embedding_run.secret"));
  Finished resumed = train("3", true);
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;
  EXPECT_THAT(resumed.output,
              HasSubstr("resumed from the checkpoints of epoch 2"));
  Finished exported = RunShardgnn(
      {"embeddings", "export", out, "--out", dir_.Sub("in-process.npy")});
  ASSERT_EQ(exported.exit_status, 0) << exported.output;
  EXPECT_THAT(exported.output, HasSubstr("epoch 3 (step "));
  ASSERT_OK_AND_ASSIGN(NpyArray<float> written,
                       ReadNpy<float>(out + "/learned_embeddings.npy", 2));
  ASSERT_OK_AND_ASSIGN(NpyArray<float> again,
                       ReadNpy<float>(dir_.Sub("in-process.npy"), 2));
  EXPECT_EQ(again.shape, (std::vector<int64_t>{2708, 4}));
  EXPECT_EQ(again.data, written.data);
}

// --pretrain-epochs (issue 52): the rows are pre-trained on the servers'
// tables by both trainers, then frozen: the servers' clocks stop at the
// pre-training's steps, and the summary keeps its losses.
TEST_F(RunTest, PretrainsEmbeddingsOnTheServersThenTrainsOnThemFrozen) {
  const std::string out = dir_.Sub("pretrained");
  std::vector<std::string> args = RunArgs(out, "3");
  for (const char* a : {"--learn-embeddings", "16", "--ignore-features",
                        "--pretrain-epochs", "3"}) {
    args.push_back(a);
  }
  Finished run = RunShardgnn(args);
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("embedding pre-training epoch 3: loss "))
      << run.output;
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object());
  const auto& e = summary["embeddings"];
  ASSERT_TRUE(e["pretrain"].is_object()) << summary.dump(1);
  const auto& loss = e["pretrain"]["loss"];
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_LT(loss[2].get<double>(), loss[0].get<double>());
  EXPECT_EQ(e["init_std"], 0.1);  // The pre-training default.
  const int64_t steps = e["pretrain"]["steps"].get<int64_t>();
  EXPECT_EQ(steps, 3 * ((2708 + 2 * 128 - 1) / (2 * 128)));
  ASSERT_EQ(e["servers"].size(), 2u);
  for (const auto& s : e["servers"])
    EXPECT_EQ(s["applied_steps"].get<int64_t>(), steps) << s.dump();
  // Featureless Cora on rows that only the structure trained.
  EXPECT_GT(ReportedTestAccuracy(run.output), 0.4) << run.output;

  Finished refused = RunShardgnn({"run", "--pretrain-epochs", "2"});
  EXPECT_NE(refused.exit_status, 0);
  EXPECT_THAT(refused.output, HasSubstr("give --learn-embeddings DIM too"));
}

// `run --disk` keeps the tables in files of the run directory (disk mode: the
// servers map them; tables larger than RAM), unlinked as soon as they are
// made, and trains as the memory mode does.
TEST_F(RunTest, DiskModeKeepsTablesInMappedFiles) {
  std::vector<std::string> args = RunArgs(dir_.Sub("memory"), "2");
  for (const char* a : {"--learn-embeddings", "8", "--seed", "4"}) {
    args.push_back(a);
  }
  Finished memory = RunShardgnn(args);
  ASSERT_EQ(memory.exit_status, 0) << memory.output;
  args[4] = dir_.Sub("disk");
  args.push_back("--disk");
  Finished disk = RunShardgnn(args);
  ASSERT_EQ(disk.exit_status, 0) << disk.output;
  for (int s = 0; s < 2; ++s) {
    const std::string tables =
        dir_.Sub("disk") + "/embedding_tables/server-" + std::to_string(s);
    EXPECT_TRUE(std::filesystem::is_directory(tables)) << tables;
    EXPECT_TRUE(std::filesystem::is_empty(tables)) << tables;
  }
  auto summary = [](const std::string& dir) {
    return nlohmann::json::parse(std::ifstream(dir + "/summary.json"), nullptr,
                                 /*allow_exceptions=*/false);
  };
  // The same run, bit for bit, whichever storage.
  EXPECT_EQ(summary(dir_.Sub("disk"))["parameters_checksum"],
            summary(dir_.Sub("memory"))["parameters_checksum"]);
}

// Issue 51: a run's tables on the servers answer only its secret, which rank
// 0 draws at random and keeps in the run directory (embedding_run.secret,
// mode 0600; embedding_run.json holds only the run ID). An interrupted run
// continued with `run --resume` takes it back and goes on, on servers
// started afresh over the run's snapshots; another secret in its place does
// not resume (the servers' snapshots of the run refuse it, naming the
// table), and a secret file that others may read is refused, naming it.
TEST_F(RunTest, AResumedRunTakesItsSecretBackFromTheRunDirectory) {
  namespace fs = std::filesystem;
  const std::string out = dir_.Sub("run");
  auto args = [&](bool resume) {
    std::vector<std::string> a = RunArgs(out, "6");
    for (const char* f : {"--learn-embeddings", "8", "--max-restarts", "0"}) {
      a.push_back(f);
    }
    if (resume) a.push_back("--resume");
    return a;
  };
  auto run = StartShardgnn(args(false), "shardgnn run");
  ASSERT_NE(run, nullptr);
  ASSERT_OK(run->WaitForLine("epoch   2/6", kRunTimeout));
  run->Signal(SIGINT);
  std::optional<int> status = run->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value());
  if (*status == 0) GTEST_SKIP() << "the run finished before the interrupt";

  const std::string secret_file = out + "/embedding_run.secret";
  ASSERT_TRUE(fs::exists(secret_file));
  const fs::perms owner_only = fs::perms::owner_read | fs::perms::owner_write;
  EXPECT_EQ(fs::status(secret_file).permissions() & fs::perms::all, owner_only);
  std::string secret;
  std::getline(std::ifstream(secret_file), secret);
  ASSERT_EQ(secret.size(), 32u);
  std::ifstream run_file(out + "/embedding_run.json");
  const std::string run_json((std::istreambuf_iterator<char>(run_file)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(run_json.find(secret), std::string::npos) << run_json;

  // Another secret in its place.
  std::ofstream(secret_file, std::ios::trunc)
      << "0123456789abcdef0123456789abcdef\n";
  Finished forged = RunShardgnn(args(true));
  EXPECT_NE(forged.exit_status, 0) << forged.output;
  EXPECT_THAT(forged.output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(forged.output, HasSubstr("another run's table"));
  EXPECT_THAT(forged.output, Not(HasSubstr("epoch   6/6")));

  // The right one, readable by others: refused before any training.
  std::ofstream(secret_file, std::ios::trunc) << secret << "\n";
  fs::permissions(secret_file,
                  owner_only | fs::perms::group_read | fs::perms::others_read);
  Finished exposed = RunShardgnn(args(true));
  EXPECT_NE(exposed.exit_status, 0) << exposed.output;
  EXPECT_THAT(exposed.output, HasSubstr("embedding_run.secret"));
  EXPECT_THAT(exposed.output, HasSubstr("chmod 600"));
  EXPECT_THAT(exposed.output, Not(HasSubstr("epoch   6/6")));

  // Readable by its owner alone: the run continues where it stopped.
  fs::permissions(secret_file, owner_only);
  Finished resumed = RunShardgnn(args(true));
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("epoch   6/6"));
  EXPECT_THAT(resumed.output, Not(HasSubstr("epoch   1/6")));
  std::string again;
  std::getline(std::ifstream(secret_file), again);
  EXPECT_EQ(again, secret);
}

TEST_F(RunTest, EmbeddingFlagsAreChecked) {
  struct Case {
    std::vector<std::string> flags;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"--ignore-features"}, "--ignore-features needs --learn-embeddings"},
      {{"--learn-embeddings", "8", "--embedding-sync", "sometimes"},
       "--embedding-sync: 'sometimes' is not one of sync, async, bounded:K"},
      {{"--learn-embeddings", "8", "--embedding-optimizer", "rmsprop"},
       "--embedding-optimizer"},
      {{"--learn-embeddings", "8", "--embedding-lr", "-1"},
       "learned embeddings: "},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"train", "--dataset",
                                     dir_.Sub("no-such-dataset"), "--out",
                                     dir_.Sub("out")};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    Finished train = RunShardgnn(args);
    EXPECT_NE(train.exit_status, 0) << train.output;
    EXPECT_THAT(train.output, HasSubstr(c.error)) << train.output;
  }
}

}  // namespace
}  // namespace shardgnn
