// The feature port client's reading of error frames from a crafted server
// (a real TCP socket on loopback).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "graphstore/internal/feature_port.h"

namespace shardgnn::internal {
namespace {

// Accepts one connection, reads one request (header and IDs), sends
// `answer` and keeps the connection open until destroyed.
class CraftedPort {
 public:
  explicit CraftedPort(std::string answer) : answer_(std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CraftedPort() {
    done_.Notify();
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    FeatureRequestHeader h;
    if (recv(c, &h, sizeof(h), MSG_WAITALL) == sizeof(h)) {
      std::string ids(h.num_ids * sizeof(NodeId), '\0');
      if (ids.empty() || recv(c, ids.data(), ids.size(), MSG_WAITALL) ==
                             static_cast<ssize_t>(ids.size())) {
        send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
    }
    done_.WaitForNotificationWithTimeout(absl::Seconds(20));
    close(c);
  }

  std::string answer_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  absl::Notification done_;
};

std::string ErrorFrame(int32_t code, uint64_t claimed_bytes,
                       const std::string& sent) {
  FeatureResponseHeader h;
  h.code = code;
  h.payload_bytes = claimed_bytes;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + sent;
}

absl::Status Fetch(int port, absl::Duration timeout) {
  FeaturePortClient client("127.0.0.1", port);
  const NodeId ids[2] = {1, 2};
  float out[8];
  bool transport_failed = false;
  return client.Fetch(ids, 4, out, nullptr, absl::Now() + timeout,
                      &transport_failed);
}

TEST(FeaturePortClientTest, ErrorMessageCutShortIsTheBytesReceived) {
  // 1000 bytes promised, 16 sent, then silence until the deadline.
  CraftedPort port(ErrorFrame(static_cast<int32_t>(absl::StatusCode::kNotFound),
                              1000, "node 7 not here"));
  absl::Status s = Fetch(port.port(), absl::Milliseconds(300));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(std::string(s.message()).find('\0'), std::string::npos)
      << "NUL padding in a message of " << s.message().size() << " bytes";
  EXPECT_EQ(s.message(), "node 7 not here");
}

TEST(FeaturePortClientTest, WholeErrorMessageIsReturned) {
  CraftedPort port(ErrorFrame(
      static_cast<int32_t>(absl::StatusCode::kInvalidArgument), 8, "bad id 9"));
  absl::Status s = Fetch(port.port(), absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(), "bad id 9");
}

}  // namespace
}  // namespace shardgnn::internal
