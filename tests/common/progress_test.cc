// Progress and StageHeartbeat (common/progress.h): lines are due by time, not
// by call count, carry rate and ETA, and a heartbeat ticks until it is gone.
// Most tests drive a fake clock; the real-clock ones use intervals of tens of
// milliseconds.
#include "common/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// An in-memory FILE* for the lines.
class Capture {
 public:
  Capture() : out_(open_memstream(&buffer_, &size_)) {}
  ~Capture() {
    if (out_ != nullptr) std::fclose(out_);
    std::free(buffer_);
  }
  std::FILE* out() { return out_; }
  std::string Text() {
    std::fflush(out_);
    return std::string(buffer_, size_);
  }
  std::vector<std::string> Lines() {
    return absl::StrSplit(Text(), '\n', absl::SkipEmpty());
  }

 private:
  char* buffer_ = nullptr;
  size_t size_ = 0;
  std::FILE* out_;
};

class ProgressTest : public ::testing::Test {
 protected:
  ProgressOptions Options(double interval_seconds = 2.0) {
    ProgressOptions options;
    options.interval_seconds = interval_seconds;
    options.out = capture_.out();
    options.mode = ProgressOptions::Mode::kLines;
    options.clock = [this] { return now_; };
    return options;
  }
  void Advance(double seconds) {
    now_ += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds));
  }

  Clock::time_point now_ = Clock::now();
  Capture capture_;
};

TEST_F(ProgressTest, LineShowsPercentCountsTimeRateAndEta) {
  Progress progress("import", 2900000, "edges", Options());
  Advance(3.1);
  progress.Update(1218000);
  EXPECT_THAT(capture_.Lines(),
              ElementsAre("import:  42% (1.22M/2.90M edges, 3.1s, 392.9k "
                          "edges/s, ETA 4s)"));
}

// The callers that prompted this: a few Update calls per stage, far fewer
// than any call-count gate would let through.
TEST_F(ProgressTest, FewCallsPrintALineOncePerIntervalThatPassed) {
  Progress progress("build", 4, "stages", Options(2.0));
  Advance(0.5);
  progress.Update(1);  // Not yet an interval since the start.
  Advance(2.0);
  progress.Update(2);
  Advance(0.5);
  progress.Update(3);  // Only 0.5 s since the last line.
  Advance(2.0);
  progress.Update(3);
  EXPECT_THAT(capture_.Lines(),
              ElementsAre(HasSubstr("build:  50% (2/4 stages, 2.5s"),
                          HasSubstr("build:  75% (3/4 stages, 5.0s")));
}

// The last Update before Done() reaching the total would only repeat the
// Done line.
TEST_F(ProgressTest, UpdateToTheTotalLeavesTheLineToDone) {
  Progress progress("symmetrize", 10, "nodes", Options());
  Advance(3.0);
  progress.Update(10);
  EXPECT_EQ(capture_.Text(), "");
  progress.Done();
  EXPECT_THAT(capture_.Lines(),
              ElementsAre("symmetrize: done, 10 nodes in 3.0s (3 nodes/s)"));
}

TEST_F(ProgressTest, DoneLineHasTotalTimeAndRate) {
  Progress progress("write shards", 4000, "nodes", Options());
  Advance(1.0);
  progress.Update(1000);
  Advance(1.0);
  progress.Done();
  progress.Done();  // Once only.
  EXPECT_THAT(capture_.Lines(),
              ElementsAre("write shards: done, 1000 nodes in 2.0s (500 "
                          "nodes/s)"));
}

TEST_F(ProgressTest, UnknownTotalHasRateButNoPercentOrEta) {
  Progress progress("reading", 0, "rows", Options());
  Advance(2.0);
  progress.Update(5000);
  EXPECT_THAT(capture_.Lines(),
              ElementsAre("reading: 5000 rows, 2.0s, 2500 rows/s"));
}

TEST_F(ProgressTest, EtaInMinutesAndNoRateBeforeAnyWork) {
  Progress progress("generate", 1000, "rows", Options());
  Advance(2.0);
  progress.Update(0);
  Advance(58.0);
  progress.Update(100);
  EXPECT_THAT(capture_.Lines(),
              ElementsAre("generate:   0% (0/1000 rows, 2.0s)",
                          "generate:  10% (100/1000 rows, 60.0s, 2 rows/s, "
                          "ETA 9m00s)"));
}

TEST_F(ProgressTest, TerminalRewritesOneLineUntilDone) {
  ProgressOptions options = Options();
  options.mode = ProgressOptions::Mode::kTerminal;
  Progress progress("load", 10, "nodes", options);
  Advance(2.0);
  progress.Update(5);
  Advance(2.0);
  progress.Update(8);
  EXPECT_EQ(capture_.Text().find('\n'), std::string::npos);
  EXPECT_THAT(capture_.Text(), HasSubstr("\r\033[Kload:  80% (8/10 nodes"));
  progress.Done();
  EXPECT_THAT(capture_.Text(),
              testing::EndsWith("\r\033[Kload: done, 8 nodes in 4.0s (2 "
                                "nodes/s)\n"));
}

TEST_F(ProgressTest, QuietPrintsNothing) {
  ProgressOptions options = Options();
  options.quiet = true;
  Progress progress("load", 10, "nodes", options);
  Advance(5.0);
  progress.Update(5);
  progress.Done();
  EXPECT_EQ(capture_.Text(), "");
}

// The real clocks: three calls 70 ms apart with a 50 ms interval each get
// their line after the first.
TEST(ProgressRealClockTest, SlowCallsEachGetALine) {
  Capture capture;
  ProgressOptions options;
  options.interval_seconds = 0.05;
  options.out = capture.out();
  options.mode = ProgressOptions::Mode::kLines;
  Progress progress("slow", 4, "chunks", options);
  for (int i = 1; i <= 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(70));
    progress.Update(i);
  }
  std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), 3u) << capture.Text();
  EXPECT_THAT(lines[0], HasSubstr("slow:  25% (1/4 chunks"));
  EXPECT_THAT(lines[2], AllOf(HasSubstr(" 75% (3/4 chunks"),
                              HasSubstr("chunks/s, ETA 0s)")));
}

// A per-item caller for 250 ms with a 50 ms interval: a line about every
// interval, never two within one.
TEST(ProgressRealClockTest, PerItemCallsPrintOncePerInterval) {
  Capture capture;
  ProgressOptions options;
  options.interval_seconds = 0.05;
  options.out = capture.out();
  options.mode = ProgressOptions::Mode::kLines;
  Progress progress("items", 0, "items", options);
  const auto end = Clock::now() + std::chrono::milliseconds(250);
  int64_t i = 0;
  while (Clock::now() < end) progress.Update(++i);
  const size_t lines = capture.Lines().size();
  EXPECT_GE(lines, 3u) << capture.Text();
  EXPECT_LE(lines, 5u) << capture.Text();
}

TEST(StageHeartbeatTest, TicksWithElapsedTimeUntilDestroyed) {
  Capture capture;
  ProgressOptions options;
  options.interval_seconds = 0.02;
  options.out = capture.out();
  options.mode = ProgressOptions::Mode::kLines;
  {
    StageHeartbeat heartbeat("partition: METIS running", options);
    std::this_thread::sleep_for(std::chrono::milliseconds(90));
  }
  std::vector<std::string> lines = capture.Lines();
  EXPECT_GE(lines.size(), 3u) << capture.Text();
  for (const std::string& line : lines) {
    EXPECT_EQ(line, "partition: METIS running, 0s elapsed");
  }
  // Nothing after the destructor returned.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(capture.Lines().size(), lines.size());
}

TEST(StageHeartbeatTest, StopsAtOnceAndErasesItsTerminalLine) {
  Capture capture;
  ProgressOptions options;
  options.interval_seconds = 0.02;
  options.out = capture.out();
  options.mode = ProgressOptions::Mode::kTerminal;
  {
    StageHeartbeat heartbeat("metis", options);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_THAT(capture.Text(), HasSubstr("\r\033[Kmetis, 0s elapsed"));
  EXPECT_THAT(capture.Text(), testing::EndsWith("\r\033[K"));
  EXPECT_THAT(capture.Text(), Not(HasSubstr("\n")));

  // A long interval does not hold the destructor.
  options.interval_seconds = 60;
  const auto start = Clock::now();
  { StageHeartbeat heartbeat("metis", options); }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
}

TEST(HumanDurationTest, SecondsMinutesHours) {
  EXPECT_EQ(HumanDuration(0.4), "0s");
  EXPECT_EQ(HumanDuration(4.4), "4s");
  EXPECT_EQ(HumanDuration(185), "3m05s");
  EXPECT_EQ(HumanDuration(7620), "2h07m");
}

}  // namespace
}  // namespace shardgnn
