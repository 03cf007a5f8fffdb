// An HTTP endpoint that answers GET /metrics with text a caller renders: the
// Prometheus side of a storage server (server_metrics.h) and of a trainer
// (trainer/training_metrics.h, `train --metrics-listen`).
//
// Not prometheus-cpp's Exposer: Debian's civetweb under it starts its
// threads with 100 KiB stacks, which glibc refuses (EINVAL) in a process
// whose static TLS is as large as LibTorch's. Instead a Listener (listener.h)
// accepts and a OneRequestServer (one_request_server.h) reads the requests
// and writes the answers, all connections on one thread that never waits for
// a client: each request within 2 s, at most 64 connections at once and 8
// from one client address, so stalled clients cannot hold off a scrape.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_METRICS_ENDPOINT_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shardgnn::internal {

class OneRequestServer;

// Serves GET /metrics (HEAD too; other paths 404, other methods 405, a
// request that is not HTTP 400) until destroyed. Thread-safe.
class MetricsEndpoint {
 public:
  // The body of an answer to GET /metrics, in the text exposition format.
  // Called on the endpoint's thread, one scrape at a time; must be
  // thread-safe against the caller's other threads. An exception it throws
  // is answered 500.
  using Render = std::function<std::string()>;

  // Binds `listen_address`, HOST:PORT as the gRPC listen address takes it
  // (an address, "[v6 address]" or a host name; port 0 picks a free port,
  // port() tells which). INVALID_ARGUMENT for an address that is not
  // HOST:PORT, UNAVAILABLE naming the reason when it cannot be bound (in
  // use, not a local address, a name that does not resolve); both messages
  // begin "cannot serve metrics on".
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& listen_address, Render render);
  // Stops listening and closes the connections open; a scrape being
  // rendered finishes first.
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  // The HTTP answer to a request head.
  std::string Respond(const std::string& head) const;

  Render render_;
  std::unique_ptr<OneRequestServer> server_;  // Last: its thread goes first.
  int port_ = 0;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_METRICS_ENDPOINT_H_
