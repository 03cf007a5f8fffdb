// Connections that each carry one short request and get one answer: the
// HTTP of the metrics endpoint (server_metrics.h), out of a hostile client's
// reach.
//
// One thread waits on every connection at once (poll) and reads and writes
// them without blocking, so a client that stalls mid-request holds one place
// among many, and no thread, until its timeout; the others are answered
// meanwhile. A connection's request head (up to its blank line) must arrive,
// and its answer leave, within `timeout` of its accept, or it is closed
// unanswered. At most `max_connections` are held, at most
// max_connections_per_address, and at most a quarter of them, from one
// client address (listener.h's PeerKey): a newcomer over its address's
// cap is closed at once, and one over the total takes the place of the
// connection held longest (the one that has had the most time to send its
// request; a real request arrives within a round trip of the connect).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_ONE_REQUEST_SERVER_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_ONE_REQUEST_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardgnn::internal {

class Listener;

struct OneRequestLimits {
  int max_connections = 64;
  int max_connections_per_address = 8;
  absl::Duration timeout = absl::Seconds(2);
  // A head longer than this is answered as it stands (a scrape's is a few
  // hundred bytes).
  size_t max_request_bytes = 8 << 10;
};

// Thread-safe; the destructor stops it.
class OneRequestServer {
 public:
  // Turns a request head (what arrived up to and including its blank line;
  // or all that arrived when the client stopped sending or the head reached
  // max_request_bytes) into the bytes of the answer. Called on the server's
  // thread, one request at a time; must be quick and must not throw.
  using Respond = std::function<std::string(const std::string& head)>;

  // Serves the connections `listener` accepts. REQUIRES: `listener` is bound
  // and not started.
  static absl::StatusOr<std::unique_ptr<OneRequestServer>> Start(
      std::unique_ptr<Listener> listener, OneRequestLimits limits,
      Respond respond);
  // Stops accepting, lets a Respond call in progress finish, and closes the
  // connections still open, answered or not.
  ~OneRequestServer();
  OneRequestServer(const OneRequestServer&) = delete;
  OneRequestServer& operator=(const OneRequestServer&) = delete;

  int port() const { return port_; }

 private:
  struct Connection;
  struct Arrival {
    int fd;
    std::string peer;
  };
  OneRequestServer() = default;
  void Loop();
  // Takes the connections accepted since the last call, under the caps.
  void AdmitArrivals(std::vector<Connection>* open);
  // Reads or writes what `c` is ready for; false once it is finished.
  bool Progress(Connection* c);

  OneRequestLimits limits_;
  Respond respond_;
  std::unique_ptr<Listener> listener_;
  int port_ = 0;
  int wake_fd_ = -1;  // eventfd: arrivals and Stop().
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<Arrival> arrivals_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_ONE_REQUEST_SERVER_H_
