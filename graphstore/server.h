// The storage server: serves one ShardStore over gRPC (proto/graphstore.proto).
//
// Built on gRPC's callback API. In disk mode gRPC's own threads hand each
// call to a fixed pool of worker threads, so a slow disk read never blocks
// the network; in memory mode, where a call never blocks, the work runs on
// gRPC's callback thread and skips the hand-off. GetFeatures writes its rows
// straight into the gRPC response buffer (no protobuf copy). Beside the gRPC
// port, the server also answers GetFeatures on a plain-TCP feature port on
// the same host (internal/feature_port.h), which Info advertises and clients
// use for their megabyte feature batches. Every request is
// validated (byte lengths, ownership, batch and fanout limits) and answered
// with a status; a handler never throws through gRPC and the server never
// crashes on a request.
//
// Usage:
//   ASSIGN_OR_RETURN(auto server, GraphStoreServer::Start(store, options));
//   ... server->port() ...
//   server->Shutdown(absl::Now() + absl::Seconds(5));
//
// Thread-safe. The server shares ownership of the store.
#ifndef SHARDGNN_GRAPHSTORE_SERVER_H_
#define SHARDGNN_GRAPHSTORE_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graphstore/shard_store.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace shardgnn {
namespace internal {
class FeaturePortServer;
}  // namespace internal

struct GraphStoreServerOptions {
  // HOST:PORT to bind. Port 0 picks a free port (read it back with port()).
  std::string listen_address = "127.0.0.1:0";
  // Worker threads running disk-mode handlers; <= 0 means one per core
  // (min 2).
  int num_threads = 0;
  // Requests above these limits get INVALID_ARGUMENT before any allocation.
  int64_t max_ids_per_call = int64_t{1} << 20;
  int max_fanout = 10000;
  // Largest request or response message. Responses that would exceed it
  // (huge feature batches, fanout -1 on hubs) get RESOURCE_EXHAUSTED.
  int64_t max_message_bytes = int64_t{256} << 20;
  // The feature port, bound on the listen address's host: 0 picks a free
  // port, -1 serves features over gRPC only.
  int feature_port = 0;
  // Feature port connections served at once (one thread each); clients
  // beyond it are turned away and fetch over gRPC.
  int feature_port_connections = 1024;
};

// Calls and errors over the server's lifetime (for the shutdown summary).
struct ServerTotals {
  int64_t calls = 0;
  int64_t errors = 0;
  int64_t bytes_out = 0;
};

class GraphStoreServer {
 public:
  // Binds options.listen_address (and the feature port on its host) and
  // starts serving `store`. Fails with UNAVAILABLE if an address cannot be
  // bound and INVALID_ARGUMENT for bad options. REQUIRES: store != nullptr.
  static absl::StatusOr<std::unique_ptr<GraphStoreServer>> Start(
      std::shared_ptr<const ShardStore> store,
      const GraphStoreServerOptions& options);
  // Shuts down now (cancelling calls still running) if Shutdown() was not
  // called.
  ~GraphStoreServer();
  GraphStoreServer(const GraphStoreServer&) = delete;
  GraphStoreServer& operator=(const GraphStoreServer&) = delete;

  // The bound port and "host:port" with it.
  int port() const { return port_; }
  const std::string& address() const { return address_; }
  // The feature port's number; 0 if it is off.
  int feature_port() const;

  // Stops accepting calls, lets calls in flight finish until `deadline`
  // (cancelling any still running then), and stops the workers. Idempotent.
  void Shutdown(absl::Time deadline);

  ServerTotals Totals() const;

 private:
  class Service;
  GraphStoreServer() = default;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<internal::FeaturePortServer> feature_port_;
  int port_ = 0;
  std::string address_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SERVER_H_
