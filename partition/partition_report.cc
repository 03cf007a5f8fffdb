// PartitionSummary and DescribePartition: partition manifests for people.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/progress.h"
#include "partition/partition.h"

namespace shardgnn {

std::string PartitionSummary(const PartitionManifest& m,
                             const PartitionTiming* timing) {
  std::string out = absl::StrFormat(
      "partition of '%s': %s nodes, %s edges -> %d parts (%s, seed %d)\n",
      m.dataset_name, HumanCount(m.num_nodes), HumanCount(m.num_edges),
      m.num_parts, m.method, m.seed);
  absl::StrAppendFormat(&out, "  edge cut: %d of %d edges (%.2f%%)\n",
                        m.edge_cut, m.num_edges, 100.0 * m.edge_cut_fraction);
  absl::StrAppend(&out, "  imbalance (max/avg):");
  for (const char* name : {"nodes", "train_nodes", "edges"}) {
    auto it = m.balance.find(name);
    if (it == m.balance.end()) continue;
    absl::StrAppendFormat(&out, " %s %.3f", name, it->second.Imbalance());
  }
  absl::StrAppend(&out, "\n");
  if (timing != nullptr) {
    absl::StrAppendFormat(
        &out,
        "  time: %.1fs (load %.1fs, symmetrize %.1fs, %s %.1fs, relabel "
        "%.1fs, write %.1fs), peak RSS %s\n",
        timing->total_seconds, timing->load_seconds, timing->symmetrize_seconds,
        m.method, timing->assign_seconds, timing->relabel_seconds,
        timing->write_seconds,
        HumanBytes(static_cast<double>(timing->peak_rss_after_write)));
  }
  absl::StrAppendFormat(&out, "  partition_id %s\n", m.partition_id);
  for (const std::string& w : m.warnings) {
    absl::StrAppend(&out, "  warning: ", w, "\n");
  }
  return out;
}

std::string DescribePartition(const PartitionManifest& m) {
  std::string out = PartitionSummary(m);
  absl::StrAppendFormat(&out,
                        "  dataset checksum %s, %d features, %d classes, %s\n",
                        m.dataset_checksum, m.feature_dim, m.num_classes,
                        m.directed ? "directed" : "undirected");
  std::string split_header;
  for (const auto& [name, count] : m.splits) {
    absl::StrAppendFormat(&split_header, " %10s", name);
  }
  absl::StrAppendFormat(&out, "\n  %4s %20s %10s %12s %12s%s %8s  %s\n", "part",
                        "node range", "nodes", "edges", "cut edges",
                        split_header, "cut %", "dir");
  for (int p = 0; p < m.num_parts; ++p) {
    const PartInfo& info = m.parts[p];
    std::string range =
        absl::StrCat("[", m.node_ranges[p], ",", m.node_ranges[p + 1], ")");
    std::string split_cells;
    for (const auto& [name, count] : m.splits) {
      auto it = info.split_counts.find(name);
      absl::StrAppendFormat(&split_cells, " %10d",
                            it == info.split_counts.end() ? 0 : it->second);
    }
    double cut_pct = info.edges > 0 ? 100.0 * info.cut_edges / info.edges : 0;
    absl::StrAppendFormat(&out, "  %4d %20s %10d %12d %12d%s %7.2f%%  %s\n", p,
                          range, info.nodes, info.edges, info.cut_edges,
                          split_cells, cut_pct, info.dir);
  }
  if (m.typed()) {
    // Each node type's nodes per part (from its type ranges), and the
    // relations.
    absl::StrAppendFormat(&out, "\n  %-20s %10s", "node type", "nodes");
    for (int p = 0; p < m.num_parts; ++p)
      absl::StrAppendFormat(&out, " %10s", absl::StrCat("part ", p));
    out += "\n";
    for (size_t t = 0; t < m.node_types.size(); ++t) {
      const NodeType& type = m.node_types[t];
      absl::StrAppendFormat(&out, "  %-20s %10d", type.name, type.count);
      for (const PartInfo& info : m.parts) {
        const bool fits = info.type_starts.size() == m.node_types.size() + 1;
        absl::StrAppendFormat(
            &out, " %10d",
            fits ? info.type_starts[t + 1] - info.type_starts[t] : 0);
      }
      out += "\n";
    }
    for (const EdgeType& r : m.edge_types) {
      absl::StrAppendFormat(&out, "  relation %-40s %12d edges\n",
                            EdgeTypeKey(r), r.count);
    }
  }
  return out;
}

}  // namespace shardgnn
