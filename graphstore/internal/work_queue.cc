#include "graphstore/internal/work_queue.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shardgnn::internal {

WorkQueue::WorkQueue(const WorkQueueOptions& options) : options_(options) {
  for (int i = 0; i < std::max(1, options_.num_workers); ++i) {
    threads_.emplace_back([this] { Work(); });
  }
}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

absl::Status WorkQueue::Submit(const std::string& key,
                               std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (queued_ >= options_.max_queued) {
    return absl::UnavailableError(
        absl::StrCat("server busy: ", queued_, " calls queued (limit ",
                     options_.max_queued, "); retry later"));
  }
  Key& k = keys_[key];
  if (static_cast<int>(k.pending.size()) >= options_.max_queued_per_key) {
    return absl::UnavailableError(absl::StrCat(
        "server busy: ", k.pending.size(), " calls from ", key,
        " already queued (limit ", options_.max_queued_per_key,
        " per client address, serve --max-queued-per-ip); retry later"));
  }
  if (k.pending.empty()) turns_.push_back(key);
  k.pending.push_back(std::move(fn));
  ++queued_;
  return absl::OkStatus();
}

int64_t WorkQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return queued_;
}

bool WorkQueue::HasRunnable() const {
  if (stopping_ && queued_ == 0) return true;
  for (const std::string& key : turns_) {
    if (keys_.at(key).running < options_.max_running_per_key) return true;
  }
  return false;
}

void WorkQueue::Work() {
  while (true) {
    std::function<void()> fn;
    std::string key;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkQueue::HasRunnable));
      if (queued_ == 0) return;  // Stopping and drained.
      // The first key in turn that may run one more closure.
      auto it = std::find_if(turns_.begin(), turns_.end(), [&](const auto& k) {
        return keys_.at(k).running < options_.max_running_per_key;
      });
      key = *it;
      turns_.erase(it);
      Key& k = keys_.at(key);
      fn = std::move(k.pending.front());
      k.pending.pop_front();
      --queued_;
      ++k.running;
      if (!k.pending.empty()) turns_.push_back(key);  // Its next turn.
    }
    fn();
    absl::MutexLock lock(&mu_);
    Key& k = keys_.at(key);
    --k.running;
    if (k.running == 0 && k.pending.empty()) keys_.erase(key);
  }
}

}  // namespace shardgnn::internal
