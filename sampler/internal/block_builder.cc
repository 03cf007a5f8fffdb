#include "sampler/internal/block_builder.h"

#include "absl/strings/str_cat.h"
#include "common/buffers.h"
#include "common/status.h"

namespace shardgnn::internal {

BlockBuilder::BlockBuilder(int64_t num_nodes)
    : num_nodes_(num_nodes), dense_(num_nodes <= kDenseMapLimit) {
  if (dense_) dense_map_.assign(num_nodes, -1);
}

void BlockBuilder::Clear() {
  if (dense_) {
    for (NodeId node : nodes_) dense_map_[node] = -1;
  } else {
    hash_map_.clear();
  }
  nodes_.clear();
}

absl::Status BlockBuilder::Reset(absl::Span<const NodeId> seeds) {
  Clear();
  for (NodeId seed : seeds) {
    if (seed < 0 || seed >= num_nodes_) {
      Clear();
      return absl::InvalidArgumentError(absl::StrCat(
          "seed node ID ", seed, " is out of range [0, ", num_nodes_, ")"));
    }
    const int64_t before = static_cast<int64_t>(nodes_.size());
    if (LocalIndex(seed) != before) {
      Clear();
      return absl::InvalidArgumentError(
          absl::StrCat("seed node ", seed, " appears twice in the batch"));
    }
  }
  return absl::OkStatus();
}

inline int64_t BlockBuilder::LocalIndex(NodeId node) {
  if (dense_) {
    int32_t& slot = dense_map_[node];
    if (slot < 0) {
      slot = static_cast<int32_t>(nodes_.size());
      nodes_.push_back(node);
    }
    return slot;
  }
  auto [it, inserted] =
      hash_map_.try_emplace(node, static_cast<int64_t>(nodes_.size()));
  if (inserted) nodes_.push_back(node);
  return it->second;
}

absl::Status BlockBuilder::AddHop(absl::Span<const int64_t> counts,
                                  absl::Span<const NodeId> neighbors,
                                  Block* block) {
  const int64_t num_dst = static_cast<int64_t>(nodes_.size());
  if (static_cast<int64_t>(counts.size()) != num_dst) {
    return absl::InternalError(
        absl::StrCat("graph source returned ", counts.size(),
                     " neighbor counts for ", num_dst, " nodes"));
  }
  block->num_dst = num_dst;
  // A recycled batch's buffers, overwritten whole: grown with headroom (and
  // without copying the old contents) when a hop is larger than any before.
  ReserveWithHeadroom(&block->indptr, static_cast<size_t>(num_dst) + 1);
  ReserveWithHeadroom(&block->indices, neighbors.size());
  block->indptr.resize(num_dst + 1);
  block->indices.resize(neighbors.size());
  block->indptr[0] = 0;
  for (int64_t i = 0; i < num_dst; ++i) {
    if (counts[i] < 0 || counts[i] > static_cast<int64_t>(neighbors.size())) {
      return absl::InternalError(absl::StrCat(
          "graph source returned ", counts[i], " neighbors for node ",
          nodes_[i], " of a hop with ", neighbors.size()));
    }
    block->indptr[i + 1] = block->indptr[i] + counts[i];
  }
  if (block->indptr[num_dst] != static_cast<int64_t>(neighbors.size())) {
    return absl::InternalError(absl::StrCat(
        "graph source returned ", neighbors.size(),
        " neighbors but its counts add up to ", block->indptr[num_dst]));
  }
  for (size_t e = 0; e < neighbors.size(); ++e) {
    const NodeId node = neighbors[e];
    if (node < 0 || node >= num_nodes_) {
      return absl::InternalError(
          absl::StrCat("graph source returned neighbor ID ", node,
                       ", out of range [0, ", num_nodes_, ")"));
    }
    block->indices[e] = LocalIndex(node);
  }
  block->num_src = static_cast<int64_t>(nodes_.size());
  block->relations.clear();
  return absl::OkStatus();
}

absl::Status BlockBuilder::AddTypedHop(absl::Span<const int64_t> counts,
                                       absl::Span<const NodeId> neighbors,
                                       absl::Span<const int32_t> relations,
                                       Block* block) {
  if (relations.size() != neighbors.size()) {
    return absl::InternalError(absl::StrCat("graph source returned ",
                                            relations.size(), " relations for ",
                                            neighbors.size(), " neighbors"));
  }
  RETURN_IF_ERROR(AddHop(counts, neighbors, block));
  block->relations.assign(relations.begin(), relations.end());
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
