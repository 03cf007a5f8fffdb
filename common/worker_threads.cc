#include "common/worker_threads.h"

#include <exception>
#include <utility>

namespace shardgnn {

WorkerThreads::~WorkerThreads() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

size_t WorkerThreads::size() const {
  absl::MutexLock lock(&mu_);
  return threads_.size();
}

std::future<absl::Status> WorkerThreads::Run(std::function<absl::Status()> fn) {
  Task task;
  task.fn = std::move(fn);
  std::future<absl::Status> result = task.done.get_future();
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
  // Every waiting task has a waiting worker to take it: none waits behind a
  // running one.
  if (tasks_.size() > idle_) {
    try {
      threads_.emplace_back([this] { Work(); });
    } catch (...) {
      // No thread (resources exhausted): the task would never run, and its
      // caller would wait for it forever.
      tasks_.pop_back();
      throw;
    }
  }
  return result;
}

void WorkerThreads::Work() {
  absl::MutexLock lock(&mu_);
  ++idle_;
  while (true) {
    mu_.Await(absl::Condition(
        +[](WorkerThreads* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
          return !w->tasks_.empty() || w->stopping_;
        },
        this));
    if (tasks_.empty()) break;  // Stopping, nothing left to run.
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    --idle_;
    mu_.Unlock();
    absl::Status status;
    std::exception_ptr thrown;
    try {
      status = task.fn();
    } catch (...) {
      thrown = std::current_exception();
    }
    // Counted idle before the caller hears of the result: its next call
    // finds this worker instead of starting another.
    mu_.Lock();
    ++idle_;
    mu_.Unlock();
    if (thrown) {
      task.done.set_exception(thrown);
    } else {
      task.done.set_value(std::move(status));
    }
    mu_.Lock();
  }
  --idle_;
}

absl::Status WorkerThreads::ForEach(
    size_t n, const std::function<absl::Status(size_t)>& fn) {
  if (n == 0) return absl::OkStatus();
  std::vector<std::future<absl::Status>> pending;
  pending.reserve(n - 1);
  // Waits for the workers' tasks however this returns: they use fn.
  struct WaitAll {
    std::vector<std::future<absl::Status>>* pending;
    ~WaitAll() {
      for (auto& f : *pending) {
        if (f.valid()) f.wait();
      }
    }
  } wait_all{&pending};
  for (size_t i = 0; i + 1 < n; ++i) {
    pending.push_back(Run([&fn, i] { return fn(i); }));
  }
  absl::Status first = fn(n - 1);
  for (auto& f : pending) {
    absl::Status s = f.get();  // Rethrows a task's exception.
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  return first;
}

}  // namespace shardgnn
