// Storage servers and trainers on different "hosts": two network namespaces
// joined by a veth pair, each with its own address (needs root, as CI runs).
// The servers listen on host A's address only; the trainers run in host B
// and reach them across the link, so a cut link is a real network partition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using std::chrono::seconds;
using testing::Finished;
using ::testing::HasSubstr;
using testing::kRunTimeout;
using testing::LastErrorLine;
using testing::ReadyAddress;
using testing::ReportedTestAccuracy;
using testing::RunShardgnn;
using testing::StartShardgnn;
using testing::TempDir;

constexpr char kIp[] = "/usr/sbin/ip";

// Runs `ip <args>`; true on success.
bool Ip(const std::string& args) {
  return std::system(absl::StrCat(kIp, " ", args, " 2>&1").c_str()) == 0;
}

// Two namespaces, A (servers) at 10.S.T.1 and B (trainers) at 10.S.T.2, with
// S.T from this process's pid so parallel test runs do not collide.
class TwoHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const int id = static_cast<int>(getpid()) % 60000;
    const std::string net = absl::StrCat("10.", 100 + id / 250, ".", id % 250);
    a_ = absl::StrCat("sgnA", getpid());
    b_ = absl::StrCat("sgnB", getpid());
    link_a_ = absl::StrCat("sga", getpid());
    link_b_ = absl::StrCat("sgb", getpid());
    address_a_ = net + ".1";
    ASSERT_TRUE(Ip("netns add " + a_) && Ip("netns add " + b_))
        << "creating network namespaces needs root (CAP_NET_ADMIN, "
           "CAP_SYS_ADMIN)";
    created_ = true;
    ASSERT_TRUE(Ip(
        absl::StrCat("link add ", link_a_, " type veth peer name ", link_b_)));
    ASSERT_TRUE(Ip(absl::StrCat("link set ", link_a_, " netns ", a_)));
    ASSERT_TRUE(Ip(absl::StrCat("link set ", link_b_, " netns ", b_)));
    ASSERT_TRUE(
        Ip(absl::StrCat("-n ", a_, " addr add ", net, ".1/24 dev ", link_a_)));
    ASSERT_TRUE(
        Ip(absl::StrCat("-n ", b_, " addr add ", net, ".2/24 dev ", link_b_)));
    for (const auto& [ns, link] : {std::pair{a_, link_a_}, {b_, link_b_}}) {
      ASSERT_TRUE(Ip(absl::StrCat("-n ", ns, " link set ", link, " up")));
      ASSERT_TRUE(Ip(absl::StrCat("-n ", ns, " link set lo up")));
    }

    // Cora, partitioned in 2, outside any namespace (files are shared).
    const std::string dataset = dir_.Sub("cora");
    partition_ = dir_.Sub("cora-2");
    Finished imported = RunShardgnn(
        {"-q", "dataset", "import", "--format", "ogb", "--undirected",
         "--input", testing::SourcePath("datasets/cora/ogb-planetoid"), "--out",
         dataset});
    ASSERT_EQ(imported.exit_status, 0) << imported.output;
    Finished parted = RunShardgnn({"-q", "partition", "--dataset", dataset,
                                   "--parts", "2", "--out", partition_});
    ASSERT_EQ(parted.exit_status, 0) << parted.output;
  }

  void TearDown() override {
    servers_.clear();  // Terminated with their namespace's processes.
    if (created_) {
      Ip("netns del " + a_);  // Takes its end of the veth pair with it.
      Ip("netns del " + b_);
    }
  }

  std::vector<std::string> In(const std::string& ns) const {
    return {kIp, "netns", "exec", ns};
  }

  // Starts one memory-mode server per part in host A; returns their
  // addresses (on A's address, not loopback).
  std::vector<std::string> StartServers() {
    std::vector<std::string> addresses;
    for (int p = 0; p < 2; ++p) {
      servers_.push_back(StartShardgnn(
          {"serve", "--partition", partition_, "--part", std::to_string(p),
           "--listen", address_a_ + ":0", "--memory"},
          absl::StrCat("server ", p), In(a_)));
      EXPECT_NE(servers_.back(), nullptr);
      if (servers_.back() == nullptr) return {};
    }
    for (auto& s : servers_) {
      auto line = s->WaitForLine("ready on ", kRunTimeout);
      EXPECT_TRUE(line.ok()) << line.status();
      if (!line.ok()) return {};
      addresses.push_back(ReadyAddress(*line));
    }
    return addresses;
  }

  std::vector<std::string> RunArgs(const std::vector<std::string>& servers,
                                   const std::string& out, int epochs) {
    return {"run",         "--servers", absl::StrJoin(servers, ","),
            "--partition", partition_,  "--out",
            out,           "--epochs",  std::to_string(epochs),
            "--timeout",   "30"};
  }

  TempDir dir_;
  std::string partition_;
  std::string a_, b_, link_a_, link_b_, address_a_;
  bool created_ = false;
  std::vector<std::unique_ptr<Subprocess>> servers_;
};

TEST_F(TwoHostsTest, TrainsAgainstServersOnAnotherHost) {
  std::vector<std::string> servers = StartServers();
  ASSERT_EQ(servers.size(), 2u);
  for (const auto& s : servers) {
    EXPECT_THAT(s, HasSubstr(address_a_ + ":"));
  }
  const std::string out = dir_.Sub("run");
  Finished run = RunShardgnn(RunArgs(servers, out, 5), In(b_));
  ASSERT_EQ(run.exit_status, 0) << run.output;
  EXPECT_GT(ReportedTestAccuracy(run.output), 0.3) << run.output;
  auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"),
                                       nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["world_size"], 2);
  // Every request crossed the link (features included: a namespace is not a
  // separate machine, but the trainers map shared memory only when they can
  // open the servers' /proc entries, which they can here; both are valid, so
  // the bytes are counted together).
  const auto& remote = summary["remote"];
  EXPECT_GT(remote["requests"].get<int64_t>(), 0) << remote;
  EXPECT_GT(remote["neighbor_bytes"].get<int64_t>(), 0) << remote;
  EXPECT_GT(remote["feature_bytes"].get<int64_t>() +
                remote["shared_feature_bytes"].get<int64_t>(),
            0)
      << remote;
  for (auto& s : servers_) {
    EXPECT_EQ(s->Poll(), std::nullopt) << s->name() << " stopped";
  }
}

// The link between the hosts goes down mid-run: no hang; the run fails within
// the call deadline plus retries, naming a server it lost, and writes no
// summary. The servers themselves keep running.
TEST_F(TwoHostsTest, NetworkPartitionFailsTheRunNamingTheServer) {
  std::vector<std::string> servers = StartServers();
  ASSERT_EQ(servers.size(), 2u);
  const std::string out = dir_.Sub("run");
  // Features through calls, so every batch needs the link.
  std::vector<std::string> args = RunArgs(servers, out, 1000);
  args.push_back("--no-shared-memory");
  auto run = StartShardgnn(args, "shardgnn run", In(b_));
  ASSERT_NE(run, nullptr);
  ASSERT_OK(run->WaitForLine("epoch   2/1000", kRunTimeout));

  auto cut_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(Ip(absl::StrCat("-n ", a_, " link set ", link_a_, " down")));
  std::optional<int> status = run->Wait(seconds(90));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at)
          .count();
  ASSERT_TRUE(status.has_value()) << "no exit 90 s after the cut";
  const std::string output = run->Tail(100000);
  EXPECT_NE(*status, 0) << output;
  EXPECT_LT(elapsed, 90);
  const std::string error = LastErrorLine(output);
  EXPECT_THAT(error, HasSubstr(address_a_ + ":")) << output;
  std::printf("failed %.1f s after the cut: %s\n", elapsed, error.c_str());
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
  for (auto& s : servers_) {
    EXPECT_EQ(s->Poll(), std::nullopt) << s->name() << " stopped";
  }
}

}  // namespace
}  // namespace shardgnn
