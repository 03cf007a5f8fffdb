// The storage server's heavy work, shared fairly among client addresses.
//
// A fixed pool of workers runs closures queued under a key (the client's
// address, listener.h's PeerKey). Workers take keys in turn (round robin),
// each key's closures in FIFO order, and one key never holds more than
// max_running_per_key workers at once, so a client flooding the server with
// heavy calls leaves workers for everyone else. Submit refuses work (the
// caller answers UNAVAILABLE "server busy", which clients retry) when the
// key already has max_queued_per_key closures waiting or the whole queue
// holds max_queued.
//
// Thread-safe. The destructor runs every closure already queued, then joins.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_WORK_QUEUE_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace shardgnn::internal {

struct WorkQueueOptions {
  int num_workers = 2;
  int max_running_per_key = 1;
  int max_queued_per_key = 64;
  int max_queued = 4096;
};

class WorkQueue {
 public:
  explicit WorkQueue(const WorkQueueOptions& options);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `fn` under `key`; UNAVAILABLE ("server busy: ...") without
  // queueing it if the key's or the whole queue is full.
  absl::Status Submit(const std::string& key, std::function<void()> fn);

  // Closures queued and not yet started.
  int64_t queued() const;

 private:
  struct Key {
    std::deque<std::function<void()>> pending;
    int running = 0;
  };
  bool HasRunnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Work();

  const WorkQueueOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Key> keys_ ABSL_GUARDED_BY(mu_);
  // Keys with pending work, in the order they get their next turn.
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);
  int64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_WORK_QUEUE_H_
