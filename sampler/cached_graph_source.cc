#include "sampler/cached_graph_source.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "common/sampling.h"
#include "common/status.h"

namespace shardgnn {

absl::Status CachedGraphSource::FetchFeatures(absl::Span<const NodeId> nodes,
                                              float* out) const {
  std::vector<size_t> missing;
  cache_->Lookup(nodes, out, &missing);
  if (missing.empty()) return absl::OkStatus();
  std::vector<NodeId> missing_ids(missing.size());
  for (size_t i = 0; i < missing.size(); ++i)
    missing_ids[i] = nodes[missing[i]];
  // The inner source places each missed row straight at its position.
  RETURN_IF_ERROR(inner_->FetchFeaturesInto(missing_ids, missing, out));
  cache_->Insert(missing_ids, out, missing);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeId>> HottestByPresampling(
    const NeighborSampler& sampler, absl::Span<const NodeId> seeds,
    int num_batches, int64_t batch_size, uint64_t seed) {
  absl::flat_hash_map<NodeId, int64_t> counts;
  std::vector<NodeId> order(seeds.begin(), seeds.end());
  uint64_t state = seed;
  MiniBatch batch;
  size_t next = order.size();  // Reshuffle before the first batch.
  for (int b = 0; b < num_batches && !order.empty(); ++b) {
    if (next + static_cast<size_t>(batch_size) > order.size()) {
      for (size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[UniformBelow(&state, i)]);
      next = 0;
    }
    size_t n = std::min(order.size() - next, static_cast<size_t>(batch_size));
    absl::Status s = sampler.Sample(absl::MakeConstSpan(order).subspan(next, n),
                                    MixSeed(seed, b), &batch);
    if (!s.ok()) return s;
    next += n;
    for (NodeId v : batch.input_nodes) ++counts[v];
  }
  std::vector<std::pair<NodeId, int64_t>> ranked(counts.begin(), counts.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<NodeId> hottest(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) hottest[i] = ranked[i].first;
  return hottest;
}

std::vector<NodeId> HottestByDegree(absl::Span<const int64_t> degrees,
                                    NodeId first_id) {
  std::vector<NodeId> ids(degrees.size());
  std::iota(ids.begin(), ids.end(), first_id);
  std::stable_sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
    return degrees[a - first_id] > degrees[b - first_id];
  });
  return ids;
}

absl::Status PrefillCache(const GraphSource& source,
                          absl::Span<const NodeId> hottest,
                          FeatureCache* cache) {
  const int64_t dim = source.feature_dim();
  // A little more than the capacity: shards that fill first skip rows, the rest
  // still get theirs.
  const auto capacity = static_cast<size_t>(cache->stats().capacity_rows);
  const auto take =
      std::min<size_t>(hottest.size(), capacity + capacity / 8 + 64);
  std::vector<float> rows(take * static_cast<size_t>(dim));
  constexpr size_t kChunk = 65536;
  for (size_t start = 0; start < take; start += kChunk) {
    size_t n = std::min(kChunk, take - start);
    absl::Status s = source.FetchFeatures(hottest.subspan(start, n),
                                          rows.data() + start * dim);
    if (!s.ok()) return s;
  }
  return cache->Prefill(hottest.subspan(0, take), rows.data());
}

}  // namespace shardgnn
