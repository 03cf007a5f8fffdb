#include "embedding/embedding_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "absl/base/config.h"
#include "absl/time/clock.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ThreadSanitizer runs the concurrency tests some 100 times slower: they
// push fewer steps there (it finds races without the volume).
#ifdef ABSL_HAVE_THREAD_SANITIZER
constexpr int kVolume = 10;
#else
constexpr int kVolume = 1;
#endif

EmbeddingTableConfig MakeConfig(EmbeddingOptimizer optimizer, int64_t dim,
                                double lr, int num_trainers = 1) {
  EmbeddingTableConfig config;
  config.dim = dim;
  config.optimizer = optimizer;
  config.lr = lr;
  config.num_trainers = num_trainers;
  config.seed = 42;
  return config;
}

std::unique_ptr<EmbeddingTable> MustCreate(const EmbeddingTableConfig& config,
                                           NodeId start, NodeId end) {
  auto table = EmbeddingTable::Create(config, start, end);
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? std::move(table).value() : nullptr;
}

// The rows of `ids`, read without waiting for the clock.
std::vector<float> PullNow(EmbeddingTable& table,
                           const std::vector<NodeId>& ids) {
  std::vector<float> out(ids.size() * table.dim());
  EXPECT_OK(table.Pull(ids, 0, -1, absl::InfinitePast(), out.data()));
  return out;
}

// Bitwise equality: EXPECT_EQ on floats would also pass -0 == +0.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(EmbeddingTableTest, InitialValuesDependOnSeedNameAndNodeOnly) {
  EmbeddingTableConfig config = MakeConfig(EmbeddingOptimizer::kSgd, 8, 0.1);
  auto whole = MustCreate(config, 0, 100);
  auto half = MustCreate(config, 50, 100);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(half, nullptr);
  const std::vector<float> a = PullNow(*whole, {70});
  const std::vector<float> b = PullNow(*half, {70});
  EXPECT_TRUE(SameBits(a, b));
  for (int64_t c = 0; c < 8; ++c) {
    EXPECT_EQ(a[c], InitialEmbeddingValue(config, 70, c)) << c;
  }
  // A second pull reads the row created by the first.
  EXPECT_TRUE(SameBits(PullNow(*whole, {70}), a));
  EXPECT_EQ(whole->stats().rows_touched, 1);
  EXPECT_EQ(whole->stats().rows_pulled, 2);
  EXPECT_EQ(whole->stats().pulls, 2);

  EmbeddingTableConfig other_seed = config;
  other_seed.seed = 43;
  EmbeddingTableConfig other_name = config;
  other_name.name = "item";
  int differ_seed = 0, differ_name = 0, differ_node = 0, differ_col = 0;
  for (int64_t c = 0; c < 8; ++c) {
    const float v = InitialEmbeddingValue(config, 70, c);
    differ_seed += v != InitialEmbeddingValue(other_seed, 70, c);
    differ_name += v != InitialEmbeddingValue(other_name, 70, c);
    differ_node += v != InitialEmbeddingValue(config, 71, c);
    differ_col += v != InitialEmbeddingValue(config, 70, (c + 1) % 8);
  }
  EXPECT_EQ(differ_seed, 8);
  EXPECT_EQ(differ_name, 8);
  EXPECT_EQ(differ_node, 8);
  EXPECT_EQ(differ_col, 8);

  // N(0, init_std^2): loose bounds over 40,000 draws (the standard error of
  // the mean is 0.0025 here).
  config.init_std = 0.5;
  double sum = 0, sum_sq = 0;
  const int kNodes = 5000, kCols = 8;
  for (NodeId v = 0; v < kNodes; ++v) {
    for (int64_t c = 0; c < kCols; ++c) {
      const double x = InitialEmbeddingValue(config, v, c);
      ASSERT_TRUE(std::isfinite(x));
      sum += x;
      sum_sq += x * x;
    }
  }
  const double n = kNodes * kCols;
  const double mean = sum / n;
  const double std = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std, 0.5, 0.02);

  config.init_std = 0;
  EXPECT_EQ(InitialEmbeddingValue(config, 3, 1), 0.0f);
}

TEST(EmbeddingTableTest, SgdUpdateIsExact) {
  auto table = MustCreate(MakeConfig(EmbeddingOptimizer::kSgd, 4, 0.1), 0, 10);
  ASSERT_NE(table, nullptr);
  const std::vector<float> before = PullNow(*table, {3});
  const std::vector<float> g = {0.5f, -1.25f, 3.0f, 1e-3f};
  ASSERT_OK(table->Push(0, 0, {3}, g));
  const std::vector<float> after = PullNow(*table, {3});
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(after[c], before[c] - static_cast<float>(0.1) * g[c]) << c;
    EXPECT_NE(after[c], before[c]) << c;
  }
  EXPECT_EQ(table->applied_steps(), 1);
}

TEST(EmbeddingTableTest, DuplicateIdsAreSummedFirst) {
  const EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kSgd, 3, 0.7);
  auto twice = MustCreate(config, 0, 10);
  auto once = MustCreate(config, 0, 10);
  ASSERT_NE(twice, nullptr);
  ASSERT_NE(once, nullptr);
  const std::vector<float> g1 = {0.1f, 0.2f, -0.3f};
  const std::vector<float> g2 = {1.7f, -2.9f, 0.33f};
  const std::vector<float> g7 = {5.f, 6.f, 7.f};
  std::vector<float> dup;
  for (const auto* g : {&g1, &g7, &g2})
    dup.insert(dup.end(), g->begin(), g->end());
  ASSERT_OK(twice->Push(0, 0, {5, 7, 5}, dup));
  std::vector<float> summed = g7;
  for (int c = 0; c < 3; ++c) summed.push_back(g1[c] + g2[c]);
  ASSERT_OK(once->Push(0, 0, {7, 5}, summed));
  const std::vector<float> rows = PullNow(*twice, {5, 7});
  EXPECT_TRUE(SameBits(rows, PullNow(*once, {5, 7})));
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(rows[c], InitialEmbeddingValue(config, 5, c) -
                           static_cast<float>(0.7) * (g1[c] + g2[c]));
  }
  EXPECT_EQ(twice->stats().rows_pushed, 3);
  EXPECT_EQ(once->stats().rows_pushed, 2);
}

TEST(EmbeddingTableTest, AdagradMatchesHandComputation) {
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kAdagrad, 2, 0.5);
  config.eps = 1e-3;
  auto table = MustCreate(config, 0, 4);
  ASSERT_NE(table, nullptr);
  const std::vector<float> w0 = PullNow(*table, {2});
  const std::vector<std::vector<float>> grads = {{0.3f, -2.0f}, {0.1f, 0.5f}};
  std::vector<double> w(w0.begin(), w0.end()), s(2, 0.0);
  for (int step = 0; step < 2; ++step) {
    ASSERT_OK(table->Push(0, step, {2}, grads[step]));
    const std::vector<float> got = PullNow(*table, {2});
    for (int c = 0; c < 2; ++c) {
      const double g = grads[step][c];
      s[c] += g * g;
      w[c] -= 0.5 * g / (std::sqrt(s[c]) + 1e-3);
      EXPECT_NEAR(got[c], w[c], 1e-6) << "step " << step << " col " << c;
    }
  }
}

// One Adam update of (w, m, v) at the row's step t.
void AdamStep(double g, int t, double lr, double b1, double b2, double eps,
              double* w, double* m, double* v) {
  *m = b1 * *m + (1 - b1) * g;
  *v = b2 * *v + (1 - b2) * g * g;
  const double m_hat = *m / (1 - std::pow(b1, t));
  const double v_hat = *v / (1 - std::pow(b2, t));
  *w -= lr * m_hat / (std::sqrt(v_hat) + eps);
}

TEST(EmbeddingTableTest, AdamKeepsItsStepPerRow) {
  EmbeddingTableConfig config = MakeConfig(EmbeddingOptimizer::kAdam, 2, 0.1);
  auto table = MustCreate(config, 0, 4);
  ASSERT_NE(table, nullptr);
  const std::vector<float> init = PullNow(*table, {1, 2});
  double w1[2] = {init[0], init[1]}, m1[2] = {0, 0}, v1[2] = {0, 0};
  // Row 1 at steps 0, 1, 2 (its own t = 1, 2, 3).
  const std::vector<std::vector<float>> grads = {
      {0.3f, -2.0f}, {0.1f, 0.5f}, {-0.7f, 0.25f}};
  for (int step = 0; step < 3; ++step) {
    ASSERT_OK(table->Push(0, step, {1}, grads[step]));
    const std::vector<float> got = PullNow(*table, {1});
    for (int c = 0; c < 2; ++c) {
      AdamStep(grads[step][c], step + 1, 0.1, 0.9, 0.999, 1e-8, &w1[c], &m1[c],
               &v1[c]);
      EXPECT_NEAR(got[c], w1[c], 1e-6) << "step " << step << " col " << c;
    }
  }
  // Row 2's first update comes at step 3: its bias correction uses t = 1, so
  // the update is lr * g / (|g| + eps), about lr * sign(g).
  const std::vector<float> g2 = {0.4f, -0.02f};
  ASSERT_OK(table->Push(0, 3, {2}, g2));
  const std::vector<float> got = PullNow(*table, {2});
  for (int c = 0; c < 2; ++c) {
    double w = init[2 + c], m = 0, v = 0;
    AdamStep(g2[c], 1, 0.1, 0.9, 0.999, 1e-8, &w, &m, &v);
    EXPECT_NEAR(got[c], w, 1e-6) << c;
    EXPECT_NEAR(got[c], init[2 + c] - (g2[c] > 0 ? 0.1 : -0.1), 1e-5) << c;
  }
}

TEST(EmbeddingTableTest, ConcurrentPushesLoseNoUpdate) {
  constexpr int kTrainers = 8;
  constexpr int kSteps = 2000 / kVolume;
  // Wide rows keep each update long, so that racing updates would overlap.
  constexpr int64_t kDim = 256;
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kSgd, kDim, 1.0, kTrainers);
  auto table = MustCreate(config, 0, 64);
  ASSERT_NE(table, nullptr);
  std::atomic<bool> pushing{true};
  std::atomic<int> torn_rows{0};
  // A reader sees each shared row between two whole updates: every column
  // has moved by the same number of unit steps.
  std::thread reader([&] {
    const std::vector<NodeId> ids = {0, 1, 2};
    std::vector<float> out(ids.size() * kDim);
    while (pushing.load()) {
      if (!table->Pull(ids, 0, -1, absl::InfinitePast(), out.data()).ok()) {
        ++torn_rows;
        return;
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        long first = -1;
        for (int64_t c = 0; c < kDim; ++c) {
          const long moved = std::lround(
              InitialEmbeddingValue(config, ids[i], c) - out[i * kDim + c]);
          if (c == 0) first = moved;
          if (moved != first) ++torn_rows;
        }
      }
    }
  });
  std::vector<std::thread> trainers;
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  for (int t = 0; t < kTrainers; ++t) {
    trainers.emplace_back([&, t] {
      // Start together, so that the trainers' pushes overlap.
      ++ready;
      while (ready.load() < kTrainers) std::this_thread::yield();
      // Shared rows 0, 1, 2 (row 1 twice per push) and a row of its own.
      const std::vector<NodeId> ids = {0, 1, 2, 1, 10 + t};
      const std::vector<float> grads(ids.size() * kDim, 1.0f);
      for (int step = 0; step < kSteps; ++step) {
        if (!table->Push(t, step, ids, grads).ok()) ++failures;
      }
    });
  }
  for (auto& thread : trainers) thread.join();
  pushing = false;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(torn_rows.load(), 0);
  EXPECT_EQ(table->applied_steps(), kSteps);
  EXPECT_EQ(table->stats().pushes, kTrainers * kSteps);
  EXPECT_EQ(table->stats().rows_pushed, kTrainers * kSteps * 5);

  // Every update of a row subtracts the same amount, so the order does not
  // matter: the result is the initial value minus each update in turn.
  auto expected = [&](NodeId node, int64_t col, int updates, float step) {
    float x = InitialEmbeddingValue(config, node, col);
    for (int i = 0; i < updates; ++i) x -= step;
    return x;
  };
  const std::vector<float> shared = PullNow(*table, {0, 1, 2});
  for (int64_t c = 0; c < kDim; ++c) {
    EXPECT_EQ(shared[c], expected(0, c, kTrainers * kSteps, 1.0f));
    EXPECT_EQ(shared[kDim + c], expected(1, c, kTrainers * kSteps, 2.0f));
    EXPECT_EQ(shared[2 * kDim + c], expected(2, c, kTrainers * kSteps, 1.0f));
  }
  for (int t = 0; t < kTrainers; ++t) {
    const std::vector<float> own = PullNow(*table, {10 + t});
    for (int64_t c = 0; c < kDim; ++c) {
      EXPECT_EQ(own[c], expected(10 + t, c, kSteps, 1.0f)) << t;
    }
  }
}

TEST(EmbeddingTableTest, RacingRetriesApplyEachStepOnce) {
  constexpr int64_t kDim = 64;
  constexpr int kRows = 32;
  constexpr int kSteps = 3000 / kVolume;
  EmbeddingTableConfig config = MakeConfig(EmbeddingOptimizer::kSgd, kDim, 1.0);
  auto table = MustCreate(config, 0, kRows);
  ASSERT_NE(table, nullptr);
  std::atomic<int> failures{0};
  // Two copies of trainer 0 push every step (as a trainer retrying a push
  // whose answer was lost); each waits for its own push of step s - 1, so
  // step s is never beyond the clock.
  std::atomic<int> ready{0};
  auto pusher = [&] {
    // Start together, so that the copies overlap.
    ++ready;
    while (ready.load() < 2) std::this_thread::yield();
    std::vector<NodeId> ids(kRows);
    for (int i = 0; i < kRows; ++i) ids[i] = i;
    const std::vector<float> g(kRows * kDim, 1.0f);
    for (int step = 0; step < kSteps; ++step) {
      if (!table->Push(0, step, ids, g).ok()) ++failures;
    }
  };
  std::thread a(pusher), b(pusher);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(table->applied_steps(), kSteps);
  EXPECT_EQ(table->stats().pushes, kSteps);
  const std::vector<float> row = PullNow(*table, {kRows - 1});
  for (int64_t c = 0; c < kDim; ++c) {
    float x = InitialEmbeddingValue(config, kRows - 1, c);
    for (int i = 0; i < kSteps; ++i) x -= 1.0f;
    EXPECT_EQ(row[c], x) << c;
  }
}

// An ordered table applies each step's pushes together in trainer order:
// the rows do not depend on which push arrives first (with Adam they would),
// the clock advances only when the step is complete, and a retried held
// push is acknowledged without effect.
TEST(EmbeddingTableTest, OrderedTableAppliesEachStepInTrainerOrder) {
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kAdam, 2, 0.1, /*num_trainers=*/2);
  config.ordered = true;
  const std::vector<float> g0 = {1.0f, -2.0f}, g1 = {0.25f, 3.0f};
  auto run = [&](bool trainer1_first) {
    auto table = MustCreate(config, 0, 4);
    for (int64_t step = 0; step < 3; ++step) {
      if (trainer1_first) {
        EXPECT_OK(table->Push(1, step, {2}, g1));
        EXPECT_EQ(table->applied_steps(), step);   // Held, not applied.
        EXPECT_OK(table->Push(1, step, {2}, g1));  // A retry: ignored.
        EXPECT_OK(table->Push(0, step, {2}, g0));
      } else {
        EXPECT_OK(table->Push(0, step, {2}, g0));
        EXPECT_EQ(table->applied_steps(), step);
        EXPECT_OK(table->Push(1, step, {2}, g1));
      }
      EXPECT_EQ(table->applied_steps(), step + 1);
    }
    return PullNow(*table, {2});
  };
  const std::vector<float> a = run(false), b = run(true);
  EXPECT_TRUE(SameBits(a, b));
  // Unordered, the arrival order shows in the rows (Adam's per-row step).
  config.ordered = false;
  auto unordered = [&](bool trainer1_first) {
    auto table = MustCreate(config, 0, 4);
    for (int64_t step = 0; step < 3; ++step) {
      EXPECT_OK(table->Push(trainer1_first ? 1 : 0, step, {2},
                            trainer1_first ? g1 : g0));
      EXPECT_OK(table->Push(trainer1_first ? 0 : 1, step, {2},
                            trainer1_first ? g0 : g1));
    }
    return PullNow(*table, {2});
  };
  EXPECT_FALSE(SameBits(unordered(false), unordered(true)));
  EXPECT_TRUE(SameBits(unordered(false), a));  // Trainer order is 0, 1.
}

// A replica of a part may lag the copy a trainer pulled from by one step
// (another trainer's push of the step before reached that copy first), so
// an ordered table holds a push one step beyond the complete ones; a trainer
// further ahead would be held without bound and is refused.
TEST(EmbeddingTableTest, OrderedTableHoldsOneStepAheadAndRefusesMore) {
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0, /*num_trainers=*/2);
  config.ordered = true;
  auto table = MustCreate(config, 0, 4);
  const std::vector<float> g = {1, 1};
  ASSERT_OK(table->Push(0, 0, {1}, g));  // Held: step 0 is not complete.
  // Step 1 while step 0 waits for trainer 1: held too (a lagging copy).
  ASSERT_OK(table->Push(0, 1, {1}, g));
  EXPECT_OK(table->Push(0, 1, {1}, g));  // A retry: acknowledged.
  const absl::Status ahead = table->Push(0, 2, {1}, g);
  EXPECT_EQ(ahead.code(), absl::StatusCode::kFailedPrecondition) << ahead;
  EXPECT_EQ(table->applied_steps(), 0);
  ASSERT_OK(table->Push(1, 0, {1}, g));  // Step 0 complete, step 1 not.
  EXPECT_EQ(table->applied_steps(), 1);
  // Step 0's two pushes applied, the refused one not at all.
  EXPECT_EQ(PullNow(*table, {1})[0],
            InitialEmbeddingValue(config, 1, 0) - 2.0f);
  ASSERT_OK(table->Push(1, 1, {1}, g));  // Step 1 complete: applied.
  EXPECT_EQ(table->applied_steps(), 2);
  float x = InitialEmbeddingValue(config, 1, 0);
  for (int i = 0; i < 4; ++i) x -= 1.0f;  // As the table applies them.
  EXPECT_EQ(PullNow(*table, {1})[0], x);
  // Trainer 0's next step is 2 (held now, until trainer 1 pushes it).
  ASSERT_OK(table->Push(0, 2, {1}, g));
  EXPECT_EQ(table->applied_steps(), 2);
}

// The steps held one ahead are applied in step and trainer order, whatever
// order their pushes arrived in: the rows equal those of pushes in order.
TEST(EmbeddingTableTest, OrderedTableAppliesAStepHeldAheadInOrder) {
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kAdam, 2, 0.1, /*num_trainers=*/2);
  config.ordered = true;
  const std::vector<float> g0 = {1.0f, -2.0f}, g1 = {0.25f, 3.0f},
                           h0 = {-0.5f, 0.75f}, h1 = {2.0f, 1.5f};
  auto in_order = MustCreate(config, 0, 4);
  ASSERT_OK(in_order->Push(0, 0, {2}, g0));
  ASSERT_OK(in_order->Push(1, 0, {2}, g1));
  ASSERT_OK(in_order->Push(0, 1, {2}, h0));
  ASSERT_OK(in_order->Push(1, 1, {2}, h1));
  auto lagging = MustCreate(config, 0, 4);
  ASSERT_OK(lagging->Push(0, 0, {2}, g0));
  ASSERT_OK(lagging->Push(0, 1, {2}, h0));
  ASSERT_OK(lagging->Push(1, 0, {2}, g1));
  ASSERT_OK(lagging->Push(1, 1, {2}, h1));
  EXPECT_EQ(lagging->applied_steps(), 2);
  EXPECT_TRUE(SameBits(PullNow(*in_order, {2}), PullNow(*lagging, {2})));
}

TEST(EmbeddingTableTest, StepClock) {
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0, /*num_trainers=*/2);
  auto table = MustCreate(config, 0, 10);
  ASSERT_NE(table, nullptr);
  const std::vector<float> init = PullNow(*table, {1, 2});
  const std::vector<float> g = {1.0f, 2.0f};

  ASSERT_OK(table->Push(0, 0, {1}, g));
  const std::vector<float> once = PullNow(*table, {1, 2});
  EXPECT_EQ(once[0], init[0] - 1.0f);
  // A retry of step 0 is acknowledged and ignored.
  EXPECT_OK(table->Push(0, 0, {1}, g));
  EXPECT_TRUE(SameBits(PullNow(*table, {1, 2}), once));
  EXPECT_EQ(table->stats().pushes, 1);

  // Trainer 0 may not skip step 1.
  absl::Status skipped = table->Push(0, 2, {1}, g);
  EXPECT_EQ(skipped.code(), absl::StatusCode::kFailedPrecondition) << skipped;
  EXPECT_THAT(skipped.message(),
              HasSubstr("trainer 0 pushed step 2 but its next step is 1"));
  EXPECT_TRUE(SameBits(PullNow(*table, {1, 2}), once));

  // The clock is the minimum over the trainers.
  EXPECT_EQ(table->applied_steps(), 0);
  ASSERT_OK(table->Push(1, 0, {}, {}));
  EXPECT_EQ(table->applied_steps(), 1);

  // Bad pushes of trainer 0's step 1 change nothing, not even the clock.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct BadPush {
    int trainer;
    int64_t step;
    std::vector<NodeId> ids;
    std::vector<float> grads;
    std::string expected;
  };
  const std::vector<BadPush> bad = {
      {0, 1, {2, 1}, {1, 1, 1, nan}, "ID 1 (index 1, column 1) is not finite"},
      {0, 1, {2}, {inf, 1}, "ID 2 (index 0, column 0) is not finite"},
      {0, 1, {2, 10}, {1, 1, 1, 1}, "ID 10 (index 1) not held here"},
      {0, 1, {2, -1}, {1, 1, 1, 1}, "ID -1 (index 1) not held here"},
      {0, 1, {2}, {1, 1, 1}, "3 gradient values for 1 IDs of dim 2"},
      {2, 0, {2}, {1, 1}, "trainer 2"},
      {-1, 0, {2}, {1, 1}, "trainer -1"},
      {0, -1, {2}, {1, 1}, "step -1"},
  };
  for (const BadPush& push : bad) {
    absl::Status status =
        table->Push(push.trainer, push.step, push.ids, push.grads);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(push.expected));
    EXPECT_TRUE(SameBits(PullNow(*table, {1, 2}), once)) << push.expected;
  }
  EXPECT_EQ(table->applied_steps(), 1);
  EXPECT_EQ(table->stats().pushes, 2);

  // Step 1 is still trainer 0's next: it applies.
  ASSERT_OK(table->Push(0, 1, {2}, g));
  const std::vector<float> twice = PullNow(*table, {1, 2});
  EXPECT_EQ(twice[2], init[2] - 1.0f);
  EXPECT_EQ(twice[3], init[3] - 2.0f);
  EXPECT_EQ(table->applied_steps(), 1);  // Trainer 1 is at step 1.
  ASSERT_OK(table->Push(1, 1, {}, {}));
  EXPECT_EQ(table->applied_steps(), 2);
}

// With 2 trainers, trainer 0 pushes steps 0..9 at once; a pull for `step`
// with `staleness` then waits for trainer 1, whose steps the main thread
// pushes one by one.
void CheckPullWaitsForClock(int64_t step, int staleness) {
  SCOPED_TRACE(::testing::Message()
               << "step " << step << " staleness " << staleness);
  EmbeddingTableConfig config =
      MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0, /*num_trainers=*/2);
  auto table = MustCreate(config, 0, 10);
  ASSERT_NE(table, nullptr);
  for (int s = 0; s < 10; ++s) ASSERT_OK(table->Push(0, s, {}, {}));
  ASSERT_EQ(table->applied_steps(), 0);
  const int64_t needed = step - staleness;

  std::atomic<bool> done{false};
  absl::Status pull_status;
  int64_t applied_after_pull = -1;
  absl::Time returned_at;
  std::vector<float> out(2);
  std::thread puller([&] {
    pull_status = table->Pull({4}, step, staleness,
                              absl::Now() + absl::Seconds(5), out.data());
    returned_at = absl::Now();
    applied_after_pull = table->applied_steps();
    done = true;
  });
  for (int s = 0; s < needed; ++s) {
    // Only this thread advances the clock: at applied_steps() == s < needed
    // the pull must still be waiting. Give a pull that wrongly returned some
    // time to say so.
    const absl::Time window_end = absl::Now() + absl::Milliseconds(20);
    while (!done.load() && absl::Now() < window_end) std::this_thread::yield();
    EXPECT_FALSE(done.load()) << "the pull returned at applied_steps() " << s;
    EXPECT_OK(table->Push(1, s, {}, {}));
  }
  const absl::Time unblocked_at = absl::Now();
  puller.join();
  EXPECT_OK(pull_status);
  EXPECT_GE(applied_after_pull, needed);
  // Woken by the push that allowed it, not by its deadline.
  EXPECT_LT(returned_at - unblocked_at, absl::Seconds(2));
  EXPECT_EQ(out[0], InitialEmbeddingValue(config, 4, 0));
  // The pull read at applied_steps() == needed: `staleness` steps behind.
  EXPECT_EQ(table->stats().staleness_sum, staleness);
  EXPECT_GT(table->stats().pull_wait_seconds, 0);
}

TEST(EmbeddingTableTest, BoundedStalenessWaitsForTheSlowestTrainer) {
  CheckPullWaitsForClock(/*step=*/8, /*staleness=*/2);
}

TEST(EmbeddingTableTest, StalenessZeroIsSynchronous) {
  CheckPullWaitsForClock(/*step=*/3, /*staleness=*/0);
}

TEST(EmbeddingTableTest, AsynchronousPullNeverWaits) {
  auto table =
      MustCreate(MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0, 2), 0, 10);
  ASSERT_NE(table, nullptr);
  for (int s = 0; s < 5; ++s) ASSERT_OK(table->Push(0, s, {}, {}));
  ASSERT_EQ(table->applied_steps(), 0);
  std::vector<float> out(2);
  // The deadline has passed: only a pull that does not wait succeeds.
  ASSERT_OK(table->Pull({1}, 5, -1, absl::InfinitePast(), out.data()));
  EXPECT_EQ(table->stats().staleness_sum, 5);
  EXPECT_EQ(table->stats().pull_wait_seconds, 0);
  // The same pull, synchronous, cannot be served.
  EXPECT_EQ(table->Pull({1}, 5, 0, absl::InfinitePast(), out.data()).code(),
            absl::StatusCode::kDeadlineExceeded);
  // One that the clock already allows succeeds even past its deadline.
  EXPECT_OK(table->Pull({1}, 0, 0, absl::InfinitePast(), out.data()));
}

TEST(EmbeddingTableTest, DeadlineNamesTheLaggingTrainers) {
  auto table =
      MustCreate(MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0, 3), 0, 10);
  ASSERT_NE(table, nullptr);
  for (int s = 0; s < 4; ++s) {
    ASSERT_OK(table->Push(0, s, {}, {}));
    ASSERT_OK(table->Push(2, s, {}, {}));
  }
  ASSERT_OK(table->Push(1, 0, {}, {}));
  ASSERT_OK(table->Push(1, 1, {}, {}));
  std::vector<float> out = {-7.0f, -7.0f};
  const absl::Time start = absl::Now();
  const absl::Status status =
      table->Pull({3}, 4, 0, start + absl::Milliseconds(200), out.data());
  const absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("trainers 1 (at step 2)"));
  EXPECT_THAT(status.message(), Not(HasSubstr("0 (at step")));
  EXPECT_THAT(status.message(), Not(HasSubstr("2 (at step 4)")));
  EXPECT_GE(waited, absl::Milliseconds(190));
  EXPECT_LT(waited, absl::Seconds(3));
  EXPECT_EQ(out[0], -7.0f);  // Nothing written.
}

TEST(EmbeddingTableTest, PullOfAnUnownedIdWritesNothing) {
  auto table = MustCreate(MakeConfig(EmbeddingOptimizer::kSgd, 2, 1.0), 10, 20);
  ASSERT_NE(table, nullptr);
  std::vector<float> out(6, -7.0f);
  const absl::Status status =
      table->Pull({12, 25, 3}, 0, -1, absl::InfinitePast(), out.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("ID 25 (index 1)"));
  for (float v : out) EXPECT_EQ(v, -7.0f);
  EXPECT_EQ(table->stats().rows_touched, 0);
  EXPECT_EQ(table->Pull({9}, 0, -1, absl::InfinitePast(), out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->Pull({20}, 0, -1, absl::InfinitePast(), out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EmbeddingTableTest, CreateChecksConfigAndRange) {
  const EmbeddingTableConfig good =
      MakeConfig(EmbeddingOptimizer::kAdam, 4, 0.1);
  EXPECT_OK(EmbeddingTable::Create(good, 0, 0));  // Empty but valid.
  EXPECT_EQ(EmbeddingTable::Create(good, 5, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EmbeddingTable::Create(good, -1, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EmbeddingTableConfig no_dim = good;
  no_dim.dim = 0;
  EXPECT_EQ(EmbeddingTable::Create(no_dim, 0, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EmbeddingTableConfig wide = good;
  wide.dim = kMaxEmbeddingDim;
  const auto huge =
      EmbeddingTable::Create(wide, 0, std::numeric_limits<NodeId>::max());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted)
      << huge.status();
}

TEST(EmbeddingTableTest, ValidateConfigNamesTheField) {
  const EmbeddingTableConfig good =
      MakeConfig(EmbeddingOptimizer::kAdam, 4, 0.1);
  EXPECT_OK(ValidateEmbeddingConfig(good));
  struct Case {
    void (*change)(EmbeddingTableConfig*);
    std::string expected;
  };
  const Case cases[] = {
      {[](EmbeddingTableConfig* c) { c->name = ""; }, "name is empty"},
      {[](EmbeddingTableConfig* c) { c->dim = 0; }, "dim 0 is not in 1..65536"},
      {[](EmbeddingTableConfig* c) { c->dim = 65537; }, "dim 65537"},
      {[](EmbeddingTableConfig* c) { c->lr = 0; }, "lr 0"},
      {[](EmbeddingTableConfig* c) { c->lr = INFINITY; }, "lr inf"},
      {[](EmbeddingTableConfig* c) { c->lr = NAN; }, "lr nan"},
      {[](EmbeddingTableConfig* c) { c->init_std = -1; }, "init_std -1"},
      {[](EmbeddingTableConfig* c) { c->num_trainers = 0; }, "num_trainers 0"},
      {[](EmbeddingTableConfig* c) { c->num_trainers = 4097; },
       "num_trainers 4097"},
      {[](EmbeddingTableConfig* c) { c->beta1 = 1; }, "beta1 1"},
      {[](EmbeddingTableConfig* c) { c->beta2 = -0.5; }, "beta2 -0.5"},
      {[](EmbeddingTableConfig* c) { c->eps = 0; }, "eps 0"},
      {[](EmbeddingTableConfig* c) {
         c->optimizer = static_cast<EmbeddingOptimizer>(9);
       },
       "optimizer 9"},
  };
  for (const Case& test : cases) {
    EmbeddingTableConfig config = good;
    test.change(&config);
    const absl::Status status = ValidateEmbeddingConfig(config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << test.expected;
    EXPECT_THAT(status.message(), HasSubstr(test.expected));
  }
}

TEST(EmbeddingTableTest, ConfigDifferences) {
  const EmbeddingTableConfig a =
      MakeConfig(EmbeddingOptimizer::kAdam, 64, 0.01);
  EXPECT_EQ(EmbeddingConfigDifferences(a, a), "");
  EmbeddingTableConfig b = a;
  b.dim = 32;
  b.lr = 0.1;
  EXPECT_EQ(EmbeddingConfigDifferences(a, b), "dim 64 != 32, lr 0.01 != 0.1");
  EmbeddingTableConfig c = a;
  c.name = "item";
  c.optimizer = EmbeddingOptimizer::kSgd;
  c.beta1 = 0.5;
  c.beta2 = 0.9;
  c.eps = 1e-6;
  c.init_std = 0.25;
  c.seed = 7;
  c.num_trainers = 4;
  c.run_id = "r2";
  EXPECT_EQ(EmbeddingConfigDifferences(a, c),
            "name \"node\" != \"item\", optimizer adam != sgd, beta1 0.9 != "
            "0.5, beta2 0.999 != 0.9, eps 1e-08 != 1e-06, init_std 1 != 0.25, "
            "seed 42 != 7, num_trainers 1 != 4, run_id \"\" != \"r2\"");
  // Values that print alike at 6 digits are still told apart.
  EmbeddingTableConfig d = a;
  d.lr = 0.01 + 1e-12;
  EXPECT_THAT(EmbeddingConfigDifferences(a, d),
              HasSubstr("lr 0.01 != 0.01000"));
}

TEST(EmbeddingTableTest, OptimizerNames) {
  for (EmbeddingOptimizer optimizer :
       {EmbeddingOptimizer::kSgd, EmbeddingOptimizer::kAdagrad,
        EmbeddingOptimizer::kAdam}) {
    ASSERT_OK_AND_ASSIGN(
        EmbeddingOptimizer parsed,
        ParseEmbeddingOptimizer(EmbeddingOptimizerName(optimizer)));
    EXPECT_EQ(parsed, optimizer);
  }
  ASSERT_OK_AND_ASSIGN(EmbeddingOptimizer upper,
                       ParseEmbeddingOptimizer("SGD"));
  EXPECT_EQ(upper, EmbeddingOptimizer::kSgd);
  ASSERT_OK_AND_ASSIGN(EmbeddingOptimizer mixed,
                       ParseEmbeddingOptimizer("AdaGrad"));
  EXPECT_EQ(mixed, EmbeddingOptimizer::kAdagrad);
  const auto bad = ParseEmbeddingOptimizer("rmsprop");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("rmsprop"));
  EXPECT_THAT(bad.status().message(), HasSubstr("sgd, adagrad, adam"));
}

}  // namespace
}  // namespace shardgnn
