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

}  // namespace shardgnn
