#include "graphstore/internal/listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace shardgnn::internal {
namespace {

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(10);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

// Strips the brackets of "[::1]".
std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

std::string PeerKey(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    return text;
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, a->sin6_addr.s6_addr + 12, text, sizeof(text));
      return text;
    }
    if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) return "::1";
    in6_addr prefix = a->sin6_addr;
    std::memset(prefix.s6_addr + 8, 0, 8);
    inet_ntop(AF_INET6, &prefix, text, sizeof(text));
    return absl::StrCat(text, "/64");
  }
  return "?";
}

std::string PeerKeyOfSocket(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return "?";
  }
  return PeerKey(addr);
}

std::string PeerKeyOfGrpcPeer(absl::string_view peer) {
  int fd = 0;
  if (absl::ConsumePrefix(&peer, "fd:")) {
    // The connection is alive while one of its calls runs, so its
    // descriptor still names it.
    return absl::SimpleAtoi(peer, &fd) ? PeerKeyOfSocket(fd) : "?";
  }
  sockaddr_storage addr{};
  if (absl::ConsumePrefix(&peer, "ipv4:")) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    const std::string host(peer.substr(0, peer.rfind(':')));
    if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1) {
      return PeerKey(addr);
    }
  } else if (absl::ConsumePrefix(&peer, "ipv6:")) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    std::string host(peer.substr(0, peer.rfind(':')));
    host = BareHost(host);
    host = host.substr(0, host.find('%'));  // Zone index.
    if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) == 1) {
      return PeerKey(addr);
    }
  }
  return std::string(peer);
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Bind(
    const std::string& host, int port, absl::string_view what) {
  const std::string bare = BareHost(host);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(bare.empty() ? nullptr : bare.c_str(), service.c_str(),
                       &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat(what, ": cannot resolve '", host,
                                               "': ", gai_strerror(rc)));
  }
  int fd = -1;
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    // A restarted server gets its port back while the last one's
    // connections linger in TIME_WAIT (not SO_REUSEPORT: two live servers
    // must not share a port).
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      last_errno = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(what, ": cannot listen on ",
                                               host, ":", port, ": ",
                                               strerror(last_errno)));
  }
  auto listener = std::unique_ptr<Listener>(new Listener());
  listener->listen_fd_ = fd;
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  listener->port_ =
      ntohs(bound.ss_family == AF_INET6
                ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listener->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (listener->wake_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat(what, ": eventfd: ", strerror(errno)));
  }
  return listener;
}

void Listener::Start(Admit admit) {
  admit_ = std::move(admit);
  thread_ = std::thread([this] { AcceptLoop(); });
}

void Listener::AcceptLoop() {
  absl::Duration backoff = kFirstBackoff;
  int wait_ms = -1;  // Until a connection arrives or Stop().
  while (true) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int r = poll(p, 2, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[1].revents & POLLIN)) return;
    if (r == 0 && wait_ms < 0) continue;
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_CLOEXEC);
      if (fd >= 0) {
        backoff = kFirstBackoff;
        wait_ms = -1;
        if (!admit_(fd, PeerKey(addr))) close(fd);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_ms = -1;
      } else {
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the
        // backlog; try again after a pause (descriptors come back as
        // connections close) instead of polling a readable socket in a loop.
        ++accept_failures_;
        wait_ms = static_cast<int>(absl::ToInt64Milliseconds(backoff));
        backoff = std::min(backoff * 2, kMaxBackoff);
        // Sleep (interruptibly) before the next accept even if the socket
        // stays readable.
        pollfd w{wake_fd_, POLLIN, 0};
        while (poll(&w, 1, wait_ms) < 0 && errno == EINTR) {
        }
        if (w.revents & POLLIN) return;
        wait_ms = 0;
      }
      break;
    }
  }
}

void Listener::Stop() {
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      // Cannot happen for an eventfd below its maximum.
    }
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

Listener::~Listener() { Stop(); }

}  // namespace shardgnn::internal
