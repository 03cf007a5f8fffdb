#include "cli/cluster_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace shardgnn::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kPath[] = "/etc/shardgnn/cluster.toml";

TEST(ClusterFileTest, DefaultsAndOverrides) {
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec, ParseClusterFile(R"(
binary = "/opt/shardgnn"
work_dir = "/srv/sg"
ssh_config = "ssh_config"
ssh_options = ["StrictHostKeyChecking=accept-new"]
connect_timeout = 3
master_port = 29600
env = { OMP_PROC_BIND = "true" }

[train]
epochs = 3
fanouts = [15, 10]
exact_test = true
lr = 0.005
model = "gat"

[[host]]
ssh = "node1"
address = "10.0.0.1"
parts = [0, 1]
trainers = 2

[[host]]
name = "second"
ssh = "me@node2"
address = "10.0.0.2"
port = 2222
user = "me"
identity = "keys/id"
parts = [1]
work_dir = "sg"
binary = "bin/shardgnn"
env = { OMP_PROC_BIND = "false", N = 4 }
)",
                                                          kPath));
  EXPECT_EQ(spec.path, kPath);
  EXPECT_EQ(spec.ssh_config, "/etc/shardgnn/ssh_config");
  EXPECT_THAT(spec.ssh_options,
              ElementsAre("StrictHostKeyChecking=accept-new"));
  EXPECT_EQ(spec.connect_timeout_seconds, 3);
  EXPECT_EQ(spec.alive_interval_seconds, 5);
  EXPECT_EQ(spec.master_port, 29600);
  EXPECT_THAT(spec.train_flags,
              ElementsAre(Pair("epochs", "3"), Pair("exact_test", "true"),
                          Pair("fanouts", "15,10"), Pair("lr", "0.005"),
                          Pair("model", "gat")));
  EXPECT_EQ(spec.train_where, std::string(kPath) + ":10");
  ASSERT_EQ(spec.hosts.size(), 2u);
  const ClusterHost& a = spec.hosts[0];
  EXPECT_EQ(a.name, "node1");
  EXPECT_EQ(a.ssh, "node1");
  EXPECT_EQ(a.ssh_port, 0);
  EXPECT_EQ(a.binary, "/opt/shardgnn");
  EXPECT_EQ(a.work_dir, "/srv/sg");
  EXPECT_THAT(a.parts, ElementsAre(0, 1));
  EXPECT_EQ(a.trainers, 2);
  EXPECT_THAT(a.env, ElementsAre(Pair("OMP_PROC_BIND", "true")));
  EXPECT_EQ(a.where, std::string(kPath) + ":17");
  const ClusterHost& b = spec.hosts[1];
  EXPECT_EQ(b.name, "second");
  EXPECT_EQ(b.ssh_port, 2222);
  EXPECT_EQ(b.user, "me");
  EXPECT_EQ(b.identity, "/etc/shardgnn/keys/id");
  EXPECT_EQ(b.trainers, 0);
  EXPECT_EQ(b.work_dir, "sg");  // Remote: relative to the login directory.
  EXPECT_EQ(b.binary, "bin/shardgnn");
  EXPECT_THAT(b.env,
              ElementsAre(Pair("N", "4"), Pair("OMP_PROC_BIND", "false")));
  EXPECT_EQ(spec.TotalTrainers(), 2);
  EXPECT_OK(CheckPartsServed(spec, 2));
}

TEST(ClusterFileTest, BuiltInDefaults) {
  ASSERT_OK_AND_ASSIGN(ClusterSpec spec,
                       ParseClusterFile("[[host]]\nssh = \"a\"\naddress = "
                                        "\"a\"\ntrainers = 1\nparts = [0]\n",
                                        "cluster.toml"));
  EXPECT_EQ(spec.hosts[0].binary, "shardgnn");
  EXPECT_EQ(spec.hosts[0].work_dir, "shardgnn-launch");
  EXPECT_EQ(spec.ssh_config, "");
  EXPECT_EQ(spec.master_port, 29500);
  EXPECT_EQ(spec.connect_timeout_seconds, 10);
}

struct BadCase {
  const char* name;
  const char* text;
  const char* error;
};

class ClusterFileErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ClusterFileErrorTest, IsOneErrorNamingTheFile) {
  auto spec = ParseClusterFile(GetParam().text, "c.toml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr(GetParam().error));
  EXPECT_THAT(spec.status().message(), HasSubstr("c.toml"));
  EXPECT_EQ(spec.status().message().find('\n'), absl::string_view::npos);
}

#define HOST "[[host]]\nssh = \"a\"\naddress = \"10.0.0.1\"\ntrainers = 1\n"

INSTANTIATE_TEST_SUITE_P(
    Files, ClusterFileErrorTest,
    ::testing::Values(
        BadCase{"TomlSyntax", "[[host]\n",
                "c.toml:1:"},  // TOML syntax, with its position.
        BadCase{"UnknownTopKey", "wrk_dir = \"x\"\n" HOST,
                "c.toml:1:1: unknown key 'wrk_dir' in the cluster file"},
        BadCase{"UnknownHostKey", HOST "prts = [0]\n",
                "c.toml:5:1: unknown key 'prts' in [[host]] 1"},
        BadCase{"NoHosts", "binary = \"x\"\n", "c.toml: no [[host]] entries"},
        BadCase{"HostNotATable", "host = 3\n",
                "'host' must be a list of tables"},
        BadCase{"NoSsh", "[[host]]\naddress = \"x\"\n",
                "[[host]] 1 (c.toml:1) has no 'ssh'"},
        BadCase{"NoAddress", "[[host]]\nssh = \"a\"\n", "has no 'address'"},
        BadCase{"PartTwice", HOST "parts = [0, 0]\n",
                "c.toml:5:13: part 0 is listed twice"},
        BadCase{"NegativePart", HOST "parts = [-1]\n",
                "part -1 is out of range"},
        BadCase{"PartsNotAList", HOST "parts = \"0\"\n",
                "'parts' must be a list of part numbers"},
        BadCase{"PortOutOfRange", HOST "port = 70000\n",
                "'port' must be an integer from 1 to 65535"},
        BadCase{"TrainersNotAnInteger",
                "[[host]]\nssh = \"a\"\naddress = \"b\"\ntrainers = \"2\"\n",
                "'trainers' must be an integer"},
        BadCase{"BadVariableName", HOST "env = { \"1X\" = \"y\" }\n",
                "'1X' is not a variable name"},
        BadCase{"BadTrainValue", HOST "[train]\nfanouts = [[1]]\n",
                "'fanouts' must be a string"},
        BadCase{"NoTrainers", "[[host]]\nssh = \"a\"\naddress = \"b\"\n",
                "no host runs trainers"},
        BadCase{"SameNameTwice", HOST HOST, "two hosts are named 'a'"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return std::string(info.param.name);
    });

#undef HOST

TEST(ClusterFileTest, PartsMustFitThePartition) {
  ASSERT_OK_AND_ASSIGN(
      ClusterSpec spec,
      ParseClusterFile("[[host]]\nssh = \"a\"\naddress = \"b\"\nparts = [0, "
                       "3]\ntrainers = 1\n",
                       "c.toml"));
  absl::Status status = CheckPartsServed(spec, 3);
  EXPECT_THAT(status.message(),
              HasSubstr("c.toml:1: host 'a' lists part 3, but the partition "
                        "has 3 parts (0 to 2)"));
  status = CheckPartsServed(spec, 5);
  EXPECT_THAT(status.message(), HasSubstr("c.toml: no host serves parts 1, 2, "
                                          "4 of the partition's 5"));
}

}  // namespace
}  // namespace shardgnn::cli
