// The result of batched neighbor sampling, shared by the storage servers (graphstore/) and the samplers
// (sampler/), so that both layers speak the same type.
#ifndef SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_
#define SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_

#include <cstdint>
#include <vector>

#include "common/types.h"

namespace shardgnn {

// The neighbors sampled for a list of nodes, in CSR form: the i-th node's neighbors (global IDs) are
// neighbors[offset_i .. offset_i + counts[i]) where offset_i is the sum of the earlier counts.
struct SampledNeighbors {
  std::vector<int64_t> counts;
  std::vector<NodeId> neighbors;
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_
