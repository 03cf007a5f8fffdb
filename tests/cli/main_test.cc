// The real `shardgnn` binary's handling of what users mistype (cli/main.cc):
// a subcommand or flag one typo away from a real one is named with it, and a
// --config file (cli/config_file.h) takes TOML lists and says where in it
// something is wrong. Every case is one error line and exit status 1, before
// any work starts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunShardgnn;

// `shardgnn <args>` ends with exactly this one line, status 1.
void ExpectOneErrorLine(const std::vector<std::string>& args,
                        const std::string& line) {
  testing::Finished run = RunShardgnn(args);
  EXPECT_EQ(run.exit_status, 1) << run.output;
  EXPECT_EQ(testing::Lines(run.output), std::vector<std::string>{line});
}

TEST(TypoTest, AMistypedSubcommandIsNamedWithTheNearestOne) {
  ExpectOneErrorLine({"trian"},
                     "shardgnn: error: unknown subcommand 'trian'; did you "
                     "mean 'train'?");
  ExpectOneErrorLine({"infre", "run-dir"},
                     "shardgnn: error: unknown subcommand 'infre'; did you "
                     "mean 'infer'?");
  // A nested one, among its parent's subcommands.
  ExpectOneErrorLine({"dataset", "improt", "--format", "ogb"},
                     "shardgnn: error: unknown subcommand 'improt'; did you "
                     "mean 'import'?");
  // Nothing near: no guess, but where the list is.
  ExpectOneErrorLine({"frobnicate"},
                     "shardgnn: error: unknown subcommand 'frobnicate' "
                     "(shardgnn --help lists the subcommands)");
}

TEST(TypoTest, AMistypedFlagIsNamedWithTheNearestOne) {
  ExpectOneErrorLine({"train", "--epoch", "5", "--dataset", "d"},
                     "shardgnn: error: unknown flag --epoch; did you mean "
                     "--epochs?");
  ExpectOneErrorLine({"run", "--fanout=10,5"},
                     "shardgnn: error: unknown flag --fanout; did you mean "
                     "--fanouts?");
  // The typo is the error, not the required flag it left missing.
  ExpectOneErrorLine({"partition", "--dataset", "d", "--part", "4"},
                     "shardgnn: error: unknown flag --part; did you mean "
                     "--parts?");
  // The main command's flags may follow a subcommand.
  ExpectOneErrorLine({"info", "--quite", "x"},
                     "shardgnn: error: unknown flag --quite; did you mean "
                     "--quiet?");
  ExpectOneErrorLine({"train", "--frobnicate", "1"},
                     "shardgnn: error: unknown flag --frobnicate (shardgnn "
                     "train --help lists the flags)");
}

class ConfigFlagTest : public ::testing::Test {
 protected:
  // Writes `text` to a config file and returns its path.
  std::string Config(const std::string& text) {
    const std::string path = dir_.Sub("flags.toml");
    EXPECT_OK(WriteFileAtomic(path, text));
    return path;
  }

  testing::TempDir dir_;
};

// Lists reach the flags: `fanouts = [10, 5]` is --fanouts 10,5 (the error
// about the layers, raised after parsing, names both lists' values).
TEST_F(ConfigFlagTest, TakesTomlLists) {
  const std::string config =
      Config("[train]\nfanouts = [10, 5]\neval-fanouts = [20, 10, 5]\n");
  ExpectOneErrorLine(
      {"train", "--dataset", dir_.Sub("nowhere"), "--config", config},
      "shardgnn: error: --eval-fanouts '20,10,5' has 3 layers but --fanouts "
      "'10,5' has 2");
}

struct BadConfig {
  std::string name;  // Test name suffix.
  std::string text;
  std::string error;  // After "shardgnn: error: --config FILE"; the line
                      // may go on (the flag's own words).
};

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name; }

class BadConfigFlagTest : public ConfigFlagTest,
                          public ::testing::WithParamInterface<BadConfig> {};

TEST_P(BadConfigFlagTest, IsOneLineNamingFileLineAndColumn) {
  const std::string config = Config(GetParam().text);
  testing::Finished run = RunShardgnn(
      {"train", "--dataset", dir_.Sub("nowhere"), "--config", config});
  EXPECT_EQ(run.exit_status, 1) << run.output;
  std::vector<std::string> lines = testing::Lines(run.output);
  ASSERT_EQ(lines.size(), 1u) << run.output;
  EXPECT_THAT(lines[0], ::testing::StartsWith("shardgnn: error: --config " +
                                              config + GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadConfigFlagTest,
    ::testing::Values(
        BadConfig{"UnknownKey", "[train]\nepochs = 2\nepoch = 2\n",
                  ":3:1: unknown key 'epoch' in [train]: no such flag; did "
                  "you mean 'epochs'?"},
        BadConfig{"UnknownKeyAtTheTop", "quite = true\n",
                  ":1:1: unknown key 'quite' at the top level: no such flag; "
                  "did you mean 'quiet'?"},
        BadConfig{"UnknownTable", "[trian]\nepochs = 2\n",
                  ":1:2: unknown table [trian]: no such subcommand; did you "
                  "mean [train]?"},
        BadConfig{"UnknownNestedTable", "[dataset.improt]\nformat = \"ogb\"\n",
                  ":1:10: unknown table [dataset.improt]: no such "
                  "subcommand; did you mean [dataset.import]?"},
        BadConfig{"SubcommandNotATable", "train = 3\n",
                  ":1:1: 'train' is a subcommand: its flags go in a table, "
                  "[train]"},
        BadConfig{"RefusedValue", "[train]\n\nepochs = \"many\"\n",
                  ":3:10: epochs in [train]: "},
        BadConfig{"TableAsValue", "[train]\nmodel = { kind = \"gcn\" }\n",
                  ":2:9: model in [train] must be a string, a number, a "
                  "boolean or a list of them"}));

// Malformed TOML is named where the parser stopped, not as a key.
TEST_F(ConfigFlagTest, MalformedTomlIsOneLineWithItsPlace) {
  for (const std::string& text :
       {std::string("[train\nepochs = 2\n"),
        std::string("[train]\nepochs = \n"),
        std::string("[train]\nepochs = 2\nepochs = 3\n"),
        std::string("[train]\nout = \"a\nb\"\n")}) {
    SCOPED_TRACE(text);
    const std::string config = Config(text);
    testing::Finished run = RunShardgnn(
        {"train", "--dataset", dir_.Sub("nowhere"), "--config", config});
    EXPECT_EQ(run.exit_status, 1) << run.output;
    std::vector<std::string> lines = testing::Lines(run.output);
    ASSERT_EQ(lines.size(), 1u) << run.output;
    EXPECT_THAT(
        lines[0],
        AllOf(
            ::testing::StartsWith("shardgnn: error: --config " + config + ":"),
            ::testing::ContainsRegex(":[1-3]:[0-9]+: "),
            Not(HasSubstr("unknown key")), Not(HasSubstr("no flag"))));
  }
}

TEST_F(ConfigFlagTest, AMissingFileIsNamed) {
  ExpectOneErrorLine({"train", "--config", dir_.Sub("missing.toml")},
                     "shardgnn: error: --config " + dir_.Sub("missing.toml") +
                         ": cannot read it (missing?)");
}

}  // namespace
}  // namespace shardgnn
