#include "embedding/embedding_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "common/buffers.h"
#include "common/sampling.h"
#include "common/status.h"
#include "embedding/internal/embedding_table_impl.h"

namespace shardgnn {
namespace {

constexpr EmbeddingOptimizer kAllOptimizers[] = {EmbeddingOptimizer::kSgd,
                                                 EmbeddingOptimizer::kAdagrad,
                                                 EmbeddingOptimizer::kAdam};

bool IsKnownOptimizer(EmbeddingOptimizer optimizer) {
  for (EmbeddingOptimizer known : kAllOptimizers) {
    if (optimizer == known) return true;
  }
  return false;
}

// FNV-1a: a stable 64-bit hash of the table's name (the same on every
// platform and in every process, unlike std::hash).
uint64_t HashName(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

namespace embedding_internal {

uint64_t TableKey(const EmbeddingTableConfig& config) {
  return MixSeed(config.seed, HashName(config.name));
}

uint64_t RowKey(uint64_t table_key, NodeId node) {
  return MixSeed(table_key, static_cast<uint64_t>(node));
}

// Box-Muller, computed in double and rounded once to float.
float InitialValue(uint64_t row_key, int64_t col, double init_std) {
  uint64_t state = MixSeed(row_key, static_cast<uint64_t>(col));
  constexpr double kTwoPow53 = 9007199254740992.0;
  // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
  const double u1 =
      static_cast<double>((SplitMix64(&state) >> 11) + 1) / kTwoPow53;
  const double u2 = static_cast<double>(SplitMix64(&state) >> 11) / kTwoPow53;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  return static_cast<float>(init_std * z);
}

void ArrayDeleter::operator()(void* p) const {
  if (mapped_bytes > 0) {
    ::munmap(p, mapped_bytes);
  } else {
    std::free(p);
  }
}

absl::StatusOr<void*> ZeroBytes(uint64_t n, size_t size, absl::string_view what,
                                absl::string_view table,
                                const std::string& backing_dir,
                                size_t* mapped_bytes) {
  *mapped_bytes = 0;
  if (n > std::numeric_limits<size_t>::max() / size) {
    return absl::ResourceExhaustedError(
        absl::StrCat("embedding table ", table, ": ", what, " of ", n,
                     " elements overflows the address space"));
  }
  // An empty table still gets a valid pointer.
  const size_t bytes = std::max<size_t>(n * size, size);
  if (backing_dir.empty()) {
    void* p = std::calloc(bytes / size, size);
    if (p == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("embedding table ", table, ": cannot reserve ", what,
                       " (", bytes, " bytes)"));
    }
    return p;
  }
  auto failed = [&](absl::string_view doing) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "embedding table ", table, ": cannot ", doing, " ", bytes, " bytes of ",
        what, " in ", backing_dir, ": ", std::strerror(errno)));
  };
  // A file no other process can open, gone when the table is.
  int fd = ::open(backing_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string name = backing_dir + "/.embedding-table-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return failed("create a file for");
  const int reserved = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (reserved != 0) {
    ::close(fd);
    errno = reserved;
    return failed("reserve");
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return failed("map");
  *mapped_bytes = bytes;
  return p;
}

}  // namespace embedding_internal

namespace {

using embedding_internal::InitialValue;
using embedding_internal::kMaxNamedTrainers;
using embedding_internal::RowKey;
using embedding_internal::TableKey;

// A double that reads back as itself, short when it can be.
std::string FormatDouble(double v) {
  std::string s = absl::StrFormat("%g", v);
  if (std::strtod(s.c_str(), nullptr) != v && !std::isnan(v)) {
    s = absl::StrFormat("%.17g", v);
  }
  return s;
}

bool SameDouble(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

const char* EmbeddingOptimizerName(EmbeddingOptimizer optimizer) {
  switch (optimizer) {
    case EmbeddingOptimizer::kSgd:
      return "sgd";
    case EmbeddingOptimizer::kAdagrad:
      return "adagrad";
    case EmbeddingOptimizer::kAdam:
      return "adam";
  }
  return "unknown";
}

absl::StatusOr<EmbeddingOptimizer> ParseEmbeddingOptimizer(
    const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  std::vector<std::string> names;
  for (EmbeddingOptimizer optimizer : kAllOptimizers) {
    if (lower == EmbeddingOptimizerName(optimizer)) return optimizer;
    names.push_back(EmbeddingOptimizerName(optimizer));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown embedding optimizer \"", name,
                   "\" (valid: ", absl::StrJoin(names, ", "), ")"));
}

absl::Status ValidateEmbeddingConfig(const EmbeddingTableConfig& config) {
  auto bad = [&config](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding table \"", config.name, "\": ", what));
  };
  if (config.name.empty()) return bad("name is empty");
  if (config.dim < 1 || config.dim > kMaxEmbeddingDim) {
    return bad(
        absl::StrCat("dim ", config.dim, " is not in 1..", kMaxEmbeddingDim));
  }
  if (!IsKnownOptimizer(config.optimizer)) {
    return bad(absl::StrCat("optimizer ", static_cast<int>(config.optimizer),
                            " is not one of sgd, adagrad, adam"));
  }
  if (!(config.lr > 0) || !std::isfinite(config.lr)) {
    return bad(absl::StrCat("lr ", FormatDouble(config.lr),
                            " is not a finite value > 0"));
  }
  if (!(config.beta1 >= 0 && config.beta1 < 1)) {
    return bad(absl::StrCat("beta1 ", FormatDouble(config.beta1),
                            " is not in [0, 1)"));
  }
  if (!(config.beta2 >= 0 && config.beta2 < 1)) {
    return bad(absl::StrCat("beta2 ", FormatDouble(config.beta2),
                            " is not in [0, 1)"));
  }
  if (!(config.eps > 0) || !std::isfinite(config.eps)) {
    return bad(absl::StrCat("eps ", FormatDouble(config.eps),
                            " is not a finite value > 0"));
  }
  if (!(config.init_std >= 0) || !std::isfinite(config.init_std)) {
    return bad(absl::StrCat("init_std ", FormatDouble(config.init_std),
                            " is not a finite value >= 0"));
  }
  if (config.num_trainers < 1 || config.num_trainers > 4096) {
    return bad(absl::StrCat("num_trainers ", config.num_trainers,
                            " is not in 1..4096"));
  }
  return absl::OkStatus();
}

std::string EmbeddingConfigDifferences(const EmbeddingTableConfig& a,
                                       const EmbeddingTableConfig& b) {
  std::vector<std::string> diffs;
  auto quoted = [](const std::string& s) {
    return absl::StrCat("\"", s, "\"");
  };
  if (a.name != b.name) {
    diffs.push_back(
        absl::StrCat("name ", quoted(a.name), " != ", quoted(b.name)));
  }
  if (a.dim != b.dim) {
    diffs.push_back(absl::StrCat("dim ", a.dim, " != ", b.dim));
  }
  if (a.optimizer != b.optimizer) {
    diffs.push_back(absl::StrCat("optimizer ",
                                 EmbeddingOptimizerName(a.optimizer),
                                 " != ", EmbeddingOptimizerName(b.optimizer)));
  }
  const std::pair<const char*, std::pair<double, double>> doubles[] = {
      {"lr", {a.lr, b.lr}},
      {"beta1", {a.beta1, b.beta1}},
      {"beta2", {a.beta2, b.beta2}},
      {"eps", {a.eps, b.eps}},
      {"init_std", {a.init_std, b.init_std}},
  };
  for (const auto& [field, values] : doubles) {
    if (!SameDouble(values.first, values.second)) {
      diffs.push_back(absl::StrCat(field, " ", FormatDouble(values.first),
                                   " != ", FormatDouble(values.second)));
    }
  }
  if (a.seed != b.seed) {
    diffs.push_back(absl::StrCat("seed ", a.seed, " != ", b.seed));
  }
  if (a.num_trainers != b.num_trainers) {
    diffs.push_back(
        absl::StrCat("num_trainers ", a.num_trainers, " != ", b.num_trainers));
  }
  if (a.run_id != b.run_id) {
    diffs.push_back(
        absl::StrCat("run_id ", quoted(a.run_id), " != ", quoted(b.run_id)));
  }
  if (a.ordered != b.ordered) {
    diffs.push_back(absl::StrCat("ordered ", a.ordered, " != ", b.ordered));
  }
  return absl::StrJoin(diffs, ", ");
}

float InitialEmbeddingValue(const EmbeddingTableConfig& config, NodeId node,
                            int64_t col) {
  return InitialValue(RowKey(TableKey(config), node), col, config.init_std);
}

std::string EmbeddingTable::Impl::LaggingTrainers(int64_t needed) const {
  std::vector<std::string> named;
  int more = 0;
  // Ordered tables: who has not pushed yet (every trainer's applied steps
  // are the same there).
  const std::vector<int64_t>& next =
      pushed_next_.empty() ? next_step_ : pushed_next_;
  for (int t = 0; t < static_cast<int>(next.size()); ++t) {
    if (next[t] >= needed) continue;
    if (static_cast<int>(named.size()) < kMaxNamedTrainers) {
      named.push_back(absl::StrCat(t, " (at step ", next[t], ")"));
    } else {
      ++more;
    }
  }
  std::string s = absl::StrJoin(named, ", ");
  if (more > 0) absl::StrAppend(&s, " and ", more, " more");
  return s;
}

bool EmbeddingTable::Impl::WaitForClock(std::unique_lock<std::mutex>& lock,
                                        int64_t needed, absl::Time deadline) {
  auto reached = [this, needed] {
    return applied_.load(std::memory_order_relaxed) >= needed;
  };
  if (deadline == absl::InfiniteFuture()) {
    clock_advanced_.wait(lock, reached);
    return true;
  }
  // Clamped so that the chrono time point cannot overflow (a deadline a year
  // away is as good as none).
  const absl::Time now = absl::Now();
  deadline = std::clamp(deadline, now, now + absl::Hours(24 * 365));
  return clock_advanced_.wait_until(lock, absl::ToChronoTime(deadline),
                                    reached);
}

absl::Status EmbeddingTable::Impl::Pull(absl::Span<const NodeId> ids,
                                        int64_t step, int staleness,
                                        absl::Time deadline, float* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < node_start_ || ids[i] >= node_end_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding table ", config_.name, ": pull of ID ", ids[i], " (index ",
          i, ") not held here (nodes [", node_start_, ", ", node_end_, "))"));
    }
  }

  int64_t applied;
  if (staleness >= 0) {
    int64_t needed;
    if (__builtin_sub_overflow(step, static_cast<int64_t>(staleness),
                               &needed)) {
      needed = std::numeric_limits<int64_t>::min();
    }
    const absl::Time start = absl::Now();
    bool ok;
    std::string lagging;
    {
      std::unique_lock<std::mutex> lock(clock_mu_);
      ok = WaitForClock(lock, needed, deadline);
      applied = applied_.load(std::memory_order_relaxed);
      if (!ok) lagging = LaggingTrainers(needed);
    }
    pull_wait_nanos_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start),
                               std::memory_order_relaxed);
    if (!ok) {
      return absl::DeadlineExceededError(absl::StrCat(
          "embedding table ", config_.name, ": pull for step ", step,
          " with staleness ", staleness, " waits for pushes of trainers ",
          lagging, " (it needs every trainer at step ", needed, ")"));
    }
  } else {
    applied = applied_.load(std::memory_order_acquire);
  }
  pulls_.fetch_add(1, std::memory_order_relaxed);
  if (step > applied) {
    staleness_sum_.fetch_add(step - applied, std::memory_order_relaxed);
  }

  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t row = ids[i] - node_start_;
    std::lock_guard<std::mutex> lock(StripeOf(row));
    std::memcpy(out + i * dim_, RowLocked(row), dim_ * sizeof(float));
  }
  rows_pulled_.fetch_add(static_cast<int64_t>(ids.size()),
                         std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status EmbeddingTable::Impl::ValidatePush(
    int trainer, int64_t step, absl::Span<const NodeId> ids,
    absl::Span<const float> grads) const {
  const std::string where =
      absl::StrCat("embedding table ", config_.name, ": push of trainer ",
                   trainer, " for step ", step, ": ");
  if (grads.size() != ids.size() * static_cast<size_t>(dim_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, grads.size(), " gradient values for ", ids.size(),
        " IDs of dim ", dim_, " (expected ", ids.size() * dim_, ")"));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < node_start_ || ids[i] >= node_end_) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "ID ", ids[i], " (index ", i, ") not held here (nodes [",
          node_start_, ", ", node_end_, "))"));
    }
  }
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!std::isfinite(grads[k])) {
      const size_t i = k / dim_;
      return absl::InvalidArgumentError(absl::StrCat(
          where, "gradient of ID ", ids[i], " (index ", i, ", column ",
          k % dim_, ") is not finite (", FormatDouble(grads[k]), ")"));
    }
  }
  return absl::OkStatus();
}

void EmbeddingTable::Impl::ApplyRow(int64_t row, const float* g) {
  std::lock_guard<std::mutex> lock(StripeOf(row));
  float* w = RowLocked(row);
  const int64_t base = row * dim_;
  switch (config_.optimizer) {
    case EmbeddingOptimizer::kSgd:
      for (int64_t c = 0; c < dim_; ++c) w[c] -= lr_ * g[c];
      break;
    case EmbeddingOptimizer::kAdagrad: {
      float* s = sum_sq_.get() + base;
      for (int64_t c = 0; c < dim_; ++c) {
        s[c] += g[c] * g[c];
        w[c] -= lr_ * g[c] / (std::sqrt(s[c]) + eps_);
      }
      break;
    }
    case EmbeddingOptimizer::kAdam: {
      const int64_t t = ++adam_steps_[row];
      const double t_double = static_cast<double>(t);
      const float bias1 =
          static_cast<float>(1.0 - std::pow(config_.beta1, t_double));
      const float bias2 =
          static_cast<float>(1.0 - std::pow(config_.beta2, t_double));
      float* m = m_.get() + base;
      float* v = v_.get() + base;
      for (int64_t c = 0; c < dim_; ++c) {
        m[c] = beta1_ * m[c] + one_minus_beta1_ * g[c];
        v[c] = beta2_ * v[c] + one_minus_beta2_ * g[c] * g[c];
        const float m_hat = m[c] / bias1;
        const float v_hat = v[c] / bias2;
        w[c] -= lr_ * m_hat / (std::sqrt(v_hat) + eps_);
      }
      break;
    }
  }
}

absl::Status EmbeddingTable::Impl::Push(int trainer, int64_t step,
                                        absl::Span<const NodeId> ids,
                                        absl::Span<const float> grads) {
  if (trainer < 0 || trainer >= config_.num_trainers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding table ", config_.name, ": push of trainer ", trainer,
        " (the run has trainers 0..", config_.num_trainers - 1, ")"));
  }
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding table ", config_.name, ": trainer ", trainer,
                     " pushed step ", step, " (steps start at 0)"));
  }
  std::lock_guard<std::mutex> push_lock(push_mu_[trainer]);
  int64_t next;
  if (config_.ordered && config_.num_trainers > 1) {
    // Held pushes count as pushed (a retry of one is acknowledged).
    std::lock_guard<std::mutex> held_lock(held_mu_);
    if (next_held_.empty()) next_held_.assign(config_.num_trainers, 0);
    next = next_held_[trainer];
  } else {
    std::lock_guard<std::mutex> clock_lock(clock_mu_);
    next = next_step_[trainer];
  }
  if (step < next) return absl::OkStatus();  // A retry: already applied.
  if (step > next) {
    return absl::FailedPreconditionError(
        absl::StrCat("embedding table ", config_.name, ": trainer ", trainer,
                     " pushed step ", step, " but its next step is ", next));
  }
  RETURN_IF_ERROR(ValidatePush(trainer, step, ids, grads));
  if (config_.ordered && config_.num_trainers > 1) {
    return HoldPush(trainer, step, ids, grads);
  }
  ApplyPush(ids, grads);

  {
    std::lock_guard<std::mutex> clock_lock(clock_mu_);
    const bool was_min = next_step_[trainer] == applied_.load();
    ++next_step_[trainer];
    if (was_min) {
      applied_.store(*std::min_element(next_step_.begin(), next_step_.end()),
                     std::memory_order_release);
      clock_advanced_.notify_all();
    }
  }
  pushes_.fetch_add(1, std::memory_order_relaxed);
  rows_pushed_.fetch_add(static_cast<int64_t>(ids.size()),
                         std::memory_order_relaxed);
  return absl::OkStatus();
}

void EmbeddingTable::Impl::ApplyPush(absl::Span<const NodeId> ids,
                                     absl::Span<const float> grads) {
  // Sum the gradients of duplicate IDs, in the order they came, so that the
  // result does not depend on anything but the push.
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&ids](size_t a, size_t b) { return ids[a] < ids[b]; });
  std::vector<float> sum;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && ids[order[end]] == ids[order[begin]]) ++end;
    const float* g = grads.data() + order[begin] * dim_;
    if (end - begin > 1) {
      sum.assign(g, g + dim_);
      for (size_t k = begin + 1; k < end; ++k) {
        const float* more = grads.data() + order[k] * dim_;
        for (int64_t c = 0; c < dim_; ++c) sum[c] += more[c];
      }
      g = sum.data();
    }
    ApplyRow(ids[order[begin]] - node_start_, g);
    begin = end;
  }
}

absl::Status EmbeddingTable::Impl::HoldPush(int trainer, int64_t step,
                                            absl::Span<const NodeId> ids,
                                            absl::Span<const float> grads) {
  std::lock_guard<std::mutex> held_lock(held_mu_);
  // A synchronous trainer pushes step s only after its pull of s, which
  // waited until every step before s was complete on the copy it read. A
  // replica of the same part may lag that copy by one step: each trainer
  // sends a push to every copy at once and the next only when all took it,
  // so every copy has all of step s - 2 (and this trainer's s - 1), and at
  // most step s - 1 is incomplete here. Held pushes are therefore bounded
  // (two steps per trainer); a client further ahead is refused rather than
  // held without end.
  const int64_t applied = applied_.load(std::memory_order_acquire);
  if (step > applied + 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "embedding table ", config_.name, ": trainer ", trainer,
        " pushed step ", step, " but only ", applied,
        " steps are complete; a synchronous trainer pulls a step (waiting for "
        "the steps before it) before it pushes it"));
  }
  auto it = held_.find(step);
  if (it == held_.end()) {
    std::vector<HeldPush> reused;
    if (!spare_slots_.empty()) {
      reused = std::move(spare_slots_.back());
      spare_slots_.pop_back();
    }
    it = held_.emplace(step, std::move(reused)).first;
  }
  std::vector<HeldPush>& slots = it->second;
  slots.resize(static_cast<size_t>(config_.num_trainers));
  HeldPush& slot = slots[static_cast<size_t>(trainer)];
  slot.held = true;
  // The slots are kept between steps (spare_slots_).
  ReserveWithHeadroom(&slot.ids, ids.size());
  ReserveWithHeadroom(&slot.grads, grads.size());
  slot.ids.assign(ids.begin(), ids.end());
  slot.grads.assign(grads.begin(), grads.end());
  ++next_held_[static_cast<size_t>(trainer)];
  {
    std::lock_guard<std::mutex> clock_lock(clock_mu_);
    pushed_next_ = next_held_;  // For LaggingTrainers.
  }
  pushes_.fetch_add(1, std::memory_order_relaxed);
  rows_pushed_.fetch_add(static_cast<int64_t>(ids.size()),
                         std::memory_order_relaxed);
  // Every complete step from the next one to apply, in order.
  while (!held_.empty()) {
    auto first = held_.begin();
    if (first->first != applied_.load(std::memory_order_acquire)) break;
    bool complete = true;
    for (const HeldPush& h : first->second) complete = complete && h.held;
    if (!complete ||
        first->second.size() != static_cast<size_t>(config_.num_trainers)) {
      break;
    }
    for (HeldPush& h : first->second) {
      ApplyPush(h.ids, h.grads);
      h.held = false;
    }
    const int64_t done = first->first + 1;
    if (spare_slots_.size() < 2)
      spare_slots_.push_back(std::move(first->second));
    held_.erase(first);
    std::lock_guard<std::mutex> clock_lock(clock_mu_);
    for (int64_t& n : next_step_) n = done;
    applied_.store(done, std::memory_order_release);
    clock_advanced_.notify_all();
  }
  return absl::OkStatus();
}

EmbeddingTable::EmbeddingTable(const EmbeddingTableConfig& config,
                               NodeId node_start, NodeId node_end,
                               std::unique_ptr<Impl> impl)
    : config_(config),
      node_start_(node_start),
      node_end_(node_end),
      impl_(std::move(impl)) {}

EmbeddingTable::~EmbeddingTable() = default;

absl::StatusOr<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Create(
    const EmbeddingTableConfig& config, NodeId node_start, NodeId node_end,
    const std::string& backing_dir) {
  RETURN_IF_ERROR(ValidateEmbeddingConfig(config));
  if (node_start < 0 || node_start > node_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding table ", config.name, ": node range [",
                     node_start, ", ", node_end, ") is not a valid range"));
  }
  auto impl = std::make_unique<Impl>(config, node_start, node_end, backing_dir);
  RETURN_IF_ERROR(impl->Allocate());
  return std::unique_ptr<EmbeddingTable>(
      new EmbeddingTable(config, node_start, node_end, std::move(impl)));
}

absl::Status EmbeddingTable::Pull(absl::Span<const NodeId> ids, int64_t step,
                                  int staleness, absl::Time deadline,
                                  float* out) {
  return impl_->Pull(ids, step, staleness, deadline, out);
}

absl::Status EmbeddingTable::Push(int trainer, int64_t step,
                                  absl::Span<const NodeId> ids,
                                  absl::Span<const float> grads) {
  return impl_->Push(trainer, step, ids, grads);
}

int64_t EmbeddingTable::applied_steps() const { return impl_->applied_steps(); }

EmbeddingTableStats EmbeddingTable::stats() const { return impl_->stats(); }

}  // namespace shardgnn
