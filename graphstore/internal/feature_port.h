// The feature port: a plain-TCP side channel that serves GetFeatures,
// SampleNeighbors and learned-embedding pulls and pushes next to the gRPC
// service: the calls that carry megabytes of rows or sampled IDs.
//
// Why: a 1024-row batch of 128 floats (512 KiB) costs gRPC about twice the
// CPU of the bytes themselves (HTTP/2 framing, and hand-offs between gRPC's
// polling threads: perf put ~25% of the server's time in futex wake-ups).
// Here each connection has one server thread that reads a request, gathers
// the rows and writes them with one sendmsg; the client writes the IDs and
// reads the rows straight into their destinations with readv. DistDGL moves
// its tensors over plain sockets for the same reason.
//
// Wire format (native little-endian, one request in flight per connection):
//   request:  FeatureRequestHeader, then num_ids int64 node IDs.
//   response: FeatureResponseHeader, then payload_bytes bytes: the rows
//             (float32, row-major [num_ids, feature_dim]) when code is 0,
//             else a UTF-8 error message and code is an absl::StatusCode.
// A learned-embedding pull (PullEmbeddings of proto/graphstore.proto, with the
// same checks, waits and answers; graphstore/internal/embedding_service.h):
//   request:  FeatureRequestHeader{kEmbeddingPullMagic, 0, num_ids},
//             EmbeddingPullHeader, table_bytes bytes of the table's name,
//             run_id_bytes bytes of the run ID, secret_bytes bytes of the
//             run's secret, then num_ids int64 node IDs.
//   response: as above; the rows are the table's ([num_ids, dim]).
// A learned-embedding push (PushEmbeddingGradients, answered the same way):
//   request:  FeatureRequestHeader{kEmbeddingPushMagic, 0, num_ids},
//             EmbeddingPushHeader, table_bytes bytes of the table's name,
//             run_id_bytes bytes of the run ID, secret_bytes bytes of the
//             run's secret, num_ids int64 node IDs, then gradient_bytes bytes
//             of float32 gradients ([num_ids, dim]).
//   response: as above; when code is 0 the payload is the table's applied
//             steps (one int64).
// A server without learnable tables answers both UNIMPLEMENTED (the client
// then pulls and pushes over gRPC).
// The run's secret (issue 51) travels as in the gRPC requests, in clear: the
// port is on only without TLS, where the gRPC calls (CreateEmbeddingTable
// first) carry it in clear as well, so a proof bound to the connection here
// would hide it from no one who can read the traffic. The secret is what
// the server checks (against its digest), not a digest the client sends,
// so the digest a server keeps is worth nothing to a thief. The port's first
// embedding protocol ("SFE1", "SFG1", without the secret) is answered
// FAILED_PRECONDITION, saying the client is older than the server, and the
// connection is closed: an old client fails with that line instead of
// falling back to gRPC, where its calls would be refused anyway.
// A sample (SampleNeighbors, with the gRPC service's checks and limits:
// fanout within [-1, max_fanout], owned IDs, at most max_sampled_per_call
// neighbors and the message limit, refused with the same messages):
//   request:  FeatureRequestHeader{kSampleMagic, 0, num_ids}, SampleHeader,
//             then num_ids int64 node IDs.
//   response: as above; the payload is num_ids int64 counts, then the
//             neighbors (int64, each node's after the one before).
// Why not gRPC: its receive buffers are fresh 64 KiB slices from malloc for
// every answer, and the test pass's answers of megabytes kept growing the
// receiving thread's heap (issue 17); here the client reads the counts and
// neighbors straight into the vectors it reuses. A client whose server
// answers a sample with "bad magic number" (an older server) samples over
// gRPC. Large samples (sample_request.h's SampleIsHeavy, and every sample of
// a disk-mode store) run on the server's workers, as gRPC's do: the workers
// bound the samples computed at once, whichever path they arrive on. A
// sample that finds its client address's queue full, or waits the I/O
// timeout without a worker, is answered UNAVAILABLE "server busy" (the
// client then samples over gRPC, which retries it).
// A request the server cannot frame (bad magic, too many IDs, names or a
// secret longer than kMaxEmbeddingNameBytes, an embedding frame of the first
// protocol) gets an error response and the connection is closed; any other
// error leaves it open.
//
// Authentication, when the server has a token (GraphStoreServerOptions::
// auth_token), before the first request of a connection:
//   client: FeatureRequestHeader{kAuthHelloMagic, 0, 32}, a 32-byte nonce Nc
//   server: FeatureResponseHeader{kAuthChallengeMagic, 0, 32}, a nonce Ns
//   client: FeatureRequestHeader{kAuthProofMagic, 0, 32},
//           HMAC-SHA256(token, kAuthClientLabel || Ns || Nc)
//   server: FeatureResponseHeader{kAuthAcceptMagic, 0, 32},
//           HMAC-SHA256(token, kAuthServerLabel || Nc || Ns)
// The labels bind each proof to its direction, so neither side's answer can
// be replayed as the other's; the client checks the server's proof, so a
// server that does not know the token cannot feed it rows. A server with a
// token answers anything else (a plain request, a wrong proof) with an
// UNAUTHENTICATED error response and closes; a server without one answers a
// hello the same way, so a client and server that disagree fail at once
// with one clear message instead of waiting for each other. The handshake
// must finish within 10 s (or the I/O timeout if shorter).
//
// Everything else (labels, degrees, info, health, stats, table creation and
// snapshots) stays on gRPC, and a client falls back to gRPC when the port
// cannot be reached.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_H_

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "graphstore/internal/connection_limits.h"
#include "graphstore/internal/listener.h"
#include "graphstore/internal/method_stats.h"
#include "graphstore/internal/sample_request.h"
#include "graphstore/shard_store.h"

namespace shardgnn::internal {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the feature port's wire format is little-endian");

inline constexpr uint32_t kFeatureRequestMagic = 0x31514653;   // "SFQ1"
inline constexpr uint32_t kFeatureResponseMagic = 0x31524653;  // "SFR1"

inline constexpr uint32_t kEmbeddingPullMagic = 0x32454653;  // "SFE2"
inline constexpr uint32_t kEmbeddingPushMagic = 0x32474653;  // "SFG2"
// The first protocol's, refused (no run secret).
inline constexpr uint32_t kEmbeddingPullMagicV1 = 0x31454653;  // "SFE1"
inline constexpr uint32_t kEmbeddingPushMagicV1 = 0x31474653;  // "SFG1"
inline constexpr uint32_t kSampleMagic = 0x314e4653;           // "SFN1"

inline constexpr uint32_t kAuthHelloMagic = 0x31484653;      // "SFH1"
inline constexpr uint32_t kAuthChallengeMagic = 0x31434653;  // "SFC1"
inline constexpr uint32_t kAuthProofMagic = 0x31504653;      // "SFP1"
inline constexpr uint32_t kAuthAcceptMagic = 0x31414653;     // "SFA1"
inline constexpr size_t kAuthNonceBytes = 32;
inline constexpr char kAuthClientLabel[] = "shardgnn feature port client v1";
inline constexpr char kAuthServerLabel[] = "shardgnn feature port server v1";

struct FeatureRequestHeader {
  uint32_t magic = kFeatureRequestMagic;
  uint32_t reserved = 0;
  uint64_t num_ids = 0;
};
struct FeatureResponseHeader {
  uint32_t magic = kFeatureResponseMagic;
  int32_t code = 0;  // absl::StatusCode; 0 = OK.
  uint64_t payload_bytes = 0;
};
// Follows a kEmbeddingPullMagic header. The fields of PullEmbeddingsRequest,
// and timeout_ms: how long the client waits for the answer (the gRPC call's
// deadline), at most the server's I/O timeout.
struct EmbeddingPullHeader {
  int64_t step = 0;
  int64_t max_wait_ms = 0;
  int64_t timeout_ms = 0;
  int32_t staleness = 0;
  uint32_t table_bytes = 0;
  uint32_t run_id_bytes = 0;
  uint32_t secret_bytes = 0;
};
// Follows a kEmbeddingPushMagic header: the fields of
// PushEmbeddingGradientsRequest, and the length of its gradients.
struct EmbeddingPushHeader {
  int64_t step = 0;
  uint64_t gradient_bytes = 0;
  int32_t trainer = 0;
  uint32_t table_bytes = 0;
  uint32_t run_id_bytes = 0;
  uint32_t secret_bytes = 0;
};
// Follows a kSampleMagic header: the fields of SampleNeighborsRequest.
struct SampleHeader {
  int32_t fanout = 0;
  uint32_t replace = 0;
  uint64_t seed = 0;
};
// Longest table name, run ID and run secret.
inline constexpr uint32_t kMaxEmbeddingNameBytes = 1024;
// Longest error message a client reads; longer ones are cut.
inline constexpr uint64_t kMaxFeaturePortErrorBytes = 64 << 10;
static_assert(sizeof(FeatureRequestHeader) == 16);
static_assert(sizeof(FeatureResponseHeader) == 16);
static_assert(sizeof(EmbeddingPullHeader) == 40);
static_assert(sizeof(EmbeddingPushHeader) == 32);
static_assert(sizeof(SampleHeader) == 16);

class EmbeddingService;
class WorkQueue;

struct FeaturePortLimits {
  int64_t max_ids_per_call = int64_t{1} << 20;
  int64_t max_message_bytes = int64_t{256} << 20;
  // A sample's bounds, as the gRPC service's (GraphStoreServerOptions).
  int max_fanout = 10000;
  int64_t max_sampled_per_call = int64_t{8} << 20;
  // Connections in all and from one client address (listener.h's PeerKey);
  // the per-address cap is cut to half the total (PerAddressCap in
  // connection_limits.h). A connection over the per-address cap is closed on
  // accept (its client uses gRPC); one over the total takes the place of the
  // connection idle longest between requests, if idle for
  // `min_idle_to_evict`, and is closed otherwise.
  int max_connections = 256;
  int max_connections_per_ip = 128;
  absl::Duration min_idle_to_evict = kMinIdleToEvict;
  // A request begun but not finished, or a response not taken, within this
  // closes the connection (a stalled or hostile client cannot hold a
  // connection thread).
  absl::Duration io_timeout = absl::Seconds(30);
  // A connection with no request for this long is closed (clients reconnect
  // on their next fetch).
  absl::Duration idle_timeout = absl::Minutes(5);
};

// What a feature port counts its requests in, and what answers embedding
// requests. Every pointer may be null; those that are not must outlive the
// server.
struct FeaturePortHooks {
  // Every feature request, and every refused handshake (as an error).
  MethodStats* features = nullptr;
  // Samples (in `features` when null).
  MethodStats* samples = nullptr;
  // Embedding pulls and pushes (in `features` when null).
  MethodStats* pulls = nullptr;
  MethodStats* pushes = nullptr;
  ConnectionStats* connections = nullptr;
  // Answers embedding pulls and pushes; null: they are UNIMPLEMENTED.
  EmbeddingService* embeddings = nullptr;
  // Runs large samples, queued under the connection's client address (the
  // gRPC service's workers); null: samples run on the connection's thread.
  // Must outlive Shutdown().
  WorkQueue* workers = nullptr;
};

// Serves `store`'s rows on HOST:PORT. Thread-safe; one thread per
// connection plus an accepting thread (listener.h); large samples run on
// hooks.workers. Feature rows are gathered and sent in pieces of at most
// 1 MiB, and a connection keeps no feature buffer larger than that between
// requests. An embedding pull's
// answer comes whole from its table and a push is read whole; their buffers
// come from one pool the connections share (a trainer pulls and pushes every
// step, over several connections: buffers of each connection's own would be
// faulted in once per connection), at most 256 MiB of each kept, given back
// after 10 s without a pull or push. Idle connections hold next to no memory.
// A connection in a request is never closed for a newcomer; one waiting for
// its next request may be, by the rule of connection_limits.h (its client
// retries on a new connection once, then uses gRPC).
class FeaturePortServer {
 public:
  // Binds `host` (as in the gRPC listen address; port 0 picks a free port)
  // and starts accepting. With a non-empty `auth_token`, connections are
  // served only after the challenge-response above.
  static absl::StatusOr<std::unique_ptr<FeaturePortServer>> Start(
      const std::string& host, int port,
      std::shared_ptr<const ShardStore> store, FeaturePortLimits limits,
      FeaturePortHooks hooks, std::string auth_token = {});
  ~FeaturePortServer();  // Shutdown(now) if not shut down yet.
  FeaturePortServer(const FeaturePortServer&) = delete;
  FeaturePortServer& operator=(const FeaturePortServer&) = delete;

  int port() const { return port_; }

  // Stops accepting; each connection answers the request it has read, if
  // any, and then closes. Returns at once. Idempotent.
  void BeginShutdown();
  // BeginShutdown(), then waits for those answers until `deadline`, cuts the
  // connections still open and joins every thread. Idempotent.
  void Shutdown(absl::Time deadline);

 private:
  struct Connection {
    int fd = -1;
    std::string peer;  // PeerKey of the client.
    bool done = false;
    std::thread thread;
    // Between requests: when the last one was answered (steady clock, ns);
    // else kBusy or kEvicted. The connection's thread takes it to kBusy,
    // and Admit() to kEvicted, by compare-and-swap: a request begun is never
    // cut for a newcomer.
    std::atomic<int64_t> idle_since{0};
  };
  static constexpr int64_t kBusy = -1;
  static constexpr int64_t kEvicted = -2;
  FeaturePortServer() = default;
  // The listener's admission: takes `fd` unless a cap is reached.
  bool Admit(int fd, const std::string& peer);
  void Serve(Connection* conn);
  // The server's side of the handshake; false (after an error response
  // where one is due) if the connection must close.
  bool Authenticate(int fd);
  // A connection's buffers, kept between its requests.
  struct Buffers;
  // The embedding messages' pools, shared by the connections.
  struct EmbeddingBuffers;
  // Answers one framed request; false if the connection must close.
  bool Answer(int fd, const std::string& peer, Buffers* buffers);
  // Answer an embedding pull or push whose header `h` has been read
  // (feature_port_embeddings.cc; the rest is in feature_port_server.cc).
  bool AnswerPull(int fd, const FeatureRequestHeader& h);
  bool AnswerPush(int fd, const FeatureRequestHeader& h);
  // Refuses an embedding request of the first protocol (its magic in `h`).
  bool AnswerFirstProtocol(int fd, const FeatureRequestHeader& h);
  bool AnswerSample(int fd, const std::string& peer,
                    const FeatureRequestHeader& h, Buffers* buffers);
  // Samples *ids on hooks_.workers under `peer` and waits for the answer,
  // at most the I/O timeout for a worker to take it.
  absl::Status SampleOnWorkers(const std::string& peer, const SampleHeader& p,
                               const SampleLimits& limits,
                               std::vector<NodeId>* ids, SampledNeighbors* out);
  absl::Status CheckEmbeddingFraming(const char* what,
                                     const FeatureRequestHeader& h,
                                     uint32_t table_bytes,
                                     uint32_t run_id_bytes,
                                     uint32_t secret_bytes) const;
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Shuts down the connection idle longest (at least
  // limits_.min_idle_to_evict) between requests; false if there is none.
  bool EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<const ShardStore> store_;
  FeaturePortLimits limits_;
  FeaturePortHooks hooks_;
  std::string auth_token_;
  std::unique_ptr<EmbeddingBuffers> embedding_buffers_;
  std::unique_ptr<Listener> listener_;
  int port_ = 0;
  absl::Mutex mu_;
  std::list<Connection> connections_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
};

// Fetches rows from one server's feature port over a small pool of
// connections (one per concurrent caller). Thread-safe.
class FeaturePortClient {
 public:
  // `host` is the server's host as the client reaches its gRPC port. With a
  // non-empty `auth_token` every new connection first passes the
  // challenge-response above (and checks the server's proof).
  FeaturePortClient(std::string host, int port, std::string auth_token = {});
  ~FeaturePortClient();
  FeaturePortClient(const FeaturePortClient&) = delete;
  FeaturePortClient& operator=(const FeaturePortClient&) = delete;

  int port() const { return port_; }

  // Writes the row of ids[i] to out + (rows ? rows[i] : i) * feature_dim.
  // A broken pooled connection is retried once on a new one.
  // Errors carry the server's code and message, DEADLINE_EXCEEDED when
  // `deadline` passes, DATA_LOSS when the rows are not `feature_dim`
  // wide, and UNAUTHENTICATED when the handshake fails (either side's token
  // missing or different). Sets *transport_failed (and returns UNAVAILABLE)
  // when the port could not be reached or the connection broke: the caller may
  // then fetch the rows another way.
  absl::Status Fetch(absl::Span<const NodeId> ids, int64_t feature_dim,
                     float* out, const size_t* rows, absl::Time deadline,
                     bool* transport_failed);

  // An embedding pull: writes the row of table `table` (of run `run_id`,
  // whose secret is `run_secret`; `dim` wide) of ids[i] to
  // out + (rows ? rows[i] : i) * dim, as GraphStoreClient::PullEmbeddings.
  // `max_wait` > 0 bounds the server's wait for the step clock
  // (FAILED_PRECONDITION when not reached). Errors and *transport_failed as for
  // Fetch; a server that does not serve pulls here is UNIMPLEMENTED with
  // *transport_failed set.
  struct PullSpec {
    std::string table, run_id, run_secret;
    int64_t dim = 0;
    int64_t step = 0;
    int staleness = 0;
    absl::Duration max_wait;
  };
  absl::Status Pull(const PullSpec& spec, absl::Span<const NodeId> ids,
                    float* out, const size_t* rows, absl::Time deadline,
                    bool* transport_failed);

  // An embedding push: trainer `trainer`'s gradients of `step` for `ids`
  // (row-major, gradients.size() / ids.size() wide) to table `table` of run
  // `run_id` (whose secret is `run_secret`), as
  // GraphStoreClient::PushEmbeddingGradients. Pushes are
  // idempotent per trainer and step (the table acknowledges a repeat without
  // applying it), so a broken pooled connection is retried like a fetch.
  // Errors and *transport_failed as for Pull.
  struct PushSpec {
    std::string table, run_id, run_secret;
    int trainer = 0;
    int64_t step = 0;
  };
  absl::Status Push(const PushSpec& spec, absl::Span<const NodeId> ids,
                    absl::Span<const float> gradients, absl::Time deadline,
                    bool* transport_failed);

  // A sample, as GraphStoreClient::SampleNeighbors: a count per ID into
  // out->counts and the neighbors into out->neighbors (their capacity
  // reused), at most `max_neighbors` of them (a larger answer is DATA_LOSS).
  // The caller checks the counts against the neighbors (CheckSample).
  // Errors and *transport_failed as for Pull.
  absl::Status Sample(absl::Span<const NodeId> ids, int fanout, bool replace,
                      uint64_t seed, int64_t max_neighbors,
                      SampledNeighbors* out, absl::Time deadline,
                      bool* transport_failed);

 private:
  // What a request sends besides its header and IDs: the header's magic,
  // the bytes between the header and the IDs, and the bytes after the IDs.
  struct Prefix {
    uint32_t magic = kFeatureRequestMagic;
    std::string extra;
    absl::Span<const char> trailer;
  };
  // Where an answer's payload goes: `count` pieces of `piece_bytes` each,
  // piece i to out + (places ? places[i] : i) * piece_bytes. Rows of floats
  // unless `rows` is false (a push's answer).
  struct Destination {
    char* out = nullptr;
    const size_t* places = nullptr;
    size_t count = 0;
    size_t piece_bytes = 0;
    bool rows = true;
    // A sample's answer instead: `count` counts, then up to max_neighbors.
    SampledNeighbors* sampled = nullptr;
    uint64_t max_neighbors = 0;
  };
  // Sends one request (retrying once on a new connection if a pooled one
  // turns out broken) and reads its answer into `to`.
  absl::Status Request(const Prefix& prefix, absl::Span<const NodeId> ids,
                       const Destination& to, absl::Time deadline,
                       bool* transport_failed);
  absl::Status RequestOnce(const Prefix& prefix, absl::Span<const NodeId> ids,
                           const Destination& to, absl::Time deadline,
                           bool pooled, bool* reused, bool* transport_failed);
  // An idle connection (*reused) if `pooled` and there is one, else a new
  // one.
  absl::StatusOr<int> Acquire(absl::Time deadline, bool pooled, bool* reused);
  // The client's side of the handshake on a new connection.
  absl::Status Handshake(int fd, absl::Time deadline);
  void Release(int fd);

  std::string host_;
  int port_;
  std::string auth_token_;
  absl::Mutex mu_;
  bool resolved_ ABSL_GUARDED_BY(mu_) = false;
  sockaddr_storage addr_ ABSL_GUARDED_BY(mu_){};
  socklen_t addr_len_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_FEATURE_PORT_H_
