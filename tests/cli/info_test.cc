// `shardgnn info` (cli/info_cmd.cc) on what users point it at besides
// dataset and partition directories: one part's shard (part-P) and a run
// directory, finished or still going.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/file_util.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::LastErrorLine;
using ::testing::Not;
using testing::RunShardgnn;

// A small generated graph in two parts and a two-epoch in-process run of
// it, shared by the suite.
class InfoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::string data = dir_->Sub("sbm");
    testing::Finished step = RunShardgnn(
        {"-q", "dataset", "generate", "--nodes", "1000", "--out", data});
    ASSERT_EQ(step.exit_status, 0) << step.output;
    step = RunShardgnn({"-q", "partition", "--dataset", data, "--parts", "2",
                        "--out", dir_->Sub("parts")});
    ASSERT_EQ(step.exit_status, 0) << step.output;
    step = RunShardgnn({"-q", "train", "--dataset", data, "--epochs", "2",
                        "--out", dir_->Sub("run")});
    ASSERT_EQ(step.exit_status, 0) << step.output;
    ready_ = true;
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "the set-up failed";
  }

  static testing::TempDir* dir_;
  static bool ready_;
  testing::TempDir tmp_;
};
testing::TempDir* InfoTest::dir_ = nullptr;
bool InfoTest::ready_ = false;

TEST_F(InfoTest, PartDirectoryShowsItsShardAndItsPartition) {
  testing::Finished info = RunShardgnn({"info", dir_->Sub("parts/part-1")});
  ASSERT_EQ(info.exit_status, 0) << info.output;
  EXPECT_THAT(info.output,
              AllOf(HasSubstr("part 1 of 2, nodes ["),
                    HasSubstr("of the graph's 1000)"), HasSubstr("32 features"),
                    HasSubstr("split train"), HasSubstr("partition_id "),
                    HasSubstr("content checksum "),
                    HasSubstr("belongs to the partition in")));

  // Copied out of its partition directory: described, nothing to check.
  fs::copy(dir_->Sub("parts/part-0"), tmp_.Sub("part-0"),
           fs::copy_options::recursive);
  info = RunShardgnn({"info", tmp_.Sub("part-0")});
  ASSERT_EQ(info.exit_status, 0) << info.output;
  EXPECT_THAT(info.output, HasSubstr("part 0 of 2, nodes [0,"));
  EXPECT_THAT(info.output, Not(HasSubstr("belongs to")));
}

TEST_F(InfoTest, FinishedRunDirectory) {
  for (const std::string& path :
       {dir_->Sub("run"), dir_->Sub("run/summary.json")}) {
    SCOPED_TRACE(path);
    testing::Finished info = RunShardgnn({"info", path});
    ASSERT_EQ(info.exit_status, 0) << info.output;
    EXPECT_THAT(
        info.output,
        AllOf(HasSubstr("run directory "), HasSubstr("dataset: sbm\n"),
              HasSubstr("mode: in-process"), HasSubstr("model: sage, 2 layers"),
              HasSubstr("parameters"), HasSubstr("result: test acc 0."),
              HasSubstr("2 epochs run"), HasSubstr("time: train "),
              HasSubstr("peak RSS"),
              HasSubstr("metrics.jsonl: 2 epoch(s); last: epoch 2, loss "),
              HasSubstr("model.json: sage, 2 layers, 32 input features -> "
                        "8 classes, parameters in model.pt")));
  }
}

// A run still going (or stopped) has its epochs so far and nothing else.
TEST_F(InfoTest, RunDirectoryWithoutSummary) {
  ASSERT_OK_AND_ASSIGN(std::string metrics,
                       ReadFileToString(dir_->Sub("run/metrics.jsonl")));
  fs::create_directory(tmp_.Sub("run"));
  ASSERT_OK(WriteFileAtomic(tmp_.Sub("run/metrics.jsonl"),
                            metrics.substr(0, metrics.find('\n') + 1)));
  testing::Finished info = RunShardgnn({"info", tmp_.Sub("run")});
  ASSERT_EQ(info.exit_status, 0) << info.output;
  EXPECT_THAT(info.output,
              AllOf(HasSubstr("no summary.json"),
                    HasSubstr("metrics.jsonl: 1 epoch(s); last: epoch 1")));

  ASSERT_OK(WriteFileAtomic(
      tmp_.Sub("run/metrics.jsonl"),
      metrics.substr(0, metrics.find('\n') + 1) + "{\"epoch\": 2, \"lo\n"));
  info = RunShardgnn({"info", tmp_.Sub("run")});
  EXPECT_EQ(info.exit_status, 1);
  EXPECT_THAT(LastErrorLine(info.output),
              HasSubstr("run/metrics.jsonl:2: not a JSON object"))
      << info.output;
}

TEST_F(InfoTest, OtherDirectoryNamesWhatInfoReads) {
  testing::Finished info = RunShardgnn({"info", tmp_.path()});
  EXPECT_EQ(info.exit_status, 1);
  EXPECT_THAT(LastErrorLine(info.output),
              AllOf(HasSubstr("part's shard (part-P)"),
                    HasSubstr("run directory (summary.json")))
      << info.output;
}

}  // namespace
}  // namespace shardgnn
