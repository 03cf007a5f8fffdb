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
  // Typed graphs (SetTypeStarts): per part, T+1 new IDs; the part's nodes of
  // type t are [type_starts[p][t], type_starts[p][t+1]). Empty otherwise.
  std::vector<std::vector<NodeId>> type_starts;
};

// Orders nodes by part, then by original ID (a counting sort, O(N + K)).
// REQUIRES: every part[v] in [0, num_parts).
Relabeling Relabel(const std::vector<int32_t>& part, int num_parts);

// Fills r->type_starts for a typed `manifest`. Within a part nodes keep the
// order of their original IDs, and each type's original IDs are one range, so
// every part's nodes are grouped by type in the manifest's order.
void SetTypeStarts(const DatasetManifest& manifest, Relabeling* r);

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
