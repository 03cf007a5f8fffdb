// The run report (cli/run_report.h) as a user gets it: `train --out` writes
// report.html at the end, `shardgnn report` writes it again, a malformed
// metrics file is one clear error, and the page renders its plots in a real
// browser (Debian's chromium, headless; skipped with a message without it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::Finished;
using ::testing::HasSubstr;
using testing::LastErrorLine;
using ::testing::Not;
using testing::RunShardgnn;
using testing::TempDir;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

class ReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    Finished imported = RunShardgnn(
        {"-q", "dataset", "import", "--format", "ogb", "--undirected",
         "--input", testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
         dir_->Sub("cora")});
    ASSERT_EQ(imported.exit_status, 0) << imported.output;
    Finished trained = RunShardgnn({"train", "--dataset", dir_->Sub("cora"),
                                    "--out", dir_->Sub("run"), "--epochs", "4",
                                    "--checkpoint-every", "0"});
    ASSERT_EQ(trained.exit_status, 0) << trained.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* ReportTest::dir_ = nullptr;

TEST_F(ReportTest, TrainWritesASelfContainedPageWithItsPlots) {
  ASSERT_OK_AND_ASSIGN(std::string html,
                       ReadFileToString(dir_->Sub("run/report.html")));
  EXPECT_EQ(Count(html, "<svg"), 3) << html;
  // Loss and validation loss, train and validation accuracy, and the test
  // line: each a polyline; the loss one has a point per epoch.
  EXPECT_EQ(Count(html, "<polyline"), 5);
  const size_t loss = html.find("<polyline class=\"series\" points=\"");
  ASSERT_NE(loss, std::string::npos);
  const size_t begin = loss + 33;
  const std::string points = html.substr(begin, html.find('"', begin) - begin);
  EXPECT_EQ(
      std::vector<std::string>(absl::StrSplit(points, ' ', absl::SkipEmpty()))
          .size(),
      4u)
      << points;
  EXPECT_GE(Count(html, "<rect class=\"bar\""), 8);  // 4 epochs, 2+ parts.
  EXPECT_THAT(html, HasSubstr("test accuracy"));
  EXPECT_THAT(html, HasSubstr("seeds/s"));
  // The dataset it trained on, in the heading.
  // (Imported without --name: the input folder's name.)
  EXPECT_THAT(html, HasSubstr("<h1>shardgnn run report: ogb-planetoid</h1>"));
  // Nothing is fetched: no scripts, no external references.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("http")));
}

TEST_F(ReportTest, ReportCommandWritesItAgainAndNamesABadLine) {
  const std::string run = dir_->Sub("run");
  std::filesystem::remove(run + "/report.html");
  Finished again = RunShardgnn({"report", run});
  ASSERT_EQ(again.exit_status, 0) << again.output;
  EXPECT_TRUE(std::filesystem::exists(run + "/report.html"));

  const std::string bad = dir_->Sub("bad");
  std::filesystem::create_directories(bad);
  std::filesystem::copy_file(run + "/summary.json", bad + "/summary.json");
  ASSERT_OK(WriteFileAtomic(bad + "/metrics.jsonl",
                            "{\"epoch\": 1, \"loss\": 1}\nnot json\n"));
  Finished failed = RunShardgnn({"report", bad});
  EXPECT_EQ(failed.exit_status, 1) << failed.output;
  EXPECT_THAT(LastErrorLine(failed.output),
              HasSubstr("metrics.jsonl: line 2 is not an epoch record"));
  EXPECT_FALSE(std::filesystem::exists(bad + "/report.html"));
  Finished missing = RunShardgnn({"report", dir_->Sub("nothing")});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_THAT(LastErrorLine(missing.output), HasSubstr("metrics.jsonl"));
}

// Several runs on one page: their curves overlaid (a series per run in each
// of three charts), a row of results per run, and the flags that differ.
TEST_F(ReportTest, SeveralRunsAreComparedOnOnePage) {
  const std::string first = dir_->Sub("run");
  const std::string second = dir_->Sub("run-gcn");
  Finished trained =
      RunShardgnn({"-q", "train", "--dataset", dir_->Sub("cora"), "--epochs",
                   "2", "--model", "gcn", "--out", second});
  ASSERT_EQ(trained.exit_status, 0) << trained.output;
  const std::string out = dir_->Sub("compare.html");
  Finished compared = RunShardgnn({"report", first, second, "--out", out});
  ASSERT_EQ(compared.exit_status, 0) << compared.output;
  EXPECT_THAT(compared.output, HasSubstr("2 runs compared"));
  ASSERT_OK_AND_ASSIGN(std::string html, ReadFileToString(out));
  EXPECT_EQ(Count(html, "<svg"), 3) << html;
  EXPECT_EQ(Count(html, "<polyline"), 6) << html;  // 3 charts x 2 runs.
  EXPECT_THAT(html, HasSubstr("1: run<"));
  EXPECT_THAT(html, HasSubstr("2: run-gcn<"));
  // The flags that differ, with each run's value; those equal are left out.
  EXPECT_THAT(html, HasSubstr("<th>--model</th><td>sage | gcn</td>"));
  EXPECT_THAT(html, HasSubstr("<th>--epochs</th><td>4 | 2</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<th>--seed</th>")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  // --out is for several runs; a missing run is named.
  Finished one = RunShardgnn({"report", first, "--out", out});
  EXPECT_EQ(one.exit_status, 1) << one.output;
  Finished missing =
      RunShardgnn({"report", first, dir_->Sub("nothing"), "--out", out});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_THAT(LastErrorLine(missing.output),
              HasSubstr("nothing/metrics.jsonl"));
}

// A run without summary.json yet (in progress, or stopped before its end):
// the page of the epochs so far, the best validation epoch among them and the
// configuration from config.toml; a last line still being written is left out,
// a malformed line before it is still an error.
TEST_F(ReportTest, ARunWithoutSummaryGetsThePageOfItsEpochsSoFar) {
  const std::string run = dir_->Sub("run");
  const std::string partial = dir_->Sub("partial");
  std::filesystem::create_directories(partial);
  ASSERT_OK_AND_ASSIGN(std::string metrics,
                       ReadFileToString(run + "/metrics.jsonl"));
  ASSERT_OK(WriteFileAtomic(partial + "/metrics.jsonl",
                            metrics + "{\"epoch\": 5, \"lo"));
  std::filesystem::copy_file(run + "/config.toml", partial + "/config.toml");
  Finished report = RunShardgnn({"report", partial});
  ASSERT_EQ(report.exit_status, 0) << report.output;
  ASSERT_OK_AND_ASSIGN(std::string html,
                       ReadFileToString(partial + "/report.html"));
  EXPECT_THAT(html, HasSubstr("the run is in progress, or stopped before its "
                              "end; 4 epochs recorded (and one being written"));
  // The best epoch so far is the one the finished run kept.
  ASSERT_OK_AND_ASSIGN(std::string summary,
                       ReadFileToString(run + "/summary.json"));
  const nlohmann::json s = nlohmann::json::parse(summary);
  EXPECT_THAT(html, HasSubstr(absl::StrFormat("%.4f at epoch %d",
                                              s["best_val_acc"].get<double>(),
                                              s["best_epoch"].get<int>())));
  EXPECT_THAT(html, Not(HasSubstr("test accuracy")));
  // From config.toml.
  EXPECT_THAT(html, HasSubstr("<th>fanouts</th><td>10,10</td>"));
  // The model, from the flags and the values the unset ones resolved to: the
  // one the finished run reports.
  EXPECT_THAT(html, HasSubstr("<th>kind</th><td>sage</td>"));
  for (const char* key : {"layers", "hidden"}) {
    EXPECT_THAT(html,
                HasSubstr(absl::StrCat("<th>", key, "</th><td>",
                                       s["model"][key].get<int>(), "</td>")));
  }
  for (const char* key : {"lr", "weight_decay", "dropout"}) {
    EXPECT_THAT(
        html, HasSubstr(absl::StrCat("<th>", key, "</th><td>",
                                     s["model"][key].get<double>(), "</td>")));
  }
  EXPECT_EQ(Count(html, "<svg"), 3);
  // Ties go to the lower validation loss, as the trainer keeps epochs.
  ASSERT_OK(WriteFileAtomic(
      partial + "/metrics.jsonl",
      "{\"epoch\": 1, \"loss\": 1, \"val_acc\": 0.8, \"val_loss\": 0.9}\n"
      "{\"epoch\": 2, \"loss\": 1, \"val_acc\": 0.8, \"val_loss\": 0.7}\n"
      "{\"epoch\": 3, \"loss\": 1, \"val_acc\": 0.8, \"val_loss\": 0.8}\n"));
  Finished tie = RunShardgnn({"report", partial});
  ASSERT_EQ(tie.exit_status, 0) << tie.output;
  ASSERT_OK_AND_ASSIGN(html, ReadFileToString(partial + "/report.html"));
  EXPECT_THAT(html, HasSubstr("0.8000 at epoch 2"));
  // A malformed line that is not the last is still named.
  ASSERT_OK(WriteFileAtomic(partial + "/metrics.jsonl",
                            "{\"epoch\": 1, \"loss\": 1}\n{\"ep\n" + metrics));
  Finished bad = RunShardgnn({"report", partial});
  EXPECT_EQ(bad.exit_status, 1) << bad.output;
  EXPECT_THAT(LastErrorLine(bad.output),
              HasSubstr("metrics.jsonl: line 2 is not an epoch record"));
}

// Chromium draws the page: the plots' colours cover real areas of the
// screenshot (counted by tests/cli/png_colors.py), not just their legends.
TEST_F(ReportTest, RendersItsPlotsInAHeadlessBrowser) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium): "
                    "the rendering check did not run";
  }
  const std::string png = dir_->Sub("report.png");
  SubprocessOptions browser;
  browser.name = "chromium";
  browser.argv = {
      "/usr/bin/chromium",   "--headless",
      "--no-sandbox",        "--disable-gpu",
      "--hide-scrollbars",   "--window-size=1250,1000",
      "--screenshot=" + png, "file://" + dir_->Sub("run/report.html")};
  ASSERT_OK_AND_ASSIGN(auto child, Subprocess::Start(browser));
  std::optional<int> status = child->Wait(std::chrono::seconds(90));
  ASSERT_TRUE(status.has_value()) << "chromium still running";
  ASSERT_TRUE(std::filesystem::exists(png)) << child->Tail(2000);
  SubprocessOptions count;
  count.name = "png_colors.py";
  count.argv = {"/usr/bin/python3",
                testing::SourcePath("tests/cli/png_colors.py"),
                png,
                "1f77b4",
                "ff7f0e",
                "2ca02c"};
  ASSERT_OK_AND_ASSIGN(auto counter, Subprocess::Start(count));
  status = counter->Wait(std::chrono::seconds(90));
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(*status, 0) << counter->Tail(2000);
  std::map<std::string, int64_t> pixels;
  for (absl::string_view line :
       absl::StrSplit(counter->Tail(2000), '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    int64_t n = 0;
    if (words.size() == 2 && absl::SimpleAtoi(words[1], &n))
      pixels[words[0]] = n;
  }
  // Blue: train loss, train accuracy and the compute bars; orange: the
  // validation curves; green: the test line and evaluation bars. A legend
  // entry alone is under 100 pixels.
  EXPECT_GT(pixels["1f77b4"], 2000) << counter->Tail(2000);
  EXPECT_GT(pixels["ff7f0e"], 400) << counter->Tail(2000);
  EXPECT_GT(pixels["2ca02c"], 400) << counter->Tail(2000);
}

}  // namespace
}  // namespace shardgnn
