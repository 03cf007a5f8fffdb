#include "common/sampling.h"

#include <algorithm>
#include <unordered_set>

namespace shardgnn {

void SampleNeighbors(const NodeId* neighbors, int64_t degree, int fanout,
                     bool replace, uint64_t seed, NodeId node,
                     Int64Buffer* out) {
  if (fanout < 0 || (!replace && degree <= fanout)) {
    out->insert(out->end(), neighbors, neighbors + degree);
    return;
  }
  if (degree == 0 || fanout == 0) return;
  uint64_t state = MixSeed(seed, static_cast<uint64_t>(node));
  if (replace) {
    for (int i = 0; i < fanout; ++i) {
      out->push_back(
          neighbors[UniformBelow(&state, static_cast<uint64_t>(degree))]);
    }
    return;
  }
  // Robert Floyd's algorithm: k distinct positions out of d in k steps, every
  // k-subset equally likely.
  const int64_t k = fanout;
  if (k <= 64) {
    int64_t picked[64];
    for (int64_t j = degree - k, n = 0; j < degree; ++j, ++n) {
      auto t = static_cast<int64_t>(
          UniformBelow(&state, static_cast<uint64_t>(j + 1)));
      bool seen = std::find(picked, picked + n, t) != picked + n;
      picked[n] = seen ? j : t;
    }
    for (int64_t i = 0; i < k; ++i) out->push_back(neighbors[picked[i]]);
  } else {
    std::unordered_set<int64_t> chosen;
    chosen.reserve(static_cast<size_t>(k) * 2);
    for (int64_t j = degree - k; j < degree; ++j) {
      auto t = static_cast<int64_t>(
          UniformBelow(&state, static_cast<uint64_t>(j + 1)));
      int64_t pick = chosen.insert(t).second ? t : j;
      if (pick == j) chosen.insert(j);
      out->push_back(neighbors[pick]);
    }
  }
}

void SampleNeighborPositions(int64_t first, int64_t degree, int fanout,
                             bool replace, uint64_t seed, NodeId node,
                             Int64Buffer* out) {
  // The kernel itself over the positions 0, 1, ...: the same picks by
  // construction (a second copy of the algorithm could drift).
  thread_local std::vector<NodeId> positions;
  if (static_cast<int64_t>(positions.size()) < degree) {
    const int64_t had = static_cast<int64_t>(positions.size());
    positions.resize(static_cast<size_t>(degree));
    for (int64_t i = had; i < degree; ++i) positions[i] = i;
  }
  const size_t before = out->size();
  SampleNeighbors(positions.data(), degree, fanout, replace, seed, node, out);
  for (size_t k = before; k < out->size(); ++k) (*out)[k] += first;
}

int64_t SampleTypedRow(const NodeId* neighbors, const int32_t* relations,
                       int64_t degree, const int* fanouts, int num_relations,
                       bool replace, uint64_t seed, NodeId node,
                       Int64Buffer* out, std::vector<int32_t>* out_relations) {
  const size_t before = out->size();
  int64_t begin = 0;
  while (begin < degree) {
    const int32_t r = relations[begin];
    int64_t run = begin;
    while (run < degree && relations[run] == r) ++run;
    if (r >= 0 && r < num_relations && fanouts[r] != 0) {
      const size_t had = out->size();
      SampleNeighbors(neighbors + begin, run - begin, fanouts[r], replace,
                      MixSeed(seed, static_cast<uint64_t>(r)), node, out);
      out_relations->insert(out_relations->end(), out->size() - had, r);
    }
    begin = run;
  }
  return static_cast<int64_t>(out->size() - before);
}

}  // namespace shardgnn
