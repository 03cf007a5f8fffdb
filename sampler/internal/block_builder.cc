#include "sampler/internal/block_builder.h"

#include "absl/strings/str_cat.h"

namespace shardgnn::internal {

absl::Status BlockBuilder::Reset(absl::Span<const NodeId> seeds) {
  local_.clear();
  nodes_.clear();
  local_.reserve(seeds.size() * 16);
  for (NodeId seed : seeds) {
    if (!local_.emplace(seed, static_cast<int64_t>(nodes_.size())).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed node ", seed, " appears twice in the batch"));
    }
    nodes_.push_back(seed);
  }
  return absl::OkStatus();
}

int64_t BlockBuilder::LocalIndex(NodeId node) {
  auto [it, inserted] =
      local_.try_emplace(node, static_cast<int64_t>(nodes_.size()));
  if (inserted) nodes_.push_back(node);
  return it->second;
}

void BlockBuilder::AddHop(absl::Span<const int64_t> counts,
                          absl::Span<const NodeId> neighbors, Block* block) {
  const int64_t num_dst = static_cast<int64_t>(nodes_.size());
  block->num_dst = num_dst;
  block->indptr.resize(num_dst + 1);
  block->indices.resize(neighbors.size());
  block->indptr[0] = 0;
  for (int64_t i = 0; i < num_dst; ++i)
    block->indptr[i + 1] = block->indptr[i] + counts[i];
  for (size_t e = 0; e < neighbors.size(); ++e)
    block->indices[e] = LocalIndex(neighbors[e]);
  block->num_src = static_cast<int64_t>(nodes_.size());
}

}  // namespace shardgnn::internal
