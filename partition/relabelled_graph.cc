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
  g.feature_dim = dataset.feature_dim();
  const auto dim = static_cast<size_t>(g.feature_dim);
  g.indptr.reserve(static_cast<size_t>(n) + 1);
  g.indptr.push_back(0);
  g.indices.reserve(dataset.indices.size());
  g.features.resize(static_cast<size_t>(n) * dim);
  g.labels.resize(static_cast<size_t>(n));
  for (NodeId v = 0; v < n; ++v) {
    const NodeId o = orig.data[v];
    const size_t begin = g.indices.size();
    for (int64_t e = dataset.indptr[o]; e < dataset.indptr[o + 1]; ++e)
      g.indices.push_back(new_id[dataset.indices[e]]);
    std::sort(g.indices.begin() + static_cast<std::ptrdiff_t>(begin),
              g.indices.end());
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
    std::copy_n(dataset.features.begin() + o * dim, dim,
                g.features.begin() + v * dim);
    g.labels[v] = dataset.labels[o];
  }
  return g;
}

}  // namespace shardgnn
