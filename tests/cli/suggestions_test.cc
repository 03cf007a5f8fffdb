#include "cli/suggestions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace shardgnn::cli {
namespace {

const std::vector<std::string> kCommands = {
    "dataset", "partition", "info",   "serve",  "train",
    "run",     "infer",     "report", "launch", "embeddings"};

TEST(NearestNameTest, OneTypoAwayIsFound) {
  EXPECT_EQ(NearestName("trian", kCommands), "train");   // Swapped.
  EXPECT_EQ(NearestName("trai", kCommands), "train");    // Dropped.
  EXPECT_EQ(NearestName("servee", kCommands), "serve");  // Doubled.
  EXPECT_EQ(NearestName("partitoin", kCommands), "partition");
  EXPECT_EQ(NearestName("embedings", kCommands), "embeddings");
}

TEST(NearestNameTest, FarOrShortWordsGetNoGuess) {
  EXPECT_EQ(NearestName("frobnicate", kCommands), "");
  EXPECT_EQ(NearestName("tr", kCommands), "");  // Too short to guess from.
  EXPECT_EQ(NearestName("rn", kCommands), "");
  EXPECT_EQ(NearestName("rnu", kCommands), "run");
  EXPECT_EQ(NearestName("anything", {}), "");
}

TEST(NearestNameTest, TheNearestWinsAndTiesGoToTheFirst) {
  EXPECT_EQ(NearestName("epoch", {"epochs", "epoch-s", "patience"}), "epochs");
  EXPECT_EQ(NearestName("lrr", {"lr", "lrx"}), "lr");
  EXPECT_EQ(NearestName("abcx", {"abcy", "abcz"}), "abcy");
}

// The leftovers of a failed parse, as main.cc sees them.
class UnknownArgumentTest : public ::testing::Test {
 protected:
  UnknownArgumentTest() : app_("test", "shardgnn") {
    app_.require_subcommand(1);
    app_.fallthrough();
    app_.add_flag("-q,--quiet", quiet_);
    CLI::App* train = app_.add_subcommand("train");
    train->add_option("--epochs", epochs_);
    train->add_option("--fanouts", fanouts_);
    CLI::App* dataset = app_.add_subcommand("dataset");
    dataset->require_subcommand(1);
    dataset->add_subcommand("import");
  }

  std::string MessageAfter(std::vector<std::string> args) {
    try {
      app_.parse(std::vector<std::string>(args.rbegin(), args.rend()));
    } catch (const CLI::ParseError&) {
      return UnknownArgumentMessage(app_);
    }
    return "(parsed)";
  }

  CLI::App app_;
  bool quiet_ = false;
  int epochs_ = 0;
  std::string fanouts_;
};

TEST_F(UnknownArgumentTest, NamesTheFirstArgumentNoCommandTook) {
  EXPECT_EQ(MessageAfter({"trian", "--epochs", "3"}),
            "unknown subcommand 'trian'; did you mean 'train'?");
  EXPECT_EQ(MessageAfter({"dataset", "improt"}),
            "unknown subcommand 'improt'; did you mean 'import'?");
  EXPECT_EQ(MessageAfter({"train", "--epoch", "3"}),
            "unknown flag --epoch; did you mean --epochs?");
  EXPECT_EQ(MessageAfter({"train", "--fanout=10,5"}),
            "unknown flag --fanout; did you mean --fanouts?");
  EXPECT_EQ(MessageAfter({"train", "-epochs", "3"}),
            "unknown flag -epochs; did you mean --epochs?");
  EXPECT_EQ(MessageAfter({"train", "--quiett"}),
            "unknown flag --quiett; did you mean --quiet?");
  EXPECT_EQ(MessageAfter({"train", "--zzzzzz"}),
            "unknown flag --zzzzzz (shardgnn train --help lists the flags)");
  EXPECT_EQ(MessageAfter({"nothing-like-it"}),
            "unknown subcommand 'nothing-like-it' (shardgnn --help lists the "
            "subcommands)");
}

TEST_F(UnknownArgumentTest, OtherErrorsAreLeftToTheParser) {
  EXPECT_EQ(MessageAfter({}), "");                             // No subcommand.
  EXPECT_EQ(MessageAfter({"train", "--epochs", "many"}), "");  // A bad value.
  EXPECT_EQ(MessageAfter({"train", "extra"}),
            "");  // Not in a subcommand's place.
  EXPECT_EQ(MessageAfter({"train", "--epochs", "3"}), "(parsed)");
}

}  // namespace
}  // namespace shardgnn::cli
