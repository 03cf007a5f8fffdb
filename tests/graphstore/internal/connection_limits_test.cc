// The gRPC port's connection caps and eviction (graphstore/internal/
// connection_limits.h) on real loopback connections from several client
// addresses (127.0.0.x); the test holds the accepted descriptors, as gRPC
// does in a server.
#include "graphstore/internal/connection_limits.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/graphstore/server_testing.h"

namespace shardgnn::internal {
namespace {

using testing::ClosedByServerWithin;
using testing::ConnectFrom;

// A listening socket on 127.0.0.1 and the connections made to it: both
// ends of each, the client's and the accepted one.
class Loopback {
 public:
  Loopback() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(
        bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 64), 0);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Loopback() {
    for (int fd : fds_) close(fd);
    close(listen_fd_);
  }

  struct Pair {
    int client = -1;
    int server = -1;
  };
  // A connection from `source`; both descriptors are closed with *this.
  Pair Connect(const std::string& source) {
    Pair p;
    p.client = ConnectFrom(source, port_);
    EXPECT_GE(p.client, 0) << source;
    pollfd ready{listen_fd_, POLLIN, 0};
    EXPECT_EQ(poll(&ready, 1, 2000), 1);
    p.server = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    EXPECT_GE(p.server, 0);
    fds_.push_back(p.client);
    fds_.push_back(p.server);
    return p;
  }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> fds_;
};

TEST(ConnectionLimitsTest, PerAddressCapIsAShareOfTheTotal) {
  // serve's defaults: gRPC 1024 and 256, the feature port 256 and 128.
  EXPECT_EQ(PerAddressCap(1024, 256, kGrpcAddressParts), 256);
  EXPECT_EQ(PerAddressCap(256, 128, kFeaturePortAddressParts), 128);
  // Under a 1024 open-file limit each port holds 256.
  EXPECT_EQ(PerAddressCap(256, 256, kGrpcAddressParts), 64);
  EXPECT_EQ(PerAddressCap(1024, 8, kGrpcAddressParts), 8);
  EXPECT_EQ(PerAddressCap(3, 5, kGrpcAddressParts), 1);
}

// Issue 51: the per-address cap could equal the total, and one address
// then held every connection.
TEST(ConnectionLimitsTest, OneAddressLeavesRoomForOthers) {
  Loopback net;
  GrpcConnections connections(16, 16);
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    if (connections.Admit(net.Connect("127.0.0.2").server, "127.0.0.2")) {
      ++admitted;
    }
  }
  EXPECT_EQ(admitted, 4);
  EXPECT_TRUE(connections.Admit(net.Connect("127.0.0.3").server, "127.0.0.3"));
  EXPECT_EQ(connections.Open(), 5);
}

// Issue 51: a port full of idle connections from a few addresses turned
// every newcomer away until the idle timeout. Now the connection idle
// longest makes room, once idle long enough, and never one with traffic.
TEST(ConnectionLimitsTest, FullPortEvictsTheConnectionIdleLongest) {
  Loopback net;
  const absl::Duration min_idle = absl::Seconds(1);
  GrpcConnections connections(8, 8, min_idle);  // 2 per address.
  std::vector<Loopback::Pair> held;
  std::vector<absl::Time> since;
  for (int a = 2; a <= 5; ++a) {
    for (int i = 0; i < 2; ++i) {
      const std::string source = absl::StrCat("127.0.0.", a);
      held.push_back(net.Connect(source));
      ASSERT_TRUE(connections.Admit(held.back().server, source));
      since.push_back(absl::Now());
      absl::SleepFor(absl::Milliseconds(20));  // Distinct idle times.
    }
  }
  // The oldest connection keeps talking.
  std::atomic<bool> stop{false};
  std::thread talker([&] {
    while (!stop) {
      const char byte = 'x';
      if (send(held[0].client, &byte, 1, MSG_NOSIGNAL) != 1) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  absl::Cleanup join = [&] {
    stop = true;
    talker.join();
  };
  // Admits a newcomer from `source` as soon as one gets in (3 s at most).
  auto admit_within = [&](const std::string& source) {
    const absl::Time deadline = absl::Now() + absl::Seconds(3);
    do {
      if (connections.Admit(net.Connect(source).server, source)) return true;
      absl::SleepFor(absl::Milliseconds(20));
    } while (absl::Now() < deadline);
    return false;
  };
  // Nothing has been idle long enough yet: a newcomer is turned away.
  EXPECT_FALSE(connections.Admit(net.Connect("127.0.0.6").server, "127.0.0.6"));
  // A newcomer gets in once a connection has been idle for min_idle (the
  // kernel counts in jiffies: up to 10 ms each, and from the accept).
  ASSERT_TRUE(admit_within("127.0.0.6"));
  EXPECT_GE(absl::Now() - since[1], min_idle - absl::Milliseconds(20));
  EXPECT_EQ(connections.evicted(), 1);
  EXPECT_EQ(connections.Open(), 8);
  // The second connection went (the first is busy); its client sees it
  // close. The others stay.
  EXPECT_TRUE(ClosedByServerWithin(held[1].client, absl::Seconds(1)));
  for (size_t i : {0, 2, 3, 4, 5, 6, 7}) {
    EXPECT_FALSE(ClosedByServerWithin(held[i].client, absl::Milliseconds(1)))
        << i;
  }
  // The next newcomer takes the place of the third.
  ASSERT_TRUE(admit_within("127.0.0.7"));
  EXPECT_EQ(connections.evicted(), 2);
  EXPECT_TRUE(ClosedByServerWithin(held[2].client, absl::Seconds(1)));
  for (size_t i : {0, 3, 4, 5, 6, 7}) {
    EXPECT_FALSE(ClosedByServerWithin(held[i].client, absl::Milliseconds(1)))
        << i;
  }
}

// gRPC closes a connection's descriptor without telling, and the process
// may reuse the number at once: the new file behind it is never shut down.
TEST(ConnectionLimitsTest, ReusedDescriptorIsNeverShutDown) {
  Loopback net;
  GrpcConnections connections(2, 2, absl::ZeroDuration());
  const int gone = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const Loopback::Pair kept = net.Connect("127.0.0.3");
  // An entry whose number is about to name another socket.
  ASSERT_TRUE(connections.Admit(gone, "127.0.0.2"));
  ASSERT_TRUE(connections.Admit(kept.server, "127.0.0.3"));
  close(gone);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ASSERT_EQ(fds[0], gone);  // The lowest free number.
  const Loopback::Pair reuse = net.Connect("127.0.0.4");
  // A newcomer finds the port full only in name: the entry is gone.
  EXPECT_TRUE(connections.Admit(reuse.server, "127.0.0.4"));
  EXPECT_EQ(connections.evicted(), 0);
  EXPECT_EQ(connections.Open(), 2);
  const char byte = 'y';
  EXPECT_EQ(send(fds[0], &byte, 1, MSG_NOSIGNAL), 1);
  char got = 0;
  EXPECT_EQ(recv(fds[1], &got, 1, 0), 1);
  EXPECT_FALSE(ClosedByServerWithin(kept.client, absl::Milliseconds(1)));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace shardgnn::internal
