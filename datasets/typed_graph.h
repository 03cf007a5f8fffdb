// Building a typed (heterogeneous) dataset from per-relation edge lists: what
// the typed importers (`dataset import --format ogb-hetero`, `--format hgb`)
// and the typed generator share. The layout it produces: dataset.h, "Typed
// (heterogeneous) datasets".
#ifndef SHARDGNN_DATASETS_TYPED_GRAPH_H_
#define SHARDGNN_DATASETS_TYPED_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "datasets/dataset.h"
#include "datasets/summary.h"

namespace shardgnn {

// One relation's edges as read: src[i] -> dst[i] in type-local IDs, with
// feature_dim values of edge features per edge (none if 0).
struct RelationEdges {
  std::string src_type;
  std::string relation;
  std::string dst_type;
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t feature_dim = 0;
  std::vector<float> features;  // src.size() * feature_dim, row-major.
  // Where the edges came from, for errors ("raw/relations/a___b___c/edge.csv").
  std::string source;
};

struct TypedGraphOptions {
  // Also store every relation reversed, as relation "rev_<relation>" from
  // dst_type to src_type (with the same edge features); a relation that is
  // its own reverse (same source and destination type, every edge's reverse
  // present) is not doubled.
  bool add_reverse = false;
  bool keep_self_loops = false;  // Else (u, u) edges of a relation whose
                                 // source and destination type are the same
                                 // are dropped and counted.
};

// Fills dataset's graph from `node_types` (names, counts, feature widths) and
// `relations`: manifest.num_nodes/num_edges/node_types/edge_types, indptr,
// indices, edge_types and edge_features (one matrix per relation, in its
// entries' CSR order). Duplicate edges of a relation are removed (the first
// one's features kept) and counted in *summary, as are dropped self-loops;
// summary->input_edges counts the edges given. Leaves features, labels and
// splits to the caller. Fails with INVALID_ARGUMENT, naming the relation's
// source, on: a type name that is not [A-Za-z0-9_.-]+ (IsValidTypeName,
// dataset.h) or is listed twice; a
// relation whose types are not in node_types, or listed twice; an ID outside
// its type's count (naming the edge's index and the ID); src/dst or
// features of mismatched lengths.
absl::Status BuildTypedGraph(const std::vector<NodeType>& node_types,
                             std::vector<RelationEdges> relations,
                             const TypedGraphOptions& options, Dataset* dataset,
                             BuildSummary* summary);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_TYPED_GRAPH_H_
