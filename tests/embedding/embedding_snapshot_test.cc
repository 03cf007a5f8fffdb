// EmbeddingTable::Save and Load (issue 15, item 5): a table restored from its
// snapshot continues exactly as the table that was saved; damaged or foreign
// snapshots are refused with a clear status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/embedding_table.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::ExpectError;
using ::testing::HasSubstr;

class EmbeddingSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat(
               "embedding_snapshot_test-", ::getpid(), "-",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ / name; }

  std::filesystem::path dir_;
};

EmbeddingTableConfig Config(EmbeddingOptimizer optimizer, int trainers = 1) {
  EmbeddingTableConfig config;
  config.dim = 5;
  config.optimizer = optimizer;
  config.lr = 0.05;
  config.num_trainers = trainers;
  config.seed = 7;
  config.run_id = "run-1";
  return config;
}

// Step `step` of trainer `t`: a few rows of [start, end), some repeated.
void PushStep(EmbeddingTable& table, int t, int64_t step, NodeId start,
              NodeId end) {
  std::mt19937_64 rng(static_cast<uint64_t>(step * 131 + t));
  std::uniform_int_distribution<NodeId> node(start, end - 1);
  std::normal_distribution<float> grad(0.0f, 1.0f);
  std::vector<NodeId> ids(6);
  for (NodeId& id : ids) id = node(rng);
  std::vector<float> grads(ids.size() * table.dim());
  for (float& g : grads) g = grad(rng);
  ASSERT_OK(table.Push(t, step, ids, grads));
}

std::vector<float> AllRows(EmbeddingTable& table) {
  std::vector<NodeId> ids;
  for (NodeId v = table.node_start(); v < table.node_end(); ++v) {
    ids.push_back(v);
  }
  std::vector<float> out(ids.size() * table.dim());
  EXPECT_OK(table.Pull(ids, 0, -1, absl::InfinitePast(), out.data()));
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// For every optimizer: save after 10 steps, go on to 20; the table loaded
// from the snapshot, given the same 10 steps, ends bit for bit where the
// original did (rows and optimizer state, which the later updates read).
TEST_F(EmbeddingSnapshotTest, ResumedTableEqualsUninterruptedOne) {
  for (EmbeddingOptimizer optimizer :
       {EmbeddingOptimizer::kSgd, EmbeddingOptimizer::kAdagrad,
        EmbeddingOptimizer::kAdam}) {
    SCOPED_TRACE(EmbeddingOptimizerName(optimizer));
    const EmbeddingTableConfig config = Config(optimizer);
    auto original = EmbeddingTable::Create(config, 100, 140);
    ASSERT_OK(original.status());
    EmbeddingTable& a = **original;
    for (int64_t s = 0; s < 10; ++s) PushStep(a, 0, s, 100, 140);
    const std::string path =
        Path(absl::StrCat(EmbeddingOptimizerName(optimizer), ".emb"));
    ASSERT_OK(a.Save(10, path));
    for (int64_t s = 10; s < 20; ++s) PushStep(a, 0, s, 100, 140);

    auto loaded = EmbeddingTable::Load(path, config, 100, 140, 10);
    ASSERT_OK(loaded.status());
    EmbeddingTable& b = **loaded;
    EXPECT_EQ(b.applied_steps(), 10);
    // A retried push of a step before the snapshot changes nothing.
    PushStep(b, 0, 9, 100, 140);
    for (int64_t s = 10; s < 20; ++s) PushStep(b, 0, s, 100, 140);
    EXPECT_EQ(b.applied_steps(), 20);
    EXPECT_TRUE(SameBits(AllRows(a), AllRows(b)));
  }
}

// With two trainers in ordered (sync) mode the restored clock holds both
// trainers at the snapshot's step, and the held-push bookkeeping restarts
// there.
TEST_F(EmbeddingSnapshotTest, OrderedTableRestoresBothTrainersClocks) {
  EmbeddingTableConfig config = Config(EmbeddingOptimizer::kAdam, 2);
  config.ordered = true;
  auto original = EmbeddingTable::Create(config, 0, 30);
  ASSERT_OK(original.status());
  EmbeddingTable& a = **original;
  for (int64_t s = 0; s < 4; ++s) {
    PushStep(a, 1, s, 0, 30);
    PushStep(a, 0, s, 0, 30);
  }
  const std::string path = Path("ordered.emb");
  ASSERT_OK(a.Save(4, path));
  auto loaded = EmbeddingTable::Load(path, config, 0, 30, 4);
  ASSERT_OK(loaded.status());
  EmbeddingTable& b = **loaded;
  for (int64_t s = 4; s < 8; ++s) {
    for (EmbeddingTable* t : {&a, &b}) {
      PushStep(*t, 0, s, 0, 30);
      PushStep(*t, 1, s, 0, 30);
    }
  }
  EXPECT_EQ(b.applied_steps(), 8);
  EXPECT_TRUE(SameBits(AllRows(a), AllRows(b)));
}

// A snapshot is of one step on every trainer: refused while the trainers'
// clocks differ (or a step is half pushed), and naming the trainer.
TEST_F(EmbeddingSnapshotTest, SaveRefusesAClockNotAtTheStep) {
  auto table =
      EmbeddingTable::Create(Config(EmbeddingOptimizer::kSgd, 2), 0, 10);
  ASSERT_OK(table.status());
  PushStep(**table, 0, 0, 0, 10);
  const std::string path = Path("t.emb");
  ExpectError((*table)->Save(1, path), absl::StatusCode::kFailedPrecondition,
              "trainer 1 has pushed 0 steps");
  EXPECT_FALSE(std::filesystem::exists(path));
  PushStep(**table, 1, 0, 0, 10);
  EXPECT_OK((*table)->Save(1, path));
  ExpectError((*table)->Save(2, path), absl::StatusCode::kFailedPrecondition,
              "has pushed 1 steps");

  EmbeddingTableConfig ordered = Config(EmbeddingOptimizer::kSgd, 2);
  ordered.ordered = true;
  auto held = EmbeddingTable::Create(ordered, 0, 10);
  ASSERT_OK(held.status());
  PushStep(**held, 0, 0, 0, 10);
  ExpectError((*held)->Save(0, path), absl::StatusCode::kFailedPrecondition,
              "step 0 has pushes held");
}

// Another run, dim, node range or step: FAILED_PRECONDITION naming it; no
// file: NOT_FOUND.
TEST_F(EmbeddingSnapshotTest, LoadRefusesAnotherTable) {
  const EmbeddingTableConfig config = Config(EmbeddingOptimizer::kAdagrad);
  auto table = EmbeddingTable::Create(config, 0, 20);
  ASSERT_OK(table.status());
  PushStep(**table, 0, 0, 0, 20);
  const std::string path = Path("t.emb");
  ASSERT_OK((*table)->Save(1, path));

  EmbeddingTableConfig other_run = config;
  other_run.run_id = "run-2";
  ExpectError(EmbeddingTable::Load(path, other_run, 0, 20, 1).status(),
              absl::StatusCode::kFailedPrecondition,
              "run_id \"run-2\" != \"run-1\"");
  EmbeddingTableConfig other_dim = config;
  other_dim.dim = 4;
  ExpectError(EmbeddingTable::Load(path, other_dim, 0, 20, 1).status(),
              absl::StatusCode::kFailedPrecondition, "dim 4 != 5");
  ExpectError(EmbeddingTable::Load(path, config, 0, 21, 1).status(),
              absl::StatusCode::kFailedPrecondition,
              "holds nodes [0, 20), not [0, 21)");
  ExpectError(EmbeddingTable::Load(path, config, 0, 20, 2).status(),
              absl::StatusCode::kFailedPrecondition, "is of step 1, not 2");
  ExpectError(EmbeddingTable::Load(Path("none.emb"), config, 0, 20, 1).status(),
              absl::StatusCode::kNotFound, "no embedding snapshot");
  EXPECT_OK(EmbeddingTable::Load(path, config, 0, 20, 1).status());
}

// Every single-byte change and every truncation of a snapshot is refused
// (DATA_LOSS or, for a header still parsed, FAILED_PRECONDITION), never
// loaded as if whole, and never crashes (the header sizes nothing unchecked).
TEST_F(EmbeddingSnapshotTest, DamagedSnapshotsAreRefused) {
  const EmbeddingTableConfig config = Config(EmbeddingOptimizer::kAdam);
  auto table = EmbeddingTable::Create(config, 0, 8);
  ASSERT_OK(table.status());
  for (int64_t s = 0; s < 3; ++s) PushStep(**table, 0, s, 0, 8);
  const std::string path = Path("t.emb");
  ASSERT_OK((*table)->Save(3, path));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 100u);
  const std::string bad = Path("bad.emb");
  auto write = [&bad](const std::string& b) {
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  for (size_t cut : {size_t{0}, size_t{7}, size_t{20}, bytes.size() / 2,
                     bytes.size() - 9, bytes.size() - 1}) {
    write(bytes.substr(0, cut));
    const absl::Status s = EmbeddingTable::Load(bad, config, 0, 8, 3).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << cut << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(bad));
  }
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    write(b);
    const absl::Status s = EmbeddingTable::Load(bad, config, 0, 8, 3).status();
    EXPECT_FALSE(s.ok()) << "byte " << i << " changed, still loaded";
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                s.code() == absl::StatusCode::kFailedPrecondition)
        << i << ": " << s;
  }
}

// Pulls go on while a snapshot is written (they create rows too); the file
// still loads and holds every row created before Save began.
TEST_F(EmbeddingSnapshotTest, PullsDuringSaveKeepTheSnapshotWhole) {
  const EmbeddingTableConfig config = Config(EmbeddingOptimizer::kSgd);
  auto table = EmbeddingTable::Create(config, 0, 20000);
  ASSERT_OK(table.status());
  for (int64_t s = 0; s < 5; ++s) PushStep(**table, 0, s, 0, 2000);
  std::atomic<bool> stop{false};
  std::thread puller([&] {
    std::vector<NodeId> ids(64);
    std::vector<float> out(ids.size() * config.dim);
    NodeId next = 0;
    while (!stop.load()) {
      for (NodeId& id : ids) id = next++ % 20000;
      ASSERT_OK((*table)->Pull(ids, 5, 0, absl::InfiniteFuture(), out.data()));
    }
  });
  const std::string path = Path("t.emb");
  for (int i = 0; i < 5; ++i) ASSERT_OK((*table)->Save(5, path));
  stop = true;
  puller.join();
  auto loaded = EmbeddingTable::Load(path, config, 0, 20000, 5);
  ASSERT_OK(loaded.status());
  std::vector<NodeId> ids(2000);
  for (NodeId v = 0; v < 2000; ++v) ids[v] = v;
  std::vector<float> a(ids.size() * config.dim), b(a.size());
  ASSERT_OK((*table)->Pull(ids, 5, 0, absl::InfiniteFuture(), a.data()));
  ASSERT_OK((*loaded)->Pull(ids, 5, 0, absl::InfiniteFuture(), b.data()));
  EXPECT_TRUE(SameBits(a, b));
}

// Disk mode (tables larger than RAM): the same updates give the same rows as
// in memory; the arrays are files of the backing directory, mapped and
// already unlinked (nothing is left behind); snapshots load into it; a table
// the disk cannot hold is refused when it is created.
TEST_F(EmbeddingSnapshotTest, DiskBackedTableEqualsMemoryTable) {
  const std::string tables = Path("tables");
  std::filesystem::create_directories(tables);
  for (EmbeddingOptimizer optimizer :
       {EmbeddingOptimizer::kSgd, EmbeddingOptimizer::kAdagrad,
        EmbeddingOptimizer::kAdam}) {
    SCOPED_TRACE(EmbeddingOptimizerName(optimizer));
    const EmbeddingTableConfig config = Config(optimizer);
    auto memory = EmbeddingTable::Create(config, 50, 350);
    auto disk = EmbeddingTable::Create(config, 50, 350, tables);
    ASSERT_OK(memory.status());
    ASSERT_OK(disk.status());
    for (int64_t s = 0; s < 10; ++s) {
      PushStep(**memory, 0, s, 50, 350);
      PushStep(**disk, 0, s, 50, 350);
    }
    EXPECT_TRUE(SameBits(AllRows(**memory), AllRows(**disk)));
    // Mapped from the directory, and already gone from it.
    std::ifstream maps("/proc/self/maps");
    int mapped = 0;
    for (std::string line; std::getline(maps, line);) {
      if (line.find(tables + "/") != std::string::npos) ++mapped;
    }
    EXPECT_GE(mapped, 2);
    EXPECT_TRUE(std::filesystem::is_empty(tables));
    const std::string path = Path("disk.emb");
    ASSERT_OK((*disk)->Save(10, path));
    auto loaded = EmbeddingTable::Load(path, config, 50, 350, 10, tables);
    ASSERT_OK(loaded.status());
    EXPECT_TRUE(SameBits(AllRows(**memory), AllRows(**loaded)));
  }
  // 2^36 rows of 2^16 floats: 2^54 bytes, more than any disk here.
  EmbeddingTableConfig huge = Config(EmbeddingOptimizer::kSgd);
  huge.dim = 65536;
  ExpectError(
      EmbeddingTable::Create(huge, 0, int64_t{1} << 36, tables).status(),
      absl::StatusCode::kResourceExhausted, "cannot reserve");
  ExpectError(EmbeddingTable::Create(huge, 0, 10, Path("no-such-dir")).status(),
              absl::StatusCode::kResourceExhausted, "cannot create a file");
  EXPECT_TRUE(std::filesystem::is_empty(tables));
}

}  // namespace
}  // namespace shardgnn
