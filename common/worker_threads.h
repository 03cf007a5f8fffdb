// Threads kept between calls for work that blocks, such as one RPC per
// storage server of a call that fans out to several.
//
// A task is handed to an idle worker, or to a new one when none is idle, so
// it never waits behind another task (a pull waiting for the step clock must
// not hold up the push it waits for); workers stay until the object goes.
// Why not std::async: a fresh thread per call attaches to whichever of
// glibc's malloc arenas is free at the time, so a run's per-call buffers
// spread over many arenas and are faulted in afresh in each (issue 17: a
// trainer with learned embeddings touched 170-3,300 fresh pages an epoch
// after the second with fresh threads, 25-64 with its threads' allocations
// kept in 2 arenas). A kept worker keeps its arena, and with it the pages
// of its earlier calls.
//
// Thread-safe. The destructor runs the tasks already handed over, then
// joins the workers; no task may be handed over during or after it.
#ifndef SHARDGNN_COMMON_WORKER_THREADS_H_
#define SHARDGNN_COMMON_WORKER_THREADS_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace shardgnn {

class WorkerThreads {
 public:
  WorkerThreads() = default;
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;
  ~WorkerThreads();

  // Runs fn(i) for every i in [0, n): fn(n - 1) on the calling thread, the
  // others on workers at the same time. Returns once every one has returned
  // (also when one throws, which is then rethrown): the status of fn(n - 1)
  // if it failed, else the first failure in index order, else OK. A worker
  // that cannot be started (std::system_error) is thrown the same way, once
  // the tasks already handed over have returned.
  absl::Status ForEach(size_t n, const std::function<absl::Status(size_t)>& fn);

  // Workers started so far (each one stays).
  size_t size() const;

 private:
  std::future<absl::Status> Run(std::function<absl::Status()> fn);
  void Work();

  mutable absl::Mutex mu_;
  struct Task {
    std::function<absl::Status()> fn;
    std::promise<absl::Status> done;
  };
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // Workers waiting for a task.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_WORKER_THREADS_H_
