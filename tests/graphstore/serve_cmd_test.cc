// `shardgnn serve` as a real child process (cli/serve_cmd.cc; kept with the
// graphstore tests because it is the storage server's entry point).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graphstore/client.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/scrape.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// A child process with its stdout and stderr on pipes.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int out[2], err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, err[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    EXPECT_EQ(
        posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ),
        0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    close(out_);
    close(err_);
  }

  // Reads stdout up to the first newline or EOF, waiting at most `timeout`.
  std::string ReadLine(std::chrono::seconds timeout) {
    std::string line;
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c;
      if (read(out_, &c, 1) != 1) break;
      if (c == '\n') break;
      line += c;
    }
    return line;
  }
  std::string ReadAllStderr() {
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = read(err_, buf, sizeof(buf))) > 0) all.append(buf, n);
    return all;
  }
  // Waits for exit; returns the exit code (or 128 + signal).
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool exited_ = false;
};

class ServeCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::MakeTestGraph(200, 6);
    ASSERT_OK(testing::WriteTestShards(graph_, 2, dir_.Sub("parts")));
  }
  TempDir dir_;
  testing::TestGraph graph_;
};

TEST_F(ServeCmdTest, ServesUntilSigtermThenExitsZero) {
  // Disk mode, memory mode, and memory mode without the feature port.
  for (int config = 0; config < 3; ++config) {
    const bool memory = config > 0;
    const bool feature_port = config < 2;
    std::vector<std::string> args = {testing::ShardgnnBinary(),
                                     "serve",
                                     "--partition",
                                     dir_.Sub("parts"),
                                     "--part",
                                     "1",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--threads",
                                     "2"};
    if (memory) args.push_back("--memory");
    if (!feature_port) {
      args.push_back("--feature-port");
      args.push_back("-1");
    }
    Child child(args);
    std::string line = child.ReadLine(std::chrono::seconds(30));
    ASSERT_THAT(line, HasSubstr("shardgnn serve: part 1 ready on 127.0.0.1:"))
        << child.ReadAllStderr();
    EXPECT_THAT(line, HasSubstr(memory ? "(memory mode, 100 nodes, "
                                       : "(disk mode, 100 nodes, "));
    EXPECT_THAT(line, HasSubstr(feature_port ? ", feature port "
                                             : ", no feature port)"));
    std::string address = line.substr(line.find("127.0.0.1:"));
    address = address.substr(0, address.find(' '));

    ASSERT_OK_AND_ASSIGN(auto client, GraphStoreClient::Connect(address));
    ASSERT_OK(client->WaitForHealthy(absl::Now() + absl::Seconds(10)));
    ASSERT_OK_AND_ASSIGN(ServerInfo info, client->Info());
    EXPECT_EQ(info.meta.part_id, 1);
    EXPECT_EQ(info.in_memory, memory);
    if (feature_port) {
      EXPECT_THAT(line, HasSubstr(absl::StrCat(", feature port ",
                                               info.feature_port, ")")));
    }
    EXPECT_EQ(client->UsesFeaturePort(), feature_port);
    std::vector<float> row(6);
    ASSERT_OK(client->GetFeatures({150}, 6, row.data()));
    EXPECT_EQ(row, std::vector<float>(graph_.Row(150), graph_.Row(150) + 6));

    ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
    EXPECT_EQ(child.Wait(), 0);
    EXPECT_THAT(child.ReadAllStderr(), HasSubstr("stopped: "));
  }
}

TEST_F(ServeCmdTest, BadFeaturePortFlagsAreOneClearLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"--feature-port=70000", "feature port 70000 is outside [-1, 65535]"},
      {"--feature-port-connections=0",
       "feature port connections 0 must be >= 1"}};
  for (const auto& [flag, message] : cases) {
    Child child({testing::ShardgnnBinary(), "serve", "--partition",
                 dir_.Sub("parts"), "--part", "1", "--listen", "127.0.0.1:0",
                 flag});
    EXPECT_NE(child.Wait(), 0) << flag;
    std::string err = child.ReadAllStderr();
    EXPECT_THAT(err, HasSubstr(message));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

// --metrics-listen: the ready line is followed by where the metrics are, and
// GET /metrics answers with the part's figures.
TEST_F(ServeCmdTest, MetricsListenServesPrometheusMetrics) {
  Child child({testing::ShardgnnBinary(), "serve", "--partition",
               dir_.Sub("parts"), "--part", "1", "--listen", "127.0.0.1:0",
               "--metrics-listen", "127.0.0.1:0", "--threads", "2"});
  std::string line = child.ReadLine(std::chrono::seconds(30));
  ASSERT_THAT(line, HasSubstr("ready on 127.0.0.1:")) << child.ReadAllStderr();
  line = child.ReadLine(std::chrono::seconds(10));
  const std::string prefix = "shardgnn serve: metrics on http://127.0.0.1:";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  ASSERT_THAT(line, ::testing::EndsWith("/metrics"));
  const int port = std::stoi(line.substr(prefix.size()));

  const std::string answer = testing::HttpGet(port);
  EXPECT_THAT(answer, ::testing::StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(answer, HasSubstr("\nshardgnn_server_serving{part=\"1\"} 1\n"));
  EXPECT_THAT(answer, HasSubstr("\nshardgnn_shard_nodes{part=\"1\"} 100\n"));

  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  EXPECT_EQ(child.Wait(), 0) << child.ReadAllStderr();
}

TEST_F(ServeCmdTest, BadOrBusyMetricsListenIsOneClearLine) {
  // A port in use: another socket listens on it.
  int busy = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(busy, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(busy, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(busy, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string busy_address =
      absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  const std::pair<std::string, std::string> cases[] = {
      {"127.0.0.1:99999",
       "shardgnn: error: cannot serve metrics on '127.0.0.1:99999': not "
       "HOST:PORT"},
      {"9100", "cannot serve metrics on '9100': not HOST:PORT"},
      {"nohost.invalid:9100",
       "cannot serve metrics on nohost.invalid:9100: cannot resolve"},
      {busy_address, absl::StrCat("shardgnn: error: cannot serve metrics on ",
                                  busy_address, ": Address already in use")}};
  for (const auto& [address, message] : cases) {
    Child child({testing::ShardgnnBinary(), "serve", "--partition",
                 dir_.Sub("parts"), "--part", "1", "--listen", "127.0.0.1:0",
                 "--metrics-listen", address});
    EXPECT_NE(child.Wait(), 0) << address;
    std::string err = child.ReadAllStderr();
    EXPECT_THAT(err, HasSubstr(message));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(child.ReadLine(std::chrono::seconds(1)), "")
        << address << ": nothing on stdout (no ready line)";
  }
  close(busy);
}

TEST_F(ServeCmdTest, MissingPartIsOneClearLine) {
  Child child({testing::ShardgnnBinary(), "serve", "--partition",
               dir_.Sub("parts"), "--part", "5", "--listen", "127.0.0.1:0"});
  EXPECT_NE(child.Wait(), 0);
  std::string err = child.ReadAllStderr();
  EXPECT_THAT(err, HasSubstr("part-5: part 5 does not exist (it holds "
                             "part-0, part-1)"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(ServeCmdTest, MissingOrCorruptDirectoryFails) {
  {
    Child child({testing::ShardgnnBinary(), "serve", "--partition",
                 dir_.Sub("nowhere"), "--part", "0"});
    EXPECT_NE(child.Wait(), 0);
    EXPECT_THAT(child.ReadAllStderr(),
                HasSubstr("nowhere: no such partition directory"));
  }
  {
    std::filesystem::create_directories(dir_.Sub("bad/part-0"));
    Child child({testing::ShardgnnBinary(), "serve", "--partition",
                 dir_.Sub("bad"), "--part", "0"});
    EXPECT_NE(child.Wait(), 0);
    EXPECT_THAT(child.ReadAllStderr(), HasSubstr("not a shard"));
  }
}

// A loopback connection to `port` that sends nothing; -1 if refused.
int IdleConnection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  // Not blocking: a server that stops accepting fills its backlog.
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (errno != EINPROGRESS || poll(&p, 1, 200) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// CPU seconds (user + system) used so far by process `pid`.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  // Fields after the parenthesised command name; utime and stime are the
  // 14th and 15th fields of the line.
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Issue 12: about as many idle connections as the server's open-file limit
// used to leave gRPC unable to accept for good (and the feature port's
// accepting thread spinning on EMFILE). The server runs with a low limit so
// that a few hundred connections are enough; once the attacker leaves, it
// must serve again without a restart.
TEST_F(ServeCmdTest, IdleConnectionsUpToTheFileLimitLeaveNoLastingHarm) {
  const std::string command =
      absl::StrCat("ulimit -n 160 && exec ", testing::ShardgnnBinary(),
                   " serve --partition ", dir_.Sub("parts"),
                   " --part 1 --memory --threads 2 --listen 127.0.0.1:0");
  Child child({"/bin/sh", "-c", command});
  std::string line = child.ReadLine(std::chrono::seconds(30));
  ASSERT_THAT(line, HasSubstr("ready on 127.0.0.1:")) << child.ReadAllStderr();
  std::string address = line.substr(line.find("127.0.0.1:"));
  address = address.substr(0, address.find(' '));
  const int grpc_port = std::stoi(address.substr(address.find(':') + 1));
  ASSERT_OK_AND_ASSIGN(auto before, GraphStoreClient::Connect(address));
  ASSERT_OK(before->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  ASSERT_OK_AND_ASSIGN(ServerInfo info, before->Info());
  ASSERT_GT(info.feature_port, 0);

  std::vector<int> attacker;
  for (int i = 0; i < 200; ++i) {
    for (int port : {grpc_port, info.feature_port}) {
      int fd = IdleConnection(port);
      if (fd >= 0) attacker.push_back(fd);
    }
  }
  EXPECT_GE(attacker.size(), 300u);
  absl::SleepFor(absl::Milliseconds(500));  // Let the server take them.
  // Out of file descriptors, the server must not spin.
  const double cpu_start = CpuSeconds(child.pid());
  absl::SleepFor(absl::Seconds(1));
  EXPECT_LT(CpuSeconds(child.pid()) - cpu_start, 0.25)
      << "the server spins while its connections are exhausted";
  for (int fd : attacker) close(fd);

  // The attacker left: a new client is served again within seconds.
  GraphStoreClientOptions options;
  options.call_timeout = absl::Seconds(2);
  ASSERT_OK_AND_ASSIGN(auto after, GraphStoreClient::Connect(address, options));
  EXPECT_OK(after->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  std::vector<float> row(6);
  EXPECT_OK(after->GetFeatures({150}, 6, row.data()));
  EXPECT_EQ(row, std::vector<float>(graph_.Row(150), graph_.Row(150) + 6));
  EXPECT_OK(after->SampleNeighbors({150, 151}, 5, false, 1).status());
  // And the client that was connected all along.
  EXPECT_OK(before->WaitForHealthy(absl::Now() + absl::Seconds(10)));

  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  EXPECT_EQ(child.Wait(), 0) << child.ReadAllStderr();
}

// Issue 12: `serve --auth-token-file` (mode 600) refuses calls without the
// token; a token file others may read is refused with one error line.
TEST_F(ServeCmdTest, TokenFileProtectsEveryCallButHealth) {
  const std::string token = "f00dfeedcafebeef0123456789abcdef";
  const std::string token_file = dir_.Sub("token");
  std::ofstream(token_file) << token << "\n";
  ASSERT_EQ(chmod(token_file.c_str(), 0644), 0);
  std::vector<std::string> args = {testing::ShardgnnBinary(),
                                   "serve",
                                   "--partition",
                                   dir_.Sub("parts"),
                                   "--part",
                                   "1",
                                   "--memory",
                                   "--threads",
                                   "2",
                                   "--auth-token-file",
                                   token_file};
  {
    Child open_file(args);
    EXPECT_EQ(open_file.Wait(), 1);
    const std::string err = open_file.ReadAllStderr();
    EXPECT_THAT(err, HasSubstr("shardgnn: error: --auth-token-file"));
    EXPECT_THAT(err, HasSubstr("chmod 600"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  ASSERT_EQ(chmod(token_file.c_str(), 0600), 0);
  Child child(args);
  std::string line = child.ReadLine(std::chrono::seconds(30));
  ASSERT_THAT(line, HasSubstr("ready on 127.0.0.1:")) << child.ReadAllStderr();
  std::string address = line.substr(line.find("127.0.0.1:"));
  address = address.substr(0, address.find(' '));

  GraphStoreClientOptions anonymous;
  anonymous.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto stranger,
                       GraphStoreClient::Connect(address, anonymous));
  ASSERT_OK(stranger->WaitForHealthy(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(stranger->Info().status().code(),
            absl::StatusCode::kUnauthenticated);

  GraphStoreClientOptions member;
  member.auth_token = token;
  ASSERT_OK_AND_ASSIGN(auto client, GraphStoreClient::Connect(address, member));
  ASSERT_OK(client->Info().status());
  ASSERT_TRUE(client->UsesFeaturePort());
  std::vector<float> row(6);
  ASSERT_OK(client->GetFeatures({150}, 6, row.data()));
  EXPECT_TRUE(client->UsesFeaturePort());  // Served there, not over gRPC.
  EXPECT_EQ(row, std::vector<float>(graph_.Row(150), graph_.Row(150) + 6));

  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  EXPECT_EQ(child.Wait(), 0) << child.ReadAllStderr();
}

}  // namespace
}  // namespace shardgnn
