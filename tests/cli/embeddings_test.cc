// Learned node embeddings through the CLI (issue 15): `shardgnn run` with
// --learn-embeddings on the bundled Cora (2 storage servers, 2 trainers, real
// child processes), what it writes, and the flags it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
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
using testing::ReportedTestAccuracy;
using testing::RunShardgnn;
using testing::RunTest;

TEST_F(RunTest, LearnsEmbeddingsOnTheServersAndWritesThem) {
  const std::string out = dir_.Sub("run");
  std::vector<std::string> args = RunArgs(out, "4");
  for (const char* a :
       {"--learn-embeddings", "16", "--ignore-features", "--embedding-sync",
        "bounded:1", "--checkpoint-every", "0"}) {
    args.push_back(a);
  }
  Finished run = RunShardgnn(args);
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("learned embeddings: 16 wide, held on the storage "
                        "servers, bounded:1 updates, adam lr 0.01"));
  EXPECT_THAT(run.output, HasSubstr("features: ignored (--ignore-features)"));
  EXPECT_THAT(run.output, HasSubstr("embeddings pull "));
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
    ++lines;
  }
  EXPECT_EQ(lines, 4);

  // Inference on such a run says why it cannot (not "unfinished run").
  Finished infer = RunShardgnn(
      {"infer", out, "--dataset", dir_.Sub("cora"), "--out", dir_.Sub("inf")});
  EXPECT_NE(infer.exit_status, 0);
  EXPECT_THAT(infer.output, HasSubstr("learned node embeddings"))
      << infer.output;
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
      {{"--learn-embeddings", "8", "--exact-test"},
       "--exact-test does not read learned embeddings"},
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
