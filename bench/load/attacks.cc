#include "bench/load/attacks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graphstore/client.h"
// The feature port's wire format (docs/formats.md), for the raw connections.
#include "graphstore/internal/feature_port.h"

namespace shardgnn::bench {
namespace {

std::string Address(const std::string& host, int port) {
  return host.find(':') != std::string::npos
             ? absl::StrCat("[", host, "]:", port)
             : absl::StrCat(host, ":", port);
}

// A TCP connection to host:port that has not sent anything; -1 if refused.
// Non-blocking connect: a server that stops accepting fills its backlog.
int OpenConnection(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  int fd = socket(v6 ? AF_INET6 : AF_INET,
                  SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
    a->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, host.c_str(), &a->sin_addr);
    a->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*a);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t err_len = sizeof(err);
    if (errno != EINPROGRESS || poll(&p, 1, 500) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// True if the peer has closed `fd` (end of file or reset), without waiting.
bool ClosedByPeer(int fd) {
  char byte;
  for (;;) {
    ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    // Bytes the server sent (an HTTP/2 SETTINGS frame): keep reading.
  }
}

// Counts of answers by status code name ("OK", "RESOURCE_EXHAUSTED", ...).
class Answers {
 public:
  void Add(const absl::Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[absl::StatusCodeToString(s.code())];
    ++calls_;
    if (!s.ok() && first_error_.empty()) {
      first_error_ = std::string(s.message());
    }
  }
  void Add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[what];
    ++calls_;
  }
  void Report(nlohmann::json* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    (*out)["calls"] = calls_;
    (*out)["answers"] = counts_;
    if (!first_error_.empty()) (*out)["first_error"] = first_error_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counts_;
  int64_t calls_ = 0;
  std::string first_error_;
};

std::unique_ptr<GraphStoreClient> AttackerClient(const AttackTarget& target,
                                                 const std::string& token) {
  GraphStoreClientOptions options;
  options.auth_token = token;
  options.overall_timeout = absl::Seconds(10);
  options.max_message_bytes = int64_t{1} << 30;
  auto client = GraphStoreClient::Connect(
      Address(target.host, target.grpc_port), options);
  return client.ok() ? std::move(client).value() : nullptr;
}

std::vector<NodeId> OwnedIds(const AttackTarget& target, int64_t n) {
  std::vector<NodeId> ids(static_cast<size_t>(n));
  const int64_t range =
      std::max<int64_t>(target.node_end - target.node_start, 1);
  for (int64_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = target.node_start + (i * 7919) % range;
  }
  return ids;
}

// Threads that run `body(thread)` until Stop(), then a report.
class ThreadedAttack : public Attack {
 public:
  ThreadedAttack(std::string name, AttackTarget target)
      : name_(std::move(name)), target_(std::move(target)) {}
  // Derived classes call Join() in their destructors, before their members
  // that the threads use go away.
  ~ThreadedAttack() override { Join(); }
  const std::string& name() const override { return name_; }

  nlohmann::json Stop() override {
    Join();
    nlohmann::json out;
    out["attacker_address"] = target_.host;
    answers_.Report(&out);
    Finish(&out);
    return out;
  }

 protected:
  void Run(int threads, std::function<void(int)> body) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, body] { body(t); });
    }
  }
  // Adds attack-specific figures after the threads stopped.
  virtual void Finish(nlohmann::json* out) {}
  bool stopping() const { return stop_.load(); }

  const std::string name_;
  const AttackTarget target_;
  Answers answers_;

 protected:
  void Join() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class IdleAttack : public ThreadedAttack {
 public:
  static constexpr int kPerPort = 1000;
  explicit IdleAttack(const AttackTarget& target)
      : ThreadedAttack("idle", target) {
    Run(1, [this](int) {
      std::vector<int> ports = {target_.grpc_port};
      if (target_.feature_port > 0) ports.push_back(target_.feature_port);
      for (int i = 0; i < kPerPort && !stopping(); ++i) {
        for (size_t p = 0; p < ports.size(); ++p) {
          int fd = OpenConnection(target_.host, ports[p]);
          std::lock_guard<std::mutex> lock(mu_);
          ++attempted_[p];
          if (fd >= 0) {
            fds_[p].push_back(fd);
          } else {
            ++refused_[p];
          }
        }
      }
    });
  }
  ~IdleAttack() override { Join(); }

 protected:
  void Finish(nlohmann::json* out) override {
    const char* names[2] = {"grpc", "feature_port"};
    for (int p = 0; p < 2; ++p) {
      if (attempted_[p] == 0) continue;
      int64_t closed = 0;
      for (int fd : fds_[p]) {
        if (ClosedByPeer(fd)) ++closed;
        close(fd);
      }
      (*out)[names[p]] = {
          {"opened", attempted_[p] - refused_[p]},
          {"refused", refused_[p]},
          {"closed_by_server", closed},
          {"still_open_at_end", static_cast<int64_t>(fds_[p].size()) - closed}};
    }
    // Once the attacker lets go, its address must be served again.
    const absl::Time start = absl::Now();
    auto client = AttackerClient(target_, target_.auth_token);
    absl::Status healthy =
        client == nullptr
            ? absl::InternalError("no client")
            : client->WaitForHealthy(absl::Now() + absl::Seconds(10));
    if (healthy.ok()) healthy = client->Info().status();
    (*out)["attacker_served_again"] = healthy.ok();
    (*out)["attacker_served_again_ms"] =
        absl::ToDoubleMilliseconds(absl::Now() - start);
    if (!healthy.ok()) (*out)["served_again_error"] = healthy.ToString();
  }

 private:
  std::mutex mu_;
  std::vector<int> fds_[2];
  int64_t attempted_[2] = {0, 0};
  int64_t refused_[2] = {0, 0};
};

// Calls from `threads` threads over one client, each answer counted.
class CallLoopAttack : public ThreadedAttack {
 public:
  CallLoopAttack(std::string name, const AttackTarget& target, int threads,
                 std::function<absl::Status(GraphStoreClient*)> call,
                 std::string describe)
      : ThreadedAttack(std::move(name), target),
        client_(AttackerClient(target, target.auth_token)),
        describe_(std::move(describe)) {
    Run(threads, [this, call](int) {
      while (!stopping() && client_ != nullptr)
        answers_.Add(call(client_.get()));
    });
  }
  ~CallLoopAttack() override { Join(); }

 protected:
  void Finish(nlohmann::json* out) override { (*out)["request"] = describe_; }

 private:
  std::unique_ptr<GraphStoreClient> client_;
  std::string describe_;
};

std::unique_ptr<Attack> Amplify(const AttackTarget& target) {
  // 4000 IDs x fanout 10000 with replacement = 40M samples (320 MB) asked
  // in a request of 32 KB: over max_sampled_per_call, refused unsampled.
  auto ids = std::make_shared<std::vector<NodeId>>(OwnedIds(target, 4000));
  return std::make_unique<CallLoopAttack>(
      "amplify", target, 2,
      [ids](GraphStoreClient* c) {
        return c->SampleNeighbors(*ids, 10000, /*replace=*/true, 1).status();
      },
      "SampleNeighbors 4000 IDs, fanout 10000, replace");
}

std::unique_ptr<Attack> Flood(const AttackTarget& target) {
  // 4M samples each: heavy, but under every per-call cap.
  auto ids = std::make_shared<std::vector<NodeId>>(OwnedIds(target, 4000));
  return std::make_unique<CallLoopAttack>(
      "flood", target, 6,
      [ids](GraphStoreClient* c) {
        return c->SampleNeighbors(*ids, 1000, /*replace=*/true, 3).status();
      },
      "SampleNeighbors 4000 IDs, fanout 1000, replace (6 threads)");
}

// Large feature batches on 8 feature port connections, which then stay
// open and idle in the client's pool until the attack stops.
class BigFeaturesAttack : public ThreadedAttack {
 public:
  static constexpr int kConnections = 8;
  static constexpr int64_t kBytes = int64_t{32} << 20;
  explicit BigFeaturesAttack(const AttackTarget& target)
      : ThreadedAttack("bigfeatures", target),
        client_(AttackerClient(target, target.auth_token)) {
    if (client_ == nullptr) return;
    // Info turns the feature port on (not counted as an attack call).
    uses_port_ = client_->Info().ok() && client_->UsesFeaturePort();
    const int64_t n = std::max<int64_t>(
        kBytes / (std::max<int64_t>(target.feature_dim, 1) * 4), 1);
    ids_ = OwnedIds(target, n);
    Run(kConnections, [this](int) {
      for (int i = 0; i < 2 && !stopping(); ++i) {
        std::vector<float> rows(ids_.size() *
                                static_cast<size_t>(target_.feature_dim));
        answers_.Add(
            client_->GetFeatures(ids_, target_.feature_dim, rows.data()));
      }
    });
  }
  ~BigFeaturesAttack() override { Join(); }

 protected:
  void Finish(nlohmann::json* out) override {
    (*out)["request"] = absl::StrCat("GetFeatures ", ids_.size(), " IDs (",
                                     kBytes >> 20, " MiB) twice on each of ",
                                     kConnections, " threads, then idle");
    (*out)["over_feature_port"] = uses_port_;
  }

 private:
  std::unique_ptr<GraphStoreClient> client_;
  std::vector<NodeId> ids_;
  bool uses_port_ = false;
};

// A feature port request without the handshake; the answer's status name,
// "closed" if the server closed without one, or "refused".
std::string RawFeatureRequest(const AttackTarget& target) {
  int fd = OpenConnection(target.host, target.feature_port);
  if (fd < 0) return "refused";
  internal::FeatureRequestHeader header;
  header.num_ids = 4;
  char request[sizeof(header) + 4 * sizeof(NodeId)] = {};
  std::memcpy(request, &header, sizeof(header));
  const ssize_t sent = send(fd, request, sizeof(request), MSG_NOSIGNAL);
  std::string result = "closed";
  internal::FeatureResponseHeader answer;
  size_t got = 0;
  const absl::Time end = absl::Now() + absl::Seconds(5);
  while (sent == static_cast<ssize_t>(sizeof(request)) &&
         got < sizeof(answer) && absl::Now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, reinterpret_cast<char*>(&answer) + got,
                     sizeof(answer) - got, MSG_DONTWAIT);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == sizeof(answer)) {
    result = answer.magic == internal::kFeatureResponseMagic
                 ? absl::StatusCodeToString(
                       static_cast<absl::StatusCode>(answer.code))
                 : "unexpected answer";
  }
  close(fd);
  return result;
}

class UnauthAttack : public ThreadedAttack {
 public:
  explicit UnauthAttack(const AttackTarget& target)
      : ThreadedAttack("unauth", target),
        anonymous_(AttackerClient(target, "")),
        wrong_(AttackerClient(target, "not-the-token-0123456789abcdef")),
        ids_(OwnedIds(target, 64)) {
    Run(3, [this](int t) {
      while (!stopping()) {
        if (t == 2) {
          if (target_.feature_port <= 0) return;
          raw_.Add(RawFeatureRequest(target_));
          absl::SleepFor(absl::Milliseconds(5));  // Spare ephemeral ports.
          continue;
        }
        GraphStoreClient* c = t == 0 ? anonymous_.get() : wrong_.get();
        if (c == nullptr) return;
        answers_.Add(c->SampleNeighbors(ids_, 10, false, 1).status());
        std::vector<float> rows(ids_.size() *
                                static_cast<size_t>(target_.feature_dim));
        answers_.Add(c->GetFeatures(ids_, target_.feature_dim, rows.data()));
      }
    });
  }
  ~UnauthAttack() override { Join(); }

 protected:
  void Finish(nlohmann::json* out) override {
    (*out)["request"] =
        "SampleNeighbors and GetFeatures over gRPC without a token and with "
        "a wrong one; feature port requests without the handshake";
    nlohmann::json raw;
    raw_.Report(&raw);
    (*out)["feature_port_raw"] = raw;
  }

 private:
  std::unique_ptr<GraphStoreClient> anonymous_, wrong_;
  std::vector<NodeId> ids_;
  Answers raw_;
};

}  // namespace

std::vector<std::string> AttackNames() {
  return {"idle", "amplify", "flood", "bigfeatures", "unauth"};
}

std::unique_ptr<Attack> StartAttack(const std::string& name,
                                    const AttackTarget& target) {
  if (name == "idle") return std::make_unique<IdleAttack>(target);
  if (name == "amplify") return Amplify(target);
  if (name == "flood") return Flood(target);
  if (name == "bigfeatures") return std::make_unique<BigFeaturesAttack>(target);
  if (name == "unauth") return std::make_unique<UnauthAttack>(target);
  return nullptr;
}

}  // namespace shardgnn::bench
