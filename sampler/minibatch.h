// What a sampler produces and a trainer consumes: a minibatch of seed nodes
// with their sampled multi-hop neighborhood as message-flow blocks, plus input
// features and seed labels. Plain arrays only; turning them into tensors is the
// trainer's business.
#ifndef SHARDGNN_SAMPLER_MINIBATCH_H_
#define SHARDGNN_SAMPLER_MINIBATCH_H_

#include <cstdint>
#include <vector>

#include "common/large_buffer.h"
#include "common/types.h"

namespace shardgnn {

// One layer of message flow: a bipartite graph from `num_src` source nodes to
// `num_dst` destination nodes. Destinations are the first `num_dst` sources
// (same local index), so a layer can combine a node's own state with its
// neighbors'. Edges are stored CSR by destination: destination i aggregates
// from the local source indices indices[indptr[i] .. indptr[i+1]).
struct Block {
  int64_t num_src = 0;
  int64_t num_dst = 0;
  // From the block cache in the trainer, as MiniBatch::features.
  Int64Buffer indptr;   // num_dst + 1
  Int64Buffer indices;  // local source indices, each < num_src
  // Typed graphs: each edge's relation (an index into GraphSchema::
  // edge_types), aligned with indices; empty for untyped graphs.
  std::vector<int32_t> relations;
  // SamplerOptions::fetch_edge_features: each edge's features, row k for
  // edge k (indices[k]), edge_feature_dim wide; empty otherwise.
  int64_t edge_feature_dim = 0;
  std::vector<float> edge_features;

  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
};

struct MiniBatch {
  // Global IDs of the nodes whose labels are predicted; they are also the first
  // seeds.size() input nodes.
  std::vector<NodeId> seeds;
  // Global IDs of blocks.front()'s sources, in local-index order. Every block's
  // sources are a prefix of it.
  Int64Buffer input_nodes;
  // blocks.front() consumes the input features; blocks.back() has destinations
  // == seeds.
  std::vector<Block> blocks;
  int64_t feature_dim = 0;
  // input_nodes.size() x feature_dim, row-major; in the trainer, from the
  // block cache LibTorch's tensors use (common/large_buffer.h).
  FloatBuffer features;
  // One per seed (-1 = unlabeled); for a multi-label graph a row per seed
  // (GraphSource::label_columns()).
  std::vector<int64_t> labels;
  // Typed graphs (feature_dim 0, `features` empty): each input node's type,
  // and per node type t the local indices of the input nodes of type t
  // (ascending) and their feature rows in that order (type_inputs[t].size()
  // x F_t; empty for a type without features).
  std::vector<int32_t> input_types;
  std::vector<std::vector<int64_t>> type_inputs;
  std::vector<std::vector<float>> type_features;
  // Each input node's degree in the whole graph (SamplerOptions::fetch_degrees;
  // empty otherwise).
  std::vector<int64_t> degrees;
  // Link prediction (sampler/link_batcher.h): the node pairs scored, as local
  // indices of seeds, and each pair's target (1: an edge, 0: a negative).
  std::vector<int64_t> pair_src, pair_dst;
  std::vector<float> pair_labels;
  double fetch_seconds =
      0;  // Time spent fetching `features` (for timing splits).
};

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_MINIBATCH_H_
