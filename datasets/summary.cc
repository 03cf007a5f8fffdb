#include "datasets/summary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace shardgnn {
namespace {

double Percent(int64_t part, int64_t whole) {
  return whole > 0
             ? 100.0 * static_cast<double>(part) / static_cast<double>(whole)
             : 0.0;
}

}  // namespace

std::string FormatSummary(const BuildSummary& s) {
  const DatasetManifest& m = s.manifest;
  std::string out =
      absl::StrCat("dataset \"", m.name, "\" written to ", s.out_dir, "\n");
  double avg = m.num_nodes > 0 ? static_cast<double>(m.num_edges) /
                                     static_cast<double>(m.num_nodes)
                               : 0.0;
  absl::StrAppend(
      &out, "  nodes ", m.num_nodes, ", edges ", m.num_edges,
      m.directed ? " (directed)" : " (undirected, both directions stored)",
      absl::StrFormat(", avg degree %.2f, max degree %d\n", avg, s.max_degree));
  if (m.typed()) {
    absl::StrAppend(&out, "  node types:");
    for (const NodeType& t : m.node_types) {
      absl::StrAppend(&out, "\n    ", t.name, " ", t.count, ", ",
                      t.feature_dim > 0
                          ? absl::StrCat(t.feature_dim, " features")
                          : std::string("no features"));
    }
    absl::StrAppend(&out, "\n  relations (src/relation/dst):");
    for (const EdgeType& r : m.edge_types) {
      absl::StrAppend(&out, "\n    ", EdgeTypeKey(r), " ", r.count);
      if (r.feature_dim > 0)
        absl::StrAppend(&out, ", ", r.feature_dim, " edge features");
    }
    absl::StrAppend(
        &out, "\n  classes ", m.num_classes,
        m.multilabel ? " (multi-label)" : "",
        m.target_types.empty()
            ? std::string()
            : absl::StrCat(" on ", absl::StrJoin(m.target_types, ", ")),
        "\n  splits:");
  } else {
    absl::StrAppend(&out, "  features ", m.feature_dim, " (", m.feature_dtype,
                    ")");
    if (m.edge_feature_dim > 0)
      absl::StrAppend(&out, ", edge features ", m.edge_feature_dim);
    absl::StrAppend(&out, ", classes ", m.num_classes,
                    m.multilabel ? " (multi-label)" : "", "\n  splits:");
  }
  // train, valid, test first, then any others.
  for (const char* name : {"train", "valid", "test"}) {
    auto it = m.splits.find(name);
    if (it != m.splits.end()) absl::StrAppend(&out, " ", name, " ", it->second);
  }
  for (const auto& [name, count] : m.splits) {
    if (name != "train" && name != "valid" && name != "test") {
      absl::StrAppend(&out, " ", name, " ", count);
    }
  }
  if (m.splits.empty()) absl::StrAppend(&out, " none");
  if (!m.edge_splits.empty()) {
    absl::StrAppend(&out, "\n  edge splits (pairs):");
    for (const char* name :
         {"train", "valid", "test", "valid_neg", "test_neg"}) {
      auto it = m.edge_splits.find(name);
      if (it != m.edge_splits.end()) {
        absl::StrAppend(&out, " ", name, " ", it->second);
      }
    }
  }
  absl::StrAppend(&out, "\n  nodes with no neighbors to aggregate from: ",
                  s.nodes_without_neighbors);
  if (!s.split_nodes_without_neighbors.empty()) {
    std::string per_split;
    for (const char* name : {"train", "valid", "test"}) {
      auto it = s.split_nodes_without_neighbors.find(name);
      if (it != s.split_nodes_without_neighbors.end()) {
        absl::StrAppend(&per_split, per_split.empty() ? "" : ", ", name, " ",
                        it->second);
      }
    }
    for (const auto& [name, count] : s.split_nodes_without_neighbors) {
      if (name != "train" && name != "valid" && name != "test") {
        absl::StrAppend(&per_split, per_split.empty() ? "" : ", ", name, " ",
                        count);
      }
    }
    absl::StrAppend(&out, " (", per_split, ")");
  }
  if (m.directed && !m.typed()) {
    absl::StrAppend(
        &out, "\n  edges with their reverse stored: ", s.reciprocated_edges,
        " of ", s.non_loop_edges,
        absl::StrFormat(" (%.1f%%)",
                        Percent(s.reciprocated_edges, s.non_loop_edges)));
  }
  absl::StrAppend(&out, "\n  input edges ", s.input_edges,
                  "; dropped: duplicates ", s.duplicate_edges_dropped,
                  ", self-loops ", s.self_loops_dropped);
  if (s.unknown_ids_dropped > 0) {
    absl::StrAppend(&out, ", edges with unknown IDs ", s.unknown_ids_dropped);
  }
  for (const std::string& note : s.notes) {
    absl::StrAppend(&out, "\n  ", note);
  }
  for (const std::string& warning : s.warnings) {
    absl::StrAppend(&out, "\n  warning: ", warning);
  }
  absl::StrAppend(&out, absl::StrFormat("\n  time %.1f s", s.seconds));
  return out;
}

}  // namespace shardgnn
