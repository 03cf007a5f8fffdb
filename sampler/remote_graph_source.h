// A GraphSource over the storage servers: the distributed sampler's data path.
//
// Every batched call groups its node IDs by owning part (PartitionBook), sends
// one request per part to that part's server, all parts concurrently, and
// merges the answers back into request order. Because servers sample with the
// shared kernel (common/sampling.h), keyed by (seed, node), the result is
// identical to an InMemoryGraphSource over the same relabelled graph. Errors
// name the server that failed. Thread-safe: the clients are, and per-call state
// lives on the caller's stack (a hedged call's, in its attempts). Features of
// servers on the same machine are read from their shared memory
// (RemoteGraphSourceOptions::use_shared_memory).
//
// A part may have several servers (replicas, each with its own copy of the
// part's directory): a request goes to a live one and fails over to another
// when one dies or falls silent (sampler/internal/replica_set.h); results do
// not change, since every replica answers alike. With hedging on
// (RemoteGraphSourceOptions::hedge_after or hedge_adaptive), a call to a part
// with two live replicas or more that has not answered after the hedge delay
// is also sent to another replica, and the first answer is used. A hedged
// call's attempts each fill a buffer of their own (features: rows of their
// own, scattered into place once the winner is known; IDs: a copy the
// attempts share), since the loser may run on after the call returned;
// without hedging, rows still go straight from the received buffer to their
// place. Destroying the source waits for hedged attempts still running (at
// most a call deadline).
#ifndef SHARDGNN_SAMPLER_REMOTE_GRAPH_SOURCE_H_
#define SHARDGNN_SAMPLER_REMOTE_GRAPH_SOURCE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/buffers.h"
#include "common/shared_memory.h"
#include "common/worker_threads.h"
#include "graphstore/client.h"
#include "partition/partition_book.h"
#include "sampler/graph_source.h"
#include "sampler/internal/owner_groups.h"
#include "sampler/internal/replica_set.h"

namespace shardgnn {

struct RemoteGraphSourceOptions {
  GraphStoreClientOptions client;
  // How long Connect() waits for the servers to answer Health and Info.
  absl::Duration connect_timeout = absl::Seconds(30);
  // Once every part has a server that answered, how much longer Connect()
  // waits for the others (a replica on a host that died, or is still
  // starting) before it starts without them (RemoteGraphSource::unreached()).
  absl::Duration spare_replica_wait = absl::Seconds(10);
  // When every replica of a part is down, how long a call waits for one to
  // come back before it fails naming the part and each replica's last error
  // (zero: fail at once; a single server's error is then returned as it is).
  absl::Duration server_wait = absl::ZeroDuration();
  // How often a down replica is probed (Health, then Info) to let it rejoin.
  absl::Duration probe_interval = absl::Milliseconds(500);
  // Hedged requests (zero: off): a call that has not answered after
  // hedge_after goes also to another live replica of its part, and whichever
  // answers first is used. With hedge_adaptive the delay is each part's p95
  // call latency, at least hedge_floor (internal::ReplicaSetOptions).
  absl::Duration hedge_after = absl::ZeroDuration();
  bool hedge_adaptive = false;
  absl::Duration hedge_floor = absl::Milliseconds(5);
  // If set, every server must report this partition_id (the run's
  // partition.json), or Connect() fails.
  std::string expected_partition_id;
  // Read the features of a server on this machine that offers its feature
  // matrix in shared memory (memory mode; ShardStore::SharedFeatures) by
  // mapping it, instead of calling GetFeatures: no copy through the server,
  // gRPC and the socket. Sampling and labels still go through the server, so
  // a dead server is still noticed on the next batch. A region that cannot be
  // mapped or fails its checks (common/shared_memory.h: sealed against
  // writes and resizing, the expected token and size; a header that matches
  // the shard) falls back to calls, with a line on stderr saying why.
  bool use_shared_memory = true;
  // SampleNeighbors answers asked of one server in one call, at most: a
  // part's IDs are sent in chunks of at most max_ids_per_call IDs and, for a
  // known fanout, at most max_sampled_per_call / fanout IDs. Both match the
  // servers' defaults (serve --max-sampled-per-call, 1M IDs per call). A
  // server with a lower cap, or fanout -1 (all neighbors, a size unknown in
  // advance), answers RESOURCE_EXHAUSTED naming the limit: the chunk is then
  // split in halves and retried, down to one node. Results are the same as
  // one call's (a node's sample depends only on the seed and the node).
  int64_t max_sampled_per_call = int64_t{8} << 20;
  // Also bounds the IDs of every features, labels and degrees call (a larger
  // request is sent in chunks; feature chunks also stay within half the
  // client's max_message_bytes), as serve's cap on IDs per call requires.
  int64_t max_ids_per_call = int64_t{1} << 20;
};

// Remote traffic counters (all servers).
struct RemoteStats {
  int64_t requests = 0;
  int64_t ids_sent = 0;
  int64_t neighbor_bytes = 0;
  int64_t feature_bytes = 0;  // Received in GetFeatures answers.
  // Read from servers' shared feature matrices (no call, no network).
  int64_t shared_feature_bytes = 0;
  // Calls that failed on one replica and were answered by another.
  int64_t failovers = 0;
  // Second copies sent by hedged calls, and how many of them answered first.
  int64_t hedges_sent = 0;
  int64_t hedges_won = 0;
};

class RemoteGraphSource : public GraphSource {
 public:
  // Connects to every address (HOST:PORT, in any order), all at once, waits
  // until each is healthy, asks each which part it serves, and checks that
  // together they
  // cover parts 0..K-1 of one partition (each part at least once; several
  // servers of one part are its replicas, and must report the same node
  // range and content checksum), with the same partition_id (and
  // options.expected_partition_id if set), the same graph (num_nodes_total,
  // feature_dim, num_classes) and node ranges that tile [0,
  // num_nodes_total). Errors name the address; answers that contradict each
  // other are DATA_LOSS, replicas that differ FAILED_PRECONDITION. Every
  // later answer is checked by the clients (GraphStoreClient) before it is
  // merged.
  //
  // A server that does not answer (UNAVAILABLE or DEADLINE_EXCEEDED: dead,
  // unreachable, still loading) within options.connect_timeout, or within
  // options.spare_replica_wait once every part has a server that answered,
  // is left out when the others cover every part: a line on stderr names it,
  // and unreached() lists it until it joins. It is probed in the background
  // every options.probe_interval (gRPC's health check, then Info); once it
  // serves a part of this partition with the shard that part's replicas
  // hold, it joins that part as one more replica (a line on stderr;
  // ReplicaSet::Join), used by calls from then on; the learned tables'
  // copies never include it (ForEachOwner). One that answers with another
  // partition or shard is a warning line, and stays out (probed still: it may
  // be restarted with the right one). A replica that answered and then died
  // rejoins likewise (sampler/internal/replica_set.h). When a part has no
  // server that answered, Connect fails with the first unanswered server's
  // error.
  static absl::StatusOr<std::unique_ptr<RemoteGraphSource>> Connect(
      const std::vector<std::string>& addresses,
      const RemoteGraphSourceOptions& options = {});
  // Stops probing the servers left out at Connect (at most a probe: a health
  // check of a second and an Info call).
  ~RemoteGraphSource() override;

  int64_t num_nodes() const override { return book_.num_nodes(); }
  int64_t feature_dim() const override { return feature_dim_; }
  int64_t num_classes() const { return num_classes_; }
  const PartitionBook& book() const { return book_; }
  const std::string& partition_id() const { return partition_id_; }
  // The addresses serving part p, comma-separated.
  std::string address(int part) const;
  // Part p's replicas: addresses, up or down, calls, failures, last errors.
  std::vector<internal::ReplicaState> replicas(int part) const;

  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override;
  absl::Status FetchFeatures(absl::Span<const NodeId> nodes,
                             float* out) const override;
  absl::Status FetchLabels(absl::Span<const NodeId> nodes,
                           int64_t* out) const override;
  absl::Status FetchDegrees(absl::Span<const NodeId> nodes,
                            int64_t* out) const override;
  // Typed partitions (the servers' shards name node types): the schema from
  // the parts' type ranges (GraphSchema::FromParts), per-relation sampling
  // and per-type features over gRPC (neither shared memory nor the feature
  // port carries typed rows yet). Every sampled neighbor is checked to be of
  // its relation's source type (DATA_LOSS naming the server otherwise).
  const GraphSchema* schema() const override { return schema_.get(); }
  int64_t label_columns() const override { return label_columns_; }
  absl::Status SampleTypedNeighbors(absl::Span<const NodeId> nodes,
                                    absl::Span<const int> fanouts, bool replace,
                                    uint64_t seed,
                                    SampledNeighbors* out) const override;
  absl::Status FetchTypeFeatures(int type, absl::Span<const NodeId> nodes,
                                 float* out) const override;

  // The owned nodes of `split` over all parts (sorted by part, then ID).
  absl::StatusOr<std::vector<NodeId>> FetchSplit(
      const std::string& split) const;
  // Out-degree of every node, in ID order (for choosing what a static cache
  // holds).
  absl::StatusOr<std::vector<int64_t>> FetchAllDegrees() const;

  RemoteStats stats() const;

  // Learnable rows (sampler/embedding_rows.h): runs fn(part, replica,
  // server, ids, positions) for every part owning some of `nodes` (with
  // `all_parts`, for every part, with no IDs for parts owning none),
  // concurrently, each on a live server of its part (ReplicaSet::Run), never
  // on a replica flagged in `skip` ([part][replica], if given), nor on one
  // past the end of its part's mask (it joined after the mask was made: a
  // learned table's masks start as initial_replicas() long); `replica` is the
  // server's index among its part's replicas, `positions` the IDs' indices in
  // `nodes`. Returns the first error. INVALID_ARGUMENT for a node outside the
  // graph.
  using OwnerCall = std::function<absl::Status(
      int part, int replica, GraphStoreClient& server,
      absl::Span<const NodeId> ids, absl::Span<const size_t> positions)>;
  using ReplicaMask = std::vector<std::vector<bool>>;
  absl::Status ForEachOwner(absl::Span<const NodeId> nodes, bool all_parts,
                            const OwnerCall& fn,
                            const ReplicaMask* skip = nullptr) const;
  // As ForEachOwner with all_parts, but fn runs on every replica of each part
  // not flagged in `skip` (parts concurrently, a part's replicas one after
  // another), not on one live server: the writes every copy of a learned
  // table must see (creates, pushes, snapshots, restores). Returns the first
  // error (GraphStoreClient errors name the replica's address), which ends
  // its part's round; a replica that is down fails the call, it is not
  // skipped.
  absl::Status ForEachReplica(absl::Span<const NodeId> nodes,
                              const OwnerCall& fn,
                              const ReplicaMask* skip = nullptr) const;
  // Servers of part p (its replicas), those that joined since Connect too.
  int num_replicas(int part) const {
    return static_cast<int>(parts_[static_cast<size_t>(part)]->size());
  }
  // Servers of part p when Connect returned: replicas [0, this) of the part.
  int initial_replicas(int part) const {
    return static_cast<int>(parts_[static_cast<size_t>(part)]->initial_size());
  }
  // The mask of every part's replicas at Connect, none flagged (a learned
  // table's copies: ForEachOwner, ForEachReplica).
  ReplicaMask InitialReplicas() const;

  // The servers Connect() left out that have not joined since: no answer
  // while others covered every part, or an answer naming another partition
  // or shard (address, last error), in the order given.
  std::vector<std::pair<std::string, std::string>> unreached() const;

  // Whether part p's features are read through shared memory.
  bool reads_shared_memory(int part) const {
    return shared_[static_cast<size_t>(part)] != nullptr;
  }
  // Whether part p's features are fetched over its server's feature port
  // (GraphStoreClient::UsesFeaturePort) rather than gRPC.
  bool uses_feature_port(int part) const;

 private:
  // Node positions grouped by owning part (sampler/internal/owner_groups.h).
  // Each call groups into its thread's kept grouping
  // (internal::ThreadOwnerGroups).
  using Groups = internal::OwnerGroups;
  RemoteGraphSource(PartitionBook book,
                    std::vector<std::unique_ptr<internal::ReplicaSet>> parts,
                    std::vector<std::unique_ptr<SharedRegion>> shared,
                    int64_t feature_dim, int64_t num_classes,
                    std::string partition_id,
                    const RemoteGraphSourceOptions& options);
  // Groups `nodes` by owner into *groups (reusing its lists' memory);
  // INVALID_ARGUMENT naming a node outside the graph.
  absl::Status Group(absl::Span<const NodeId> nodes, Groups* groups) const;
  // Part p's sample of `ids` (all owned by p) into *out, in as many calls as
  // the bounds and the server's refusals require (see
  // RemoteGraphSourceOptions::max_sampled_per_call).
  absl::Status SamplePart(int p, absl::Span<const NodeId> ids, int fanout,
                          bool replace, uint64_t seed,
                          SampledNeighbors* out) const;
  // One call for `ids`, appended to *out; an answer refused for its size is
  // asked for again in halves (RESOURCE_EXHAUSTED naming the node when one
  // node alone is too many). Counts the calls made in *calls.
  absl::Status SampleChunk(int p, absl::Span<const NodeId> ids, int fanout,
                           bool replace, uint64_t seed, SampledNeighbors* out,
                           int64_t* calls) const;
  // Rows are scattered once, from the received gRPC buffer (or the shared
  // mapping) straight to their place.
  absl::Status ScatterFeatures(absl::Span<const NodeId> nodes,
                               absl::Span<const size_t> rows,
                               float* out) const override;
  // FetchLabels and FetchDegrees: `columns` int64 per node from `call` on
  // each owner; a value below min_value is DATA_LOSS naming the server.
  absl::Status FetchPerNode(
      absl::Span<const NodeId> nodes, const char* what, int64_t min_value,
      absl::StatusOr<std::vector<int64_t>> (GraphStoreClient::*call)(
          absl::Span<const NodeId>),
      int64_t columns, int64_t* out) const;
  // SampleTypedNeighbors of part p's `ids`, in chunks of at most
  // max_ids_per_call_, appended to *out.
  absl::Status SampleTypedPart(int p, absl::Span<const NodeId> ids,
                               absl::Span<const int> fanouts, bool replace,
                               uint64_t seed, SampledNeighbors* out) const;
  // FetchFeatures (rows empty: row i at i) and ScatterFeatures, in chunks of
  // at most max_feature_ids_per_call_ nodes (FetchChunk each).
  absl::Status Fetch(absl::Span<const NodeId> nodes,
                     absl::Span<const size_t> rows, float* out) const;
  absl::Status FetchChunk(absl::Span<const NodeId> nodes,
                          absl::Span<const size_t> rows, float* out) const;
  // Runs fn(part) for every part with nodes (every part if all_parts),
  // concurrently (on workers_ and the calling thread); returns the first
  // error.
  absl::Status ForEachPart(const Groups& groups,
                           const std::function<absl::Status(int)>& fn,
                           bool all_parts = false) const;

  PartitionBook book_;
  std::vector<std::unique_ptr<internal::ReplicaSet>> parts_;  // By part.
  // Mapped feature matrices of co-located servers, by part (null: use calls).
  std::vector<std::unique_ptr<SharedRegion>> shared_;
  int64_t feature_dim_;
  int64_t num_classes_;
  std::unique_ptr<GraphSchema> schema_;  // Typed partitions only.
  int64_t label_columns_ = 1;
  std::string partition_id_;
  // The servers left out at Connect, and the thread that probes them until
  // they join or the source is destroyed (RecruitLoop).
  struct LeftOut {
    std::string address;
    std::string why;  // The last error.
    // The recruiter's own (null once it joined, or was given up on).
    std::unique_ptr<GraphStoreClient> client;
    bool joined = false;  // Guarded by left_out_mu_.
  };
  // Probes each left-out server every probe_interval; joins those that serve
  // a part's shard to that part (ReplicaSet::Join).
  void RecruitLoop(absl::Duration probe_interval);
  // One probe of *server; true if it joined.
  bool TryRecruit(LeftOut* server);
  mutable std::mutex left_out_mu_;
  std::condition_variable left_out_changed_;
  std::vector<LeftOut> left_out_;  // Guarded by left_out_mu_, but clients.
  bool stop_recruiting_ = false;   // Guarded by left_out_mu_.
  std::thread recruiter_;
  int64_t max_sampled_per_call_;
  int64_t max_ids_per_call_;
  // Feature rows asked in one call: max_ids_per_call_, and half the client's
  // message limit in bytes.
  int64_t max_feature_ids_per_call_;
  mutable std::atomic<int64_t> requests_{0}, ids_sent_{0}, neighbor_bytes_{0},
      feature_bytes_{0}, shared_feature_bytes_{0};
  // Sampling answers' buffers, kept from call to call (a fresh answer of
  // megabytes per call faults in a page every 4 KiB), each call taking the
  // one that fits its most neighbors (BufferPool::TakeFitting: the last
  // layer's answers are ten times the first's); shared with the calls'
  // attempts, since a hedged call's losing attempt may end after its caller.
  std::shared_ptr<BufferPool<SampledNeighbors>> answers_ =
      std::make_shared<BufferPool<SampledNeighbors>>(64);
  // A hedged feature fetch's rows, one buffer per attempt, kept likewise
  // (each of a batch's calls would otherwise map megabytes afresh). The
  // attempts' buffers go back as Pooled (common/buffers.h), a losing
  // attempt's too.
  std::shared_ptr<BufferPool<std::vector<float>>> hedged_rows_ =
      std::make_shared<BufferPool<std::vector<float>>>(64);
  // Run the calls of a fan-out to several parts (ForEachPart, ForEachOwner,
  // ForEachReplica), kept between calls (common/worker_threads.h). Last:
  // they go first.
  mutable WorkerThreads workers_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_REMOTE_GRAPH_SOURCE_H_
