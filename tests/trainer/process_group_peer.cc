// A trainer rank in a process of its own, for distributed_test.cc: joins the
// group and runs allreduces of one float in a loop until one fails.
//
//   process_group_peer RANK WORLD PORT BUSY_MS
//
// Before its third allreduce, and again before its fifth, it is busy for
// BUSY_MS (a long step that keeps its heartbeat). Prints "step N" after each
// allreduce.
//
//   process_group_peer --env STEPS
//
// A trainer as a launcher starts it: the options come from the environment
// (DistributedOptionsFromEnv: torchrun's or Slurm's variables). Runs STEPS
// allreduces of rank + 1, prints "rank R of W: sum S" and exits 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "trainer/distributed.h"

namespace {

int FromEnv(int steps) {
  shardgnn::DistributedOptions defaults;
  defaults.timeout = std::chrono::seconds(60);
  auto o = shardgnn::DistributedOptionsFromEnv(defaults);
  if (!o.ok()) {
    std::fprintf(stderr, "%s\n", o.status().ToString().c_str());
    return 1;
  }
  auto group = shardgnn::ProcessGroup::Connect(*o);
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().ToString().c_str());
    return 1;
  }
  float sum = 0;
  for (int step = 0; step < steps; ++step) {
    sum = static_cast<float>(o->rank + 1);
    absl::Status s = (*group)->AllreduceSum(&sum, 1);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("rank %d of %d: sum %g\n", o->rank, o->world_size, sum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--env")
    return FromEnv(std::atoi(argv[2]));
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s RANK WORLD PORT BUSY_MS | %s --env STEPS\n",
                 argv[0], argv[0]);
    return 2;
  }
  shardgnn::DistributedOptions o;
  o.rank = std::atoi(argv[1]);
  o.world_size = std::atoi(argv[2]);
  o.master_port = std::atoi(argv[3]);
  o.timeout = std::chrono::seconds(60);
  o.peer_timeout = std::chrono::seconds(2);
  o.heartbeat_interval = std::chrono::milliseconds(200);
  auto group = shardgnn::ProcessGroup::Connect(o);
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().ToString().c_str());
    return 1;
  }
  for (int step = 1;; ++step) {
    if (step == 3 || step == 5) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::atoi(argv[4])));
    }
    float value = 1.0f;
    absl::Status s = (*group)->AllreduceSum(&value, 1);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("step %d\n", step);
    std::fflush(stdout);
  }
}
