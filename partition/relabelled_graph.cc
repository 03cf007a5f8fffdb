#include "partition/relabelled_graph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "partition/partition_book.h"

namespace shardgnn {

bool RelabelledGraph::HasEdge(NodeId v, NodeId u) const {
  return std::binary_search(indices.begin() + indptr[v],
                            indices.begin() + indptr[v + 1], u);
}

absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir) {
  const std::string path = JoinPath(partition_dir, kOrigIdsFile);
  ASSIGN_OR_RETURN(NpyArray<int64_t> orig, ReadNpy<int64_t>(path, 1));
  const int64_t n = dataset.num_nodes();
  if (static_cast<int64_t>(orig.data.size()) != n) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", orig.data.size(), " IDs for ", n, " nodes"));
  }
  std::vector<NodeId> new_id(static_cast<size_t>(n), -1);
  for (NodeId v = 0; v < n; ++v) {
    const NodeId o = orig.data[v];
    if (o < 0 || o >= n || new_id[o] != -1) {
      return absl::DataLossError(absl::StrCat(path, ": entry ", v, " (", o,
                                              ") is out of range or repeated"));
    }
    new_id[o] = v;
  }
  RelabelledGraph g;
  const DatasetManifest& m = dataset.manifest;
  g.feature_dim = dataset.feature_dim();
  g.label_columns = m.multilabel ? m.num_classes : 1;
  const auto dim = static_cast<size_t>(g.feature_dim);
  const auto columns = static_cast<size_t>(g.label_columns);
  const bool typed = m.typed();
  if (typed) {
    ASSIGN_OR_RETURN(PartitionManifest pm,
                     ReadPartitionManifest(partition_dir));
    g.node_types = m.node_types;
    g.relations = m.edge_types;
    for (const PartInfo& part : pm.parts)
      g.type_starts.push_back(part.type_starts);
    g.type_features.resize(m.node_types.size());
  }
  g.indptr.reserve(static_cast<size_t>(n) + 1);
  g.indptr.push_back(0);
  g.indices.reserve(dataset.indices.size());
  g.features.resize(static_cast<size_t>(n) * dim);
  g.labels.assign(static_cast<size_t>(n) * columns, -1);
  std::vector<std::pair<int32_t, NodeId>> row;
  for (NodeId v = 0; v < n; ++v) {
    const NodeId o = orig.data[v];
    if (typed) {
      row.clear();
      for (int64_t e = dataset.indptr[o]; e < dataset.indptr[o + 1]; ++e)
        row.emplace_back(dataset.edge_types[e], new_id[dataset.indices[e]]);
      std::sort(row.begin(), row.end());
      for (const auto& [relation, u] : row) {
        g.edge_types.push_back(relation);
        g.indices.push_back(u);
      }
      // Nodes in ID order visit each type's nodes in local-index order.
      const int t = m.NodeTypeOf(o);
      const auto width = static_cast<size_t>(m.node_types[t].feature_dim);
      const auto local = static_cast<size_t>(o - m.NodeTypeOffset(t));
      const std::vector<float>& from = dataset.type_features[t];
      g.type_features[t].insert(g.type_features[t].end(),
                                from.begin() + local * width,
                                from.begin() + (local + 1) * width);
    } else {
      const size_t begin = g.indices.size();
      for (int64_t e = dataset.indptr[o]; e < dataset.indptr[o + 1]; ++e)
        g.indices.push_back(new_id[dataset.indices[e]]);
      std::sort(g.indices.begin() + static_cast<std::ptrdiff_t>(begin),
                g.indices.end());
      std::copy_n(dataset.features.begin() + o * dim, dim,
                  g.features.begin() + v * dim);
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
    if (!dataset.labels.empty()) {
      std::copy_n(dataset.labels.begin() + o * columns, columns,
                  g.labels.begin() + v * columns);
    }
  }
  return g;
}

}  // namespace shardgnn
