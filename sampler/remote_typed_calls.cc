// RemoteGraphSource's calls for typed graphs (sampler/remote_graph_source.h):
// samples relation by relation and features per node type.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sampler/internal/owner_groups.h"
#include "sampler/internal/remote_calls.h"
#include "sampler/internal/replica_set.h"
#include "sampler/remote_graph_source.h"

namespace shardgnn {

using internal::CallIds;
using internal::ForEachChunk;

absl::Status RemoteGraphSource::SampleTypedNeighbors(
    absl::Span<const NodeId> nodes, absl::Span<const int> fanouts, bool replace,
    uint64_t seed, SampledNeighbors* out) const {
  if (schema_ == nullptr) {
    return GraphSource::SampleTypedNeighbors(nodes, fanouts, replace, seed,
                                             out);
  }
  if (static_cast<int>(fanouts.size()) != schema_->num_relations()) {
    return absl::InvalidArgumentError(
        absl::StrCat(fanouts.size(), " fanouts for ", schema_->num_relations(),
                     " relations"));
  }
  internal::ThreadOwnerGroups groups;
  RETURN_IF_ERROR(Group(nodes, groups.get()));
  std::vector<SampledNeighbors> answers(book_.num_parts());
  RETURN_IF_ERROR(ForEachPart(*groups, [&](int p) -> absl::Status {
    return SampleTypedPart(p, groups->ids(p), fanouts, replace, seed,
                           &answers[p]);
  }));
  // Merged back into request order, as in SampleNeighbors.
  size_t total = 0;
  for (const SampledNeighbors& a : answers) total += a.neighbors.size();
  neighbor_bytes_ += static_cast<int64_t>(total * sizeof(NodeId));
  out->counts.resize(nodes.size());
  out->neighbors.resize(total);
  out->relations.resize(total);
  std::vector<size_t> next(answers.size(), 0), at(answers.size(), 0);
  size_t to = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int p = groups->owner(i);
    const int64_t count = answers[p].counts[next[p]++];
    out->counts[i] = count;
    std::copy_n(answers[p].neighbors.data() + at[p], count,
                out->neighbors.data() + to);
    std::copy_n(answers[p].relations.data() + at[p], count,
                out->relations.data() + to);
    to += static_cast<size_t>(count);
    at[p] += static_cast<size_t>(count);
  }
  return absl::OkStatus();
}

absl::Status RemoteGraphSource::SampleTypedPart(int p,
                                                absl::Span<const NodeId> ids,
                                                absl::Span<const int> fanouts,
                                                bool replace, uint64_t seed,
                                                SampledNeighbors* out) const {
  const internal::ReplicaSet& set = *parts_[p];
  const GraphSchema& schema = *schema_;
  std::vector<int> asked(fanouts.begin(), fanouts.end());
  int64_t calls = 0;
  absl::Status s = ForEachChunk(
      ids.size(), static_cast<size_t>(max_ids_per_call_),
      [&](size_t start, size_t n) -> absl::Status {
        ++calls;
        const bool hedge = set.ShouldHedge();
        auto got = set.Call<SampledNeighbors>(
            [call_ids = CallIds(ids.subspan(start, n), hedge), asked, replace,
             seed,
             &schema](GraphStoreClient& c) -> absl::StatusOr<SampledNeighbors> {
              SampledNeighbors answer;
              RETURN_IF_ERROR(c.SampleTypedNeighbors(call_ids.span, asked,
                                                     replace, seed, &answer));
              // The client checked the relations; their endpoints' types
              // need the whole schema.
              for (size_t k = 0; k < answer.neighbors.size(); ++k) {
                const int r = answer.relations[k];
                if (schema.TypeOf(answer.neighbors[k]) != schema.src_type[r]) {
                  return absl::DataLossError(absl::StrCat(
                      c.address(), ": sampled neighbor ", answer.neighbors[k],
                      " over relation ", EdgeTypeKey(schema.edge_types[r]),
                      " is not a ",
                      schema.node_types[schema.src_type[r]].name));
                }
              }
              return answer;
            },
            hedge);
        if (!got.ok()) return got.status();
        out->counts.insert(out->counts.end(), got->counts.begin(),
                           got->counts.end());
        out->neighbors.insert(out->neighbors.end(), got->neighbors.begin(),
                              got->neighbors.end());
        out->relations.insert(out->relations.end(), got->relations.begin(),
                              got->relations.end());
        return absl::OkStatus();
      });
  if (calls > 1) requests_ += calls - 1;
  return s;
}

absl::Status RemoteGraphSource::FetchTypeFeatures(
    int type, absl::Span<const NodeId> nodes, float* out) const {
  if (schema_ == nullptr)
    return GraphSource::FetchTypeFeatures(type, nodes, out);
  if (type < 0 || type >= schema_->num_node_types()) {
    return absl::InvalidArgumentError(absl::StrCat("no node type ", type));
  }
  const int64_t dim = schema_->node_types[type].feature_dim;
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(
      1, std::min<int64_t>(
             max_ids_per_call_,
             (int64_t{64} << 20) /
                 std::max<int64_t>(
                     1, dim * static_cast<int64_t>(sizeof(float))))));
  return ForEachChunk(nodes.size(), chunk, [&](size_t start, size_t n) {
    const absl::Span<const NodeId> piece = nodes.subspan(start, n);
    float* piece_out = out + start * static_cast<size_t>(dim);
    internal::ThreadOwnerGroups groups;
    RETURN_IF_ERROR(Group(piece, groups.get()));
    return ForEachPart(*groups, [&](int p) -> absl::Status {
      const absl::Span<const size_t> positions = groups->positions(p);
      const absl::Span<size_t> where = groups->where(p);
      for (size_t j = 0; j < positions.size(); ++j) where[j] = positions[j];
      absl::Status s = parts_[p]->Run([&](GraphStoreClient& c) {
        return c.GetTypeFeatures(type, groups->ids(p), dim, piece_out, where);
      });
      if (s.ok()) {
        feature_bytes_ +=
            static_cast<int64_t>(positions.size() * dim * sizeof(float));
      }
      return s;
    });
  });
}

}  // namespace shardgnn
