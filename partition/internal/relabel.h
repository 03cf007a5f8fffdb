// Relabelling nodes so that every part owns a contiguous ID range, and the
// per-part figures partition.json reports. Internal to partition/.
#ifndef SHARDGNN_PARTITION_INTERNAL_RELABEL_H_
#define SHARDGNN_PARTITION_INTERNAL_RELABEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "partition/partition_book.h"

namespace shardgnn::partition_internal {

struct Relabeling {
  std::vector<NodeId> node_ranges;  // K+1
  std::vector<NodeId> orig_ids;     // new ID -> original ID
  std::vector<NodeId> new_ids;      // original ID -> new ID
};

// Orders nodes by part, then by original ID (a counting sort, O(N + K)).
// REQUIRES: every part[v] in [0, num_parts).
Relabeling Relabel(const std::vector<int32_t>& part, int num_parts);

// Per-part counts and totals derived from an assignment.
struct PartStats {
  std::vector<PartInfo> parts;  // nodes, edges, cut_edges, split_counts
  int64_t edge_cut = 0;
  std::map<std::string, BalanceFigure> balance;
};

PartStats ComputeStats(const Dataset& dataset, const std::vector<int32_t>& part,
                       int num_parts);

// Each split's members as new IDs, sorted.
std::map<std::string, std::vector<NodeId>> RelabelSplits(
    const Dataset& dataset, const std::vector<NodeId>& new_ids);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_RELABEL_H_
