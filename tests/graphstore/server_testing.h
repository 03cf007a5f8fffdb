// Helpers for tests of a running storage server: its per-method counts, and
// raw loopback connections for hand-made requests.
#ifndef SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_
#define SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

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

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_GRAPHSTORE_SERVER_TESTING_H_
