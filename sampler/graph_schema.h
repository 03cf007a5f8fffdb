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
  std::vector<int64_t> offsets;  // T+1: type t owns [offsets[t], offsets[t+1]).
  std::vector<int> src_type;     // Per relation: its node types' indices.
  std::vector<int> dst_type;

  // From a typed manifest (INVALID_ARGUMENT for an untyped one, or a relation
  // naming an unknown type).
  static absl::StatusOr<GraphSchema> FromManifest(const DatasetManifest& m);

  int num_node_types() const { return static_cast<int>(node_types.size()); }
  int num_relations() const { return static_cast<int>(edge_types.size()); }
  int64_t num_nodes() const { return offsets.back(); }
  // The type of a global ID (binary search); -1 outside [0, num_nodes()).
  int TypeOf(NodeId node) const;
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
