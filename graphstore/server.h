// The storage server: serves one ShardStore over gRPC (proto/graphstore.proto).
//
// Built on gRPC's callback API. Small memory-mode calls (which never block)
// run on gRPC's callback thread and skip a hand-off; large ones and every
// disk-mode call go to a fixed pool of workers that client addresses take in
// turn (internal/work_queue.h), so a slow disk read never blocks the network
// and one client's heavy calls cannot starve another's. GetFeatures and
// SampleNeighbors write their answers straight into the gRPC response
// buffer (no protobuf copy). Beside
// the gRPC port, the server also answers GetFeatures on a plain-TCP feature
// port on the same host (internal/feature_port.h), which Info advertises and
// clients use for their megabyte feature batches. Both ports accept through
// internal/listener.h, under connection caps and an idle timeout. Every
// request is validated (byte lengths, ownership, batch, fanout and work
// limits) and answered with a status; a handler never throws through gRPC
// and the server never crashes on a request. With an auth token, every call
// but Health is checked for it in one place (internal::CallRunner) before
// any work; with TLS, gRPC speaks TLS and the feature port is off (options
// below). The handlers are GraphStoreServer::Service (internal/service.h).
//
// The server also holds learnable node embeddings for training runs
// (CreateEmbeddingTable, PullEmbeddings, PushEmbeddingGradients,
// EmbeddingStats: internal/embedding_service.h): rows of the nodes it owns,
// updated by a sparse optimizer from the trainers' pushes, with a step clock
// that synchronous and bounded-staleness pulls wait on without holding a
// thread.
//
// Beside proto/graphstore.proto, every server answers gRPC's standard health
// service (grpc.health.v1.Health, Check and Watch, for grpc_health_probe,
// Kubernetes gRPC probes and load balancers) for the service names "" and
// "shardgnn.proto.GraphStore": NOT_SERVING while it loads (Bind() before
// Serve()), SERVING once it serves, NOT_SERVING from the start of Shutdown().
// It also answers gRPC server reflection (grpc.reflection.v1alpha, for
// grpcurl). Neither needs the auth token: health tells only a status, and
// reflection only the schema, which is public (proto/graphstore.proto).
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

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graphstore/shard_store.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace shardgnn {
namespace internal {
class FeaturePortServer;
class GrpcConnections;
class Listener;
class MemoryTrimmer;
class MetricsExporter;
class WorkQueue;
}  // namespace internal

struct GraphStoreServerOptions {
  // HOST:PORT to bind. Port 0 picks a free port (read it back with port()).
  std::string listen_address = "127.0.0.1:0";
  // Worker threads running large and disk-mode calls (the feature port's
  // large samples too); <= 0 means one per core (min 2).
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
  // Feature port connections served at once (one thread each), in all and
  // from one client address (an IPv4 address or an IPv6 /64); clients
  // beyond them are turned away and fetch over gRPC.
  int feature_port_connections = 256;
  int feature_port_connections_per_ip = 128;

  // Resource limits against hostile or careless clients (issue 12). Real
  // training stays far below every default.
  //
  // Neighbor IDs one SampleNeighbors call may return (8 bytes each):
  // RESOURCE_EXHAUSTED naming this limit above it, refused before sampling
  // when the request alone shows it (replace, IDs x fanout).
  int64_t max_sampled_per_call = int64_t{8} << 20;
  // gRPC connections held at once, in all and from one client address;
  // connections beyond them are closed on accept. Both port caps are also
  // kept to a quarter of the open-file limit each.
  int max_connections = 1024;
  int max_connections_per_ip = 256;
  // A connection (gRPC or feature port) with no call for this long is
  // closed; clients reconnect on their next call.
  absl::Duration idle_timeout = absl::Minutes(5);
  // Large calls (and every disk-mode call) run on num_threads workers,
  // taken by client addresses in turn; one address holds at most all
  // workers but one. Calls from one address waiting beyond this get
  // UNAVAILABLE "server busy", which clients retry.
  int max_queued_per_ip = 64;

  // Authentication and encryption (issue 12; docs/architecture.md,
  // "Security").
  //
  // Non-empty: every call but Health must carry the metadata
  // "authorization: Bearer TOKEN" (UNAUTHENTICATED otherwise, compared in
  // constant time), and a feature port connection must pass the token's
  // challenge-response (internal/feature_port.h) before it is served. Empty:
  // calls that carry a token are refused (UNAUTHENTICATED), so a cluster whose
  // clients and servers disagree fails at its first call instead of running
  // unprotected. Health answers without a token either way (load balancers'
  // probes; it tells nothing but "serving").
  std::string auth_token;
  // TLS for gRPC: a PEM certificate chain and its private key (both or
  // neither). With tls_client_ca_pem too, clients must present a
  // certificate that CA signed (mutual TLS). Under TLS gRPC accepts its
  // connections itself (gRPC 1.51 takes no TLS connection from a descriptor),
  // so the Listener's connection caps and accept back-off do not apply to the
  // gRPC port, and the feature port (plain TCP) is off whatever
  // feature_port says.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_client_ca_pem;

  // Learnable tables (CreateEmbeddingTable; issue 15): the bytes all tables
  // of this server may reserve (rows and optimizer state; pages are used as
  // rows are touched). Above it a new table gets RESOURCE_EXHAUSTED. 0: the
  // default, DefaultMaxEmbeddingBytes. In memory (no embedding_table_dir) a
  // value above the machine's physical memory is refused by Bind: tables
  // that large belong on disk.
  int64_t max_embedding_bytes = 0;
  // Where the tables' snapshots go (SnapshotEmbeddings; a resumed run's
  // CreateEmbeddingTable reads them back): DIR/<table>/<run ID>/epoch-E.emb,
  // the last two epochs of each run kept. Empty: snapshots are refused
  // (FAILED_PRECONDITION), so a run with checkpoints says so at its first.
  std::string embedding_snapshot_dir;
  // Disk mode for the tables (tables larger than RAM): their arrays are
  // files in this directory, mapped (EmbeddingTable::Create). Empty: memory.
  std::string embedding_table_dir;

  // Prometheus metrics (docs/operations.md, "Metrics"): non-empty, HOST:PORT
  // (as listen_address; port 0 picks a free port, read back with
  // metrics_port()) on which GET /metrics answers over plain HTTP, bound by
  // Bind(). Scrapes read the counters the server keeps anyway, so calls cost
  // nothing more with it; empty (the default) binds nothing.
  std::string metrics_listen_address;
  // The "part" label of the metrics before Serve() (Bind() leaves the store
  // unknown while it loads); from Serve() on, the store's part. -1: no
  // label until then. Start() knows the store, so it needs none.
  int metrics_part = -1;
};

// The default bound on a server's learnable tables: half of this machine's
// physical memory when they are in memory (the shard and the calls need the
// rest; 32 GiB if the memory is unknown), 64 GiB on disk
// (GraphStoreServerOptions::embedding_table_dir).
int64_t DefaultMaxEmbeddingBytes(bool tables_on_disk);

// Process-wide malloc settings for a storage server process; call once at
// start. Blocks of 4 MiB and more (sampling answers of big requests, gRPC
// feature batches) are mapped and unmapped on their own, instead of glibc
// raising its mmap threshold to the largest block freed and keeping them in
// its heaps: a burst of big answers (a flood) then leaves no lasting RSS.
// Smaller blocks stay in the heaps between calls (trim threshold 8 MiB), so
// that steady serving reuses its memory instead of faulting it in afresh,
// while a heap keeps at most 8 MiB free at its top after a flood; the
// server's MemoryTrimmer returns the rest when calls stop or RSS grows.
void TuneAllocatorForServing();

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
  // Start() in two steps, for a server whose store takes long to load (what
  // `shardgnn serve` does): Bind() binds the gRPC port (port() and address()
  // are known from then on; errors as Start) and answers health checks
  // NOT_SERVING (our Health: serving = false) and every other call
  // UNAVAILABLE ("loading"), which clients retry as they would a refused
  // connection, until Serve(store) binds the feature port and reports
  // SERVING. Serve() fails with INVALID_ARGUMENT for a null store,
  // FAILED_PRECONDITION if called twice or after Shutdown(), and UNAVAILABLE
  // if the feature port cannot be bound (the server is then shut down).
  // feature_port() is set when Serve() returns.
  static absl::StatusOr<std::unique_ptr<GraphStoreServer>> Bind(
      const GraphStoreServerOptions& options);
  absl::Status Serve(std::shared_ptr<const ShardStore> store);
  // Shuts down now (cancelling calls still running) if Shutdown() was not
  // called.
  ~GraphStoreServer();
  GraphStoreServer(const GraphStoreServer&) = delete;
  GraphStoreServer& operator=(const GraphStoreServer&) = delete;

  // The bound port and "host:port" with it.
  int port() const { return port_; }
  const std::string& address() const { return address_; }
  // The feature port's number; 0 if it is off (also under TLS).
  int feature_port() const;
  // True if it serves gRPC over TLS.
  bool tls() const { return tls_; }
  // The metrics port; 0 without options.metrics_listen_address.
  int metrics_port() const { return metrics_port_; }

  // Freed memory is returned to the OS (malloc_trim) after a second without
  // calls that followed calls, and, while calls go on, when resident memory
  // grew 32 MiB over its floor: a burst of large answers (a flood, or a big
  // evaluation) does not leave the process at its peak RSS. Trims forced by
  // growth back to back space themselves out (up to 16 s apart), so a steady
  // load whose memory keeps coming back is not faulted in again every second.
  //
  // Reports NOT_SERVING to health checks, stops accepting connections and
  // calls, lets calls in flight finish until `deadline` (cancelling any still
  // running then), and stops the workers. Idempotent.
  void Shutdown(absl::Time deadline);

  ServerTotals Totals() const;

  // The workers that run large calls, gRPC's and the feature port's: for
  // tests that hold them to make the server busy. Valid until Shutdown().
  internal::WorkQueue* workers_for_testing() const;

 private:
  class Service;
  GraphStoreServer() = default;
  // Starts the metrics exporter if options_ asks for one (in Bind(), once
  // service_ and connections_ exist and before gRPC starts).
  absl::Status StartMetrics();

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<internal::Listener> listener_;  // Hands gRPC connections.
  std::unique_ptr<internal::GrpcConnections> connections_;
  std::unique_ptr<internal::FeaturePortServer> feature_port_;
  // Returns freed memory to the OS (internal/memory_trimmer.h).
  std::unique_ptr<internal::MemoryTrimmer> trimmer_;
  // Serves GET /metrics; reads service_ and connections_, so it is stopped
  // before them (Shutdown()) and declared after them.
  std::unique_ptr<internal::MetricsExporter> metrics_;
  GraphStoreServerOptions options_;
  std::string host_;  // The listen address's host, for the feature port.
  int port_ = 0;
  int metrics_port_ = 0;
  std::string address_;
  bool tls_ = false;
  // Serve() and Shutdown() do not overlap.
  absl::Mutex lifecycle_mu_;
  bool serving_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  std::atomic<bool> shut_down_{false};
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SERVER_H_
