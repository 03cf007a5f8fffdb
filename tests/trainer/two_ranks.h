// Two data-parallel trainers in one test process: ranks 0 and 1 on two
// threads, joined by a real c10d process group (Gloo over loopback).
#ifndef SHARDGNN_TESTS_TRAINER_TWO_RANKS_H_
#define SHARDGNN_TESTS_TRAINER_TWO_RANKS_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/distributed.h"

namespace shardgnn::testing {

// Runs body(rank, sync) for ranks 0 and 1 on two threads; the group's
// collectives fail after `timeout`.
inline void RunTwoRanks(std::chrono::seconds timeout,
                        const std::function<void(int, GradientSync*)>& body) {
  const int port = PickFreePort();
  auto rank_main = [&](int rank) {
    DistributedOptions dist;
    dist.rank = rank;
    dist.world_size = 2;
    dist.master_port = port;
    dist.timeout = timeout;
    absl::StatusOr<std::unique_ptr<ProcessGroup>> group =
        ProcessGroup::Connect(dist);
    ASSERT_OK(group);
    C10dGradientSync sync(group->get());
    body(rank, &sync);
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TRAINER_TWO_RANKS_H_
