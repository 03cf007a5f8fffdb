// A SampleNeighbors request checked and answered the same way wherever it
// arrives: the gRPC method (service.cc) and the feature port
// (feature_port_server.cc).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SAMPLE_REQUEST_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SAMPLE_REQUEST_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "graphstore/shard_store.h"

namespace shardgnn::internal {

// The server's bounds on a sample (GraphStoreServerOptions).
struct SampleLimits {
  int max_fanout = 10000;
  int64_t max_sampled_per_call = int64_t{8} << 20;
  int64_t max_message_bytes = int64_t{256} << 20;
};

// Samples of fewer than this many neighbors are answered on the thread that
// received them (cheaper than a hand-off); larger ones run on the server's
// workers (work_queue.h), whose number bounds the memory and CPU that samples
// take at once, whichever path they arrive on.
inline constexpr int64_t kInlineSamples = int64_t{1} << 16;

// Whether a sample of `num_ids` IDs with `fanout` goes to the workers:
// whole neighborhoods (fanout -1), or num_ids x fanout >= kInlineSamples.
// Both paths judge by it (gRPC's SampleNeighbors parses its request first).
bool SampleIsHeavy(size_t num_ids, int fanout);
// The same for a typed sample: any relation's whole neighborhood (fanout
// -1), or num_ids x the sum of the fanouts >= kInlineSamples.
bool TypedSampleIsHeavy(size_t num_ids, absl::Span<const int> fanouts);

// Samples `ids` (owned by `store`, which checks them) into *out, which comes
// from SampleBufferPool::Shared() with room for the answer (the caller Put()s
// it back, whatever the status). INVALID_ARGUMENT for a fanout outside
// [-1, max_fanout] or an unowned ID; RESOURCE_EXHAUSTED when the answer could
// exceed max_sampled_per_call neighbors or, with its counts, the message limit
// (4 KiB kept spare), naming the limit that applies: "--max-sampled-per-call"
// or "message limit" (clients split the request on either). A sample with
// replacement is refused before any work; otherwise the store counts first.
absl::Status SampleWithinLimits(const ShardStore& store,
                                absl::Span<const NodeId> ids, int fanout,
                                bool replace, uint64_t seed,
                                const SampleLimits& limits,
                                SampledNeighbors* out);

// The same for a typed sample (ShardStore::SampleTypedNeighbors): one fanout
// per relation of the shard, each in [-1, max_fanout] (INVALID_ARGUMENT
// otherwise, and for an untyped shard). The bounds are those of
// SampleWithinLimits with the sum of the fanouts for `fanout`, and 12 bytes
// per neighbor (its ID and its relation) against the message limit.
absl::Status SampleTypedWithinLimits(const ShardStore& store,
                                     absl::Span<const NodeId> ids,
                                     absl::Span<const int> fanouts,
                                     bool replace, uint64_t seed,
                                     const SampleLimits& limits,
                                     SampledNeighbors* out);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SAMPLE_REQUEST_H_
