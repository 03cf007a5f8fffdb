// Loopback sockets for the network fuzz targets.
#ifndef SHARDGNN_TESTS_FUZZ_SOCKET_UTIL_H_
#define SHARDGNN_TESTS_FUZZ_SOCKET_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace shardgnn::fuzz {

// A connected socket to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Writes what the peer takes of `data` (it may close early).
inline void WriteSome(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads and drops everything until EOF, an error or `timeout_ms` of silence.
inline void Drain(int fd, int timeout_ms) {
  char buf[1 << 16];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return;
    if (recv(fd, buf, sizeof(buf), 0) <= 0) return;
  }
}

}  // namespace shardgnn::fuzz

#endif  // SHARDGNN_TESTS_FUZZ_SOCKET_UTIL_H_
