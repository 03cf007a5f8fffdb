#include "cli/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "toml++/toml.h"

namespace shardgnn::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

struct Flags {
  bool quiet = false;
  int epochs = -1;
  std::string fanouts = "10,10";
  std::string out;
  std::string name;
  double lr = -1;
  bool exact_test = false;
  std::vector<std::string> split_files;
  std::string format;
};

// A small command line shaped as shardgnn's: a main command with --config
// read by TomlConfig, `train`, and `dataset import`.
class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override { app_ = MakeApp(&flags_); }

  static std::unique_ptr<CLI::App> MakeApp(Flags* f) {
    auto app = std::make_unique<CLI::App>("test", "shardgnn");
    app->config_formatter(std::make_shared<TomlConfig>(app.get()));
    app->set_config("--config");
    app->add_flag("-q,--quiet", f->quiet);
    CLI::App* train = app->add_subcommand("train");
    train->add_option("--epochs", f->epochs);
    train->add_option("--fanouts", f->fanouts)->capture_default_str();
    train->add_option("--out", f->out);
    train->add_option("--name", f->name);
    train->add_option("--lr", f->lr);
    train->add_flag("--exact-test", f->exact_test);
    train->add_option("--split-file", f->split_files);
    CLI::App* import = app->add_subcommand("dataset")->add_subcommand("import");
    import->add_option("--format", f->format);
    return app;
  }

  // Parses `args` (after the program name) with a config file of `text`.
  void Parse(CLI::App* app, const std::string& text,
             std::vector<std::string> args) {
    ASSERT_OK(WriteFileAtomic(Path(), text));
    args.insert(args.begin(), {"--config", Path()});
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app->parse(reversed);
  }

  // The CLI::ConfigError message the file `text` gives.
  std::string Error(const std::string& text) {
    try {
      Parse(app_.get(), text, {"train"});
    } catch (const CLI::ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  CLI::App* Train(CLI::App* app) { return app->get_subcommand("train"); }
  std::string Path() const { return dir_.Sub("flags.toml"); }

  testing::TempDir dir_;
  Flags flags_;
  std::unique_ptr<CLI::App> app_;
};

TEST_F(ConfigFileTest, ScalarsListsAndNestedTablesSetTheFlags) {
  Parse(app_.get(), R"(quiet = true
[train]
epochs = 2
fanouts = [15, 10, 5]
lr = 0.005
exact-test = true
split-file = ["train=a.npy", "test=b.npy"]

[dataset.import]
format = "ogb"
)",
        {"train"});
  EXPECT_TRUE(flags_.quiet);
  EXPECT_EQ(flags_.epochs, 2);
  EXPECT_EQ(flags_.fanouts, "15,10,5");  // One value: the items joined.
  EXPECT_EQ(flags_.lr, 0.005);
  EXPECT_TRUE(flags_.exact_test);
  EXPECT_THAT(flags_.split_files, ElementsAre("train=a.npy", "test=b.npy"));
  EXPECT_EQ(flags_.format, "ogb");
}

TEST_F(ConfigFileTest, TheCommandLineWins) {
  Parse(app_.get(), "[train]\nepochs = 2\nlr = 0.5\n",
        {"train", "--epochs", "7"});
  EXPECT_EQ(flags_.epochs, 7);
  EXPECT_EQ(flags_.lr, 0.5);
}

TEST_F(ConfigFileTest, ErrorsNameTheFileLineAndColumn) {
  EXPECT_EQ(Error("[train]\nepoch = 2\n"),
            Path() +
                ":2:1: unknown key 'epoch' in [train]: no such flag; did "
                "you mean 'epochs'?");
  EXPECT_EQ(Error("[train]\nepochs = 2.5\n"),
            Path() +
                ":2:10: epochs in [train]: Could not convert: --epochs = "
                "2.5");
  EXPECT_EQ(Error("[train]\nexact-test = [true, false]\n"),
            Path() + ":2:14: exact-test in [train] is a flag: true or false");
  EXPECT_EQ(Error("[train]\nexact-test = \"maybe\"\n"),
            Path() +
                ":2:14: exact-test in [train]: Could not convert: "
                "--exact-test = maybe");
  EXPECT_EQ(Error("[train]\nepochs = 1979-05-27\n"),
            Path() +
                ":2:10: epochs in [train] must be a string, a number, a "
                "boolean or a list of them");
  EXPECT_EQ(Error("[[train]]\nepochs = 2\n"),
            Path() +
                ":1:3: 'train' is a subcommand: its flags go in a table, "
                "[train]");
  // toml++'s own words for malformed TOML, at the place it stopped.
  EXPECT_THAT(Error("[train\nepochs = 2\n"),
              AllOf(::testing::StartsWith(Path() + ":1:"),
                    Not(HasSubstr("unknown key"))));
}

// Values are written as TOML values, escaped by toml++: a value holding a
// quote and newlines is one string, and sets no other flag when read back.
TEST_F(ConfigFileTest, ValuesWrittenAreReadBackAsTheSameValues) {
  const std::string out = "x\"\nlr=99.0\n#'\\ \t\x01 é";
  std::vector<std::string> args = {"train",  "--out",  out,   "--epochs",
                                   "3",      "--name", "007", "--split-file",
                                   "a=1.npy"};
  app_->parse(std::vector<std::string>(args.rbegin(), args.rend()));
  const std::string text = Train(app_.get())->config_to_str(true, false);
  toml::table table = toml::parse(text);
  EXPECT_EQ(table["train"]["out"].value<std::string>(), out) << text;
  EXPECT_FALSE(table["train"].as_table()->contains("lr")) << text;
  // Typed as given: numbers as numbers, "007" as a string.
  EXPECT_EQ(table["train"]["epochs"].value<int64_t>(), 3) << text;
  EXPECT_EQ(table["train"]["name"].value<std::string>(), "007") << text;
  EXPECT_EQ(table["train"]["fanouts"].value<std::string>(), "10,10") << text;
  EXPECT_EQ(table["train"]["exact-test"].value<bool>(), false) << text;
  EXPECT_TRUE(table["train"]["split-file"].is_array()) << text;

  Flags again;
  std::unique_ptr<CLI::App> app = MakeApp(&again);
  Parse(app.get(), text, {"train"});
  EXPECT_EQ(again.out, out);
  EXPECT_EQ(again.lr, -1);
  EXPECT_EQ(again.epochs, 3);
  EXPECT_EQ(again.name, "007");
  EXPECT_THAT(again.split_files, ElementsAre("a=1.npy"));
}

// config.toml: the flags set, the ones left unset out (so that --config leaves
// them unset again), and what those resolved to as comments, read back by
// ParseRunConfig.
TEST_F(ConfigFileTest, RunConfigKeepsResolvedValuesAsComments) {
  std::vector<std::string> args = {"train", "--epochs", "3", "--out",
                                   "a\nlr = 99.0"};
  app_->parse(std::vector<std::string>(args.rbegin(), args.rend()));
  const std::string text =
      RunConfigToml(*Train(app_.get()), {{"epochs", "20"},
                                         {"lr", "0.01"},
                                         {"weight-decay", "0.0005"},
                                         {"dropout", "0.30000000000000004"}});
  EXPECT_THAT(text, HasSubstr("\n[train]\n"));
  EXPECT_THAT(text, HasSubstr("\n# lr = 0.01\n"));
  EXPECT_THAT(text, HasSubstr("\n# weight-decay = 0.0005\n"));
  // More digits than toml++ writes a float with: a string, kept whole.
  EXPECT_THAT(text, HasSubstr("\n# dropout = \"0.30000000000000004\"\n"));
  EXPECT_THAT(text, Not(HasSubstr("# epochs")));  // Given: a flag.
  ASSERT_OK_AND_ASSIGN(RunConfig config, ParseRunConfig(text, "config.toml"));
  EXPECT_THAT(
      config.flags,
      ElementsAre(Pair("epochs", "3"), Pair("exact-test", "false"),
                  Pair("fanouts", "10,10"), Pair("out", "a\nlr = 99.0")));
  EXPECT_THAT(config.resolved,
              ElementsAre(Pair("dropout", "0.30000000000000004"),
                          Pair("lr", "0.01"), Pair("weight-decay", "0.0005")));

  Flags again;
  std::unique_ptr<CLI::App> app = MakeApp(&again);
  Parse(app.get(), text, {"train"});
  EXPECT_EQ(again.epochs, 3);
  EXPECT_EQ(again.lr, -1);

  // Malformed, in its table or in its comments of resolved values: the line
  // is the file's.
  for (const auto& [bad, at] :
       {std::pair<std::string, std::string>{"[train]\nepochs = \n",
                                            "c.toml:2:"},
        {absl::StrCat(text, "# bad = nope\n"),
         absl::StrCat("c.toml:", Lines(text) + 1, ":")}}) {
    absl::Status status = ParseRunConfig(bad, "c.toml").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), ::testing::StartsWith(at))
        << bad;
  }
}

}  // namespace
}  // namespace shardgnn::cli
