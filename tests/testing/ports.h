// Loopback ports for tests: free ones for services that cannot bind port 0
// themselves (c10d's TCPStore master) or that nobody listens on, and ones
// that accept connections but never speak.
#ifndef SHARDGNN_TESTS_TESTING_PORTS_H_
#define SHARDGNN_TESTS_TESTING_PORTS_H_

#include <string>

namespace shardgnn::testing {

// common/ports.h's PickFreeLoopbackPort for tests: throws if no port can be
// had, so fixtures stay one line. Nobody listens on it when it returns.
int PickFreePort();

// A loopback TCP port that accepts connections (the kernel completes the
// handshake) but never reads or writes: calls to it can only end by their
// deadline.
class SilentListener {
 public:
  SilentListener();  // Throws if it cannot listen.
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_PORTS_H_
