#include "common/worker_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardgnn {
namespace {

// Counts arrivals; Arrive waits (at most 10 s) until `n` have arrived and
// says whether they did: tasks that must run at the same time.
class Gate {
 public:
  explicit Gate(int n) : n_(n) {}
  bool Arrive() {
    absl::MutexLock lock(&mu_);
    ++arrived_;
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return arrived_ >= n_;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(10));
  }

 private:
  const int n_;
  absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(WorkerThreadsTest, RunsEveryIndexAtTheSameTimeAndKeepsItsWorkers) {
  WorkerThreads workers;
  for (int round = 0; round < 5; ++round) {
    Gate gate(4);
    std::vector<std::atomic<int>> ran(4);
    std::set<std::thread::id> threads;
    absl::Mutex mu;
    const std::thread::id caller = std::this_thread::get_id();
    absl::Status s = workers.ForEach(4, [&](size_t i) {
      ++ran[i];
      {
        absl::MutexLock lock(&mu);
        threads.insert(std::this_thread::get_id());
      }
      return gate.Arrive() ? absl::OkStatus()
                           : absl::DeadlineExceededError("not all at once");
    });
    ASSERT_TRUE(s.ok()) << s;
    for (auto& r : ran) EXPECT_EQ(r.load(), 1);
    EXPECT_EQ(threads.size(), 4u);
    EXPECT_TRUE(threads.count(caller));  // The last index runs here.
  }
  // Three workers served all five rounds: none started per call.
  EXPECT_EQ(workers.size(), 3u);
}

// Calls from several threads at once: a task never waits behind another one
// (here every task waits for all the others, so queueing would time out).
TEST(WorkerThreadsTest, ConcurrentCallsNeverQueueBehindARunningTask) {
  WorkerThreads workers;
  Gate gate(3 * 3);
  std::vector<absl::Status> results(3);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&, c] {
      results[c] = workers.ForEach(3, [&](size_t) {
        return gate.Arrive() ? absl::OkStatus()
                             : absl::DeadlineExceededError("queued");
      });
    });
  }
  for (auto& t : callers) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(workers.size(), 6u);
}

TEST(WorkerThreadsTest, TheCallersFailureFirstThenTheFirstInOrder) {
  WorkerThreads workers;
  auto fail = [](std::vector<int> failing) {
    return [failing](size_t i) {
      for (int f : failing) {
        if (static_cast<size_t>(f) == i) {
          return absl::InternalError("index " + std::to_string(i));
        }
      }
      return absl::OkStatus();
    };
  };
  EXPECT_TRUE(workers.ForEach(3, fail({})).ok());
  EXPECT_EQ(workers.ForEach(3, fail({1, 2})).message(), "index 2");
  EXPECT_EQ(workers.ForEach(3, fail({1, 0})).message(), "index 0");
  EXPECT_EQ(workers.ForEach(3, fail({1})).message(), "index 1");
  EXPECT_TRUE(workers.ForEach(0, fail({0})).ok());
  EXPECT_EQ(workers.ForEach(1, fail({0})).message(), "index 0");
}

// A task that throws: the others finish before the exception reaches the
// caller (they use the caller's function and state).
TEST(WorkerThreadsTest, AnExceptionWaitsForTheOtherTasks) {
  WorkerThreads workers;
  std::atomic<int> finished{0};
  for (size_t thrower : {size_t{0}, size_t{3}}) {
    finished = 0;
    EXPECT_THROW(workers.ForEach(4,
                                 [&](size_t i) -> absl::Status {
                                   if (i == thrower) {
                                     throw std::runtime_error("boom");
                                   }
                                   absl::SleepFor(absl::Milliseconds(50));
                                   ++finished;
                                   return absl::OkStatus();
                                 }),
                 std::runtime_error);
    EXPECT_EQ(finished.load(), 3) << "thrower " << thrower;
  }
}

TEST(WorkerThreadsTest, DestructionRunsWhatWasHandedOverAndJoins) {
  std::atomic<int> ran{0};
  {
    WorkerThreads workers;
    ASSERT_TRUE(workers
                    .ForEach(3,
                             [&](size_t) {
                               ++ran;
                               return absl::OkStatus();
                             })
                    .ok());
  }
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace shardgnn
