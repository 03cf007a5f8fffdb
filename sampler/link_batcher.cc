#include "sampler/link_batcher.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"

namespace shardgnn {
namespace {

constexpr uint64_t kNegativeStream = 0x6e6567;  // "neg"

}  // namespace

const char* NegativeSamplingName(NegativeSampling sampling) {
  return sampling == NegativeSampling::kDegree ? "degree" : "uniform";
}

absl::StatusOr<NegativeSampling> ParseNegativeSampling(
    const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "uniform") return NegativeSampling::kUniform;
  if (lower == "degree") return NegativeSampling::kDegree;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown negative sampling '", name, "' (expected uniform or degree)"));
}

absl::StatusOr<std::unique_ptr<NegativeSampler>> NegativeSampler::Create(
    const GraphSource& source, NegativeSampling sampling,
    absl::Span<const NodeId> known_edges, bool filter) {
  const int64_t n = source.num_nodes();
  if (n < 2) {
    return absl::InvalidArgumentError(
        "negative sampling needs a graph of at least two nodes");
  }
  RETURN_IF_ERROR(CheckPairs(known_edges, n, "known edges"));
  std::unique_ptr<NegativeSampler> s(new NegativeSampler());
  s->num_nodes_ = n;
  s->sampling_ = sampling;
  if (sampling == NegativeSampling::kDegree) {
    // In chunks, so that no call is larger than a sampling batch.
    constexpr int64_t kChunk = 1 << 16;
    s->cdf_.resize(static_cast<size_t>(n));
    std::vector<NodeId> ids;
    std::vector<int64_t> degrees;
    double total = 0;
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t end = std::min(n, begin + kChunk);
      ids.resize(static_cast<size_t>(end - begin));
      degrees.resize(ids.size());
      for (int64_t v = begin; v < end; ++v) ids[v - begin] = v;
      RETURN_IF_ERROR(source.FetchDegrees(ids, degrees.data()));
      for (int64_t v = begin; v < end; ++v) {
        total += std::pow(static_cast<double>(std::max<int64_t>(
                              0, degrees[static_cast<size_t>(v - begin)])),
                          0.75);
        s->cdf_[static_cast<size_t>(v)] = total;
      }
    }
    if (!(total > 0)) {
      return absl::InvalidArgumentError(
          "degree-based negative sampling on a graph without edges");
    }
  }
  s->filter_ = filter;
  if (filter) {
    s->known_.reserve(known_edges.size());
    for (size_t i = 0; i + 1 < known_edges.size(); i += 2) {
      s->known_.insert({known_edges[i], known_edges[i + 1]});
      s->known_.insert({known_edges[i + 1], known_edges[i]});
    }
  }
  return s;
}

NodeId NegativeSampler::DrawOne(uint64_t* state) const {
  if (sampling_ == NegativeSampling::kUniform) {
    return static_cast<NodeId>(
        UniformBelow(state, static_cast<uint64_t>(num_nodes_)));
  }
  // The first node whose cumulative weight exceeds a uniform draw in
  // [0, total).
  const double r =
      static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53 * cdf_.back();
  auto it = std::upper_bound(cdf_.begin(), cdf_.end(), r);
  if (it == cdf_.end()) --it;
  return static_cast<NodeId>(it - cdf_.begin());
}

absl::StatusOr<NodeId> NegativeSampler::Draw(NodeId u, uint64_t* state,
                                             int max_draws) const {
  if (!filter_) return DrawOne(state);
  for (int k = 0; k < max_draws; ++k) {
    const NodeId w = DrawOne(state);
    if (w != u && !known_.contains({u, w})) return w;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "no negative found for node ", u, " in ", max_draws,
      " draws: every draw was one of its edges (the graph is too dense for "
      "filtered negatives)"));
}

absl::Status CheckPairs(absl::Span<const NodeId> pairs, int64_t num_nodes,
                        const std::string& what) {
  if (pairs.size() % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": an odd number of IDs (", pairs.size(),
                     "), not a list of node pairs"));
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i] < 0 || pairs[i] >= num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": pair ", i / 2, " names node ", pairs[i],
                       ", outside the graph's ", num_nodes, " nodes"));
    }
  }
  return absl::OkStatus();
}

absl::Status SamplePairs(const NeighborSampler& sampler,
                         absl::Span<const NodeId> pairs,
                         absl::Span<const float> labels, uint64_t batch_seed,
                         const ExcludedEdges* exclude, MiniBatch* out) {
  if (pairs.size() != 2 * labels.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("link batch: ", pairs.size() / 2, " pairs but ",
                     labels.size(), " labels"));
  }
  // The distinct endpoints, in first-appearance order, become the seeds.
  absl::flat_hash_map<NodeId, int64_t> local;
  local.reserve(pairs.size());
  std::vector<NodeId> seeds;
  seeds.reserve(pairs.size());
  const size_t n = labels.size();
  out->pair_src.resize(n);
  out->pair_dst.resize(n);
  auto index = [&](NodeId v) {
    auto [it, inserted] =
        local.try_emplace(v, static_cast<int64_t>(seeds.size()));
    if (inserted) seeds.push_back(v);
    return it->second;
  };
  for (size_t i = 0; i < n; ++i) {
    out->pair_src[i] = index(pairs[2 * i]);
    out->pair_dst[i] = index(pairs[2 * i + 1]);
  }
  RETURN_IF_ERROR(sampler.Sample(seeds, batch_seed, out, exclude));
  // (Sample overwrites the batch but leaves the pair fields alone.)
  out->pair_labels.assign(labels.begin(), labels.end());
  return absl::OkStatus();
}

LinkBatcher::LinkBatcher(const NeighborSampler* sampler,
                         absl::Span<const NodeId> edges,
                         const NegativeSampler* negatives,
                         LinkBatchOptions options)
    : sampler_(sampler),
      edges_(edges),
      negatives_(negatives),
      options_(options) {}

absl::Status LinkBatcher::Make(absl::Span<const int64_t> items,
                               uint64_t batch_seed, MiniBatch* out) const {
  const int64_t num_edges = static_cast<int64_t>(edges_.size() / 2);
  const int k = std::max(0, options_.negatives);
  if (k > 0 && negatives_ == nullptr)
    return absl::InvalidArgumentError("link batch: no negative sampler");
  std::vector<NodeId> pairs;
  std::vector<float> labels;
  pairs.reserve(2 * items.size() * static_cast<size_t>(1 + k));
  labels.reserve(items.size() * static_cast<size_t>(1 + k));
  ExcludedEdges exclude;
  if (options_.exclude_targets) exclude.reserve(2 * items.size());
  for (int64_t e : items) {
    if (e < 0 || e >= num_edges) {
      return absl::InvalidArgumentError(absl::StrCat(
          "link batch: edge index ", e, " outside [0, ", num_edges, ")"));
    }
    const NodeId u = edges_[static_cast<size_t>(2 * e)];
    const NodeId v = edges_[static_cast<size_t>(2 * e + 1)];
    pairs.push_back(u);
    pairs.push_back(v);
    labels.push_back(1.0f);
    if (options_.exclude_targets) {
      exclude.insert({u, v});
      exclude.insert({v, u});
    }
  }
  const uint64_t negative_seed = MixSeed(batch_seed, kNegativeStream);
  for (size_t i = 0; i < items.size(); ++i) {
    const NodeId u = pairs[2 * i];
    for (int j = 0; j < k; ++j) {
      uint64_t state = MixSeed(negative_seed, static_cast<uint64_t>(i * k + j));
      ASSIGN_OR_RETURN(NodeId w, negatives_->Draw(u, &state));
      pairs.push_back(u);
      pairs.push_back(w);
      labels.push_back(0.0f);
    }
  }
  return SamplePairs(*sampler_, pairs, labels, batch_seed,
                     options_.exclude_targets ? &exclude : nullptr, out);
}

}  // namespace shardgnn
