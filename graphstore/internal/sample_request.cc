#include "graphstore/internal/sample_request.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graphstore/internal/slice_pool.h"

namespace shardgnn::internal {
namespace {

// RESOURCE_EXHAUSTED for `what` over `limit` neighbor IDs, naming the limit
// that applies (the per-call cap, or the message size).
absl::Status TooManySamples(const std::string& what, int64_t limit,
                            const SampleLimits& limits) {
  if (limit == limits.max_sampled_per_call) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " is over the limit of ", limit,
        " sampled neighbors per call (serve --max-sampled-per-call); "
        "request fewer IDs or a smaller fanout"));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s is over the %.1f MiB message limit; request fewer IDs or a "
      "smaller fanout",
      what, limits.max_message_bytes / 1048576.0));
}

}  // namespace

bool SampleIsHeavy(size_t num_ids, int fanout) {
  if (fanout < 0) return true;
  // No overflow: fewer than 2^63 / 2^31 IDs ever arrive.
  return static_cast<int64_t>(num_ids) * fanout >= kInlineSamples;
}

bool TypedSampleIsHeavy(size_t num_ids, absl::Span<const int> fanouts) {
  int64_t sum = 0;
  for (int f : fanouts) {
    if (f < 0) return true;
    sum += f;  // At most 2^31 fanouts of 2^31: no overflow.
  }
  return static_cast<int64_t>(num_ids) * sum >= kInlineSamples;
}

absl::Status SampleTypedWithinLimits(const ShardStore& store,
                                     absl::Span<const NodeId> ids,
                                     absl::Span<const int> fanouts,
                                     bool replace, uint64_t seed,
                                     const SampleLimits& limits,
                                     SampledNeighbors* out) {
  const ShardMeta& meta = store.Meta();
  if (!meta.typed()) {
    return absl::InvalidArgumentError(
        absl::StrCat("relation fanouts for shard ", meta.part_id,
                     ", which is not typed (sample it with one fanout)"));
  }
  if (fanouts.size() != meta.edge_types.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        fanouts.size(), " relation fanouts for the ", meta.edge_types.size(),
        " relations of shard ", meta.part_id, " (one per relation)"));
  }
  int64_t fanout_sum = 0;
  for (size_t r = 0; r < fanouts.size(); ++r) {
    if (fanouts[r] < -1 || fanouts[r] > limits.max_fanout) {
      return absl::InvalidArgumentError(
          absl::StrCat("fanout ", fanouts[r], " of relation ", r, " (",
                       EdgeTypeKey(meta.edge_types[r]), ") is outside [-1, ",
                       limits.max_fanout, "] (-1 means all neighbors)"));
    }
    fanout_sum += std::max(fanouts[r], 0);
  }
  // Counts are 8 bytes, neighbors 8 and their relations 4; keep 4 KiB spare.
  const int64_t message_neighbors =
      (limits.max_message_bytes - 4096 - 8 * static_cast<int64_t>(ids.size())) /
      12;
  const int64_t max_neighbors =
      std::min(message_neighbors, limits.max_sampled_per_call);
  const int64_t at_most = static_cast<int64_t>(ids.size()) * fanout_sum;
  if (replace && fanout_sum > 0 && at_most > max_neighbors) {
    return TooManySamples(
        absl::StrCat("a sample of up to ", at_most, " neighbor IDs"),
        max_neighbors, limits);
  }
  *out = SampleBufferPool::Shared().Take(static_cast<size_t>(
      std::max<int64_t>(std::min(at_most, max_neighbors), 0)));
  absl::Status s = store.SampleTypedNeighbors(ids, fanouts, replace, seed,
                                              max_neighbors, out);
  if (absl::IsResourceExhausted(s)) {
    return TooManySamples(absl::StrCat("the sample (", s.message(), ")"),
                          max_neighbors, limits);
  }
  return s;
}

absl::Status SampleWithinLimits(const ShardStore& store,
                                absl::Span<const NodeId> ids, int fanout,
                                bool replace, uint64_t seed,
                                const SampleLimits& limits,
                                SampledNeighbors* out) {
  if (fanout < -1 || fanout > limits.max_fanout) {
    return absl::InvalidArgumentError(
        absl::StrCat("fanout ", fanout, " is outside [-1, ", limits.max_fanout,
                     "] (-1 means all neighbors)"));
  }
  // Counts and neighbors are 8 bytes each; keep 4 KiB spare.
  const int64_t message_neighbors =
      (limits.max_message_bytes - 4096) / 8 - static_cast<int64_t>(ids.size());
  const int64_t max_neighbors =
      std::min(message_neighbors, limits.max_sampled_per_call);
  const int64_t at_most =
      static_cast<int64_t>(ids.size()) * std::max<int64_t>(fanout, 0);
  if (replace && fanout > 0 && at_most > max_neighbors) {
    // Refused before any work; without replace, or for fanout -1, the store
    // counts the true size first.
    return TooManySamples(
        absl::StrCat("a sample of up to ", at_most, " neighbor IDs"),
        max_neighbors, limits);
  }
  // Buffers of earlier samples: a steady stream of samples touches no fresh
  // memory (issue 17).
  *out = SampleBufferPool::Shared().Take(static_cast<size_t>(
      std::max<int64_t>(std::min(at_most, max_neighbors), 0)));
  absl::Status s =
      store.SampleNeighbors(ids, fanout, replace, seed, max_neighbors, out);
  if (absl::IsResourceExhausted(s)) {
    return TooManySamples(absl::StrCat("the sample (", s.message(), ")"),
                          max_neighbors, limits);
  }
  return s;
}

}  // namespace shardgnn::internal
