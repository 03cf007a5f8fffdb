// Accepting TCP connections for the storage server's ports, out of a hostile
// client's reach.
//
// Both the gRPC port and the feature port accept through a Listener: one
// thread that accepts, names the peer's address and hands the connection to
// its owner, which admits it (and takes the descriptor) or turns it away
// (the Listener closes it). gRPC's own accept loop (1.51) stops for good
// after one EMFILE, so the server never lets gRPC accept: connections are
// admitted here and given to gRPC one by one. When accept fails for lack of
// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the Listener backs
// off, from 10 ms up to 1 s, instead of spinning on a listening socket that
// stays readable; the pending connections wait in the kernel's backlog.
//
// Also here: PeerKey, the address a fairness or connection limit is counted
// against.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_LISTENER_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_LISTENER_H_

#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn::internal {

// The key a connection from `addr` is counted under: the IPv4 address, or
// the /64 prefix of an IPv6 address (one host usually holds a whole /64);
// an IPv4-mapped IPv6 address counts as its IPv4 address.
std::string PeerKey(const sockaddr_storage& addr);
// The same for a connected socket ("?" if it has no peer address).
std::string PeerKeyOfSocket(int fd);
// The same for a gRPC peer URI ("ipv4:1.2.3.4:5678", "ipv6:[::1]:5678", or
// "fd:N" for a connection handed to gRPC by a Listener).
std::string PeerKeyOfGrpcPeer(absl::string_view peer);

// Thread-safe. Stop() (or the destructor) joins the accepting thread.
class Listener {
 public:
  // Takes a connected socket and its peer key; returns false to turn it
  // away (the Listener then closes it), true if it took the descriptor.
  using Admit = std::function<bool(int fd, const std::string& peer_key)>;

  // Binds HOST:PORT (port 0 picks a free port; "[::]" or "::" binds both
  // IPv6 and IPv4). UNAVAILABLE if it cannot. `what` names the port in
  // errors ("feature port").
  static absl::StatusOr<std::unique_ptr<Listener>> Bind(const std::string& host,
                                                        int port,
                                                        absl::string_view what);
  ~Listener();  // Stop().
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  // Starts the accepting thread. Accepted sockets are blocking and
  // close-on-exec. REQUIRES: called once.
  void Start(Admit admit);
  // Stops accepting, joins the thread and closes the listening socket.
  // Connections already admitted are their owner's. Idempotent.
  void Stop();
  // How often accept failed for lack of descriptors or memory.
  int64_t accept_failures() const { return accept_failures_.load(); }

 private:
  Listener() = default;
  void AcceptLoop();

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accepting thread to stop.
  int port_ = 0;
  Admit admit_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> accept_failures_{0};
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_LISTENER_H_
