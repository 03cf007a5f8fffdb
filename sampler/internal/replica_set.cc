#include "sampler/internal/replica_set.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace shardgnn::internal {

namespace {

// hedge_adaptive: latencies kept, answered calls needed before their p95 is
// used, the delay until then, and how often the p95 is recomputed.
constexpr size_t kLatencyWindow = 256;
constexpr int64_t kLatencyWarmup = 20;
constexpr absl::Duration kAdaptiveInitialDelay = absl::Milliseconds(100);
constexpr int64_t kP95Every = 16;

// DATA_LOSS: the replica answered, and its answer failed the client's
// checks (graphstore/internal/answer_checks.h).
bool IsWrongAnswer(const absl::Status& s) { return absl::IsDataLoss(s); }

}  // namespace

// Threads for hedged calls' attempts. A task that finds no idle thread
// starts one: an attempt may block for a whole call deadline on a silent
// server, and a fixed pool would make a healthy replica's calls queue behind
// such attempts. So the threads number at most the attempts ever in flight
// at once (two per hedged call); they stay until destruction, which lets
// every submitted task finish and joins them.
class ReplicaSet::AttemptPool {
 public:
  AttemptPool() = default;
  ~AttemptPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  AttemptPool(const AttemptPool&) = delete;
  AttemptPool& operator=(const AttemptPool&) = delete;

  void Submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (idle_ < tasks_.size()) {
      threads_.emplace_back([this] { Loop(); });
    } else {
      wake_.notify_one();
    }
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ++idle_;
      wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // Stopped, and nothing left to run.
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // Guarded by mu_.
  size_t idle_ = 0;                          // Guarded by mu_.
  bool stop_ = false;                        // Guarded by mu_.
  std::vector<std::thread> threads_;         // Guarded by mu_.
};

// One hedged call: its attempts' call, and their outcomes not yet taken by
// the caller. Shared by the caller and its attempts, so an attempt that
// finishes after its caller returned still has it.
struct ReplicaSet::Race {
  explicit Race(Attempt a) : attempt(std::move(a)) {}
  const Attempt attempt;

  struct Outcome {
    size_t replica;
    bool hedge;  // The second copy, sent after the hedge delay.
    absl::Status status;
    std::shared_ptr<void> result;
  };
  std::mutex mu;
  std::condition_variable finished;
  std::deque<Outcome> outcomes;  // Guarded by mu.
};

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
                       ReplicaSetOptions options, size_t spare_slots)
    : part_(part),
      meta_(std::move(meta)),
      options_(options),
      initial_size_(replicas.size()) {
  // Every slot now: a replica that joins fills one, so the vector never
  // reallocates under readers.
  replicas_.resize(replicas.size() + spare_slots);
  for (size_t i = 0; i < replicas.size(); ++i) {
    replicas_[i] = std::make_unique<Replica>();
    replicas_[i]->client = std::move(replicas[i]);
  }
  size_.store(replicas.size());
  pool_ = std::make_unique<AttemptPool>();
  prober_ = std::thread([this] { ProbeLoop(); });
}

ReplicaSet::~ReplicaSet() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  prober_.join();
  // Attempts still running use the replicas (and MarkDown): let them end
  // while all is in place.
  pool_.reset();
}

std::string ReplicaSet::MismatchWith(const GraphStoreClient& client,
                                     const ShardMeta& m) const {
  if (m.partition_id == meta_.partition_id && m.part_id == meta_.part_id &&
      m.node_start == meta_.node_start && m.node_end == meta_.node_end &&
      m.content_checksum == meta_.content_checksum) {
    return "";
  }
  return absl::StrCat(client.address(), " serves part ", m.part_id,
                      " of partition ", m.partition_id, " (content ",
                      m.content_checksum, "), not part ", meta_.part_id, " of ",
                      meta_.partition_id, " (content ", meta_.content_checksum,
                      ")");
}

absl::Status ReplicaSet::Join(std::unique_ptr<GraphStoreClient>* client,
                              const ShardMeta& meta) {
  const std::string& address = (*client)->address();
  const std::string mismatch = MismatchWith(**client, meta);
  if (!mismatch.empty()) return absl::FailedPreconditionError(mismatch);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) {
      if (replicas_[i]->client->address() == address) {
        return absl::AlreadyExistsError(
            absl::StrCat(address, " is a replica of part ", part_, " already"));
      }
    }
    if (n == replicas_.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("part ", part_, " has no slot left for ", address));
    }
    auto r = std::make_unique<Replica>();
    r->client = std::move(*client);
    replicas_[n] = std::move(r);
    // Published: readers that see the new size see the slot filled.
    size_.store(n + 1, std::memory_order_release);
  }
  changed_.notify_all();  // Calls waiting for a live replica.
  return absl::OkStatus();
}

std::string ReplicaSet::addresses() const {
  std::vector<std::string> all;
  const size_t n = size();
  for (size_t i = 0; i < n; ++i) all.push_back(replicas_[i]->client->address());
  return absl::StrJoin(all, ", ");
}

std::vector<ReplicaState> ReplicaSet::states() const {
  std::vector<ReplicaState> states;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = size();
  for (size_t i = 0; i < n; ++i) {
    const auto& r = replicas_[i];
    ReplicaState s;
    s.address = r->client->address();
    s.up = r->up.load();
    s.calls = r->calls.load();
    s.failures = r->failures.load();
    s.rejoins = r->rejoins.load();
    s.in_flight = r->in_flight.load();
    s.last_error = r->last_error;
    s.joined_late = i >= initial_size_;
    states.push_back(std::move(s));
  }
  return states;
}

int ReplicaSet::IndexOf(const GraphStoreClient& client) const {
  const size_t n = size();
  for (size_t i = 0; i < n; ++i) {
    if (replicas_[i]->client.get() == &client) return static_cast<int>(i);
  }
  return -1;
}

int ReplicaSet::Pick(const std::vector<bool>& tried) const {
  // The replicas the caller's round knows (one that joined since waits for
  // its next call).
  const size_t n = tried.size();
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
  if (was_up && size() > 1) {
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
  const size_t n = size();
  if (n == 1 && waited == absl::ZeroDuration()) return last;
  std::vector<std::string> each;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      const auto& r = replicas_[i];
      // A client's errors start with its address already.
      const std::string& address = r->client->address();
      const std::string& error = r->last_error;
      each.push_back(error.empty() ? absl::StrCat(address, ": no error yet")
                     : absl::StartsWith(error, address)
                         ? error
                         : absl::StrCat(address, ": ", error));
    }
  }
  const std::string who =
      absl::IsDataLoss(last) && waited == absl::ZeroDuration()
          ? (n == 1
                 ? "its server answers wrongly"
                 : absl::StrCat("each of its ", n, " replicas answers wrongly"))
      : n == 1 ? "its server does not answer"
               : absl::StrCat("none of its ", n, " replicas answers");
  const std::string wait =
      waited > absl::ZeroDuration()
          ? absl::StrFormat(" after waiting %.1f s (--server-wait)",
                            absl::ToDoubleSeconds(waited))
          : "";
  return absl::Status(last.code(),
                      absl::StrCat("part ", part_, ": ", who, wait, ": ",
                                   absl::StrJoin(each, "; ")));
}

absl::Status ReplicaSet::WaitForLive(absl::Time* wait_start,
                                     const absl::Status& last,
                                     const std::vector<bool>* skipped) const {
  const absl::Time now = absl::Now();
  if (options_.server_wait <= absl::ZeroDuration()) {
    return AllDown(last, absl::ZeroDuration());
  }
  if (*wait_start == absl::InfinitePast()) {
    *wait_start = now;
    if (!waiting_said_.exchange(true)) {
      std::fprintf(stderr,
                   "shardgnn: no replica of part %d answers (%s); waiting "
                   "up to %s for one to come back (--server-wait)\n",
                   part_, addresses().c_str(),
                   absl::FormatDuration(options_.server_wait).c_str());
    }
  }
  if (now - *wait_start >= options_.server_wait) {
    return AllDown(last, now - *wait_start);
  }
  // Until a replica comes back (the prober says so), or the next probe.
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(
      lock,
      absl::ToChronoNanoseconds(
          std::min(options_.probe_interval,
                   options_.server_wait - (absl::Now() - *wait_start))),
      [&] {
        // A replica that joined counts unless the caller's
        // mask leaves it out (the mask predates it).
        const size_t n = size();
        for (size_t i = 0; i < n; ++i) {
          if (replicas_[i]->up.load() &&
              (skipped == nullptr || (i < skipped->size() && !(*skipped)[i]))) {
            return true;
          }
        }
        return stop_;
      });
  return absl::OkStatus();
}

absl::Status ReplicaSet::Run(
    const std::function<absl::Status(GraphStoreClient&)>& call,
    const std::vector<bool>* skip) const {
  // The replicas a round may use: those in the set when it starts (one that
  // joins during a round is used from the next round or call on).
  size_t n = size();
  // The mask, when the caller leaves some replicas out (null on the common
  // path: nothing left out, no scan). Replicas past its end joined after the
  // caller made it, and are left out too.
  std::vector<bool> mask;
  const std::vector<bool>* skipped = nullptr;
  auto fit_mask = [&] {
    mask.assign(n, true);
    std::copy_n(skip->begin(), std::min(n, skip->size()), mask.begin());
    skipped = &mask;
  };
  if (skip != nullptr) {
    fit_mask();
    if (std::find(mask.begin(), mask.end(), false) == mask.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("part ", part_, ": every replica (", addresses(),
                       ") is left out of this call"));
    }
  }
  // Replicas tried this round; the skipped ones count as tried in every round.
  std::vector<bool> tried =
      skipped != nullptr ? *skipped : std::vector<bool>(n, false);
  absl::Status last;
  absl::Time wait_start = absl::InfinitePast();
  bool failed_over = false;
  // Every failure this round was a wrong answer (kept until one is not).
  bool answered_wrongly = true;
  while (true) {
    const int i = Pick(tried);
    if (i < 0) {
      // Every replica failed this round. Every one answered, wrongly: no
      // wait makes that right (a server that answers is never "back").
      if (answered_wrongly && !last.ok()) {
        return AllDown(last, absl::ZeroDuration());
      }
      // Another round, with a replica that joined meanwhile (WaitForLive
      // returns at once for one).
      answered_wrongly = true;
      RETURN_IF_ERROR(WaitForLive(&wait_start, last, skipped));
      n = size();
      if (skipped != nullptr) {
        fit_mask();
        tried = *skipped;
      } else {
        tried.assign(n, false);
      }
      continue;
    }
    Replica& r = *replicas_[static_cast<size_t>(i)];
    r.in_flight.fetch_add(1);
    r.calls.fetch_add(1);
    const absl::Time start =
        options_.hedge_adaptive ? absl::Now() : absl::InfinitePast();
    absl::Status s = call(*r.client);
    r.in_flight.fetch_sub(1);
    if (s.ok() && options_.hedge_adaptive) RecordLatency(absl::Now() - start);
    if (s.ok() || !IsReplicaFailure(s)) {
      if (failed_over) failovers_.fetch_add(1);
      if (wait_start != absl::InfinitePast()) waiting_said_ = false;
      return s;
    }
    MarkDown(static_cast<size_t>(i), s);
    tried[static_cast<size_t>(i)] = true;
    last = s;
    answered_wrongly = answered_wrongly && IsWrongAnswer(s);
    failed_over = true;
  }
}

bool ReplicaSet::ShouldHedge() const {
  if (options_.hedge_after <= absl::ZeroDuration() &&
      !options_.hedge_adaptive) {
    return false;
  }
  int live = 0;
  const size_t n = size();
  for (size_t i = 0; i < n; ++i) live += replicas_[i]->up.load() ? 1 : 0;
  return live >= 2;
}

absl::Duration ReplicaSet::HedgeDelay() const {
  if (!options_.hedge_adaptive) return options_.hedge_after;
  const int64_t p95 = p95_ns_.load();
  if (p95 < 0) return std::max(options_.hedge_floor, kAdaptiveInitialDelay);
  return std::max(options_.hedge_floor, absl::Nanoseconds(p95));
}

void ReplicaSet::RecordLatency(absl::Duration took) const {
  std::lock_guard<std::mutex> lock(latency_mu_);
  const int64_t ns = absl::ToInt64Nanoseconds(took);
  if (latencies_.size() < kLatencyWindow) {
    latencies_.push_back(ns);
  } else {
    latencies_[static_cast<size_t>(latencies_seen_) % kLatencyWindow] = ns;
  }
  ++latencies_seen_;
  if (latencies_seen_ < kLatencyWarmup ||
      (latencies_seen_ != kLatencyWarmup && latencies_seen_ % kP95Every != 0)) {
    return;
  }
  std::vector<int64_t> sorted = latencies_;
  const size_t at = sorted.size() * 95 / 100;
  std::nth_element(sorted.begin(), sorted.begin() + at, sorted.end());
  p95_ns_ = sorted[at];
}

void ReplicaSet::StartAttempt(const std::shared_ptr<Race>& race, size_t r,
                              bool hedge) const {
  Replica& replica = *replicas_[r];
  replica.in_flight.fetch_add(1);
  replica.calls.fetch_add(1);
  pool_->Submit([this, race, r, hedge] {
    Replica& replica = *replicas_[r];
    std::shared_ptr<void> result;
    const absl::Time start = absl::Now();
    absl::Status s = race->attempt(*replica.client, &result);
    replica.in_flight.fetch_sub(1);
    if (s.ok() && options_.hedge_adaptive) RecordLatency(absl::Now() - start);
    // Also when the caller has its answer already: the replica is down.
    if (!s.ok() && IsReplicaFailure(s)) MarkDown(r, s);
    {
      std::lock_guard<std::mutex> lock(race->mu);
      race->outcomes.push_back({r, hedge, std::move(s), std::move(result)});
    }
    race->finished.notify_all();
  });
}

absl::Status ReplicaSet::RunHedged(Attempt attempt,
                                   std::shared_ptr<void>* result,
                                   std::string* answered_by) const {
  auto race = std::make_shared<Race>(std::move(attempt));
  size_t n = size();
  // Replicas with an attempt this round (running, or failed).
  std::vector<bool> tried(n, false);
  absl::Status last;
  absl::Time wait_start = absl::InfinitePast();
  bool failed_over = false;
  bool answered_wrongly = true;  // As in Run.
  bool hedged = false;           // At most one second copy per call.
  int running = 0;
  absl::Time hedge_at = absl::InfiniteFuture();
  // A live replica without an attempt yet: starts one there.
  auto start_on_live = [&](bool hedge) {
    const int i = Pick(tried);
    if (i < 0 || !replicas_[static_cast<size_t>(i)]->up.load()) return false;
    tried[static_cast<size_t>(i)] = true;
    ++running;
    StartAttempt(race, static_cast<size_t>(i), hedge);
    return true;
  };
  std::unique_lock<std::mutex> lock(race->mu);
  while (true) {
    if (running == 0) {
      // The first attempt, or every one so far failed: as in Run.
      const int i = Pick(tried);
      if (i < 0) {
        if (answered_wrongly && !last.ok()) {
          return AllDown(last, absl::ZeroDuration());
        }
        answered_wrongly = true;
        lock.unlock();
        RETURN_IF_ERROR(WaitForLive(&wait_start, last));
        lock.lock();
        n = size();  // With a replica that joined meanwhile.
        tried.assign(n, false);
        continue;
      }
      tried[static_cast<size_t>(i)] = true;
      ++running;
      StartAttempt(race, static_cast<size_t>(i), false);
      hedge_at = hedged ? absl::InfiniteFuture() : absl::Now() + HedgeDelay();
      continue;
    }
    auto has_outcome = [&] { return !race->outcomes.empty(); };
    if (hedge_at == absl::InfiniteFuture()) {
      race->finished.wait(lock, has_outcome);
    } else if (!race->finished.wait_until(lock, absl::ToChronoTime(hedge_at),
                                          has_outcome)) {
      // No answer within the hedge delay: a second copy, if another
      // replica is live.
      hedge_at = absl::InfiniteFuture();
      if (running == 1 && start_on_live(/*hedge=*/true)) {
        hedged = true;
        hedges_sent_.fetch_add(1);
      }
      continue;
    }
    Race::Outcome outcome = std::move(race->outcomes.front());
    race->outcomes.pop_front();
    --running;
    const absl::Status& s = outcome.status;
    if (s.ok() || !IsReplicaFailure(s)) {
      if (s.ok()) {
        *result = std::move(outcome.result);
        if (outcome.hedge) hedges_won_.fetch_add(1);
        if (failed_over) failovers_.fetch_add(1);
      }
      if (answered_by != nullptr) {
        *answered_by = replicas_[outcome.replica]->client->address();
      }
      if (wait_start != absl::InfinitePast()) waiting_said_ = false;
      return s;  // Another attempt still running ends on its own.
    }
    // Its replica was marked down by the attempt. Fail over now to a live
    // replica not tried yet, even while another attempt runs.
    last = s;
    answered_wrongly = answered_wrongly && IsWrongAnswer(s);
    failed_over = true;
    if (running > 0) start_on_live(/*hedge=*/false);
  }
}

void ReplicaSet::ProbeLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    std::vector<size_t> down;
    const size_t n = size();
    for (size_t r = 0; r < n; ++r) {
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
  absl::Status s = client.ProbeServing(absl::Now() + options_.probe_timeout);
  std::string why;
  if (s.ok()) {
    auto info = client.Info();
    if (!info.ok()) {
      s = info.status();
    } else if (std::string mismatch = MismatchWith(client, info->meta);
               !mismatch.empty()) {
      s = absl::FailedPreconditionError(
          absl::StrCat(mismatch, " (back on its address)"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.ok()) {
    replica.last_error = std::string(s.message());
    return false;
  }
  replica.up = true;
  replica.rejoins.fetch_add(1);
  if (size() > 1 || options_.server_wait > absl::ZeroDuration()) {
    std::fprintf(stderr, "shardgnn: replica %s of part %d is back\n",
                 client.address().c_str(), part_);
  }
  return true;
}

}  // namespace shardgnn::internal
