#include "sampler/internal/owner_groups.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/buffers.h"

namespace shardgnn::internal {

absl::Status GroupByOwner(const PartitionBook& book,
                          absl::Span<const NodeId> nodes, OwnerGroups* groups) {
  const auto k = static_cast<size_t>(book.num_parts());
  groups->positions.resize(k);
  groups->ids.resize(k);
  groups->where.resize(k);
  std::vector<size_t>& counts = groups->counts;
  counts.assign(k, 0);
  std::vector<int>& owners = groups->owners;
  owners.clear();
  ReserveWithHeadroom(&owners, nodes.size());
  for (NodeId v : nodes) {
    const int part = book.Owner(v);
    if (part < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", v, " is outside the graph's [0, ", book.num_nodes(), ")"));
    }
    owners.push_back(part);
    ++counts[static_cast<size_t>(part)];
  }
  for (size_t p = 0; p < k; ++p) {
    groups->positions[p].clear();
    groups->ids[p].clear();
    ReserveWithHeadroom(&groups->positions[p], nodes.size());
    ReserveWithHeadroom(&groups->ids[p], nodes.size());
    ReserveWithHeadroom(&groups->where[p], nodes.size());
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto part = static_cast<size_t>(owners[i]);
    groups->positions[part].push_back(i);
    groups->ids[part].push_back(nodes[i]);
  }
  return absl::OkStatus();
}

size_t OwnerGroupsCapacity(const OwnerGroups& groups) {
  size_t capacity = groups.owners.capacity();
  for (size_t p = 0; p < groups.ids.size(); ++p) {
    capacity = std::min({capacity, groups.positions[p].capacity(),
                         groups.ids[p].capacity(), groups.where[p].capacity()});
  }
  return capacity;
}

}  // namespace shardgnn::internal
