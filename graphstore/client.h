// A client for one storage server (proto/graphstore.proto).
//
// Every call carries a deadline (options.call_timeout per attempt, and
// options.overall_timeout for the call, retries included). UNAVAILABLE is
// retried with exponential backoff and jitter: a "server busy" answer (a
// live server shedding load) until the overall deadline, any other (a server
// starting, restarting, unreachable or dead) up to options.max_attempts
// times, so a dead server is reported promptly; other errors return at once.
// Every error message starts with the server address
// ("127.0.0.1:4567: UNAVAILABLE: ..."), so a trainer talking to many servers
// says which one failed.
//
// GetFeatures(ids, feature_dim, out, rows), PullEmbeddings and
// PushEmbeddingGradients go over the server's feature port
// (graphstore/internal/feature_port.h) once Info() has reported one and
// options.use_feature_port is set; they have the same deadline. If the port
// cannot be reached (or its connection breaks), that call and the ones after
// it use gRPC; after options.feature_port_retry a call asks Info() again and
// goes back to the port it reports (a server restarted on a new port).
//
// Every answer is checked before it is returned or written anywhere: array
// lengths, neighbor counts within [0, fanout] and adding up to the neighbors
// received, neighbor IDs inside the graph, labels in [-1, num_classes) (or
// multi-label rows all 0/1 or all -1), typed samples' relations,
// degrees in [0, the shard's adjacency entries], split IDs sorted and owned,
// feature rows of the asked width, and Info's own figures consistent (node
// range inside the graph, part inside the parts, ...). A bad answer is
// DATA_LOSS ("ADDRESS: METHOD: what was wrong"). Checks against the shard's
// figures (ID ranges, classes, edges, width) use the last good Info(), so
// call it first.
//
// With options.auth_token every call carries the token (set in one place,
// where each call's context is made) and feature port connections
// authenticate first; with options.tls_ca_pem the channel is TLS. A refused
// token is UNAUTHENTICATED saying which side lacks it or that it differs;
// a failed connection under TLS adds a hint at the certificates to check.
//
// Thread-safe: one client (one HTTP/2 channel, and a pool of feature port
// connections) is meant to be shared by all threads that talk to the same
// server.
#ifndef SHARDGNN_GRAPHSTORE_CLIENT_H_
#define SHARDGNN_GRAPHSTORE_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/shared_memory.h"
#include "common/types.h"
#include "embedding/embedding_table.h"
#include "graphstore/shard_format.h"
#include "graphstore/shard_store.h"

namespace shardgnn {
namespace internal {
class FeaturePortClient;
}  // namespace internal

struct GraphStoreClientOptions {
  absl::Duration call_timeout = absl::Seconds(5);  // Per attempt.
  // Attempts after UNAVAILABLE other than "server busy"; 1 = no retries.
  int max_attempts = 4;
  // A call's deadline, retries included: "server busy" answers are retried
  // until then. Also caps each attempt's call_timeout.
  absl::Duration overall_timeout = absl::Seconds(30);
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  int64_t max_message_bytes = int64_t{256} << 20;
  // Fetch feature rows over the server's feature port when it has one.
  bool use_feature_port = true;
  // After the port failed, how long GetFeatures uses gRPC before it asks
  // Info() for the port again.
  absl::Duration feature_port_retry = absl::Seconds(30);

  // Authentication and encryption (docs/architecture.md, "Security").
  //
  // Sent with every call as "authorization: Bearer TOKEN", and used to pass
  // the feature port's challenge-response (and check the server's answer);
  // empty: none. A server with another token, or none, refuses the calls
  // with UNAUTHENTICATED.
  std::string auth_token;
  // TLS for gRPC: non-empty turns it on, trusting servers whose certificate
  // this PEM CA bundle signed (the name checked is the address's host, so
  // an IP address needs a subjectAltName IP entry). With tls_cert_pem and
  // tls_key_pem the client presents that certificate (mutual TLS). Under TLS
  // GetFeatures never uses a feature port (plain TCP).
  std::string tls_ca_pem;
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// What a server says about itself (the Info call).
struct ServerInfo {
  ShardMeta meta;  // The served shard's metadata.
  std::string server_version;
  bool in_memory = false;
  // Where the server's feature matrix can be mapped by a process on its
  // machine (ShardStore::SharedFeatures), if it offers that.
  std::optional<SharedRegionRef> shared_features;
  // The server's feature port on the host of its address; 0 if none.
  int feature_port = 0;
};

// One method's counters from the Stats call.
struct ServerMethodStats {
  std::string method;
  int64_t calls = 0;
  int64_t errors = 0;
  double latency_sum_us = 0;
  double latency_p50_us = 0;
  double latency_p99_us = 0;
  double latency_max_us = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
};

struct ServerStats {
  std::vector<ServerMethodStats> methods;
  double uptime_seconds = 0;
  int64_t minor_faults = 0;  // The server process's, so far.
  double cpu_seconds = 0;    // Its CPU time so far (user + system).
};

class GraphStoreClient {
 public:
  // Creates a channel to `address` (HOST:PORT). Does not wait for the server:
  // use WaitForHealthy() for that. INVALID_ARGUMENT for a bad address, bad
  // options, or a client certificate without its key (or TLS settings
  // without a CA).
  static absl::StatusOr<std::unique_ptr<GraphStoreClient>> Connect(
      const std::string& address, const GraphStoreClientOptions& options = {});
  ~GraphStoreClient();
  GraphStoreClient(const GraphStoreClient&) = delete;
  GraphStoreClient& operator=(const GraphStoreClient&) = delete;

  const std::string& address() const { return address_; }

  // Polls Health until the server answers or `deadline` passes
  // (DEADLINE_EXCEEDED naming the address and the last error). Under TLS, a
  // failed first attempt is followed by one handshake of the client's own
  // (internal/tls_check.h): a certificate the CA did not sign, one that does
  // not name this address, or a refused client certificate is
  // UNAUTHENTICATED at once, saying which, rather than a wait to the
  // deadline.
  absl::Status WaitForHealthy(absl::Time deadline);
  absl::Status Health();
  // One probe with gRPC's standard health service (grpc.health.v1 Check for
  // "shardgnn.proto.GraphStore"), waiting for the connection until
  // `deadline`: OK if SERVING; UNAVAILABLE if NOT_SERVING (loading, or
  // draining on SIGTERM) or unreachable. A server without the standard
  // service (UNIMPLEMENTED) is asked our own Health instead. (A call by
  // method name: no generated grpc.health.v1 code in this process.)
  absl::Status ProbeServing(absl::Time deadline);

  // Also starts using the feature port it reports (see above).
  absl::StatusOr<ServerInfo> Info();
  // True while GetFeatures goes over the server's feature port.
  bool UsesFeaturePort() const;
  // Sampled neighbors of `ids` in CSR form (see ShardStore::SampleNeighbors).
  // DATA_LOSS naming the server if the answer is malformed or does not fit
  // the request (a count per ID, within the fanout, neighbors in the graph).
  absl::StatusOr<SampledNeighbors> SampleNeighbors(absl::Span<const NodeId> ids,
                                                   int fanout, bool replace,
                                                   uint64_t seed);
  // The same into *out, reusing its vectors' memory (their contents are
  // replaced, also when the call fails).
  absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out);
  // Typed shards (ServerInfo.meta.typed()): see
  // ShardStore::SampleTypedNeighbors; always over gRPC. DATA_LOSS naming the
  // server for a malformed answer (counts, relations in range and only of
  // relations with a non-zero fanout, per node and relation at most the
  // fanout when fanout >= 0, neighbors inside the graph, one relation per
  // neighbor). A wrong number of fanouts is the server's INVALID_ARGUMENT.
  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> ids,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed, SampledNeighbors* out);
  // Rows of node type `type` over gRPC (typed features never use the feature
  // port or shared memory yet): row i to out + i * feature_dim, or
  // out + rows[i] * feature_dim. DATA_LOSS if the rows are not feature_dim
  // wide; the server's INVALID_ARGUMENT for an ID not of that type.
  absl::Status GetTypeFeatures(int type, absl::Span<const NodeId> ids,
                               int64_t feature_dim, float* out,
                               absl::Span<const size_t> rows = {});
  // Writes the row of ids[i] to out + i * feature_dim, or, when `rows` is
  // given (one entry per ID), to out + rows[i] * feature_dim: received bytes
  // are copied once, straight to their place. Fails with DATA_LOSS if the
  // server's rows are not `feature_dim` wide.
  absl::Status GetFeatures(absl::Span<const NodeId> ids, int64_t feature_dim,
                           float* out, absl::Span<const size_t> rows = {});
  // The same, returning the rows and their width.
  absl::StatusOr<std::vector<float>> GetFeatures(absl::Span<const NodeId> ids,
                                                 int64_t* feature_dim);
  // ids.size() * label_columns values (label_columns from the last Info();
  // 1 before it), checked: one label per ID in [-1, num_classes), or for a
  // multi-label shard rows all 0/1 or all -1.
  absl::StatusOr<std::vector<int64_t>> GetLabels(absl::Span<const NodeId> ids);
  absl::StatusOr<std::vector<int64_t>> GetDegrees(absl::Span<const NodeId> ids);
  absl::StatusOr<std::vector<NodeId>> GetSplit(absl::string_view name);
  absl::StatusOr<ServerStats> Stats();

  // Learnable tables (graphstore/internal/embedding_service.h; issue 15).
  // Every call on a table carries config.run_secret (issue 51): a table
  // created with one secret answers others PERMISSION_DENIED ("another
  // run's table").
  //
  // Creates the run's table on this server, or confirms the one it holds
  // (FAILED_PRECONDITION naming the settings that differ). Returns the rows
  // the server holds; DATA_LOSS if they are not the shard's node range;
  // FAILED_PRECONDITION from a server that does not check run secrets (one
  // older than this client: its tables would answer anyone).
  // With restore_epoch >= 0 (a resumed run): the table as the run's
  // snapshot of that epoch, taken at restore_step, left it (epoch 0: the
  // initial table); NOT_FOUND naming the file if the server has none. A
  // restore may read a large file: each attempt may take up to 10 minutes.
  absl::Status CreateEmbeddingTable(const EmbeddingTableConfig& config,
                                    int restore_epoch = -1,
                                    int64_t restore_step = 0);
  // Has the server write the run's table as of `step` as the snapshot of
  // `epoch` (SnapshotEmbeddings in proto/graphstore.proto); each attempt may
  // take up to 10 minutes.
  struct EmbeddingSnapshotInfo {
    int64_t rows = 0;
    int64_t bytes = 0;
    double seconds = 0;
  };
  absl::StatusOr<EmbeddingSnapshotInfo> SnapshotEmbeddings(
      const EmbeddingTableConfig& table, int epoch, int64_t step);
  // Writes the rows of ids[i] to out + i * dim (or, when `rows` is given,
  // one entry per ID, to out + rows[i] * dim: copied once, from the received
  // message straight to their place), once the server's step clock allows
  // `step` with `staleness` (see embedding/embedding_table.h).
  // The server holds the pull for the clock at most `wait` (a synchronous
  // pull waits for the slowest trainer), then answers FAILED_PRECONDITION
  // naming the trainers missing ("... waits for pushes of trainers ...");
  // a zero `wait`: until the call's deadline, then DEADLINE_EXCEEDED.
  // DATA_LOSS if the rows are not `dim` wide or not one per ID.
  absl::Status PullEmbeddings(const EmbeddingTableConfig& table,
                              absl::Span<const NodeId> ids, int64_t step,
                              int staleness, absl::Duration wait, float* out,
                              absl::Span<const size_t> rows = {});
  // Pushes `trainer`'s gradient rows of `step` (ids.size() * dim floats);
  // retried on UNAVAILABLE (a repeated step is ignored by the server), and
  // over gRPC when the feature port breaks.
  absl::Status PushEmbeddingGradients(const EmbeddingTableConfig& table,
                                      int trainer, int64_t step,
                                      absl::Span<const NodeId> ids,
                                      absl::Span<const float> gradients);
  // Per table: the server's figures (EmbeddingTableStats, applied steps).
  struct EmbeddingServerStats {
    std::string name;
    int64_t dim = 0;
    EmbeddingTableStats stats;
    int64_t applied_steps = 0;
  };
  absl::StatusOr<std::vector<EmbeddingServerStats>> EmbeddingStats();

 private:
  class Impl;
  // The server's feature port if this call should use it (asking Info()
  // again once options.feature_port_retry has passed), else null.
  std::shared_ptr<internal::FeaturePortClient> FeaturePortForCall();
  GraphStoreClient(std::string address, std::unique_ptr<Impl> impl);
  std::string address_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_CLIENT_H_
