#include "graphstore/internal/socket_io.h"

#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace shardgnn::internal {

void SetIoTimeout(int fd, absl::Duration timeout) {
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

iovec* Advance(iovec* iov, iovec* end, size_t done) {
  while (iov != end && done >= iov->iov_len) {
    done -= iov->iov_len;
    ++iov;
  }
  if (iov != end) {
    iov->iov_base = static_cast<char*>(iov->iov_base) + done;
    iov->iov_len -= done;
  }
  return iov;
}

bool ReadFull(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool WriteFullV(int fd, iovec* iov, int count) {
  iovec* end = iov + count;
  while (iov != end) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen =
        static_cast<size_t>(std::min<ptrdiff_t>(end - iov, IOV_MAX));
    ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    iov = Advance(iov, end, static_cast<size_t>(w));
  }
  return true;
}
absl::Status WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("no answer before the deadline");
    }
    pollfd p{fd, events, 0};
    const int ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, INT_MAX));
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::UnavailableError(strerror(errno));
    if (r > 0) return absl::OkStatus();
  }
}
absl::Status TransferV(int fd, iovec* iov, int count, bool send,
                       absl::Time deadline) {
  iovec* end = iov + count;
  iov = Advance(iov, end, 0);  // A zero-byte read would wait for nothing.
  while (iov != end) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen =
        static_cast<size_t>(std::min<ptrdiff_t>(end - iov, IOV_MAX));
    ssize_t n = send ? sendmsg(fd, &msg, MSG_NOSIGNAL) : recvmsg(fd, &msg, 0);
    if (n > 0) {
      iov = Advance(iov, end, static_cast<size_t>(n));
      continue;
    }
    if (n == 0)
      return absl::UnavailableError("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(strerror(errno));
    }
    absl::Status s = WaitFor(fd, send ? POLLOUT : POLLIN, deadline);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
