#include "common/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {

// Binds 127.0.0.1:port (0: the kernel chooses) and returns the port bound, or
// -1 if it is taken.
int BindAndRelease(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int bound = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  close(fd);
  return bound;
}

// The lowest port the kernel hands to outgoing connections (32768 unless the
// machine is configured otherwise).
int EphemeralRangeLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (in >> low >> high && low > 0 && low <= 65535) return low;
  return 32768;
}

}  // namespace

absl::StatusOr<int> PickFreeLoopbackPort() {
  const int end = EphemeralRangeLow();
  const int begin = std::max(1024, end / 2);
  if (end - begin >= 256) {
    std::random_device device;
    std::mt19937 rng(device() ^ static_cast<unsigned>(getpid()));
    std::uniform_int_distribution<int> pick(begin, end - 1);
    for (int attempt = 0; attempt < 200; ++attempt) {
      const int port = BindAndRelease(pick(rng));
      if (port > 0) return port;
    }
  }
  const int port = BindAndRelease(0);
  if (port > 0) return port;
  return absl::InternalError(absl::StrCat(
      "could not find a free port on 127.0.0.1: ", std::strerror(errno)));
}

bool SplitHostPort(const std::string& address, std::string* host,
                   std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return true;
}

}  // namespace shardgnn
