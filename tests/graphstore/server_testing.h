// Helpers for tests of a running storage server: its per-method counts, and
// raw loopback connections for hand-made requests or idle ones from many
// client addresses.
#ifndef SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_
#define SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graphstore/client.h"

namespace shardgnn::testing {

// The calls (or, with `errors`, the failed calls) of `method` in `stats`;
// -1 if the server does not report the method.
inline int64_t MethodCalls(const ServerStats& stats, const std::string& method,
                           bool errors = false) {
  for (const auto& m : stats.methods) {
    if (m.method == method) return errors ? m.errors : m.calls;
  }
  return -1;
}

// A blocking socket connected to 127.0.0.1:`port` (-1 if refused), with a
// 10 s receive timeout so that a broken server fails the test instead of
// hanging it.
inline int ConnectToLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// A TCP connection from `source` to 127.0.0.1:`port` that sends nothing
// (-1 if it cannot connect within 1 s). Any 127.x.y.z `source` works on
// Linux's loopback and counts as a client address of its own. The socket is
// not blocking: a server that stops accepting fills its backlog.
inline int ConnectFrom(const std::string& source, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
    close(fd);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t err_len = sizeof(err);
    if (errno != EINPROGRESS || poll(&p, 1, 1000) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// True if the server closes `fd` (end of file or reset) within `timeout`;
// bytes the server sends first are skipped.
inline bool ClosedByServerWithin(int fd, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  do {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      return true;
    }
  } while (absl::Now() < end);
  return false;
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_
