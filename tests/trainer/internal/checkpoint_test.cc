#include "trainer/internal/checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::internal {
namespace {

using ::shardgnn::testing::TempDir;

TEST(CheckpointTest, RoundTripsStateAndOptimizer) {
  TempDir tmp;
  const std::string path = tmp.Sub("run.ckpt");
  torch::Tensor w = torch::randn({3, 2}, torch::requires_grad());
  torch::optim::Adam optimizer({w}, torch::optim::AdamOptions(0.1));
  w.sum().backward();
  optimizer.step();
  CheckpointState state;
  state.epoch = 3;
  state.dropout_count = 17;
  state.parameters = {w};
  state.best = {w.detach().clone() * 2};
  state.best_val_acc = 0.5;
  state.best_epoch = 2;
  EpochStats stats;
  stats.epoch = 1;
  stats.steps = 4;
  stats.loss = 1.25;
  state.history = {stats};
  ASSERT_OK(WriteCheckpoint(path, "run A", state, optimizer));

  torch::Tensor w2 = torch::zeros({3, 2}, torch::requires_grad());
  torch::optim::Adam optimizer2({w2}, torch::optim::AdamOptions(0.1));
  CheckpointState loaded;
  loaded.parameters = {w2};
  ASSERT_OK_AND_ASSIGN(bool found,
                       ReadCheckpoint(path, "run A", &loaded, &optimizer2));
  EXPECT_TRUE(found);
  EXPECT_TRUE(torch::equal(w2, w));
  EXPECT_EQ(loaded.epoch, 3);
  EXPECT_EQ(loaded.dropout_count, 17u);
  ASSERT_EQ(loaded.best.size(), 1u);
  EXPECT_TRUE(torch::equal(loaded.best[0], w * 2));
  EXPECT_EQ(loaded.best_epoch, 2);
  ASSERT_EQ(loaded.history.size(), 1u);
  EXPECT_EQ(loaded.history[0].loss, 1.25);
  EXPECT_EQ(loaded.history[0].steps, 4);
  // The optimizer continues identically: one more step on both gives the same
  // parameters.
  w.mutable_grad() = torch::ones_like(w);
  w2.mutable_grad() = torch::ones_like(w2);
  optimizer.step();
  optimizer2.step();
  EXPECT_TRUE(torch::allclose(w, w2));
}

TEST(CheckpointTest, MissingFileIsNotAnErrorButGarbageAndOtherRunsAre) {
  TempDir tmp;
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::Adam optimizer({w});
  CheckpointState state;
  state.parameters = {w};
  ASSERT_OK_AND_ASSIGN(bool found, ReadCheckpoint(tmp.Sub("none.ckpt"), "x",
                                                  &state, &optimizer));
  EXPECT_FALSE(found);
  std::ofstream(tmp.Sub("junk.ckpt")) << "not a checkpoint";
  absl::StatusOr<bool> junk =
      ReadCheckpoint(tmp.Sub("junk.ckpt"), "x", &state, &optimizer);
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(junk.status().message()).find("junk.ckpt"),
            std::string::npos);
  ASSERT_OK(WriteCheckpoint(tmp.Sub("a.ckpt"), "run A", state, optimizer));
  absl::StatusOr<bool> other =
      ReadCheckpoint(tmp.Sub("a.ckpt"), "run B", &state, &optimizer);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(other.status().message()).find("run A"),
            std::string::npos);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A checkpoint of `epoch` with parameters w = epoch, after one Adam step.
void WriteEpoch(const std::string& path, int epoch) {
  torch::Tensor w =
      torch::full({4, 3}, static_cast<float>(epoch), torch::requires_grad());
  torch::optim::Adam optimizer({w}, torch::optim::AdamOptions(0.1));
  w.sum().backward();
  optimizer.step();
  CheckpointState state;
  state.epoch = epoch;
  state.parameters = {w};
  state.best = {w.detach().clone()};
  state.best_epoch = epoch;
  ASSERT_OK(WriteCheckpoint(path, "run", state, optimizer));
}

struct Reader {
  torch::Tensor w = torch::zeros({4, 3}, torch::requires_grad());
  torch::optim::Adam optimizer{{w}, torch::optim::AdamOptions(0.1)};
  CheckpointState state;
  Reader() { state.parameters = {w}; }
};

// One flipped bit anywhere in the file, at 20 random offsets: every one is
// refused as damaged, in one line naming the file, before any parameter
// changes.
TEST(CheckpointTest, AFlippedBitAnywhereIsCaughtBeforeUse) {
  TempDir tmp;
  const std::string path = tmp.Sub("rank-0.ckpt");
  WriteEpoch(path, 2);
  const std::string good = ReadAll(path);
  ASSERT_GT(good.size(), 100u);
  std::mt19937_64 rng(7);
  std::vector<size_t> offsets = {0, good.size() - 1, good.size() - 20};
  while (offsets.size() < 20) offsets.push_back(rng() % good.size());
  for (size_t offset : offsets) {
    std::string bad = good;
    bad[offset] = static_cast<char>(bad[offset] ^ (1 << (rng() % 8)));
    WriteAll(path, bad);
    Reader reader;
    absl::StatusOr<bool> read =
        ReadCheckpoint(path, "run", &reader.state, &reader.optimizer);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss)
        << "offset " << offset << ": " << read.status();
    const std::string message(read.status().message());
    EXPECT_NE(message.find("rank-0.ckpt is damaged"), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(torch::equal(reader.w, torch::zeros({4, 3})));
  }
  // Cut short, or grown.
  for (const std::string& bad : {good.substr(0, good.size() / 2),
                                 good.substr(0, good.size() - 1), good + "x"}) {
    WriteAll(path, bad);
    Reader reader;
    EXPECT_EQ(ReadCheckpoint(path, "run", &reader.state, &reader.optimizer)
                  .status()
                  .code(),
              absl::StatusCode::kDataLoss);
  }
  WriteAll(path, good);
  Reader reader;
  ASSERT_OK_AND_ASSIGN(bool found, ReadCheckpoint(path, "run", &reader.state,
                                                  &reader.optimizer));
  EXPECT_TRUE(found);
  EXPECT_EQ(reader.state.epoch, 2);
}

// A file whose checksum holds but whose contents LibTorch cannot read is one
// line, without LibTorch's C++ stack frames.
TEST(CheckpointTest, AnUnreadableArchiveIsOneLine) {
  TempDir tmp;
  const std::string path = tmp.Sub("odd.ckpt");
  const std::string archive = "PK not a zip archive at all";
  Checksum sum;
  sum.Update(archive);
  std::string bytes = archive + "SGNNCKP1";
  for (uint64_t v : {static_cast<uint64_t>(archive.size()), sum.Value()}) {
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>(v >> (8 * i)));
  }
  WriteAll(path, bytes);
  Reader reader;
  absl::StatusOr<bool> read =
      ReadCheckpoint(path, "run", &reader.state, &reader.optimizer);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  const std::string message(read.status().message());
  EXPECT_NE(message.find("odd.ckpt is unreadable"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("frame #"), std::string::npos) << message;
}

// A damaged checkpoint falls back to the one before it (.prev); both
// damaged is an error naming both.
TEST(CheckpointTest, ADamagedCheckpointFallsBackToThePreviousOne) {
  TempDir tmp;
  const std::string path = tmp.Sub("rank-1.ckpt");
  WriteEpoch(path, 1);
  WriteEpoch(path, 2);  // Epoch 1's becomes .prev.
  std::string bytes = ReadAll(path);
  bytes[bytes.size() / 2] ^= 0x01;
  WriteAll(path, bytes);
  {
    Reader reader;
    ASSERT_OK_AND_ASSIGN(bool found,
                         ReadCheckpointOrPrevious(path, "run", &reader.state,
                                                  &reader.optimizer));
    EXPECT_TRUE(found);
    EXPECT_EQ(reader.state.epoch, 1);
    EXPECT_FLOAT_EQ(reader.w[0][0].item<float>(), 1.0f - 0.1f);
  }
  std::string prev = ReadAll(PreviousCheckpointPath(path));
  prev[10] ^= 0x40;
  WriteAll(PreviousCheckpointPath(path), prev);
  Reader reader;
  absl::StatusOr<bool> both =
      ReadCheckpointOrPrevious(path, "run", &reader.state, &reader.optimizer);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kDataLoss);
  const std::string message(both.status().message());
  EXPECT_NE(message.find("rank-1.ckpt is damaged"), std::string::npos);
  EXPECT_NE(message.find("rank-1.ckpt.prev"), std::string::npos) << message;
  // A checkpoint of another run is not "damaged": no fallback.
  WriteEpoch(path, 3);
  EXPECT_EQ(ReadCheckpointOrPrevious(path, "other run", &reader.state,
                                     &reader.optimizer)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace shardgnn::internal
