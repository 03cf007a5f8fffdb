#include "trainer/distributed.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/subprocess.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/c10d_gradient_sync.h"

namespace shardgnn {
namespace {
using std::chrono::milliseconds;

DistributedOptions Options(int rank, int world, int port,
                           milliseconds timeout = milliseconds(20000)) {
  DistributedOptions o;
  o.rank = rank;
  o.world_size = world;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.timeout = timeout;
  return o;
}

// Runs `body(rank, group)` on `world` threads, each with its own process group,
// as separate trainers would; they meet through `store_file` if given.
void RunRanks(int world, const std::function<void(int, ProcessGroup&)>& body,
              const std::string& store_file = "") {
  int port = testing::PickFreePort();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DistributedOptions options = Options(r, world, port);
      options.store_file = store_file;
      auto group = ProcessGroup::Connect(options);
      ASSERT_TRUE(group.ok()) << group.status();
      body(r, **group);
    });
  }
  for (auto& t : threads) t.join();
}

// Sets the variables for the scope, and clears every launcher variable before
// and after it.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    Clear();
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() { Clear(); }

 private:
  static void Clear() {
    for (const char* v :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
          "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
          "TORCHELASTIC_RESTART_COUNT", "SLURM_PROCID", "SLURM_NTASKS",
          "SLURM_LOCALID", "SLURM_NODEID", "SLURM_TASKS_PER_NODE",
          "SLURM_NTASKS_PER_NODE"})
      unsetenv(v);
  }
};

TEST(DistributedOptionsTest, ReadsTorchrunVariables) {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "29999", 1);
  ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.master_addr, "10.1.2.3");
  EXPECT_EQ(o.master_port, 29999);
  setenv("RANK", "one", 1);
  auto bad = DistributedOptionsFromEnv({});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RANK"), absl::string_view::npos);
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(v);
  EXPECT_FALSE(ValidateDistributedOptions(Options(2, 2, 1000)).ok());
  EXPECT_FALSE(ValidateDistributedOptions(Options(0, 1, 70000)).ok());
}

// torchrun's static rendezvous: the agent hosts the store, the workers use the
// attempt's key prefix; the local and node ranks are read too.
TEST(DistributedOptionsTest, ReadsTorchrunAgentStoreVariables) {
  {
    ScopedEnv env({{"RANK", "3"},
                   {"WORLD_SIZE", "4"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "2"},
                   {"GROUP_RANK", "1"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "2"}});
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_EQ(o.launcher, "torchrun");
    EXPECT_EQ(o.rank, 3);
    EXPECT_EQ(o.local_rank, 1);
    EXPECT_EQ(o.local_world_size, 2);
    EXPECT_EQ(o.node_rank, 1);
    EXPECT_TRUE(o.use_agent_store);
    EXPECT_EQ(o.store_prefix, "/worker/attempt_2");
    EXPECT_OK(ValidateDistributedOptions(o));
  }
  {
    // --rdzv_backend c10d: the agent sets False and rank 0 hosts the store.
    ScopedEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "False"},
                   {"TORCHELASTIC_RESTART_COUNT", "0"}});
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_FALSE(o.use_agent_store);
    EXPECT_EQ(o.store_prefix, "");
  }
  {
    ScopedEnv env({{"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "x"}});
    auto bad = DistributedOptionsFromEnv({});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("TORCHELASTIC_RESTART_COUNT"),
              absl::string_view::npos);
  }
}

TEST(SlurmTasksPerNodeTest, ExpandsRepeats) {
  using V = std::vector<int>;
  auto parse = [](absl::string_view text) {
    auto counts = ParseSlurmTasksPerNode(text);
    EXPECT_TRUE(counts.ok()) << counts.status();
    return counts.ok() ? *counts : V{};
  };
  EXPECT_EQ(parse("4"), (V{4}));
  EXPECT_EQ(parse("2(x3)"), (V{2, 2, 2}));
  EXPECT_EQ(parse("2(x3),1"), (V{2, 2, 2, 1}));
  EXPECT_EQ(parse("2,1"), (V{2, 1}));
  EXPECT_EQ(parse("16,4(x2),8"), (V{16, 4, 4, 8}));
  for (const char* bad : {"", "0", "-1", "+2", "a", "2(3)", "2(x0)", "2(x3",
                          "2x3", ",", "2,,1", "2(x3),"}) {
    auto parsed = ParseSlurmTasksPerNode(bad);
    EXPECT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_NE(parsed.status().message().find(absl::StrCat("'", bad, "'")),
              absl::string_view::npos)
        << parsed.status();
  }
}

// Under Slurm (RANK and WORLD_SIZE unset) the ranks come from srun's task
// variables; torchrun's win where both are set (torchrun started by srun).
TEST(DistributedOptionsTest, ReadsSlurmVariables) {
  const std::map<std::string, std::string> task = {
      {"SLURM_PROCID", "3"},    {"SLURM_NTASKS", "5"},
      {"SLURM_LOCALID", "0"},   {"SLURM_NODEID", "1"},
      {"MASTER_ADDR", "node0"}, {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
  {
    ScopedEnv env(task);
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_EQ(o.launcher, "Slurm");
    EXPECT_EQ(o.rank, 3);
    EXPECT_EQ(o.world_size, 5);
    EXPECT_EQ(o.local_rank, 0);
    EXPECT_EQ(o.local_world_size, 2);
    EXPECT_EQ(o.node_rank, 1);
    EXPECT_EQ(o.master_addr, "node0");
    EXPECT_EQ(o.master_port, 29500);
    EXPECT_FALSE(o.use_agent_store);
    EXPECT_OK(ValidateDistributedOptions(o));
  }
  {
    // The third node runs one task; SLURM_NTASKS_PER_NODE when
    // SLURM_TASKS_PER_NODE is unset; the first count past the list's end.
    auto vars = task;
    vars["SLURM_NODEID"] = "2";
    {
      ScopedEnv env(vars);
      ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
      EXPECT_EQ(o.local_world_size, 1);
    }
    vars.erase("SLURM_TASKS_PER_NODE");
    vars["SLURM_NTASKS_PER_NODE"] = "2";
    {
      ScopedEnv env(vars);
      ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
      EXPECT_EQ(o.local_world_size, 2);
    }
    vars["SLURM_NTASKS_PER_NODE"] = "2(x";
    {
      ScopedEnv env(vars);
      auto bad = DistributedOptionsFromEnv({});
      ASSERT_FALSE(bad.ok());
      EXPECT_NE(bad.status().message().find("SLURM_NTASKS_PER_NODE"),
                absl::string_view::npos)
          << bad.status();
    }
  }
  {
    auto vars = task;
    vars["RANK"] = "1";
    vars["WORLD_SIZE"] = "2";
    vars["LOCAL_WORLD_SIZE"] = "1";
    ScopedEnv env(vars);
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_EQ(o.launcher, "torchrun");
    EXPECT_EQ(o.rank, 1);
    EXPECT_EQ(o.world_size, 2);
    EXPECT_EQ(o.local_world_size, 1);
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}});
    auto bad = DistributedOptionsFromEnv({});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("SLURM_PROCID='x'"),
              absl::string_view::npos);
  }
  {
    ScopedEnv env(std::map<std::string, std::string>{{"SLURM_PROCID", "0"}});
    auto bad = DistributedOptionsFromEnv({});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("SLURM_NTASKS"),
              absl::string_view::npos);
  }
}

// Several Slurm tasks and no MASTER_ADDR: never a silent world of one, but an
// error saying how to give the address. One task needs none.
TEST(DistributedOptionsTest, SlurmTasksWithoutMasterAddrAreRefused) {
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_EQ(o.world_size, 4);
    EXPECT_EQ(o.master_addr, "");
    absl::Status s = ValidateDistributedOptions(o);
    ASSERT_FALSE(s.ok());
    for (const char* m : {"SLURM_NTASKS=4", "MASTER_ADDR", "--master-addr"})
      EXPECT_NE(s.message().find(m), absl::string_view::npos) << s;
    o.master_addr = "node0";  // --master-addr
    EXPECT_OK(ValidateDistributedOptions(o));
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
    ASSERT_OK_AND_ASSIGN(auto o, DistributedOptionsFromEnv({}));
    EXPECT_EQ(o.master_addr, "127.0.0.1");
    EXPECT_OK(ValidateDistributedOptions(o));
  }
}

void AllreduceBroadcastBarrier(int rank, ProcessGroup& group) {
  std::vector<float> values = {1.0f * rank, 10.0f};
  ASSERT_OK(group.AllreduceSum(values.data(), 2));
  EXPECT_EQ(values, (std::vector<float>{3.0f, 30.0f}));
  std::vector<double> counts = {0.5 * (rank + 1)};
  ASSERT_OK(group.AllreduceSum(counts.data(), 1));
  EXPECT_DOUBLE_EQ(counts[0], 3.0);
  std::vector<float> weights = {static_cast<float>(rank),
                                static_cast<float>(rank * 2)};
  ASSERT_OK(group.Broadcast(weights.data(), 2, 0));
  EXPECT_EQ(weights, (std::vector<float>{0.0f, 0.0f}));
  ASSERT_OK(group.Barrier());
}

TEST(ProcessGroupTest, AllreduceBroadcastBarrier) {
  RunRanks(3, AllreduceBroadcastBarrier);
}

// Through a FileStore, as `run` does: the same results, and the last rank to
// leave removes the file.
TEST(ProcessGroupTest, RendezvousThroughAFile) {
  testing::TempDir dir;
  const std::string file = dir.Sub("rendezvous");
  RunRanks(3, AllreduceBroadcastBarrier, file);
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(ProcessGroupTest, MissingPeerFailsRendezvousWithinTimeout) {
  auto start = std::chrono::steady_clock::now();
  auto group = ProcessGroup::Connect(
      Options(0, 2, testing::PickFreePort(), milliseconds(1500)));
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("127.0.0.1"), absl::string_view::npos)
      << group.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// A trainer that never starts (a wrong WORLD_SIZE, another MASTER_PORT) is
// named by the ranks that did, through a TCPStore and through a file (a rank
// whose store goes away with rank 0 names them too).
TEST(ProcessGroupTest, RanksThatNeverJoinAreNamed) {
  testing::TempDir dir;
  for (const std::string& store_file : {std::string(), dir.Sub("rendezvous")}) {
    SCOPED_TRACE(store_file.empty() ? "TCPStore" : "FileStore");
    const int port = testing::PickFreePort();
    std::vector<absl::Status> status(3);
    std::vector<std::thread> threads;
    for (int r : {0, 2}) {
      threads.emplace_back([&, r] {
        DistributedOptions options = Options(r, 4, port, milliseconds(2000));
        options.store_file = store_file;
        status[r > 0 ? 1 : 0] = ProcessGroup::Connect(options).status();
      });
    }
    for (auto& t : threads) t.join();
    for (int i : {0, 1}) {
      EXPECT_EQ(status[i].code(), absl::StatusCode::kUnavailable) << status[i];
      EXPECT_NE(status[i].message().find("ranks 1, 3 of 4 did not join"),
                absl::string_view::npos)
          << status[i];
    }
  }
}

TEST(ProcessGroupTest, DeadPeerMakesCollectiveFailNotHang) {
  int port = testing::PickFreePort();
  absl::Status survivor;
  std::thread peer([&] {
    auto group = ProcessGroup::Connect(Options(1, 2, port, milliseconds(3000)));
    ASSERT_TRUE(group.ok()) << group.status();
    // Leaves without joining the allreduce: the group is destroyed, its
    // connections close.
  });
  auto group = ProcessGroup::Connect(Options(0, 2, port, milliseconds(3000)));
  ASSERT_TRUE(group.ok()) << group.status();
  peer.join();
  auto start = std::chrono::steady_clock::now();
  std::vector<float> values(4, 1.0f);
  survivor = (*group)->AllreduceSum(values.data(), 4);
  EXPECT_FALSE(survivor.ok());
  EXPECT_NE(survivor.message().find("rank 0"), absl::string_view::npos)
      << survivor;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  // Marked as a consequence of a peer's failure (the launcher looks past it
  // for the cause); a failure of its own, such as the rendezvous with a
  // missing peer, is not.
  EXPECT_TRUE(IsPeerFailure(survivor)) << survivor;
  EXPECT_FALSE(
      IsPeerFailure(ProcessGroup::Connect(Options(0, 2, testing::PickFreePort(),
                                                  milliseconds(500)))
                        .status()));
}

// Rank 1 in a process of its own (process_group_peer), busy for `busy_ms`
// before its third allreduce; rank 0 in this one, with the same heartbeat
// settings (peer timeout 2 s).
class PeerProcessTest : public ::testing::Test {
 protected:
  void Start(int busy_ms) {
    const int port = testing::PickFreePort();
    SubprocessOptions o;
    o.argv = {SHARDGNN_PROCESS_GROUP_PEER, "1", "2", std::to_string(port),
              std::to_string(busy_ms)};
    o.name = "rank 1";
    auto peer = Subprocess::Start(o);
    ASSERT_TRUE(peer.ok()) << peer.status();
    peer_ = std::move(*peer);
    DistributedOptions options = Options(0, 2, port, milliseconds(60000));
    options.peer_timeout = milliseconds(2000);
    options.heartbeat_interval = milliseconds(200);
    auto group = ProcessGroup::Connect(options);
    ASSERT_TRUE(group.ok()) << group.status();
    group_ = std::move(*group);
  }
  void TearDown() override {
    if (peer_ != nullptr) {
      peer_->Signal(SIGKILL);
      peer_->Wait(milliseconds(10000));
    }
  }
  absl::Status Step() {
    float value = 1.0f;
    return group_->AllreduceSum(&value, 1);
  }
  std::unique_ptr<Subprocess> peer_;
  std::unique_ptr<ProcessGroup> group_;
};

// A stopped peer (SIGSTOP) is named within the peer timeout, not after the
// collective timeout, and the error is marked as a peer's failure.
TEST_F(PeerProcessTest, StoppedPeerIsNamedWithinThePeerTimeout) {
  ASSERT_NO_FATAL_FAILURE(Start(0));
  for (int i = 0; i < 5; ++i) ASSERT_OK(Step());
  ASSERT_OK(peer_->WaitForLine("step 5", milliseconds(10000)));
  peer_->Signal(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s;
  for (int i = 0; i < 1000 && s.ok(); ++i) s = Step();
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 1 has shown no sign of life"),
            absl::string_view::npos)
      << s;
  EXPECT_TRUE(IsPeerFailure(s)) << s;
  EXPECT_GE(waited, std::chrono::milliseconds(1500));
  EXPECT_LT(waited, std::chrono::seconds(15));
}

// A peer that is only busy (4 s, twice the peer timeout, its heartbeat
// running) is waited for.
TEST_F(PeerProcessTest, BusyPeerIsWaitedFor) {
  ASSERT_NO_FATAL_FAILURE(Start(4000));
  for (int i = 0; i < 4; ++i) ASSERT_OK(Step()) << "step " << i + 1;
  ASSERT_OK(peer_->WaitForLine("step 4", milliseconds(10000)));
}

// A rank that spends longer than the peer timeout outside any collective (a
// long evaluation of its own), then waits for a peer that is alive but later
// still, waits for it: what the heartbeat saw during an earlier wait must
// not count as the peer's silence since. (It did: a run's final test gave up
// on a live trainer, "no sign of life for 34 s".)
TEST_F(PeerProcessTest, ALongPauseOfOurOwnIsNotThePeersSilence) {
  // Busy 3 s before its third and its fifth allreduce.
  ASSERT_NO_FATAL_FAILURE(Start(3000));
  for (int i = 0; i < 4; ++i) ASSERT_OK(Step()) << "step " << i + 1;
  // Our own 2.5 s without a collective (the peer timeout is 2 s); the peer
  // reaches step 5 about 0.5 s after we do.
  std::this_thread::sleep_for(milliseconds(2500));
  ASSERT_OK(Step()) << "step 5";
  ASSERT_OK(peer_->WaitForLine("step 5", milliseconds(10000)));
}

// Runs `argv` with `env` on top of this process's environment until it exits
// (killed after 120 s); its exit status and output.
struct Exited {
  int status = -1;
  std::string output;
};
Exited RunChild(std::vector<std::string> argv,
                std::map<std::string, std::string> env = {}) {
  SubprocessOptions o;
  o.name = argv[0];
  o.argv = std::move(argv);
  o.env = std::move(env);
  o.max_kept_lines = 2000;
  auto child = Subprocess::Start(o);
  if (!child.ok()) return {-1, std::string(child.status().message())};
  std::optional<int> status = (*child)->Wait(std::chrono::seconds(120));
  const int code =
      status.value_or((*child)->Terminate(std::chrono::milliseconds(1000)));
  return {code, (*child)->Tail(2000)};
}

// Trainer processes (process_group_peer --env) started the way torchrun's
// agent starts workers. With `agent`, this test hosts the TCPStore on the
// master port first, as torchrun's static rendezvous does (a TCPStore server
// counting one agent, multi-tenant).
class AgentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { port_ = testing::PickFreePort(); }

  void HostStoreAsTheAgent() {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(port_);
    o.isServer = true;
    o.numWorkers = 1;
    o.waitWorkers = true;
    o.multiTenant = true;
    o.timeout = std::chrono::seconds(30);
    agent_ = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
  }

  // The workers' variables, as LocalElasticAgent sets them for one node.
  std::map<std::string, std::string> WorkerEnv(int rank, int world,
                                               const char* use_agent_store,
                                               int attempt) {
    return {{"RANK", std::to_string(rank)},
            {"WORLD_SIZE", std::to_string(world)},
            {"LOCAL_RANK", std::to_string(rank)},
            {"LOCAL_WORLD_SIZE", std::to_string(world)},
            {"GROUP_RANK", "0"},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", std::to_string(port_)},
            {"TORCHELASTIC_USE_AGENT_STORE", use_agent_store},
            {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)}};
  }

  // Runs `world` workers to the end; their results.
  std::vector<Exited> RunWorkers(int world, const char* use_agent_store,
                                 int attempt) {
    std::vector<Exited> results(static_cast<size_t>(world));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        results[static_cast<size_t>(r)] =
            RunChild({SHARDGNN_PROCESS_GROUP_PEER, "--env", "3"},
                     WorkerEnv(r, world, use_agent_store, attempt));
      });
    }
    for (auto& t : threads) t.join();
    return results;
  }

  int port_ = 0;
  c10::intrusive_ptr<c10d::TCPStore> agent_;
};

// Every rank, rank 0 included, connects to the agent's store as a client
// (rank 0 hosting one too would find the port taken). A restarted attempt
// forms its group in the same store: its keys are under its own prefix.
TEST_F(AgentStoreTest, WorkersJoinTheAgentsStore) {
  HostStoreAsTheAgent();
  for (int attempt : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("attempt ", attempt));
    auto results = RunWorkers(2, "True", attempt);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(results[r].status, 0) << results[r].output;
      EXPECT_NE(
          results[r].output.find(absl::StrCat("rank ", r, " of 2: sum 3")),
          std::string::npos)
          << results[r].output;
    }
  }
  // Gloo's address keys ("<device>/<rank>") of each attempt, under its prefix.
  EXPECT_TRUE(
      agent_->check({"/worker/attempt_0/0/1", "/worker/attempt_1/0/1"}));
  EXPECT_FALSE(agent_->check({"0/1"}));
}

// Without the variable (torchrun --rdzv_backend c10d sets it to False, other
// launchers not at all) rank 0 hosts the store as before...
TEST_F(AgentStoreTest, WithoutTheVariableRankZeroHostsTheStore) {
  auto results = RunWorkers(2, "False", 0);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].status, 0) << results[r].output;
    EXPECT_NE(results[r].output.find("sum 3"), std::string::npos)
        << results[r].output;
  }
}

// ... so with an agent's store on the port, rank 0 fails to host its own
// (the failure of issue 16), with a rendezvous error naming the address.
TEST_F(AgentStoreTest, WithoutTheVariableRankZeroCannotShareTheAgentsPort) {
  HostStoreAsTheAgent();
  Exited rank0 = RunChild({SHARDGNN_PROCESS_GROUP_PEER, "--env", "3"},
                          WorkerEnv(0, 2, "False", 0));
  EXPECT_EQ(rank0.status, 1) << rank0.output;
  EXPECT_NE(rank0.output.find(absl::StrCat("127.0.0.1:", port_)),
            std::string::npos)
      << rank0.output;
  EXPECT_NE(rank0.output.find("rendezvous"), std::string::npos) << rank0.output;
}

// The real torchrun of Debian's python3-torch (1.13), run as
// `python3 -m torch.distributed.run` with --redirects 1 --tee 1 (its default
// redirects crash on Python 3.11), with the static rendezvous (the agent's
// store) and with --rdzv_backend c10d (rank 0 hosts the store).
TEST(TorchrunTest, RealTorchrunStartsAGroup) {
  Exited probe =
      RunChild({"/usr/bin/python3", "-c", "import torch.distributed.run"});
  if (probe.status != 0) {
    GTEST_SKIP() << "Debian's python3-torch is not installed "
                    "(/usr/bin/python3 cannot import torch.distributed.run)";
  }
  testing::TempDir dir;
  const std::string port = std::to_string(testing::PickFreePort());
  for (const std::vector<std::string>& rendezvous :
       {std::vector<std::string>{"--master_addr", "127.0.0.1", "--master_port",
                                 port},
        std::vector<std::string>{"--rdzv_backend", "c10d", "--rdzv_endpoint",
                                 "127.0.0.1:" + port}}) {
    SCOPED_TRACE(rendezvous[0]);
    std::vector<std::string> argv = {
        "/usr/bin/python3",
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "2",
        "--redirects",
        "1",
        "--tee",
        "1",
        "--log_dir",
        dir.Sub("logs-" + rendezvous[0].substr(2))};
    argv.insert(argv.end(), rendezvous.begin(), rendezvous.end());
    for (const char* a :
         {"--no_python", SHARDGNN_PROCESS_GROUP_PEER, "--env", "3"})
      argv.push_back(a);
    Exited run = RunChild(argv);
    EXPECT_EQ(run.status, 0) << run.output;
    EXPECT_NE(run.output.find("rank 0 of 2: sum 3"), std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("rank 1 of 2: sum 3"), std::string::npos)
        << run.output;
  }
}

TEST(C10dGradientSyncTest, AveragesGradientsAndBroadcastsParameters) {
  RunRanks(2, [](int rank, ProcessGroup& group) {
    // Small buckets force several allreduces and a tensor split across buckets'
    // boundaries.
    C10dGradientSync sync(&group, /*bucket_bytes=*/16);
    auto a = torch::full({3}, static_cast<float>(rank + 1)).requires_grad_();
    auto b =
        torch::full({2, 2}, static_cast<float>(10 * rank)).requires_grad_();
    std::vector<torch::Tensor> params = {a, b};
    ASSERT_OK(sync.BroadcastParameters(params));
    EXPECT_TRUE(torch::equal(a, torch::full({3}, 1.0f)));
    EXPECT_TRUE(torch::equal(b, torch::zeros({2, 2})));
    a.mutable_grad() = torch::full({3}, static_cast<float>(rank));  // mean 0.5
    b.mutable_grad() =
        torch::full({2, 2}, static_cast<float>(4 * rank));  // mean 2
    ASSERT_OK(sync.AllreduceGradients(params));
    EXPECT_TRUE(torch::allclose(a.grad(), torch::full({3}, 0.5f)));
    EXPECT_TRUE(torch::allclose(b.grad(), torch::full({2, 2}, 2.0f)));
    std::vector<double> counts = {1.0, static_cast<double>(rank)};
    ASSERT_OK(sync.AllreduceSum(absl::MakeSpan(counts)));
    EXPECT_EQ(counts, (std::vector<double>{2.0, 1.0}));
  });
}

}  // namespace
}  // namespace shardgnn
