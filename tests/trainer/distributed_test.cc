#include "trainer/distributed.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

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
