// What an import or a generation produced, for the CLI's closing summary and
// for tests.
#ifndef SHARDGNN_DATASETS_SUMMARY_H_
#define SHARDGNN_DATASETS_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace shardgnn {

// The outcome of writing one canonical dataset directory. Plain data.
struct BuildSummary {
  std::string out_dir;
  DatasetManifest manifest;  // As written: counts, splits, checksums.
  int64_t input_edges =
      0;  // Edges read from the input (or generated), before cleaning.
  int64_t duplicate_edges_dropped =
      0;  // Repeats of an earlier edge (undirected: in either orientation).
  int64_t self_loops_dropped = 0;
  int64_t unknown_ids_dropped = 0;  // Edges naming an ID the node list lacks
                                    // (only when asked to skip them).
  int64_t max_degree = 0;           // Largest CSR row.
  // Nodes whose CSR row is empty: a GNN layer has nothing to aggregate for
  // them. In total and per split.
  int64_t nodes_without_neighbors = 0;
  std::map<std::string, int64_t> split_nodes_without_neighbors;
  // Stored edges between distinct nodes, and those of them whose reverse edge
  // is stored too (all of them when both directions were stored).
  int64_t non_loop_edges = 0;
  int64_t reciprocated_edges = 0;
  // NaN or infinite feature values kept (only when the importer was allowed
  // to; otherwise the first one fails the import).
  int64_t nonfinite_features = 0;
  // Things the user should know about the result (e.g. a graph that looks
  // one-directional), one sentence each.
  std::vector<std::string> warnings;
  // What was done beyond the counts above (e.g. how an edge split was
  // applied), one sentence each.
  std::vector<std::string> notes;
  double seconds = 0;
};

// A few human-readable lines: nodes, edges, features, classes, split sizes
// (node and edge splits),
// nodes without neighbors, what was dropped, warnings, time.
std::string FormatSummary(const BuildSummary& summary);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_SUMMARY_H_
