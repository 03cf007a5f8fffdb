#include "sampler/internal/replica_set.h"

#include <cstdio>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardgnn::internal {

bool IsReplicaFailure(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

ReplicaSet::ReplicaSet(int part, ShardMeta meta,
                       std::vector<std::unique_ptr<GraphStoreClient>> replicas,
                       ReplicaSetOptions options)
    : part_(part), meta_(std::move(meta)), options_(options) {
  for (auto& client : replicas) {
    auto r = std::make_unique<Replica>();
    r->client = std::move(client);
    replicas_.push_back(std::move(r));
  }
  prober_ = std::thread([this] { ProbeLoop(); });
}

ReplicaSet::~ReplicaSet() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  prober_.join();
}

std::string ReplicaSet::addresses() const {
  std::vector<std::string> all;
  for (const auto& r : replicas_) all.push_back(r->client->address());
  return absl::StrJoin(all, ", ");
}

std::vector<ReplicaState> ReplicaSet::states() const {
  std::vector<ReplicaState> states;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : replicas_) {
    ReplicaState s;
    s.address = r->client->address();
    s.up = r->up.load();
    s.calls = r->calls.load();
    s.failures = r->failures.load();
    s.rejoins = r->rejoins.load();
    s.last_error = r->last_error;
    states.push_back(std::move(s));
  }
  return states;
}

int ReplicaSet::Pick(const std::vector<bool>& tried) const {
  const size_t n = replicas_.size();
  const size_t start = static_cast<size_t>(next_.fetch_add(1) % n);
  int best = -1;
  int best_load = std::numeric_limits<int>::max();
  bool best_up = false;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    if (tried[i]) continue;
    const Replica& r = *replicas_[i];
    const bool up = r.up.load();
    const int load = r.in_flight.load();
    // Live before down (a down one is tried only when none is live: it may
    // be back before its probe says so); then the fewest calls in flight.
    if (best < 0 || (up && !best_up) || (up == best_up && load < best_load)) {
      best = static_cast<int>(i);
      best_load = load;
      best_up = up;
    }
  }
  return best;
}

void ReplicaSet::MarkDown(size_t r, const absl::Status& why) const {
  Replica& replica = *replicas_[r];
  replica.failures.fetch_add(1);
  bool was_up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    replica.last_error = std::string(why.message());
    was_up = replica.up.exchange(false);
  }
  if (was_up && replicas_.size() > 1) {
    std::fprintf(stderr,
                 "shardgnn: replica %s of part %d is down (%s); its calls go "
                 "to the other replicas\n",
                 replica.client->address().c_str(), part_,
                 std::string(why.message()).c_str());
  }
  changed_.notify_all();
}

absl::Status ReplicaSet::AllDown(const absl::Status& last,
                                 absl::Duration waited) const {
  if (replicas_.size() == 1 && waited == absl::ZeroDuration()) return last;
  std::vector<std::string> each;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& r : replicas_) {
      each.push_back(
          absl::StrCat(r->client->address(), ": ",
                       r->last_error.empty() ? "no error yet" : r->last_error));
    }
  }
  return absl::Status(
      last.code(),
      absl::StrCat(
          "part ", part_, ": no replica of the ", replicas_.size(), " answers",
          waited > absl::ZeroDuration()
              ? absl::StrCat(" after waiting ", absl::FormatDuration(waited),
                             " (--server-wait)")
              : "",
          ": ", absl::StrJoin(each, "; ")));
}

absl::Status ReplicaSet::Run(
    const std::function<absl::Status(GraphStoreClient&)>& call) const {
  const size_t n = replicas_.size();
  std::vector<bool> tried(n, false);
  absl::Status last;
  absl::Time wait_start = absl::InfinitePast();
  bool failed_over = false;
  while (true) {
    const int i = Pick(tried);
    if (i < 0) {
      // Every replica failed this round.
      const absl::Time now = absl::Now();
      if (options_.server_wait <= absl::ZeroDuration()) {
        return AllDown(last, absl::ZeroDuration());
      }
      if (wait_start == absl::InfinitePast()) {
        wait_start = now;
        if (!waiting_said_.exchange(true)) {
          std::fprintf(stderr,
                       "shardgnn: no replica of part %d answers (%s); waiting "
                       "up to %s for one to come back (--server-wait)\n",
                       part_, addresses().c_str(),
                       absl::FormatDuration(options_.server_wait).c_str());
        }
      }
      if (now - wait_start >= options_.server_wait) {
        return AllDown(last, now - wait_start);
      }
      // Until a replica comes back (the prober says so), or the next probe.
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait_for(lock,
                        absl::ToChronoNanoseconds(std::min(
                            options_.probe_interval,
                            options_.server_wait - (absl::Now() - wait_start))),
                        [&] {
                          for (const auto& r : replicas_)
                            if (r->up.load()) return true;
                          return stop_;
                        });
      tried.assign(n, false);
      continue;
    }
    Replica& r = *replicas_[static_cast<size_t>(i)];
    r.in_flight.fetch_add(1);
    r.calls.fetch_add(1);
    absl::Status s = call(*r.client);
    r.in_flight.fetch_sub(1);
    if (s.ok() || !IsReplicaFailure(s)) {
      if (failed_over) failovers_.fetch_add(1);
      if (wait_start != absl::InfinitePast()) waiting_said_ = false;
      return s;
    }
    MarkDown(static_cast<size_t>(i), s);
    tried[static_cast<size_t>(i)] = true;
    last = s;
    failed_over = true;
  }
}

void ReplicaSet::ProbeLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    std::vector<size_t> down;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      if (!replicas_[r]->up.load()) down.push_back(r);
    }
    if (down.empty()) {
      changed_.wait(lock);  // Until one goes down, or the end.
      continue;
    }
    lock.unlock();
    bool any_back = false;
    for (size_t r : down) any_back = Probe(r) || any_back;
    lock.lock();
    if (any_back) changed_.notify_all();
    if (stop_) break;
    changed_.wait_for(lock, absl::ToChronoNanoseconds(options_.probe_interval));
  }
}

bool ReplicaSet::Probe(size_t r) {
  Replica& replica = *replicas_[r];
  GraphStoreClient& client = *replica.client;
  absl::Status s = client.WaitForHealthy(absl::Now() + options_.probe_timeout);
  std::string why;
  if (s.ok()) {
    auto info = client.Info();
    if (!info.ok()) {
      s = info.status();
    } else {
      const ShardMeta& m = info->meta;
      if (m.partition_id != meta_.partition_id || m.part_id != meta_.part_id ||
          m.node_start != meta_.node_start || m.node_end != meta_.node_end ||
          m.content_checksum != meta_.content_checksum) {
        s = absl::FailedPreconditionError(absl::StrCat(
            client.address(), " is back but serves part ", m.part_id,
            " of partition ", m.partition_id, " (content ", m.content_checksum,
            "), not part ", meta_.part_id, " of ", meta_.partition_id,
            " (content ", meta_.content_checksum, ")"));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.ok()) {
    replica.last_error = std::string(s.message());
    return false;
  }
  replica.up = true;
  replica.rejoins.fetch_add(1);
  if (replicas_.size() > 1 || options_.server_wait > absl::ZeroDuration()) {
    std::fprintf(stderr, "shardgnn: replica %s of part %d is back\n",
                 client.address().c_str(), part_);
  }
  return true;
}

}  // namespace shardgnn::internal
