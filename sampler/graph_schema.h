// The types of a typed (heterogeneous) graph as a sampler and a model see
// them: node types owning contiguous ranges of global IDs, and relations
// (src type, relation, dst type). The dataset layout behind it: datasets/
// dataset.h, "Typed (heterogeneous) datasets".
#ifndef SHARDGNN_SAMPLER_GRAPH_SCHEMA_H_
#define SHARDGNN_SAMPLER_GRAPH_SCHEMA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "datasets/dataset.h"

namespace shardgnn {

// Immutable once built; cheap to copy for small type counts.
struct GraphSchema {
  std::vector<NodeType> node_types;
  std::vector<EdgeType> edge_types;
  std::vector<int> src_type;  // Per relation: its node types' indices.
  std::vector<int> dst_type;
  // Where each type's nodes are: range i is [range_starts[i],
  // range_starts[i+1]), of node type range_types[i], and its first node is
  // the range_locals[i]-th node of that type. A dataset has one range per
  // type (a node's local index is its type-local ID); a partition one per
  // part and type (each part's nodes grouped by type), its local indices
  // counting a type's nodes part after part.
  std::vector<NodeId> range_starts;   // R+1, from 0 to num_nodes().
  std::vector<int> range_types;       // R
  std::vector<int64_t> range_locals;  // R

  // From a typed manifest (INVALID_ARGUMENT for an untyped one, or a relation
  // naming an unknown type).
  static absl::StatusOr<GraphSchema> FromManifest(const DatasetManifest& m);
  // From a typed partition: the dataset's types and, per part, its T+1 type
  // starts (part p's nodes of type t are [type_starts[p][t],
  // type_starts[p][t+1]), parts in ID order). INVALID_ARGUMENT naming the
  // part whose starts do not fit.
  static absl::StatusOr<GraphSchema> FromParts(
      const std::vector<NodeType>& node_types,
      const std::vector<EdgeType>& edge_types,
      const std::vector<std::vector<NodeId>>& type_starts);

  int num_node_types() const { return static_cast<int>(node_types.size()); }
  int num_relations() const { return static_cast<int>(edge_types.size()); }
  int64_t num_nodes() const { return range_starts.back(); }
  // The type of a global ID (binary search); -1 outside [0, num_nodes()).
  int TypeOf(NodeId node) const;
  // The node's index among the nodes of its type (see range_locals); -1
  // outside the graph.
  int64_t LocalIndex(NodeId node) const;
  // The relation a name means: its "src/relation/dst" key, or its relation
  // name when no other relation has it; -1 if none (or it is ambiguous).
  int FindRelation(const std::string& name) const;
};

// Whether `text` is a per-relation fanout list (it names a relation).
bool IsRelationFanoutSpec(const std::string& text);

// Per-relation fanouts, one list per layer separated by ';', each a
// comma-separated list of `relation=N` (a relation name, or its
// src/relation/dst key when the name is ambiguous) and at most one bare N,
// the fanout of the relations not named (0 if there is none: they are not
// sampled). N is a count, 0, or -1 for all neighbors. Example, two layers:
// "writes=10,cites=5,2;writes=5,cites=5,2". Errors name the entry, and list
// the relations for an unknown name.
absl::StatusOr<std::vector<std::vector<int>>> ParseRelationFanouts(
    const std::string& text, const GraphSchema& schema);

}  // namespace shardgnn

#endif  // SHARDGNN_SAMPLER_GRAPH_SCHEMA_H_
