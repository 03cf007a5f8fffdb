// The metrics endpoint's connection handling (graphstore/internal/
// one_request_server.h): real loopback connections from several client
// addresses (127.0.0.x), stalled or not.
#include "graphstore/internal/one_request_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graphstore/internal/listener.h"
#include "tests/graphstore/server_testing.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn::internal {
namespace {

using testing::ClosedByServerWithin;
using testing::ConnectFrom;

// Answers "answer to LINE", LINE being the request's first line.
std::string Echo(const std::string& head) {
  return absl::StrCat("answer to ", head.substr(0, head.find("\r\n")));
}

std::unique_ptr<OneRequestServer> StartServer(
    OneRequestLimits limits, OneRequestServer::Respond respond = Echo) {
  auto listener = Listener::Bind("127.0.0.1", 0, "test port");
  EXPECT_OK(listener.status());
  if (!listener.ok()) return nullptr;
  auto server = OneRequestServer::Start(std::move(listener).value(), limits,
                                        std::move(respond));
  EXPECT_OK(server.status());
  return server.ok() ? std::move(server).value() : nullptr;
}

// Sends `request` from `source` and returns all the server answers before
// it closes (within 3 s).
std::string Ask(const std::string& source, int port,
                const std::string& request) {
  const int fd = ConnectFrom(source, port);
  if (fd < 0) return "(no connection)";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return answer;
}

// Connections waiting in the kernel to be accepted on 127.0.0.1:`port` (the
// listening socket's rx_queue in /proc/net/tcp); -1 if it is not found.
int AcceptQueue(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // Header.
  const std::string local = absl::StrCat(":", absl::Hex(port, absl::kZeroPad4));
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local_address, remote, state, queues;
    fields >> slot >> local_address >> remote >> state >> queues;
    if (state != "0A" || !absl::EndsWithIgnoreCase(local_address, local)) {
      continue;  // Not listening on `port`.
    }
    return std::stoi(queues.substr(queues.find(':') + 1), nullptr, 16);
  }
  return -1;
}

TEST(OneRequestServerTest, AStalledRequestIsClosedAtItsTimeout) {
  OneRequestLimits limits;
  limits.timeout = absl::Milliseconds(300);
  auto server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  const absl::Time start = absl::Now();
  const int stalled = ConnectFrom("127.0.0.2", server->port());
  ASSERT_GE(stalled, 0);
  ASSERT_EQ(send(stalled, "GET /x", 6, MSG_NOSIGNAL), 6);
  // Others are answered meanwhile, from its address too.
  EXPECT_EQ(Ask("127.0.0.2", server->port(), "GET /a\r\n\r\n"),
            "answer to GET /a");
  EXPECT_EQ(Ask("127.0.0.3", server->port(), "GET /b\r\n\r\n"),
            "answer to GET /b");
  EXPECT_TRUE(ClosedByServerWithin(stalled, absl::Seconds(2)));
  EXPECT_GE(absl::Now() - start, limits.timeout);
  close(stalled);
}

TEST(OneRequestServerTest, OneAddressHoldsAQuarterAndTheOldestMakesRoom) {
  OneRequestLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_address = 8;  // Cut to 2.
  auto server = StartServer(limits);
  ASSERT_NE(server, nullptr);
  std::vector<int> one;
  for (int i = 0; i < 5; ++i) {
    one.push_back(ConnectFrom("127.0.0.2", server->port()));
  }
  int held = 0;
  for (int fd : one) {
    if (!ClosedByServerWithin(fd, absl::Milliseconds(100))) ++held;
  }
  EXPECT_EQ(held, 2);
  // 6 more from 3 other addresses fill the port: the 2 of 127.0.0.2 are
  // the oldest, and a newcomer takes the first one's place.
  std::vector<int> others;
  for (int a = 3; a <= 5; ++a) {
    for (int i = 0; i < 2; ++i) {
      others.push_back(
          ConnectFrom(absl::StrCat("127.0.0.", a), server->port()));
    }
  }
  EXPECT_EQ(Ask("127.0.0.6", server->port(), "GET /c\r\n\r\n"),
            "answer to GET /c");
  EXPECT_TRUE(ClosedByServerWithin(one[0], absl::Seconds(1)));
  EXPECT_FALSE(ClosedByServerWithin(one[1], absl::Milliseconds(1)));
  for (int fd : others) {
    EXPECT_FALSE(ClosedByServerWithin(fd, absl::Milliseconds(1)));
  }
  for (int fd : one) close(fd);
  for (int fd : others) close(fd);
}

// Connections that arrive while an answer is being made wait for the loop:
// a burst of them never turns away the newest, a real request.
TEST(OneRequestServerTest, ABurstWhileAnsweringKeepsTheNewest) {
  absl::Notification answering, go_on;
  auto server = StartServer({}, [&](const std::string& head) {
    if (head.rfind("SLOW", 0) == 0) {
      answering.Notify();
      go_on.WaitForNotificationWithTimeout(absl::Seconds(5));
    }
    return Echo(head);
  });
  ASSERT_NE(server, nullptr);
  const int slow = ConnectFrom("127.0.0.2", server->port());
  ASSERT_GE(slow, 0);
  ASSERT_EQ(send(slow, "SLOW\r\n\r\n", 8, MSG_NOSIGNAL), 8);
  ASSERT_TRUE(answering.WaitForNotificationWithTimeout(absl::Seconds(3)));
  std::vector<int> stalled;  // 5 from each of 40 addresses.
  for (int i = 0; i < 200; ++i) {
    stalled.push_back(
        ConnectFrom(absl::StrCat("127.0.0.", 10 + i % 40), server->port()));
  }
  const int request = ConnectFrom("127.0.0.1", server->port());
  ASSERT_GE(request, 0);
  ASSERT_EQ(send(request, "GET /d\r\n\r\n", 10, MSG_NOSIGNAL), 10);
  // Every connection has been accepted (and waits for the loop).
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  while (AcceptQueue(server->port()) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(AcceptQueue(server->port()), 0);
  go_on.Notify();
  std::string answer;
  char buf[64];
  ssize_t n;
  timeval timeout{3, 0};
  setsockopt(request, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  fcntl(request, F_SETFL, 0);  // Blocking.
  while ((n = recv(request, buf, sizeof(buf), 0)) > 0) answer.append(buf, n);
  EXPECT_EQ(answer, "answer to GET /d");
  for (int fd : stalled) close(fd);
  close(request);
  close(slow);
}

}  // namespace
}  // namespace shardgnn::internal
