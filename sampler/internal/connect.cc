#include "sampler/internal/connect.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ports.h"

namespace shardgnn::internal {

namespace {

// One address at Connect: its client, and its Info or why there is none.
struct Reached {
  std::unique_ptr<GraphStoreClient> client;
  absl::Status status = absl::DeadlineExceededError("not asked");
  ServerInfo info;
};

// Whether `s`, from Health or Info at Connect, says the server is not there
// (yet): such a replica may be left out when others cover its part.
bool Unreachable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

// Why a TCP connection to `address` (HOST:PORT, or [V6]:PORT) fails now, in
// a few words for people ("connection refused: nothing listens there");
// empty when it connects (the server is there, but not answering gRPC yet:
// still loading) or the address is not of that form.
std::string TcpProblem(const std::string& address, absl::Duration timeout) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) return "";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return absl::StrCat("the host name ", host, " does not resolve");
  }
  std::string problem;
  const int fd = socket(found->ai_family,
                        found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        found->ai_protocol);
  if (fd >= 0) {
    int err = 0;
    if (connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int ready =
            poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
        socklen_t len = sizeof(err);
        if (ready <= 0) {
          err = ETIMEDOUT;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
          err = errno;
        }
      }
    }
    close(fd);
    if (err == ECONNREFUSED) {
      problem = "connection refused: nothing listens there";
    } else if (err == ETIMEDOUT) {
      problem =
          absl::StrCat("no TCP answer within ", absl::FormatDuration(timeout),
                       ": the host is down, or a firewall drops it");
    } else if (err != 0) {
      problem = std::strerror(err);
    }
  }
  freeaddrinfo(found);
  return problem;
}

// "A (why), B (why)" for the first few of `addresses`, each with its
// TcpProblem, and how many more.
std::string NameWithProblems(const std::vector<std::string>& addresses) {
  constexpr size_t kNamed = 4;
  std::vector<std::string> named;
  for (size_t i = 0; i < addresses.size() && i < kNamed; ++i) {
    const std::string why = TcpProblem(addresses[i], absl::Milliseconds(500));
    named.push_back(why.empty() ? absl::StrCat(addresses[i],
                                               " (it accepts "
                                               "connections but does not "
                                               "answer yet)")
                                : absl::StrCat(addresses[i], " (", why, ")"));
  }
  if (addresses.size() > kNamed) {
    named.push_back(absl::StrCat("and ", addresses.size() - kNamed, " more"));
  }
  return absl::StrJoin(named, ", ");
}

// When no server answered for long, what to check.
constexpr char kWhatToCheck[] =
    "check that `shardgnn serve` runs at each address (its ready line prints "
    "the address and port it listens on), that --servers names those "
    "addresses, and that no firewall is in the way";

// The wait for servers is said once it has lasted this long, and again
// every kSayWaitEvery.
constexpr absl::Duration kSayWaitAfter = absl::Seconds(2);
constexpr absl::Duration kSayWaitEvery = absl::Seconds(10);

// Asks every address for Health, then Info, all at once, each on a thread of
// its own, until all have answered, or the connect deadline passed, or every
// part of the partition the answers describe has a server that answered and
// options.spare_replica_wait passed since. A client that cannot be made (a
// bad address) is its status, at once.
std::vector<Reached> ReachAll(const std::vector<std::string>& addresses,
                              const RemoteGraphSourceOptions& options) {
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  std::vector<Reached> reached(addresses.size());
  std::mutex mu;
  std::condition_variable changed;
  size_t answered = 0;                              // Guarded by mu.
  std::vector<bool> done(addresses.size(), false);  // Guarded by mu.
  std::set<int> covered;  // Parts with a server that answered; by mu.
  int num_parts = -1;     // The first answer's; by mu.
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    threads.emplace_back([&, i] {
      Reached& r = reached[i];
      auto client = GraphStoreClient::Connect(addresses[i], options.client);
      if (!client.ok()) {
        r.status = client.status();
      } else {
        r.client = std::move(*client);
        // In slices of a second, so a straggler is given up on promptly.
        do {
          r.status = r.client->WaitForHealthy(
              std::min(deadline, absl::Now() + absl::Seconds(1)));
        } while (!r.status.ok() && Unreachable(r.status) && !stop.load() &&
                 absl::Now() < deadline);
        if (r.status.ok()) {
          auto info = r.client->Info();
          r.status = info.status();
          if (info.ok()) r.info = *std::move(info);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ++answered;
      done[i] = true;
      if (r.status.ok()) {
        if (num_parts < 0) num_parts = r.info.meta.num_parts;
        covered.insert(r.info.meta.part_id);
      }
      changed.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    std::optional<absl::Time> all_covered;
    absl::Time say_wait_at = absl::Now() + kSayWaitAfter;
    while (answered < addresses.size() && absl::Now() < deadline) {
      if (!all_covered.has_value() && num_parts > 0 &&
          static_cast<int>(covered.size()) >= num_parts) {
        all_covered = absl::Now();
      }
      if (absl::Now() >= say_wait_at && !all_covered.has_value()) {
        std::vector<std::string> waiting;
        for (size_t i = 0; i < addresses.size(); ++i) {
          if (!done[i]) waiting.push_back(addresses[i]);
        }
        lock.unlock();
        std::fprintf(stderr,
                     "shardgnn: waiting up to %s more for %zu storage "
                     "server(s) to answer: %s\n",
                     absl::FormatDuration(
                         absl::Trunc(deadline - absl::Now(), absl::Seconds(1)))
                         .c_str(),
                     waiting.size(), NameWithProblems(waiting).c_str());
        lock.lock();
        say_wait_at = absl::Now() + kSayWaitEvery;
        continue;
      }
      absl::Time until = std::min(deadline, say_wait_at);
      if (all_covered.has_value()) {
        until = std::min(until, *all_covered + options.spare_replica_wait);
        if (absl::Now() >= until) break;
      }
      changed.wait_until(lock, absl::ToChronoTime(until));
    }
  }
  stop = true;  // Each thread ends within its slice (plus an Info call).
  for (std::thread& t : threads) t.join();
  return reached;
}
}  // namespace

absl::StatusOr<ReachedServers> ReachServers(
    const std::vector<std::string>& addresses,
    const RemoteGraphSourceOptions& options) {
  std::vector<Reached> reached = ReachAll(addresses, options);
  // Those that did not answer, left out if the others cover every part.
  std::vector<size_t> unreached;
  for (size_t i = 0; i < reached.size(); ++i) {
    if (reached[i].status.ok()) continue;
    if (!Unreachable(reached[i].status)) return reached[i].status;
    unreached.push_back(i);
  }
  if (unreached.size() == reached.size()) {
    return absl::UnavailableError(
        absl::StrCat("no storage server answered within ",
                     absl::FormatDuration(options.connect_timeout), ": ",
                     NameWithProblems(addresses), "; ", kWhatToCheck,
                     " (last error: ", reached[0].status.message(), ")"));
  }
  // By part; maps, not vectors of num_parts slots: a server's claim of many
  // parts must not allocate before the parts are found missing.
  std::map<int, std::vector<std::unique_ptr<GraphStoreClient>>> by_part;
  std::map<int, ServerInfo> infos;  // The first replica's.
  std::string partition_id;
  int num_parts = -1;
  std::optional<ShardMeta> first_meta;  // first_address's
  std::string first_address;            // The first that answered.
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (!reached[i].status.ok()) continue;
    const std::string& address = addresses[i];
    if (first_address.empty()) first_address = address;
    std::unique_ptr<GraphStoreClient>* client = &reached[i].client;
    const ServerInfo* info = &reached[i].info;
    const ShardMeta& meta = info->meta;
    if (num_parts < 0) {
      num_parts = meta.num_parts;
      partition_id = meta.partition_id;
    }
    if (meta.partition_id != partition_id || meta.num_parts != num_parts) {
      return absl::FailedPreconditionError(
          absl::StrCat(address, " serves part ", meta.part_id, " of partition ",
                       meta.partition_id, " (", meta.num_parts, " parts), but ",
                       first_address, " serves partition ", partition_id, " (",
                       num_parts, " parts)"));
    }
    if (!options.expected_partition_id.empty() &&
        meta.partition_id != options.expected_partition_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          address, " serves partition ", meta.partition_id,
          ", not the run's partition ", options.expected_partition_id));
    }
    if (meta.part_id < 0 || meta.part_id >= num_parts) {
      return absl::DataLossError(absl::StrCat(address, " reports part ",
                                              meta.part_id, " of ", num_parts));
    }
    // Every part describes the same graph (a batch's rows come from several
    // of them): compare with the first server's answer.
    const ShardMeta& ref = first_meta.has_value() ? *first_meta : meta;
    auto differ = [&](const char* field, int64_t mine, int64_t theirs) {
      return absl::DataLossError(absl::StrCat(address, " reports ", field, " ",
                                              mine, ", but ", first_address,
                                              " reports ", theirs));
    };
    if (meta.num_nodes_total != ref.num_nodes_total) {
      return differ("num_nodes_total", meta.num_nodes_total,
                    ref.num_nodes_total);
    }
    if (meta.feature_dim != ref.feature_dim) {
      return differ("feature_dim", meta.feature_dim, ref.feature_dim);
    }
    if (meta.num_classes != ref.num_classes) {
      return differ("num_classes", meta.num_classes, ref.num_classes);
    }
    if (!first_meta.has_value()) first_meta = meta;
    auto& replicas = by_part[meta.part_id];
    if (!replicas.empty()) {
      // Another replica of the part: it must hold the same shard.
      const ShardMeta& other = infos[meta.part_id].meta;
      const std::string& other_address = replicas.front()->address();
      for (const std::unique_ptr<GraphStoreClient>& r : replicas) {
        if (r->address() == address) {
          return absl::InvalidArgumentError(
              absl::StrCat(address, " is given twice"));
        }
      }
      if (meta.node_start != other.node_start ||
          meta.node_end != other.node_end ||
          meta.content_checksum != other.content_checksum) {
        return absl::FailedPreconditionError(absl::StrCat(
            address, " and ", other_address, " both serve part ", meta.part_id,
            " but not the same shard: nodes [", meta.node_start, ", ",
            meta.node_end, ") content ", meta.content_checksum, " against [",
            other.node_start, ", ", other.node_end, ") content ",
            other.content_checksum));
      }
    } else {
      infos[meta.part_id] = *info;
    }
    replicas.push_back(std::move(*client));
  }
  std::vector<NodeId> ranges = {0};
  for (int p = 0; p < num_parts; ++p) {
    if (by_part.count(p) == 0) {
      // A server that did not answer may be the part's.
      if (!unreached.empty()) {
        std::vector<std::string> silent;
        for (size_t i : unreached) silent.push_back(addresses[i]);
        return absl::UnavailableError(absl::StrCat(
            "part ", p, " of partition ", partition_id,
            " has no server that answered within ",
            absl::FormatDuration(options.connect_timeout),
            "; these did not: ", NameWithProblems(silent), "; ", kWhatToCheck,
            " (last error: ", reached[unreached[0]].status.message(), ")"));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "no server for part ", p, " of partition ", partition_id, " (",
          num_parts, " parts, as ", first_address, " reports) among the ",
          addresses.size(), " addresses given"));
    }
    if (infos[p].meta.node_start != ranges.back()) {
      return absl::DataLossError(
          absl::StrCat(by_part[p].front()->address(), " serves nodes from ",
                       infos[p].meta.node_start, ", expected ", ranges.back()));
    }
    ranges.push_back(infos[p].meta.node_end);
  }
  if (ranges.back() != first_meta->num_nodes_total) {
    return absl::DataLossError(
        absl::StrCat("the parts' node ranges end at ", ranges.back(), ", but ",
                     first_address, " says the graph has ",
                     first_meta->num_nodes_total, " nodes"));
  }
  ReachedServers found;
  found.partition_id = partition_id;
  found.ranges = std::move(ranges);
  for (int p = 0; p < num_parts; ++p) {
    found.replicas.push_back(std::move(by_part[p]));
    found.infos.push_back(std::move(infos[p]));
  }
  for (size_t i : unreached) {
    found.unreached.push_back({addresses[i],
                               std::string(reached[i].status.message()),
                               std::move(reached[i].client)});
  }
  return found;
}

}  // namespace shardgnn::internal
