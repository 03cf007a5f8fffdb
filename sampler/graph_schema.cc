#include "sampler/graph_schema.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shardgnn {

absl::StatusOr<GraphSchema> GraphSchema::FromManifest(
    const DatasetManifest& m) {
  if (!m.typed()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", m.name, "' has no node types"));
  }
  GraphSchema s;
  s.node_types = m.node_types;
  s.edge_types = m.edge_types;
  s.offsets.push_back(0);
  for (const NodeType& t : m.node_types)
    s.offsets.push_back(s.offsets.back() + t.count);
  for (const EdgeType& r : m.edge_types) {
    const int src = m.FindNodeType(r.src), dst = m.FindNodeType(r.dst);
    if (src < 0 || dst < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "relation ", EdgeTypeKey(r), " names a node type that is not one"));
    }
    s.src_type.push_back(src);
    s.dst_type.push_back(dst);
  }
  return s;
}

int GraphSchema::TypeOf(NodeId node) const {
  if (node < 0 || node >= num_nodes()) return -1;
  // The last offset <= node (empty types share their offset with the next).
  auto it = std::upper_bound(offsets.begin(), offsets.end(), node);
  return static_cast<int>(it - offsets.begin()) - 1;
}

}  // namespace shardgnn
