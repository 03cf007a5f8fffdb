// `shardgnn train` (cli/train_cmd.cc) as a real child process: configuration
// errors (torchrun variables, servers, partition) are one clear line naming
// what is wrong, before any connection is tried.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct BadTrain {
  std::string name;                        // Test name suffix.
  std::map<std::string, std::string> env;  // On top of a valid torchrun set.
  std::vector<std::string> args;           // After "train".
  std::vector<std::string> mentions;       // The error line contains each.
};

// Test logs show the case by name.
void PrintTo(const BadTrain& c, std::ostream* os) { *os << c.name; }

class TrainBadConfigTest : public ::testing::TestWithParam<BadTrain> {};

TEST_P(TrainBadConfigTest, FailsFastWithOneClearLine) {
  const BadTrain& bad = GetParam();
  SubprocessOptions options;
  options.name = "shardgnn train";
  options.argv = {testing::ShardgnnBinary(), "train"};
  for (const auto& a : bad.args) options.argv.push_back(a);
  options.env = {{"RANK", "0"},
                 {"WORLD_SIZE", "1"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", "29500"}};
  for (const auto& [k, v] : bad.env) options.env[k] = v;
  ASSERT_OK_AND_ASSIGN(auto train, Subprocess::Start(options));
  auto started = std::chrono::steady_clock::now();
  std::optional<int> status = train->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running after 60 s";
  // Nothing is contacted: a configuration error is immediate.
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count(),
      10);
  EXPECT_EQ(*status, 1);
  std::string output = train->Tail(1000);
  std::vector<std::string> lines =
      absl::StrSplit(output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << output;
  EXPECT_THAT(lines[0], HasSubstr("shardgnn: error: "));
  for (const auto& m : bad.mentions) EXPECT_THAT(lines[0], HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(
    Config, TrainBadConfigTest,
    ::testing::Values(
        BadTrain{"RankNotInteger",
                 {{"RANK", "abc"}},
                 {"--servers", "127.0.0.1:1"},
                 {"RANK", "'abc'"}},
        BadTrain{"WorldSizeNotInteger",
                 {{"WORLD_SIZE", "two"}},
                 {"--servers", "127.0.0.1:1"},
                 {"WORLD_SIZE", "'two'"}},
        BadTrain{"RankOutsideWorld",
                 {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
                 {"--servers", "127.0.0.1:1"},
                 {"rank 2", "[0, 2)"}},
        BadTrain{"MasterPortOutOfRange",
                 {{"MASTER_PORT", "99999"}},
                 {"--servers", "127.0.0.1:1"},
                 {"port 99999"}},
        BadTrain{"NoServers", {}, {}, {"no storage servers", "--servers"}},
        BadTrain{"ServerWithoutPort",
                 {},
                 {"--servers", "localhost"},
                 {"'localhost'", "HOST:PORT"}},
        BadTrain{"MissingClusterFile",
                 {},
                 {"--cluster", "/nonexistent/cluster.txt"},
                 {"/nonexistent/cluster.txt"}},
        BadTrain{"MissingPartition",
                 {},
                 {"--servers", "127.0.0.1:1", "--partition", "/nonexistent"},
                 {"/nonexistent/partition.json"}},
        BadTrain{"BadFanouts",
                 {},
                 {"--servers", "127.0.0.1:1", "--fanouts", "5,0"},
                 {"--fanouts '5,0'"}}),
    [](const ::testing::TestParamInfo<BadTrain>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace shardgnn
