// The remote scripts run here, under the local /bin/sh, the way ssh runs
// them on a host: as the one command string a login shell is given.
#include "cli/ssh_remote.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "common/subprocess.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `/bin/sh -c COMMAND` (as a login shell given ssh's command string), with a
// stdin pipe as ssh's.
std::unique_ptr<Subprocess> StartCommand(const std::string& command) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", command};
  options.stdin_pipe = true;
  auto p = Subprocess::Start(std::move(options));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

bool Alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

// The pid in the wrapper's pid file, waiting up to 10 s for it: the wrapper
// writes the file after starting the process, so the process's first line
// can come first. 0 if it never appears.
pid_t ReadPid(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(path);
    int64_t pid = 0;
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const size_t newline = text.find('\n');
    if (newline != std::string::npos &&
        absl::SimpleAtoi(text.substr(0, newline), &pid) && pid > 0) {
      return static_cast<pid_t>(pid);
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return 0;
}

// Kills the process group `pid` leads when it goes out of scope. The process
// leads its own session (setsid), so killing the wrapper does not reach it,
// and it holds the output pipe: declared after the Subprocess, this runs
// first, so a failed expectation cannot leave the Subprocess's destructor
// waiting for that pipe to close.
class KillGroupOnExit {
 public:
  explicit KillGroupOnExit(pid_t pid) : pid_(pid) {}
  ~KillGroupOnExit() {
    if (pid_ > 0) kill(-pid_, SIGKILL);
  }
  KillGroupOnExit(const KillGroupOnExit&) = delete;
  KillGroupOnExit& operator=(const KillGroupOnExit&) = delete;

 private:
  pid_t pid_;
};

bool WaitUntilGone(pid_t pid) {
  for (int i = 0; i < 100 && Alive(pid); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  return !Alive(pid);
}

TEST(ShellQuoteTest, RoundTripsThroughSh) {
  for (const std::string s : {"plain", "a b", "it's", "$HOME `x` \"q\" \\", "",
                              "--flag=1,2", "*?[x]", "a'b'c"}) {
    auto p = StartCommand("printf '%s' " + ShellQuote(s));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->Wait(milliseconds(5000)), 0);
    EXPECT_EQ(p->Tail(1), s);
  }
  EXPECT_EQ(ShellQuote("/usr/bin/x"), "/usr/bin/x");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
}

TEST(SshArgvTest, OptionsThenDestination) {
  ClusterSpec spec;
  spec.ssh_config = "/c/ssh_config";
  spec.connect_timeout_seconds = 4;
  spec.ssh_options = {"Compression=yes"};
  ClusterHost host;
  host.ssh = "node1";
  host.ssh_port = 2222;
  host.user = "me";
  host.identity = "/k/id";
  EXPECT_THAT(
      SshArgv(spec, host),
      ElementsAre("ssh", "-F", "/c/ssh_config", "-o", "BatchMode=yes", "-o",
                  "ConnectTimeout=4", "-o", "ServerAliveInterval=5", "-o",
                  "ServerAliveCountMax=3", "-o", "Compression=yes", "-p",
                  "2222", "-l", "me", "-i", "/k/id", "node1"));
  EXPECT_EQ(RsyncShell(spec, host),
            "ssh -F /c/ssh_config -o BatchMode=yes -o ConnectTimeout=4 -o "
            "ServerAliveInterval=5 -o ServerAliveCountMax=3 -o "
            "Compression=yes -p 2222 -l me -i /k/id");
}

class RemoteProcessTest : public ::testing::Test {
 protected:
  RemoteProcess Process(const std::string& command) {
    RemoteProcess p;
    p.work_dir = dir_.path();
    p.pid_file = "pids/x.pid";
    p.env = {{"GREETING", "hello there"}};
    p.argv = {"/bin/sh", "-c", command};
    p.grace_seconds = 1;
    fs::create_directories(dir_.Sub("pids"));
    return p;
  }

  testing::TempDir dir_;
};

// The process runs in the work dir with the environment, in a process group
// of its own, named by the pid file; the wrapper exits with its status.
TEST_F(RemoteProcessTest, RunsTheProcessAndPassesItsStatusBack) {
  auto p = StartCommand(ShCommand(
      RemoteProcessScript(Process("echo \"$GREETING from $(pwd)\"; exit 7"))));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Wait(milliseconds(10000)), 7) << p->Tail(10);
  EXPECT_EQ(p->Tail(1), "hello there from " + dir_.path());
  EXPECT_FALSE(fs::exists(dir_.Sub("pids/x.pid")));
}

// Closing ssh's stdin stops the process (SIGTERM to its group): status
// 128+15.
TEST_F(RemoteProcessTest, EndOfStdinStopsTheProcess) {
  auto p = StartCommand(
      ShCommand(RemoteProcessScript(Process("echo started; exec sleep 1000"))));
  ASSERT_NE(p, nullptr);
  ASSERT_OK(p->WaitForLine("started", milliseconds(10000)));
  const pid_t pid = ReadPid(dir_.Sub("pids/x.pid"));
  ASSERT_GT(pid, 0);
  KillGroupOnExit cleanup(pid);
  EXPECT_TRUE(Alive(pid));
  EXPECT_EQ(getpgid(pid), pid);  // Leads its own group (setsid).
  EXPECT_EQ(p->Wait(milliseconds(300)), std::nullopt);
  p->CloseStdin();
  EXPECT_EQ(p->Wait(milliseconds(10000)), 128 + SIGTERM);
  EXPECT_TRUE(WaitUntilGone(pid));
  EXPECT_FALSE(fs::exists(dir_.Sub("pids/x.pid")));
}

// A process that ignores SIGTERM is killed after the grace period.
TEST_F(RemoteProcessTest, SigkillAfterTheGracePeriod) {
  auto p = StartCommand(ShCommand(RemoteProcessScript(
      Process("trap '' TERM; echo started; while :; do sleep 1; done"))));
  ASSERT_NE(p, nullptr);
  ASSERT_OK(p->WaitForLine("started", milliseconds(10000)));
  KillGroupOnExit cleanup(ReadPid(dir_.Sub("pids/x.pid")));
  p->CloseStdin();
  EXPECT_EQ(p->Wait(milliseconds(10000)), 128 + SIGKILL);
}

// When the wrapper itself is gone (killed with its watcher, as a lost
// connection may leave things), the sweep finds the process by its pid file
// and stops it, and removes the file it is given.
TEST_F(RemoteProcessTest, SweepKillsWhatAPidFileNames) {
  auto p = StartCommand(
      ShCommand(RemoteProcessScript(Process("echo started; exec sleep 1000"))));
  ASSERT_NE(p, nullptr);
  ASSERT_OK(p->WaitForLine("started", milliseconds(10000)));
  const pid_t pid = ReadPid(dir_.Sub("pids/x.pid"));
  ASSERT_GT(pid, 0);
  KillGroupOnExit cleanup(pid);
  p->Signal(SIGKILL);  // The wrapper's group; the process has its own.
  p->Wait(milliseconds(5000));
  ASSERT_TRUE(Alive(pid));
  std::ofstream(dir_.Sub("token")) << "x";
  auto sweep = StartCommand(ShCommand(SweepScript(dir_.path(), "pids", "token",
                                                  /*grace_seconds=*/1)));
  ASSERT_NE(sweep, nullptr);
  EXPECT_EQ(sweep->Wait(milliseconds(10000)), 0);
  EXPECT_THAT(sweep->Tail(5), HasSubstr("stopping x (pid "));
  EXPECT_TRUE(WaitUntilGone(pid));
  EXPECT_FALSE(fs::exists(dir_.Sub("pids/x.pid")));
  EXPECT_FALSE(fs::exists(dir_.Sub("token")));
  // Nothing left: the sweep says nothing.
  auto again =
      StartCommand(ShCommand(SweepScript(dir_.path(), "pids", "token", 1)));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->Wait(milliseconds(10000)), 0);
  EXPECT_EQ(again->Tail(5), "");
}

}  // namespace
}  // namespace shardgnn::cli
