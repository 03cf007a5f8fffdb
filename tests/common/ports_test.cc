#include "common/ports.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

int EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  in >> low >> high;
  return low;
}

// Binds 127.0.0.1:port (as a server restarted on its old address would).
bool CanBind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// A port in the kernel's ephemeral range can be taken by any outgoing
// connection while the server that had it is down (CI saw a restarted replica
// fail with "Address already in use"); picked ports lie below that range.
TEST(PickFreeLoopbackPortTest, BelowTheEphemeralRangeAndFree) {
  const int low = EphemeralLow();
  std::set<int> seen;
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK_AND_ASSIGN(int port, PickFreeLoopbackPort());
    EXPECT_GE(port, 1024);
    EXPECT_LT(port, low);
    EXPECT_TRUE(CanBind(port)) << port;
    seen.insert(port);
  }
  // Spread over the range, so two test processes rarely pick the same one.
  EXPECT_GT(seen.size(), 15u);
}

}  // namespace
}  // namespace shardgnn
