// `shardgnn launch` across real "hosts": network namespaces on a bridge, each
// running Debian's sshd (/usr/sbin/sshd) on its own address with a key made
// for the test, reached with OpenSSH through an ssh config file of the test's
// own. The launcher runs in the bridge's namespace. Needs root (namespaces),
// iproute2, openssh-server, openssh-client and rsync, as CI has; skipped
// otherwise. The bad-cluster-file cases need none of that.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/cli/process_table.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::LastErrorLine;
using testing::Lines;
using testing::RunShardgnn;
using testing::StartShardgnn;
using testing::TempDir;

constexpr char kIp[] = "/usr/sbin/ip";
constexpr char kSshd[] = "/usr/sbin/sshd";
constexpr int kHosts = 2;

bool Shell(const std::string& command) {
  return std::system(absl::StrCat(command, " >/dev/null 2>&1").c_str()) == 0;
}

bool Ip(const std::string& args) { return Shell(absl::StrCat(kIp, " ", args)); }

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Cora imported and partitioned in 2 under `dir`; returns the partition dir.
std::string PartitionCora(const TempDir& dir) {
  const std::string dataset = dir.Sub("cora");
  const std::string partition = dir.Sub("cora-2");
  Finished imported = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", dataset});
  EXPECT_EQ(imported.exit_status, 0) << imported.output;
  Finished parted = RunShardgnn({"-q", "partition", "--dataset", dataset,
                                 "--parts", "2", "--out", partition});
  EXPECT_EQ(parted.exit_status, 0) << parted.output;
  return partition;
}

// Host i (1-based) is namespace host_ns_[i-1] at 10.77.0.i, ssh name "hI";
// the bridge and the launcher are in switch_ns_ at 10.77.0.254. The
// addresses exist only inside these namespaces, so parallel tests do not
// collide; the names carry the pid.
class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root: network namespaces and sshd";
    }
    for (const char* tool : {kIp, kSshd, "/usr/bin/ssh", "/usr/bin/ssh-keygen",
                             "/usr/bin/rsync"}) {
      if (access(tool, X_OK) != 0) {
        GTEST_SKIP() << tool
                     << " is missing (Debian: iproute2, openssh-server, "
                        "openssh-client, rsync; scripts/test.sh installs them)";
      }
    }
    const std::string id = std::to_string(getpid());
    switch_ns_ = "sgL" + id + "s";
    if (!Ip("netns add " + switch_ns_)) {
      GTEST_SKIP() << "`ip netns add` fails here (no CAP_SYS_ADMIN?)";
    }
    namespaces_.push_back(switch_ns_);
    ASSERT_TRUE(Ip("-n " + switch_ns_ + " link add br0 type bridge"));
    ASSERT_TRUE(Ip("-n " + switch_ns_ + " addr add 10.77.0.254/24 dev br0"));
    ASSERT_TRUE(Ip("-n " + switch_ns_ + " link set br0 up"));
    ASSERT_TRUE(Ip("-n " + switch_ns_ + " link set lo up"));
    for (int i = 1; i <= kHosts; ++i) {
      const std::string ns = absl::StrCat("sgL", id, "h", i);
      const std::string veth = absl::StrCat("sgl", id, "v", i);
      const std::string port = absl::StrCat("sgl", id, "b", i);
      ASSERT_TRUE(Ip("netns add " + ns));
      namespaces_.push_back(ns);
      host_ns_.push_back(ns);
      ASSERT_TRUE(
          Ip(absl::StrCat("link add ", veth, " type veth peer name ", port)));
      ASSERT_TRUE(Ip(absl::StrCat("link set ", veth, " netns ", ns)));
      ASSERT_TRUE(Ip(absl::StrCat("link set ", port, " netns ", switch_ns_)));
      ASSERT_TRUE(
          Ip(absl::StrCat("-n ", ns, " link set ", veth, " name eth0")));
      ASSERT_TRUE(
          Ip(absl::StrCat("-n ", ns, " addr add 10.77.0.", i, "/24 dev eth0")));
      ASSERT_TRUE(Ip(absl::StrCat("-n ", ns, " link set eth0 up")));
      ASSERT_TRUE(Ip(absl::StrCat("-n ", ns, " link set lo up")));
      ASSERT_TRUE(Ip(
          absl::StrCat("-n ", switch_ns_, " link set ", port, " master br0")));
      ASSERT_TRUE(
          Ip(absl::StrCat("-n ", switch_ns_, " link set ", port, " up")));
    }
    ASSERT_NO_FATAL_FAILURE(StartSshd());
    partition_ = PartitionCora(dir_);
    ASSERT_FALSE(HasFailure());
  }

  void TearDown() override {
    // Whatever a failed test left in the hosts (sshd sessions, servers) goes
    // with them.
    for (const auto& ns : namespaces_) {
      Shell(absl::StrCat("for p in $(", kIp, " netns pids ", ns,
                         "); do kill -9 $p; done"));
    }
    sshd_.clear();
    for (const auto& ns : namespaces_) Ip("netns del " + ns);
  }

  // A host key and a client key, sshd on each host's address, and an ssh
  // config naming the hosts h1, h2, ... with the client key and a
  // known_hosts file that holds the host key.
  void StartSshd() {
    ASSERT_TRUE(Shell(absl::StrCat("ssh-keygen -q -t ed25519 -N '' -f ",
                                   dir_.Sub("host_key"))));
    ASSERT_TRUE(Shell(
        absl::StrCat("ssh-keygen -q -t ed25519 -N '' -f ", dir_.Sub("id"))));
    fs::copy_file(dir_.Sub("id.pub"), dir_.Sub("authorized_keys"));
    // sshd's privilege separation directory (the Debian service makes it).
    mkdir("/run/sshd", 0755);
    std::vector<std::string> key =
        absl::StrSplit(ReadFile(dir_.Sub("host_key.pub")), ' ');
    ASSERT_GE(key.size(), 2u);
    std::string known_hosts, ssh_config;
    for (int i = 1; i <= kHosts; ++i) {
      const std::string address = absl::StrCat("10.77.0.", i);
      const std::string config = dir_.Sub(absl::StrCat("sshd_config_", i));
      WriteFile(
          config,
          absl::StrCat("ListenAddress ", address, "\nPort 22\nHostKey ",
                       dir_.Sub("host_key"), "\nPidFile ",
                       dir_.Sub(absl::StrCat("sshd_", i, ".pid")),
                       "\nAuthorizedKeysFile ", dir_.Sub("authorized_keys"),
                       "\nStrictModes no\nPermitRootLogin "
                       "prohibit-password\nPasswordAuthentication "
                       "no\nKbdInteractiveAuthentication no\nUsePAM "
                       "no\nLogLevel ERROR\n"));
      SubprocessOptions options;
      options.name = absl::StrCat("sshd on h", i);
      options.argv = {kIp,  "netns", "exec", host_ns_[i - 1], kSshd,
                      "-D", "-e",    "-f",   config};
      auto sshd = Subprocess::Start(options);
      ASSERT_OK(sshd.status());
      sshd_.push_back(std::move(sshd).value());
      absl::StrAppend(&known_hosts, address, " ", key[0], " ", key[1], "\n");
      absl::StrAppend(&ssh_config, "Host h", i, "\n  HostName ", address,
                      "\n  User root\n  IdentityFile ", dir_.Sub("id"),
                      "\n  IdentitiesOnly yes\n  UserKnownHostsFile ",
                      dir_.Sub("known_hosts"),
                      "\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n");
    }
    WriteFile(dir_.Sub("known_hosts"), known_hosts);
    WriteFile(dir_.Sub("ssh_config"), ssh_config);
    // Ready when a command runs over ssh (polled, with a deadline).
    for (int i = 1; i <= kHosts; ++i) {
      const auto deadline = std::chrono::steady_clock::now() + seconds(20);
      while (!Shell(absl::StrCat(
          kIp, " netns exec ", switch_ns_, " ssh -F ", dir_.Sub("ssh_config"),
          " -o BatchMode=yes -o ConnectTimeout=2 h", i, " true"))) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline)
            << "sshd on h" << i << " does not answer; its output:\n"
            << sshd_[static_cast<size_t>(i - 1)]->Tail(20);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }

  // h1 serves part 0 and runs trainer 0, h2 part 1 and trainer 1; each has
  // a work dir of its own (they share this machine's files).
  std::string WriteCluster(const std::string& extra_train = "") {
    std::string text = absl::StrCat(
        "ssh_config = \"", dir_.Sub("ssh_config"), "\"\nbinary = \"",
        testing::ShardgnnBinary(), "\"\nconnect_timeout = 5\n\n[train]\n",
        "epochs = 2\n", extra_train, "\n");
    for (int i = 1; i <= kHosts; ++i) {
      absl::StrAppend(&text, "[[host]]\nssh = \"h", i,
                      "\"\naddress = \"10.77.0.", i, "\"\nparts = [", i - 1,
                      "]\ntrainers = 1\nwork_dir = \"",
                      dir_.Sub(absl::StrCat("work-h", i)), "\"\n\n");
    }
    const std::string path = dir_.Sub("cluster.toml");
    WriteFile(path, text);
    return path;
  }

  std::vector<std::string> LaunchArgs(const std::string& out) {
    return {"launch", WriteClusterFlag(), "--partition", partition_, "--out",
            out};
  }
  std::string WriteClusterFlag() { return "--cluster=" + cluster_; }

  std::vector<std::string> InSwitch() const {
    return {kIp, "netns", "exec", switch_ns_};
  }

  // The shardgnn processes (not the ssh wrappers) running in the hosts.
  std::vector<std::string> RemoteShardgnn() const {
    std::vector<std::string> found;
    for (const auto& ns : host_ns_) {
      FILE* pipe = popen(absl::StrCat(kIp, " netns pids ", ns).c_str(), "r");
      if (pipe == nullptr) continue;
      char line[64];
      while (std::fgets(line, sizeof(line), pipe) != nullptr) {
        std::string pid(line);
        pid.erase(pid.find_last_not_of("\n") + 1);
        std::string cmdline = ReadFile("/proc/" + pid + "/cmdline");
        for (char& c : cmdline) c = c == '\0' ? ' ' : c;
        if (cmdline.rfind(testing::ShardgnnBinary(), 0) == 0) {
          found.push_back(ns + ": " + pid + " " + cmdline);
        }
      }
      pclose(pipe);
    }
    return found;
  }

  // Waits up to 10 s for every remote shardgnn process to be gone.
  void ExpectNoRemoteShardgnn() {
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    std::vector<std::string> left = RemoteShardgnn();
    while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = RemoteShardgnn();
    }
    EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
  }

  TempDir dir_;
  std::string switch_ns_;
  std::vector<std::string> namespaces_, host_ns_;
  std::vector<std::unique_ptr<Subprocess>> sshd_;
  std::string partition_;
  std::string cluster_;
};

bool HasLineStarting(const std::string& output, const std::string& prefix) {
  for (const auto& line : Lines(output)) {
    if (line.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST_F(LaunchTest, TrainsOnTwoHostsAndCopiesOnlyWhatChanged) {
  cluster_ = WriteCluster();
  const std::string out = dir_.Sub("run");
  Finished run = RunShardgnn(LaunchArgs(out), InSwitch());
  ASSERT_EQ(run.exit_status, 0) << run.output;
  for (const char* prefix : {"[h1 server 0] ", "[h2 server 1] ",
                             "[h1 trainer 0] ", "[h2 trainer 1] "}) {
    EXPECT_TRUE(HasLineStarting(run.output, prefix))
        << "no line starts with '" << prefix << "':\n"
        << run.output;
  }
  EXPECT_THAT(run.output, HasSubstr("part 0 on h1: copying"));
  EXPECT_THAT(run.output, HasSubstr("part 1 on h2: copying"));
  // Rank 0's trainer reports the test accuracy; the servers listened on
  // their hosts' addresses.
  EXPECT_THAT(run.output, HasSubstr("ready on 10.77.0.1:"));
  EXPECT_THAT(run.output, HasSubstr("ready on 10.77.0.2:"));
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object()) << run.output;
  ASSERT_TRUE(summary["test_acc"].is_number()) << summary.dump(2);
  EXPECT_GT(summary["test_acc"].get<double>(), 0.2);
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["epochs_run"], 2);
  EXPECT_EQ(summary["launch"]["hosts"].size(), 2u);
  EXPECT_TRUE(fs::exists(out + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(out + "/report.html"));
  // The launch's own configuration, with the cluster file's [train] epochs.
  EXPECT_THAT(ReadFile(out + "/config.toml"), HasSubstr("\nepochs = 2\n"));
  ExpectNoRemoteShardgnn();

  // Again: the parts are there with the same content, so nothing is copied.
  Finished again =
      RunShardgnn({"launch", WriteClusterFlag(), "--partition", partition_,
                   "--out", dir_.Sub("run2"), "--epochs", "1"},
                  InSwitch());
  ASSERT_EQ(again.exit_status, 0) << again.output;
  EXPECT_THAT(again.output,
              HasSubstr("part 0 on h1: already there (same content checksum)"));
  EXPECT_THAT(again.output,
              HasSubstr("part 1 on h2: already there (same content checksum)"));
  auto summary2 =
      nlohmann::json::parse(std::ifstream(dir_.Sub("run2") + "/summary.json"),
                            nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary2.is_object()) << again.output;
  EXPECT_EQ(summary2["epochs_run"], 1);  // The command line wins over [train].
  ExpectNoRemoteShardgnn();
}

// A link-prediction run: the partition's edge splits (edges_*.npy) reach
// every host with partition.json, and the trainers there read them.
TEST_F(LaunchTest, TrainsALinkTaskOnTwoHosts) {
  cluster_ = WriteCluster();
  const std::string dataset = dir_.Sub("cora-links");
  const std::string partition = dir_.Sub("cora-links-2");
  Finished imported = RunShardgnn(
      {"-q", "dataset", "import", "--format", "ogb", "--undirected", "--input",
       testing::SourcePath("datasets/cora/ogb-planetoid"), "--out", dataset,
       "--edge-split", "0.85,0.05,0.10", "--seed", "1"});
  ASSERT_EQ(imported.exit_status, 0) << imported.output;
  Finished parted = RunShardgnn({"-q", "partition", "--dataset", dataset,
                                 "--parts", "2", "--out", partition});
  ASSERT_EQ(parted.exit_status, 0) << parted.output;
  const std::string out = dir_.Sub("link-run");
  Finished run =
      RunShardgnn({"launch", WriteClusterFlag(), "--partition", partition,
                   "--out", out, "--task", "link", "--epochs", "2"},
                  InSwitch());
  ASSERT_EQ(run.exit_status, 0) << run.output;
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["task"], "link");
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_GT(summary["test_auc"].get<double>(), 0.7) << summary.dump(2);
  ExpectNoRemoteShardgnn();
}

// h2's storage server is killed mid-run (as if its machine lost it): launch
// fails within a bounded time, naming that server and host, and leaves no
// shardgnn process on any host.
TEST_F(LaunchTest, KilledServerFailsTheLaunchNamingItsHost) {
  cluster_ = WriteCluster();
  std::vector<std::string> args = LaunchArgs(dir_.Sub("run"));
  args.insert(args.end(), {"--epochs", "1000", "--server-wait", "5"});
  auto launch = StartShardgnn(args, "shardgnn launch", InSwitch());
  ASSERT_NE(launch, nullptr);
  ASSERT_OK(launch->WaitForLine("epoch   1/1000", kRunTimeout));
  const std::vector<testing::ProcessInfo> servers =
      testing::ProcessesMentioning("--listen 10.77.0.2:0");
  std::vector<pid_t> killed;
  for (const auto& p : servers) {
    if (p.cmdline.rfind(testing::ShardgnnBinary(), 0) == 0) {
      killed.push_back(p.pid);
    }
  }
  ASSERT_EQ(killed.size(), 1u) << testing::Describe(servers);
  const auto kill_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(killed[0], SIGKILL), 0);
  std::optional<int> status = launch->Wait(seconds(60));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_at)
          .count();
  ASSERT_TRUE(status.has_value()) << "launch still runs 60 s after the kill";
  const std::string output = launch->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_LT(elapsed, 40) << output;
  const std::string error = LastErrorLine(output);
  EXPECT_THAT(error, HasSubstr("storage server 1 on h2")) << output;
  EXPECT_THAT(error, HasSubstr("10.77.0.2:")) << output;
  std::printf("launch failed %.1f s after the kill: %s\n", elapsed,
              error.c_str());
  EXPECT_FALSE(fs::exists(dir_.Sub("run") + "/summary.json"));
  ExpectNoRemoteShardgnn();
}

// --model-script: the module reaches every trainer's host with the run
// (the trainers there read the copy in the remote run directory), the run
// trains it, and summary.json names the user's file.
TEST_F(LaunchTest, TheModelScriptGoesToEveryTrainersHost) {
  const std::string module = dir_.Sub("gin.pt");
  ASSERT_EQ(std::system(
                absl::StrCat(
                    "/usr/bin/python3 ", SHARDGNN_MAKE_MODEL_PY,
                    " --model gin --in-dim 1433 --classes 7 --ops-library none",
                    " --out ", module, " >/dev/null 2>&1")
                    .c_str()),
            0)
      << "make_model.py failed (Debian's python3-torch?)";
  cluster_ = WriteCluster();
  const std::string out = dir_.Sub("run");
  std::vector<std::string> args = LaunchArgs(out);
  args.insert(args.end(), {"--model-script", module});
  Finished run = RunShardgnn(args, InSwitch());
  ASSERT_EQ(run.exit_status, 0) << run.output;
  const std::string original = ReadFile(module);
  for (int i = 1; i <= kHosts; ++i) {
    int copies = 0;
    for (const auto& entry :
         fs::directory_iterator(dir_.Sub(absl::StrCat("work-h", i, "/runs")))) {
      const fs::path copy = entry.path() / ".model-script.pt";
      if (!fs::exists(copy)) continue;
      ++copies;
      EXPECT_EQ(ReadFile(copy.string()), original) << copy;
      // The trainer there read the copy.
      EXPECT_THAT(run.output,
                  HasSubstr(absl::StrCat("model script ", "runs/",
                                         entry.path().filename().string(),
                                         "/.model-script.pt")));
    }
    EXPECT_EQ(copies, 1) << "host h" << i;
  }
  EXPECT_FALSE(fs::exists(out + "/.model-script.pt"));
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["model"]["kind"], "script");
  EXPECT_EQ(summary["model"]["script"], module);
  EXPECT_TRUE(fs::exists(out + "/model_script.pt"));
  ExpectNoRemoteShardgnn();

  // A module that is not there is one error line, before any host is
  // contacted.
  args = LaunchArgs(dir_.Sub("run2"));
  args.insert(args.end(), {"--model-script", dir_.Sub("missing.pt")});
  Finished missing = RunShardgnn(args, InSwitch());
  EXPECT_NE(missing.exit_status, 0);
  EXPECT_THAT(
      LastErrorLine(missing.output),
      HasSubstr("--model-script " + dir_.Sub("missing.pt") + ": no such file"));
}

// Ctrl-C (SIGINT) to the launcher mid-run stops every remote process.
TEST_F(LaunchTest, InterruptStopsEveryRemoteProcess) {
  cluster_ = WriteCluster();
  std::vector<std::string> args = LaunchArgs(dir_.Sub("run"));
  args.insert(args.end(), {"--epochs", "1000"});
  auto launch = StartShardgnn(args, "shardgnn launch", InSwitch());
  ASSERT_NE(launch, nullptr);
  ASSERT_OK(launch->WaitForLine("epoch   1/1000", kRunTimeout));
  EXPECT_FALSE(RemoteShardgnn().empty());
  // `ip netns exec` execs the launcher: its pid is the launcher's.
  launch->Signal(SIGINT);
  std::optional<int> status = launch->Wait(seconds(40));
  ASSERT_TRUE(status.has_value()) << "launch still runs 40 s after SIGINT";
  const std::string output = launch->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_THAT(LastErrorLine(output), HasSubstr("interrupted by signal 2"))
      << output;
  ExpectNoRemoteShardgnn();
}

// A bad cluster file is one error line naming the file (no ssh is tried).
TEST(LaunchClusterFileTest, BadFilesAreOneErrorLine) {
  TempDir dir;
  const std::string partition = PartitionCora(dir);
  ASSERT_FALSE(::testing::Test::HasFailure());
  struct Case {
    std::string text;
    std::string error;
  };
  const std::string host = "[[host]]\nssh = \"a\"\naddress = \"10.0.0.1\"\n";
  const std::vector<Case> cases = {
      {host + "parts = [0, 1]\ntrainers = 1\nprts = [1]\n",
       "cluster.toml:6:1: unknown key 'prts' in [[host]] 1"},
      {"binary = \"/x/shardgnn\"\n[train]\nepochs = 2\n",
       "cluster.toml: no [[host]] entries"},
      {host + "parts = [0]\ntrainers = 1\n",
       "cluster.toml: no host serves part 1 of the partition's 2"},
      {host + "parts = [0, 1, 2]\ntrainers = 1\n",
       "host 'a' lists part 2, but the partition has 2 parts (0 to 1)"},
      {"[[host]]\naddress = \"10.0.0.1\"\nparts = [0, 1]\ntrainers = 1\n",
       "[[host]] 1 (" + dir.Sub("cluster.toml") + ":1) has no 'ssh'"},
      {host + "parts = [0, 1]\ntrainers = 1\n[train]\nepoch = 2\n",
       "[train] has 'epoch', which is not a flag of `shardgnn train`"},
      {host + "parts = [0, 1]\ntrainers = 1\n[train]\nshares = \"1,2\"\n",
       "--shares '1,2' gives 2 weights for the 1 trainers of"},
  };
  for (const Case& c : cases) {
    WriteFile(dir.Sub("cluster.toml"), c.text);
    Finished run =
        RunShardgnn({"launch", "--cluster", dir.Sub("cluster.toml"),
                     "--partition", partition, "--out", dir.Sub("run")});
    EXPECT_EQ(run.exit_status, 1) << run.output;
    const std::vector<std::string> lines = Lines(run.output);
    ASSERT_EQ(lines.size(), 1u) << run.output;
    EXPECT_EQ(lines[0].rfind("shardgnn: error: ", 0), 0u) << run.output;
    EXPECT_THAT(lines[0], HasSubstr(c.error));
    EXPECT_THAT(lines[0], HasSubstr(dir.Sub("cluster.toml")));
  }
}

}  // namespace
}  // namespace shardgnn
