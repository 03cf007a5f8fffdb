// A call's node IDs grouped by the part that owns them, in lists kept from
// call to call (RemoteGraphSource pools them: sampler/remote_graph_source.h).
#ifndef SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_
#define SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "partition/partition_book.h"

namespace shardgnn::internal {

struct OwnerGroups {
  std::vector<std::vector<size_t>> positions;  // per part
  std::vector<std::vector<NodeId>> ids;        // per part
  std::vector<std::vector<size_t>> where;      // per part (the caller's)
  std::vector<int> owners;                     // per node, in order
  std::vector<size_t> counts;                  // per part (scratch)
};

// Groups `nodes` by owner into *groups, reusing its lists' memory;
// INVALID_ARGUMENT naming a node outside the graph. Every part's lists make
// room for all of `nodes` (reserved, not touched): calls of one size split
// among the parts in other ways (a shuffled training batch evenly, an
// unshuffled validation batch mostly to one part) then never reallocate a
// kept list into fresh pages, and OwnerGroupsCapacity says what a kept
// OwnerGroups serves as it is.
absl::Status GroupByOwner(const PartitionBook& book,
                          absl::Span<const NodeId> nodes, OwnerGroups* groups);

// The most nodes *groups holds without growing, however they split.
size_t OwnerGroupsCapacity(const OwnerGroups& groups);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_
