#include "trainer/distributed.h"

#include <torch/torch.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace shardgnn {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// Gloo errors for a dead peer read "Connection closed by peer" or "Timed out";
// both become statuses that say which rank saw it and during what.
constexpr char kPeerFailureUrl[] = "shardgnn/peer-failure";

absl::Status PeerFailure(absl::Status status) {
  status.SetPayload(kPeerFailureUrl, absl::Cord("1"));
  return status;
}

absl::Status CollectiveError(const DistributedOptions& o,
                             absl::string_view what, const std::exception& e) {
  std::string message = e.what();
  // c10::Error messages carry a C++ backtrace after the first line; keep the
  // first line.
  message = message.substr(0, message.find('\n'));
  std::string text = absl::StrCat(
      "rank ", o.rank, "/", o.world_size, ": ", what,
      " failed (a peer trainer may have died or stalled): ", message);
  if (message.find("imed out") != std::string::npos ||
      message.find("imeout") != std::string::npos) {
    return PeerFailure(absl::DeadlineExceededError(text));
  }
  return PeerFailure(absl::UnavailableError(text));
}

using Clock = std::chrono::steady_clock;

std::string StoreName(const DistributedOptions& o) {
  if (!o.store_file.empty()) return absl::StrCat("file ", o.store_file);
  return absl::StrCat("at ", o.master_addr, ":", o.master_port,
                      o.use_agent_store ? " (torchrun's agent store)" : "");
}

// Keys the group writes go under options.store_prefix (torchrun's agent store
// also holds the agents' own keys and those of earlier attempts).
c10::intrusive_ptr<c10d::Store> WithPrefix(const DistributedOptions& o,
                                           c10::intrusive_ptr<c10d::Store> s) {
  if (o.store_prefix.empty()) return s;
  return c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, std::move(s));
}

// Marks this rank as joined in `store` and waits until every rank has, or the
// rendezvous timeout: a trainer that never started (a wrong WORLD_SIZE,
// another MASTER_PORT, a launch that failed on its host) is then named,
// instead of TCPStore's or Gloo's "Socket Timeout": UNAVAILABLE naming the
// ranks missing. A store that stops answering meanwhile (rank 0, hosting it,
// gave up first) ends the wait with the ranks missing until then.
absl::Status AwaitEveryRank(c10d::Store& store, const DistributedOptions& o) {
  auto key = [](int rank) { return absl::StrCat("shardgnn/joined/", rank); };
  store.set(key(o.rank), std::vector<uint8_t>{1});
  const auto start = Clock::now();
  std::vector<int> missing;
  for (int r = 0; r < o.world_size; ++r) missing.push_back(r);
  std::string lost;
  while (true) {
    try {
      missing.erase(
          std::remove_if(missing.begin(), missing.end(),
                         [&](int r) { return store.check({key(r)}); }),
          missing.end());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      lost = absl::StrCat(
          " before the rendezvous store stopped answering after ",
          absl::StrFormat(
              "%.1f",
              std::chrono::duration<double>(Clock::now() - start).count()),
          " s (",
          o.use_agent_store ? "torchrun's agent" : "rank 0, which hosts it",
          ", gave up or stopped: ", what.substr(0, what.find('\n')), ")");
      break;
    }
    if (missing.empty()) return absl::OkStatus();
    if (Clock::now() - start >= o.timeout) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError(absl::StrCat(
      missing.size() == 1 ? "rank " : "ranks ", absl::StrJoin(missing, ", "),
      " of ", o.world_size, " did not join",
      lost.empty()
          ? absl::StrCat(" within ",
                         std::chrono::duration<double>(o.timeout).count(),
                         " s (were all of them started, with the same "
                         "MASTER_ADDR, MASTER_PORT and WORLD_SIZE?)")
          : lost));
}

// The liveness of the other ranks (DistributedOptions::peer_timeout). A thread
// bumps this rank's counter in the store every interval; while some
// collective waits (Watch), it also reads the others' counters. Stores are
// thread-safe; a TCPStore gets a connection of its own, made after the
// rendezvous, so that it never shares a socket with the process group.
class Heartbeat {
 public:
  Heartbeat(const DistributedOptions& options,
            c10::intrusive_ptr<c10d::Store> store)
      : options_(options),
        store_(std::move(store)),
        value_(static_cast<size_t>(options.world_size), -1),
        changed_(static_cast<size_t>(options.world_size), Clock::now()),
        answered_(Clock::now()),
        thread_([this] { Loop(); }) {}

  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Start reading the other ranks' counters (a collective is waiting). A
  // wait that starts gives every peer (and the store) a whole peer_timeout
  // from now: what an earlier wait saw, maybe long ago, says nothing about
  // the time since (this rank may have spent it in a long evaluation).
  void Watch() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!watching_) {
      const auto now = Clock::now();
      answered_ = now;
      std::fill(changed_.begin(), changed_.end(), now);
    }
    watching_ = true;
  }
  void Unwatch() {
    std::lock_guard<std::mutex> lock(mu_);
    watching_ = false;
  }

  // Why the collective cannot complete, if a peer (or the store, hosted by
  // rank 0) has shown no sign of life for peer_timeout.
  std::optional<std::string> Verdict() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    auto seconds = [&](Clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::seconds>(now - t).count();
    };
    for (int r = 0; r < options_.world_size; ++r) {
      if (r == options_.rank) continue;
      const auto since = changed_[static_cast<size_t>(r)];
      if (value_[static_cast<size_t>(r)] >= 0 &&
          now - since > options_.peer_timeout) {
        return absl::StrCat("rank ", r, " has shown no sign of life for ",
                            seconds(since),
                            " s (its process is stopped or frozen, or its "
                            "host is unreachable)");
      }
    }
    if (now - answered_ > options_.peer_timeout) {
      return absl::StrCat(
          "the rendezvous store ", StoreName(options_),
          " has not answered for ", seconds(answered_), " s (",
          options_.use_agent_store ? "torchrun's agent on node 0" : "rank 0",
          ", its host, is stopped or frozen, or unreachable)");
    }
    return std::nullopt;
  }

 private:
  static std::string Key(int rank) {
    return absl::StrCat("shardgnn/heartbeat/", rank);
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      const bool watching = watching_;
      lock.unlock();
      std::vector<int64_t> seen;
      bool ok = true;
      try {
        store_->add(Key(options_.rank), 1);
        if (watching) {
          // add(key, 0) reads a counter without blocking on a missing key.
          for (int r = 0; r < options_.world_size; ++r)
            seen.push_back(r == options_.rank ? 0 : store_->add(Key(r), 0));
        }
      } catch (const std::exception&) {
        ok = false;  // The store is gone: answered_ ages; Verdict names it.
      }
      lock.lock();
      const auto now = Clock::now();
      if (ok) answered_ = now;
      for (size_t r = 0; r < seen.size(); ++r) {
        if (seen[r] != value_[r]) {
          value_[r] = seen[r];
          changed_[r] = now;
        }
      }
      cv_.wait_for(lock, options_.heartbeat_interval, [&] { return stop_; });
    }
  }

  const DistributedOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool watching_ = false;
  // Per rank: the counter last read (-1: never) and when it last changed.
  std::vector<int64_t> value_;
  std::vector<Clock::time_point> changed_;
  Clock::time_point answered_;  // The store's last answer.
  std::thread thread_;          // Last: starts once the rest is built.
};

}  // namespace

bool IsPeerFailure(const absl::Status& status) {
  return status.GetPayload(kPeerFailureUrl).has_value();
}

namespace {

// Reads the integer variable `name` into *out when it is set and not empty.
absl::Status ReadIntVar(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return absl::OkStatus();
  if (!absl::SimpleAtoi(v, out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "environment variable ", name, "='", v, "' is not an integer"));
  }
  return absl::OkStatus();
}

bool IsSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// Slurm's variables (see DistributedOptionsFromEnv); RANK and WORLD_SIZE are
// unset and SLURM_PROCID is set.
absl::Status ReadSlurmVars(DistributedOptions* o) {
  if (!IsSet("SLURM_NTASKS")) {
    return absl::InvalidArgumentError(
        "SLURM_PROCID is set but SLURM_NTASKS is not: cannot tell how many "
        "trainers the job has (start the trainers with srun, or set RANK and "
        "WORLD_SIZE)");
  }
  o->launcher = "Slurm";
  RETURN_IF_ERROR(ReadIntVar("SLURM_PROCID", &o->rank));
  RETURN_IF_ERROR(ReadIntVar("SLURM_NTASKS", &o->world_size));
  RETURN_IF_ERROR(ReadIntVar("SLURM_LOCALID", &o->local_rank));
  RETURN_IF_ERROR(ReadIntVar("SLURM_NODEID", &o->node_rank));
  for (const char* name : {"SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    if (!IsSet(name)) continue;
    auto counts = ParseSlurmTasksPerNode(std::getenv(name));
    if (!counts.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "environment variable ", name, ": ", counts.status().message()));
    }
    const size_t node = static_cast<size_t>(std::max(0, o->node_rank));
    o->local_world_size =
        node < counts->size() ? (*counts)[node] : counts->front();
    break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseSlurmTasksPerNode(
    absl::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text,
        "' is not a list of per-node task counts such as '2(x3),1'"));
  };
  std::vector<int> counts;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int count = 0, repeat = 1;
    absl::string_view number = item;
    if (const size_t open = item.find('('); open != absl::string_view::npos) {
      number = item.substr(0, open);
      absl::string_view times = item.substr(open + 1);
      if (!absl::ConsumePrefix(&times, "x") ||
          !absl::ConsumeSuffix(&times, ")") ||
          !absl::SimpleAtoi(times, &repeat) || repeat < 1) {
        return bad();
      }
    }
    if (!absl::SimpleAtoi(number, &count) || count < 1 ||
        number.find_first_not_of("0123456789") != absl::string_view::npos) {
      return bad();
    }
    if (counts.size() + static_cast<size_t>(repeat) > 1000000) return bad();
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
  }
  return counts;
}

absl::StatusOr<DistributedOptions> DistributedOptionsFromEnv(
    DistributedOptions o) {
  if (!IsSet("RANK") && !IsSet("WORLD_SIZE") && IsSet("SLURM_PROCID")) {
    RETURN_IF_ERROR(ReadSlurmVars(&o));
    if (o.world_size > 1 && !IsSet("MASTER_ADDR")) o.master_addr.clear();
  } else {
    if (IsSet("RANK") || IsSet("WORLD_SIZE")) o.launcher = "torchrun";
    RETURN_IF_ERROR(ReadIntVar("RANK", &o.rank));
    RETURN_IF_ERROR(ReadIntVar("WORLD_SIZE", &o.world_size));
    RETURN_IF_ERROR(ReadIntVar("LOCAL_RANK", &o.local_rank));
    RETURN_IF_ERROR(ReadIntVar("LOCAL_WORLD_SIZE", &o.local_world_size));
    RETURN_IF_ERROR(ReadIntVar("GROUP_RANK", &o.node_rank));
  }
  RETURN_IF_ERROR(ReadIntVar("MASTER_PORT", &o.master_port));
  if (IsSet("MASTER_ADDR")) o.master_addr = std::getenv("MASTER_ADDR");
  // torch.distributed's own test (rendezvous.py, _torchelastic_use_agent_store)
  // is exactly "True".
  if (const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
      agent != nullptr && std::string(agent) == "True") {
    int attempt = 0;
    RETURN_IF_ERROR(ReadIntVar("TORCHELASTIC_RESTART_COUNT", &attempt));
    o.use_agent_store = true;
    o.store_prefix = absl::StrCat("/worker/attempt_", attempt);
  }
  return o;
}

absl::Status ValidateDistributedOptions(const DistributedOptions& o) {
  if (o.world_size < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("world size ", o.world_size, " must be >= 1"));
  if (o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " is outside [0, ", o.world_size, ")"));
  }
  if (o.local_world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("local world size ", o.local_world_size, " must be >= 1"));
  }
  if (o.master_port < 1 || o.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("master port ", o.master_port, " is outside 1..65535"));
  }
  if (o.master_addr.empty() && o.store_file.empty()) {
    if (o.launcher == "Slurm") {
      return absl::InvalidArgumentError(absl::StrCat(
          "Slurm starts ", o.world_size, " tasks (SLURM_NTASKS=", o.world_size,
          ") but no rendezvous address is given: set MASTER_ADDR (e.g. "
          "$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)) "
          "or pass --master-addr"));
    }
    return absl::InvalidArgumentError("master address is empty");
  }
  return absl::OkStatus();
}

struct ProcessGroup::Impl {
  DistributedOptions options;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::unique_ptr<Heartbeat> heartbeat;
  // A collective was given up before it completed (see ~ProcessGroup).
  bool abandoned = false;

  // Starts a collective and waits for it in slices, looking at the peers'
  // heartbeats between them.
  absl::Status Run(
      absl::string_view what,
      const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
    const auto deadline = Clock::now() + options.timeout;
    const auto slice =
        std::clamp(options.heartbeat_interval, std::chrono::milliseconds(10),
                   std::chrono::milliseconds(1000));
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = start();
    } catch (const std::exception& e) {
      return CollectiveError(options, what, e);
    }
    struct Unwatch {
      Heartbeat* h;
      ~Unwatch() {
        if (h != nullptr) h->Unwatch();
      }
    } unwatch{heartbeat.get()};
    for (;;) {
      try {
        // Work::wait throws when the slice ends before the work does (and
        // waits forever for 0 ms, c10d's kNoTimeout).
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - Clock::now());
        work->wait(std::clamp(left, std::chrono::milliseconds(1), slice));
        return absl::OkStatus();
      } catch (const std::exception& e) {
        if (work->isCompleted()) return CollectiveError(options, what, e);
      }
      if (heartbeat != nullptr) {
        heartbeat->Watch();
        if (auto verdict = heartbeat->Verdict()) {
          abandoned = true;
          return PeerFailure(absl::UnavailableError(
              absl::StrCat("rank ", options.rank, "/", options.world_size, ": ",
                           what, " cannot complete: ", *verdict)));
        }
      }
      if (Clock::now() >= deadline) {
        abandoned = true;
        return PeerFailure(absl::DeadlineExceededError(absl::StrCat(
            "rank ", options.rank, ": ", what, " did not complete within ",
            options.timeout.count(), " ms")));
      }
    }
  }
};

absl::StatusOr<std::unique_ptr<ProcessGroup>> ProcessGroup::Connect(
    const DistributedOptions& options) {
  absl::Status valid = ValidateDistributedOptions(options);
  if (!valid.ok()) return valid;
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(options.master_port);
    // With the agent's store every rank is a client; like torch.distributed's
    // workers it still counts itself in the store's own "init/" key.
    store_options.isServer = options.rank == 0 && !options.use_agent_store;
    store_options.numWorkers = options.world_size;
    // The ranks are awaited below, by name (AwaitEveryRank).
    store_options.waitWorkers = false;
    store_options.timeout = options.timeout;
    if (options.store_file.empty()) {
      impl->store =
          WithPrefix(options, c10::make_intrusive<c10d::TCPStore>(
                                  options.master_addr, store_options));
    } else {
      impl->store =
          WithPrefix(options, c10::make_intrusive<c10d::FileStore>(
                                  options.store_file, options.world_size));
      impl->store->setTimeout(options.timeout);
    }
    if (absl::Status joined = AwaitEveryRank(*impl->store, options);
        !joined.ok()) {
      return absl::Status(
          joined.code(),
          absl::StrCat("rank ", options.rank, " (node ", options.node_rank,
                       ", local rank ", options.local_rank,
                       "): rendezvous with ", options.world_size, " trainers ",
                       StoreName(options), ": ", joined.message()));
    }
    auto gloo_options =
        c10d::ProcessGroupGloo::Options::create(options.timeout);
    // On one machine bind loopback; across machines let Gloo pick this host's
    // address (GLOO_SOCKET_IFNAME selects an interface explicitly, as in
    // PyTorch).
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
        ifname != nullptr && *ifname != '\0') {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (IsLoopback(options.master_addr)) {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDefaultDevice());
    }
    impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        impl->store, options.rank, options.world_size, gloo_options);
    if (options.world_size > 1 && options.store_file.empty()) {
      c10d::TCPStoreOptions client_options = store_options;
      client_options.isServer = false;
      client_options.waitWorkers = false;
      client_options.numWorkers = c10::nullopt;
      impl->heartbeat = std::make_unique<Heartbeat>(
          options,
          WithPrefix(options, c10::make_intrusive<c10d::TCPStore>(
                                  options.master_addr, client_options)));
    } else if (options.world_size > 1) {
      impl->heartbeat = std::make_unique<Heartbeat>(options, impl->store);
    }
  } catch (const std::exception& e) {
    std::string message = e.what();
    message = message.substr(0, message.find('\n'));
    return absl::UnavailableError(absl::StrCat(
        "rank ", options.rank, " (node ", options.node_rank, ", local rank ",
        options.local_rank, "): rendezvous with ", options.world_size,
        " trainers ", StoreName(options), " failed: ", message));
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() {
  // Gloo's destructor joins its worker threads, and one blocked in a given-up
  // collective returns only at Gloo's own timeout (or never, with a stopped
  // peer that keeps its sockets open). The process is on its way out with an
  // error: leave the group to the OS rather than hold the exit.
  if (impl_->abandoned) (void)impl_->group.release();
}

int ProcessGroup::rank() const { return impl_->options.rank; }
int ProcessGroup::world_size() const { return impl_->options.world_size; }

absl::Status ProcessGroup::AllreduceSum(float* data, int64_t count) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat32)};
  return impl_->Run(absl::StrCat("allreduce of ", count, " floats"),
                    [&] { return impl_->group->allreduce(tensors); });
}

absl::Status ProcessGroup::AllreduceSum(double* data, int64_t count) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat64)};
  return impl_->Run(absl::StrCat("allreduce of ", count, " doubles"),
                    [&] { return impl_->group->allreduce(tensors); });
}

absl::Status ProcessGroup::Broadcast(float* data, int64_t count, int root) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat32)};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  return impl_->Run(
      absl::StrCat("broadcast of ", count, " floats from rank ", root),
      [&] { return impl_->group->broadcast(tensors, opts); });
}

absl::Status ProcessGroup::Barrier() {
  if (impl_->options.world_size == 1) return absl::OkStatus();
  return impl_->Run("barrier", [&] { return impl_->group->barrier(); });
}

}  // namespace shardgnn
