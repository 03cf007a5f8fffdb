// What an import or a generation produced, for the CLI's closing summary and
// for tests.
#ifndef SHARDGNN_DATASETS_SUMMARY_H_
#define SHARDGNN_DATASETS_SUMMARY_H_

#include <cstdint>
#include <string>

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
  double seconds = 0;
};

// A few human-readable lines: nodes, edges, features, classes, split sizes,
// what was dropped, time.
std::string FormatSummary(const BuildSummary& summary);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_SUMMARY_H_
