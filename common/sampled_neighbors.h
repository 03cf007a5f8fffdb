// The result of batched neighbor sampling, shared by the storage servers
// (graphstore/) and the samplers (sampler/), so that both layers speak the same
// type.
#ifndef SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_
#define SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_

#include <cstdint>
#include <vector>

#include "common/large_buffer.h"
#include "common/types.h"

namespace shardgnn {

// The neighbors sampled for a list of nodes, in CSR form: the i-th node's
// neighbors (global IDs) are neighbors[offset_i .. offset_i + counts[i]) where
// offset_i is the sum of the earlier counts.
//
// Both arrays are large buffers (common/large_buffer.h): in a trainer they come
// from the block cache LibTorch's tensors use, so that the samplers' kept
// answers, grown once to the test pass's larger fanouts, take the pages of the
// blocks training left (RetireCpuCachedBlocks) instead of fresh ones; on a
// server, std::malloc.
//
// Typed graphs (GraphSource::SampleTypedNeighbors): relations[k] is the
// relation of the edge neighbors[k] -> its node; empty for untyped graphs.
struct SampledNeighbors {
  Int64Buffer counts;
  Int64Buffer neighbors;
  std::vector<int32_t> relations;
  // GraphSource::SampleNeighborsWithEdges: each neighbor's edge (the CSR entry
  // naming it: its edge-feature row); empty otherwise.
  Int64Buffer edge_ids;
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SAMPLED_NEIGHBORS_H_
