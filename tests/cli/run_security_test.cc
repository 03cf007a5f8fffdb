// `shardgnn run`'s cluster security (issue 12; docs/architecture.md,
// "Security"): everything a local run starts listens on 127.0.0.1 only, its
// generated auth token is on no command line and protects its servers, and
// servers started with a token serve only runs that have it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/subprocess.h"
#include "graphstore/client.h"
#include "nlohmann/json.hpp"
#include "tests/cli/process_table.h"
#include "tests/cli/run_fixture.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::AllOf;
using testing::Describe;
using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::LastErrorLine;
using ::testing::Not;
using testing::ProcessInfo;
using testing::ReadyAddress;
using testing::RunShardgnn;
using testing::RunTest;
using testing::StartShardgnn;

// Everything a local run starts listens on 127.0.0.1 only: servers, feature
// ports, Gloo pairs; the trainers meet through a file (no store socket).
TEST_F(RunTest, EveryChildListensOnLoopbackOnly) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(StartTraining(&run, &children));
  int listening = 0;
  for (const auto& c : children) {
    for (const std::string& addr : testing::ListeningAddresses(c.pid)) {
      ++listening;
      EXPECT_EQ(addr.rfind("127.0.0.1:", 0), 0u)
          << c.cmdline << " listens on " << addr;
    }
  }
  // Each server's gRPC and feature ports at least.
  EXPECT_GE(listening, 4) << Describe(children);
  run->Signal(SIGTERM);
  EXPECT_TRUE(run->Wait(seconds(30)).has_value());
  EXPECT_FALSE(fs::exists(dir_.Sub("run") + "/.rendezvous"));
}

// Issue 12: a local run makes a random token, 0600 in the work dir, and gives
// its servers and trainers the file's path: the token is on no command line
// (nor in any environment), the servers refuse calls without it, and the file
// is gone after the run.
TEST_F(RunTest, GeneratedTokenProtectsTheServersAndIsOnNoCommandLine) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(StartTraining(&run, &children));
  std::vector<std::string> token_files;
  for (const auto& entry : fs::directory_iterator(work_dir_)) {
    if (entry.path().filename().string().rfind(".auth-token-", 0) == 0) {
      token_files.push_back(entry.path().string());
    }
  }
  ASSERT_EQ(token_files.size(), 1u);
  EXPECT_EQ(fs::status(token_files[0]).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::string token;
  std::getline(std::ifstream(token_files[0]), token);
  ASSERT_EQ(token.size(), 64u);

  std::string server_address;
  for (const auto& c : children) {
    // /proc/PID/cmdline and /proc/PID/environ, NUL-separated as they are.
    for (const char* file : {"cmdline", "environ"}) {
      std::ifstream in(absl::StrCat("/proc/", c.pid, "/", file),
                       std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
      ASSERT_FALSE(all.empty()) << c.cmdline;
      EXPECT_EQ(all.find(token), std::string::npos)
          << "the token is in /proc/" << c.pid << "/" << file;
    }
    EXPECT_THAT(c.cmdline, HasSubstr("--auth-token-file " + token_files[0]));
  }
  ASSERT_OK(run->WaitForLine("epoch   2/1000", kRunTimeout));
  const std::string output = run->Tail(100000);
  server_address = ReadyAddress(output.substr(output.find("ready on ")));

  // A client without the token is refused; one with it is served.
  GraphStoreClientOptions options;
  options.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(auto stranger,
                       GraphStoreClient::Connect(server_address, options));
  EXPECT_EQ(stranger->Info().status().code(),
            absl::StatusCode::kUnauthenticated);
  options.auth_token = token;
  ASSERT_OK_AND_ASSIGN(auto member,
                       GraphStoreClient::Connect(server_address, options));
  EXPECT_OK(member->Info().status());

  run->Signal(SIGTERM);
  EXPECT_TRUE(run->Wait(seconds(30)).has_value());
  EXPECT_FALSE(fs::exists(token_files[0]));
}

// Issue 12: servers started with --auth-token-file serve a run given the same
// file (its trainers fetch over the feature ports, handshake included) and
// refuse one without it or with another token, before any trainer starts.
TEST_F(RunTest, TokenProtectedServersServeOnlyRunsWithTheToken) {
  const std::string dataset = dir_.Sub("cora");
  const std::string partition = dir_.Sub("parts");
  Finished imported = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", dataset});
  ASSERT_EQ(imported.exit_status, 0) << imported.output;
  Finished parted = RunShardgnn({"-q", "partition", "--dataset", dataset,
                                 "--parts", "2", "--out", partition});
  ASSERT_EQ(parted.exit_status, 0) << parted.output;
  const std::string token_file = dir_.Sub("cluster.token");
  const std::string other_file = dir_.Sub("other.token");
  std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  std::ofstream(other_file) << "fedcba9876543210fedcba9876543210\n";
  fs::permissions(token_file, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(other_file, fs::perms::owner_read | fs::perms::owner_write);

  std::vector<std::unique_ptr<Subprocess>> servers;
  std::vector<std::string> addresses;
  for (int p = 0; p < 2; ++p) {
    servers.push_back(
        StartShardgnn({"serve", "--partition", partition, "--part",
                       std::to_string(p), "--listen", "127.0.0.1:0", "--memory",
                       "--auth-token-file", token_file},
                      absl::StrCat("server ", p)));
    ASSERT_NE(servers.back(), nullptr);
  }
  for (auto& s : servers) {
    ASSERT_OK_AND_ASSIGN(std::string line,
                         s->WaitForLine("ready on ", kRunTimeout));
    addresses.push_back(ReadyAddress(line));
  }
  auto args = [&](const std::string& out) {
    std::vector<std::string> a = RunArgs(dir_.Sub(out), "2");
    for (const std::string& flag :
         {std::string("--servers"), absl::StrJoin(addresses, ","),
          std::string("--partition"), partition,
          std::string("--no-shared-memory")}) {
      a.push_back(flag);
    }
    return a;
  };
  std::vector<std::string> with_token = args("good");
  with_token.push_back("--auth-token-file");
  with_token.push_back(token_file);
  Finished good = RunShardgnn(with_token);
  ASSERT_EQ(good.exit_status, 0) << good.output;
  EXPECT_THAT(good.output, HasSubstr("epoch   2/2"));
  auto summary = nlohmann::json::parse(
      std::ifstream(dir_.Sub("good") + "/summary.json"), nullptr, false);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["remote"]["feature_port_parts"], 2);

  Finished anonymous = RunShardgnn(args("anonymous"));
  EXPECT_NE(anonymous.exit_status, 0);
  EXPECT_THAT(
      LastErrorLine(anonymous.output),
      AllOf(HasSubstr("UNAUTHENTICATED"), HasSubstr("requires an auth token")))
      << anonymous.output;
  EXPECT_THAT(anonymous.output, Not(HasSubstr("epoch ")));

  std::vector<std::string> wrong_token = args("wrong");
  wrong_token.push_back("--auth-token-file");
  wrong_token.push_back(other_file);
  Finished wrong = RunShardgnn(wrong_token);
  EXPECT_NE(wrong.exit_status, 0);
  EXPECT_THAT(LastErrorLine(wrong.output), HasSubstr("wrong auth token"))
      << wrong.output;
  for (auto& s : servers) {
    EXPECT_EQ(s->Poll(), std::nullopt) << s->name() << " stopped";
    EXPECT_EQ(s->Terminate(milliseconds(10000)), 0) << s->Tail(5);
  }
}

// The auth token and the file it is in, of a running `run` in `work_dir`.
std::pair<std::string, std::string> RunToken(const std::string& work_dir) {
  for (const auto& entry : fs::directory_iterator(work_dir)) {
    if (entry.path().filename().string().rfind(".auth-token-", 0) == 0) {
      std::string token;
      std::getline(std::ifstream(entry.path()), token);
      return {token, entry.path().string()};
    }
  }
  return {};
}

// Issue 51: a run's learned rows answer only its secret. The run ID is public
// (embedding_run.json is world-readable); the secret is in a file of mode
// 0600 beside it, in no other file others may read, on no command line and
// in no environment, and another client holding the cluster's token and the
// run ID but not the secret can neither read nor write the run's rows, over
// the feature port or gRPC.
TEST_F(RunTest, LearnedRowsAnswerOnlyTheirRunsSecret) {
  std::unique_ptr<Subprocess> run;
  std::vector<ProcessInfo> children;
  ASSERT_NO_FATAL_FAILURE(
      StartTraining(&run, &children, {"--learn-embeddings", "8"}));
  const std::string out = dir_.Sub("run");
  const std::string secret_file = out + "/embedding_run.secret";
  ASSERT_TRUE(fs::exists(secret_file));
  EXPECT_EQ(fs::status(secret_file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::string secret;
  std::getline(std::ifstream(secret_file), secret);
  ASSERT_EQ(secret.size(), 32u) << secret;
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos);

  for (const auto& c : children) {
    for (const char* file : {"cmdline", "environ"}) {
      std::ifstream in(absl::StrCat("/proc/", c.pid, "/", file),
                       std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
      ASSERT_FALSE(all.empty()) << c.cmdline;
      EXPECT_EQ(all.find(secret), std::string::npos)
          << "the run's secret is in /proc/" << c.pid << "/" << file;
    }
  }
  ASSERT_OK(run->WaitForLine("epoch   2/1000", kRunTimeout));
  // Every file others or the group may read (run directory, snapshots, work
  // dir) is without it.
  // (Files come and go meanwhile: checkpoints are renamed into place.)
  int readable = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           dir_.path(), fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::file_status status = it->status(ec);
    if (ec || !fs::is_regular_file(status) || it->path() == secret_file) {
      ec.clear();
      continue;
    }
    if ((status.permissions() &
         (fs::perms::group_read | fs::perms::others_read)) == fs::perms::none) {
      continue;
    }
    const fs::path path = it->path();
    ++readable;
    std::ifstream in(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
    EXPECT_EQ(all.find(secret), std::string::npos)
        << "the run's secret is in " << path;
  }
  EXPECT_GT(readable, 10);

  // The run ID, as anyone reads it.
  auto run_file = nlohmann::json::parse(
      std::ifstream(out + "/embedding_run.json"), nullptr, false);
  ASSERT_TRUE(run_file.is_object());
  const std::string run_id = run_file["run_id"].get<std::string>();
  const auto [token, token_file] = RunToken(work_dir_);
  ASSERT_EQ(token.size(), 64u);
  const std::string output = run->Tail(100000);
  const std::string server_address =
      ReadyAddress(output.substr(output.find("ready on ")));
  for (bool port : {true, false}) {
    SCOPED_TRACE(port ? "feature port" : "gRPC");
    GraphStoreClientOptions options;
    options.max_attempts = 1;
    options.auth_token = token;
    options.use_feature_port = port;
    ASSERT_OK_AND_ASSIGN(auto intruder,
                         GraphStoreClient::Connect(server_address, options));
    ASSERT_OK_AND_ASSIGN(ServerInfo info, intruder->Info());
    EXPECT_EQ(intruder->UsesFeaturePort(), port);
    EmbeddingTableConfig table;
    table.name = "node";
    table.dim = 8;
    table.run_id = run_id;
    table.run_secret = "0123456789abcdef0123456789abcdef";
    std::vector<float> row(8);
    absl::Status pulled = intruder->PullEmbeddings(
        table, {info.meta.node_start}, 0, -1, absl::ZeroDuration(), row.data());
    EXPECT_EQ(pulled.code(), absl::StatusCode::kPermissionDenied) << pulled;
    EXPECT_THAT(std::string(pulled.message()),
                HasSubstr("another run's table"));
    // A push of a step far ahead (refused anyway if the secret were taken).
    absl::Status pushed =
        intruder->PushEmbeddingGradients(table, 0, int64_t{1} << 40, {}, {});
    EXPECT_EQ(pushed.code(), absl::StatusCode::kPermissionDenied) << pushed;
  }
  EXPECT_EQ(run->Poll(), std::nullopt) << run->Tail(20);
  run->Signal(SIGTERM);
  EXPECT_TRUE(run->Wait(seconds(30)).has_value());
}

}  // namespace
}  // namespace shardgnn
