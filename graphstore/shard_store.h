// Read access to one shard written by ShardWriter (layout: shard_format.h).
//
// ShardStore answers the questions a storage server is asked: neighbor
// samples, feature rows, labels, degrees and split membership of the nodes
// the shard owns. It has two modes that give bit-identical answers:
//   - disk mode (default) opens the RocksDB database read-only and serves
//     every request with batched MultiGet reads through a block cache of a
//     configurable size, so a shard larger than RAM can be served;
//   - memory mode loads the whole shard into flat arrays (CSR adjacency,
//     feature matrix, labels) at Open() and verifies the stored content
//     checksum while doing so. Its feature matrix lives in a shared region
//     that trainers on the same machine map to read features without a call.
//
// Sampling calls shardgnn::SampleNeighbors (common/sampling.h) with the
// request's seed and each node's global ID, so a sample depends only on
// (seed, node) and matches the in-process sampler; typed shards are sampled
// relation by relation with shardgnn::SampleTypedRow, as the in-process
// sampler samples typed graphs.
//
// Typed shards (ShardMeta::typed()): memory mode keeps each row's relations
// beside it and one feature matrix per node type; their features are read
// with GetTypeFeatures (GetFeatures is FAILED_PRECONDITION) and are never in
// a shared region (not built yet: SharedFeatures() is nullopt). An untyped
// SampleNeighbors of a typed shard samples the whole row, every relation
// together.
//
// Thread-safe: after Open() every method is const and may be called from any
// number of threads at once.
#ifndef SHARDGNN_GRAPHSTORE_SHARD_STORE_H_
#define SHARDGNN_GRAPHSTORE_SHARD_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/shared_memory.h"
#include "common/types.h"
#include "graphstore/shard_format.h"

namespace shardgnn {

struct ShardStoreOptions {
  std::string path;  // The shard directory (a RocksDB database).
  // Load everything into memory at Open() instead of reading per request.
  bool in_memory = false;
  // RocksDB block cache shared by all column families (disk mode).
  int64_t block_cache_bytes = int64_t{256} << 20;
  // Open the database read-only (no LOG/LOCK writes, several servers may
  // share one copy). Only turn off for a shard on a writable, private copy.
  bool read_only = true;
  // Memory mode: recompute the content checksum and compare with the meta.
  bool verify_checksum = true;
  // Memory mode: keep the feature matrix in a shared region
  // (common/shared_memory.h), sealed once loaded so that no process can
  // change or truncate it, that processes on this machine may map
  // read-only; see SharedFeatures(). Falls back to private memory if the
  // kernel offers no memfd or refuses the seals.
  bool share_features = true;
};

// Disk mode's RocksDB block cache (shared by the shard's column families).
struct BlockCacheUsage {
  int64_t bytes = 0;     // Held by cached blocks now.
  int64_t capacity = 0;  // ShardStoreOptions::block_cache_bytes (>= 1 MiB).
};

class ShardStore {
 public:
  // Opens the shard at options.path. Fails with NOT_FOUND if the directory
  // does not exist or holds no database, DATA_LOSS if the database or its
  // metadata is damaged (or, in memory mode, its checksum does not match).
  static absl::StatusOr<std::unique_ptr<ShardStore>> Open(
      const ShardStoreOptions& options);
  virtual ~ShardStore() = default;
  ShardStore(const ShardStore&) = delete;
  ShardStore& operator=(const ShardStore&) = delete;

  const ShardMeta& Meta() const { return meta_; }
  bool in_memory() const { return in_memory_; }
  bool Owns(NodeId id) const {
    return id >= meta_.node_start && id < meta_.node_end;
  }
  // OK if every ID is owned; otherwise INVALID_ARGUMENT naming the first ID
  // that is not (and its position).
  absl::Status CheckOwned(absl::Span<const NodeId> ids) const;
  // OK if the shard is typed and there is one fanout per relation, and
  // every ID is owned; INVALID_ARGUMENT otherwise.
  absl::Status CheckTypedSample(absl::Span<const NodeId> ids,
                                absl::Span<const int> fanouts) const;
  // OK if the shard is typed, `type` one of its node types and every ID an
  // owned node of that type; INVALID_ARGUMENT naming the first that is not
  // (and its type) otherwise.
  absl::Status CheckOfType(int type, absl::Span<const NodeId> ids) const;

  // Samples neighbors of every node in `ids` (see common/sampling.h for
  // fanout < 0 and `replace`). Fails with INVALID_ARGUMENT for an unowned ID
  // and RESOURCE_EXHAUSTED if the answer would exceed `max_neighbors` IDs.
  virtual absl::Status SampleNeighbors(absl::Span<const NodeId> ids, int fanout,
                                       bool replace, uint64_t seed,
                                       int64_t max_neighbors,
                                       SampledNeighbors* out) const = 0;
  // Typed shards: like SampleNeighbors, relation by relation: node v's
  // sample is SampleTypedRow(v's row, its relations, fanouts)
  // (common/sampling.h); out->relations gets each neighbor's relation.
  // INVALID_ARGUMENT unless the shard is typed and fanouts.size() ==
  // meta.edge_types.size() (and for unowned IDs); RESOURCE_EXHAUSTED past
  // max_neighbors. (Not pure virtual so that stores wrapping another for
  // tests need not forward it: the base answers UNIMPLEMENTED.)
  virtual absl::Status SampleTypedNeighbors(absl::Span<const NodeId> ids,
                                            absl::Span<const int> fanouts,
                                            bool replace, uint64_t seed,
                                            int64_t max_neighbors,
                                            SampledNeighbors* out) const;
  // Writes ids.size() * feature_dim floats to `out` (row i = node ids[i])
  // with memcpy: `out` need not be aligned. FAILED_PRECONDITION for a typed
  // shard (its features are per node type: GetTypeFeatures).
  virtual absl::Status GetFeatures(absl::Span<const NodeId> ids,
                                   float* out) const = 0;
  // Typed shards: writes ids.size() * node_types[type].feature_dim floats
  // (row i = node ids[i], memcpy: `out` need not be aligned); every ID owned
  // and of node type `type` (else INVALID_ARGUMENT naming the ID and its
  // type; also for an untyped shard or a type out of range). The base
  // answers UNIMPLEMENTED, as for SampleTypedNeighbors.
  virtual absl::Status GetTypeFeatures(int type, absl::Span<const NodeId> ids,
                                       float* out) const;
  // Writes ids.size() * meta.label_columns values to `out`: a label per ID
  // (-1 = unlabeled), or for a multi-label shard a row of num_classes 0/1
  // values per ID (all -1: unlabeled).
  virtual absl::Status GetLabels(absl::Span<const NodeId> ids,
                                 int64_t* out) const = 0;
  // Writes ids.size() out-degrees to `out`.
  virtual absl::Status GetDegrees(absl::Span<const NodeId> ids,
                                  int64_t* out) const = 0;
  // The owned node IDs in split `name`, sorted. NOT_FOUND for an unknown
  // split.
  virtual absl::StatusOr<std::vector<NodeId>> GetSplit(
      absl::string_view name) const = 0;
  // Memory mode with share_features: where co-located processes find the
  // sealed feature matrix (row-major float32 [rows, feature_dim] after the
  // region header; header words: node_start, rows, feature_dim). nullopt
  // otherwise, and always for a typed shard (shared memory of per-type
  // features is not built yet).
  virtual std::optional<SharedRegionRef> SharedFeatures() const {
    return std::nullopt;
  }
  // Disk mode: the block cache's usage (a RocksDB property read, for
  // metrics). Memory mode has no block cache: zeros.
  virtual BlockCacheUsage BlockCache() const { return {}; }

 protected:
  ShardStore(ShardMeta meta, bool in_memory)
      : meta_(std::move(meta)), in_memory_(in_memory) {}

 private:
  ShardMeta meta_;
  bool in_memory_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_GRAPHSTORE_SHARD_STORE_H_
