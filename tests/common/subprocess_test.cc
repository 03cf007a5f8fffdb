#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>

#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {
using std::chrono::milliseconds;

std::unique_ptr<Subprocess> StartShell(
    const std::string& script,
    std::function<void(const std::string&)> on_line = {},
    std::map<std::string, std::string> env = {}) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.name = "sh";
  options.on_line = std::move(on_line);
  options.env = std::move(env);
  auto p = Subprocess::Start(std::move(options));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(SubprocessTest, WaitsForReadyLineAndExitCode) {
  std::atomic<int> seen{0};
  auto p = StartShell(
      "echo starting; echo ready on port $PORT; echo err >&2; exit 3",
      [&](const std::string&) { ++seen; }, {{"PORT", "1234"}});
  ASSERT_OK_AND_ASSIGN(std::string line,
                       p->WaitForLine("ready on", milliseconds(5000)));
  EXPECT_EQ(line, "ready on port 1234");
  EXPECT_EQ(p->Wait(milliseconds(5000)), 3);
  EXPECT_NE(p->Tail(5).find("err"), std::string::npos);
}

TEST(SubprocessTest, ExitBeforeLineIsAnErrorWithOutput) {
  auto p = StartShell("echo boom; exit 2");
  auto line = p->WaitForLine("ready", milliseconds(5000));
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(line.status().message().find("boom"), absl::string_view::npos);
}

TEST(SubprocessTest, TimesOutWaitingForLine) {
  auto p = StartShell("sleep 30");
  auto line = p->WaitForLine("ready", milliseconds(200));
  EXPECT_EQ(line.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(p->Terminate(milliseconds(2000)), 128 + SIGTERM);
}

// With stdin_pipe the child reads until the parent closes its end; a second
// child started meanwhile does not inherit that end (it would keep the pipe
// open).
TEST(SubprocessTest, StdinPipeEndsWhenClosed) {
  auto start = [](const std::string& script) {
    SubprocessOptions options;
    options.argv = {"/bin/sh", "-c", script};
    options.stdin_pipe = true;
    auto p = Subprocess::Start(std::move(options));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  };
  auto reader = start("echo reading; cat >/dev/null; echo got eof; exit 5");
  ASSERT_NE(reader, nullptr);
  auto other = start("cat >/dev/null");
  ASSERT_NE(other, nullptr);
  ASSERT_OK(reader->WaitForLine("reading", milliseconds(5000)));
  EXPECT_EQ(reader->Wait(milliseconds(300)), std::nullopt);  // Still reading.
  reader->CloseStdin();
  EXPECT_EQ(reader->Wait(milliseconds(5000)), 5);
  EXPECT_NE(reader->Tail(1).find("got eof"), std::string::npos);
  EXPECT_EQ(other->Wait(milliseconds(100)), std::nullopt);
  // Without stdin_pipe, stdin is /dev/null: end-of-file at once.
  auto plain = StartShell("cat; exit 7");
  EXPECT_EQ(plain->Wait(milliseconds(5000)), 7);
}

TEST(SubprocessTest, TerminateEscalatesToKill) {
  auto p =
      StartShell("trap '' TERM; echo armed; while true; do sleep 0.05; done");
  ASSERT_OK(p->WaitForLine("armed", milliseconds(5000)));
  EXPECT_EQ(p->Terminate(milliseconds(200)), 128 + SIGKILL);
}

TEST(SubprocessTest, DestructorKillsRunningChild) {
  pid_t pid;
  {
    auto p = StartShell("sleep 30");
    pid = p->pid();
    EXPECT_FALSE(p->Poll().has_value());
  }
  EXPECT_NE(kill(pid, 0), 0);  // Reaped and gone.
}

}  // namespace
}  // namespace shardgnn
