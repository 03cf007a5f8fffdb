#include "graphstore/internal/one_request_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graphstore/internal/connection_limits.h"
#include "graphstore/internal/listener.h"

namespace shardgnn::internal {

struct OneRequestServer::Connection {
  int fd = -1;
  std::string peer;
  absl::Time deadline;
  std::string head;
  std::string answer;  // Empty until the head is in.
  size_t sent = 0;
};

absl::StatusOr<std::unique_ptr<OneRequestServer>> OneRequestServer::Start(
    std::unique_ptr<Listener> listener, OneRequestLimits limits,
    Respond respond) {
  auto server = std::unique_ptr<OneRequestServer>(new OneRequestServer());
  server->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  }
  limits.max_connections_per_address =
      PerAddressCap(limits.max_connections, limits.max_connections_per_address,
                    /*parts=*/4);
  server->limits_ = limits;
  server->respond_ = std::move(respond);
  server->listener_ = std::move(listener);
  server->port_ = server->listener_->port();
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  server->listener_->Start([s = server.get()](int fd, const std::string& peer) {
    absl::MutexLock lock(&s->mu_);
    if (s->stopping_) return false;
    // The loop takes arrivals as they come; should a burst outrun it, the
    // oldest waiting arrival makes room, as on a full server.
    if (static_cast<int>(s->arrivals_.size()) >= s->limits_.max_connections) {
      close(s->arrivals_.front().fd);
      s->arrivals_.erase(s->arrivals_.begin());
    }
    s->arrivals_.push_back({fd, peer});
    const uint64_t one = 1;
    if (write(s->wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      // The counter is already far from full: the loop wakes anyway.
    }
    return true;
  });
  return server;
}

OneRequestServer::~OneRequestServer() {
  if (listener_ != nullptr) listener_->Stop();  // No arrival after this.
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (const Arrival& a : arrivals_) close(a.fd);
    arrivals_.clear();
  }
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      // Cannot happen for an eventfd below its maximum.
    }
    thread_.join();
  }
  if (wake_fd_ >= 0) close(wake_fd_);
}

void OneRequestServer::Loop() {
  std::vector<Connection> open;  // In the order they arrived.
  std::vector<pollfd> polled;
  while (true) {
    polled.assign(1, {wake_fd_, POLLIN, 0});
    absl::Time next = absl::InfiniteFuture();
    for (const Connection& c : open) {
      polled.push_back(
          {c.fd, static_cast<short>(c.answer.empty() ? POLLIN : POLLOUT), 0});
      next = std::min(next, c.deadline);
    }
    int wait_ms = -1;
    if (next != absl::InfiniteFuture()) {
      wait_ms = static_cast<int>(std::clamp<int64_t>(
          absl::ToInt64Milliseconds(next - absl::Now()) + 1, 0, INT_MAX));
    }
    if (poll(polled.data(), polled.size(), wait_ms) < 0 && errno != EINTR) {
      // ENOMEM: the deadlines below still close connections; try again.
      polled.assign(polled.size(), {-1, 0, 0});
    }
    if (polled[0].revents & POLLIN) {
      uint64_t count;
      if (read(wake_fd_, &count, sizeof(count)) < 0) {
        // EAGAIN: another wake-up already read it.
      }
    }
    const absl::Time now = absl::Now();
    std::vector<Connection> still_open;
    for (size_t i = 0; i < open.size(); ++i) {
      Connection& c = open[i];
      const bool ready = polled[i + 1].revents != 0;
      if ((ready && !Progress(&c)) || now >= c.deadline) {
        close(c.fd);
      } else {
        still_open.push_back(std::move(c));
      }
    }
    open.swap(still_open);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    AdmitArrivals(&open);
  }
  for (const Connection& c : open) close(c.fd);
}

void OneRequestServer::AdmitArrivals(std::vector<Connection>* open) {
  std::vector<Arrival> arrivals;
  {
    absl::MutexLock lock(&mu_);
    arrivals.swap(arrivals_);
  }
  std::map<std::string, int> per_peer;
  for (const Connection& c : *open) ++per_peer[c.peer];
  for (Arrival& a : arrivals) {
    int& from_peer = per_peer[a.peer];
    if (from_peer >= limits_.max_connections_per_address) {
      close(a.fd);
      continue;
    }
    if (static_cast<int>(open->size()) >= limits_.max_connections) {
      // The connection held longest makes room.
      --per_peer[open->front().peer];
      close(open->front().fd);
      open->erase(open->begin());
    }
    const int flags = fcntl(a.fd, F_GETFL, 0);
    fcntl(a.fd, F_SETFL, flags | O_NONBLOCK);
    Connection& c = open->emplace_back();
    c.fd = a.fd;
    c.peer = std::move(a.peer);
    c.deadline = absl::Now() + limits_.timeout;
    ++from_peer;
  }
}

bool OneRequestServer::Progress(Connection* c) {
  if (c->answer.empty()) {
    char buf[1024];
    const size_t room =
        std::min(sizeof(buf), limits_.max_request_bytes - c->head.size());
    const ssize_t n = recv(c->fd, buf, room, MSG_DONTWAIT);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    c->head.append(buf, static_cast<size_t>(n));
    // The head is in, too long, or all there will be (end of file).
    if (n > 0 && c->head.find("\r\n\r\n") == std::string::npos &&
        c->head.size() < limits_.max_request_bytes) {
      return true;
    }
    c->answer = respond_(c->head);
    if (c->answer.empty()) return false;
  }
  const ssize_t n =
      send(c->fd, c->answer.data() + c->sent, c->answer.size() - c->sent,
           MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  c->sent += static_cast<size_t>(n);
  return c->sent < c->answer.size();
}

}  // namespace shardgnn::internal
