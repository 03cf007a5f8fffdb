// The neighbor-sampling kernel shared by the storage servers (remote sampling)
// and the in-process sampler.
//
// Randomness is a pure function of (seed, node): the neighbors picked for node
// v depend only on the request's seed and v, never on which other nodes share
// the request or which server answers. That is what lets the distributed
// sampler reproduce the in-process sampler's minibatch exactly for the same
// seed.
#ifndef SHARDGNN_COMMON_SAMPLING_H_
#define SHARDGNN_COMMON_SAMPLING_H_

#include <cstdint>
#include <vector>

#include "common/large_buffer.h"
#include "common/types.h"

namespace shardgnn {

// SplitMix64 step: a fast, well-mixed 64-bit generator (Steele et al.), also
// used to derive seeds.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mixes two values into a seed (order matters).
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t state = a ^ (b * 0xd6e8feb86659fd93ULL);
  return SplitMix64(&state);
}

// Uniform integer in [0, n) from the state (Lemire's multiply-shift; bias below
// n / 2^64).
inline uint64_t UniformBelow(uint64_t* state, uint64_t n) {
  return static_cast<uint64_t>(
      (static_cast<unsigned __int128>(SplitMix64(state)) * n) >> 64);
}

// Appends the sampled neighbors of `node` to *out.
//   fanout < 0: all `degree` neighbors, in stored order.
//   without replacement: min(degree, fanout) distinct neighbors, each subset
//   equally likely. with replacement: `fanout` independent uniform draws (none
//   if degree == 0).
void SampleNeighbors(const NodeId* neighbors, int64_t degree, int fanout,
                     bool replace, uint64_t seed, NodeId node,
                     Int64Buffer* out);

// The positions SampleNeighbors picks, as first + position in the row
// (first: the row's first entry in its CSR, so that the result names CSR
// entries, e.g. to look up edge features): exactly the entries whose
// neighbors SampleNeighbors(row, degree, ...) appends, in the same order.
void SampleNeighborPositions(int64_t first, int64_t degree, int fanout,
                             bool replace, uint64_t seed, NodeId node,
                             Int64Buffer* out);

// Typed graphs: appends the sample of one row whose entries are sorted by
// relation (`relations[k]` is entry k's), relation by relation: for each run
// of relation r with fanouts[r] != 0 (r in [0, fanouts.size())), exactly
// SampleNeighbors(run, run length, fanouts[r], replace, MixSeed(seed, r),
// node), and r once per neighbor appended to *out_relations. Entries of a
// relation outside the fanouts are skipped. Returns the neighbors appended.
int64_t SampleTypedRow(const NodeId* neighbors, const int32_t* relations,
                       int64_t degree, const int* fanouts, int num_relations,
                       bool replace, uint64_t seed, NodeId node,
                       Int64Buffer* out, std::vector<int32_t>* out_relations);

// The number of neighbors SampleNeighbors appends.
inline int64_t SampledCount(int64_t degree, int fanout, bool replace) {
  if (fanout < 0) return degree;
  if (replace) return degree == 0 ? 0 : fanout;
  return degree < fanout ? degree : fanout;
}

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SAMPLING_H_
