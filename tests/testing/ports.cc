#include "tests/testing/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "common/ports.h"

namespace shardgnn::testing {

int PickFreePort() {
  absl::StatusOr<int> port = PickFreeLoopbackPort();
  if (!port.ok())
    throw std::runtime_error(std::string(port.status().message()));
  return *port;
}

SilentListener::SilentListener() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd_, 16) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd_ >= 0) close(fd_);
    throw std::runtime_error("SilentListener: cannot listen on loopback");
  }
  port_ = ntohs(addr.sin_port);
}

SilentListener::~SilentListener() { close(fd_); }

}  // namespace shardgnn::testing
