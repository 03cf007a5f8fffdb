// Turns an edge list held as two int64 arrays into the canonical CSR files
// (indptr.npy, indices.npy) by counting sort, without ever holding the edges as
// text. Shared by the importers and the generators.
#ifndef SHARDGNN_DATASETS_INTERNAL_CSR_BUILDER_H_
#define SHARDGNN_DATASETS_INTERNAL_CSR_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "datasets/importers.h"

namespace shardgnn::datasets_internal {

struct CsrOptions {
  // Store every edge in both directions.
  bool undirected = false;
  // Keep (u, u) edges; otherwise they are dropped and counted.
  bool keep_self_loops = false;
  // Sort/dedupe rows in this many threads (the output does not depend on it).
  int threads = 2;
  std::string progress_task = "building CSR";
};

// The CSR options an importer's edge flags ask for.
inline CsrOptions CsrOptionsFor(const EdgeOptions& edges) {
  CsrOptions csr;
  csr.undirected = edges.undirected;
  csr.keep_self_loops = edges.keep_self_loops;
  return csr;
}

struct CsrResult {
  int64_t num_edges = 0;  // Entries written to indices.npy.
  int64_t duplicate_edges_dropped =
      0;  // Input edges that repeated an earlier one
          // (for undirected input: in either orientation).
  int64_t self_loops_dropped = 0;
  int64_t max_degree = 0;
  // without_neighbors[v]: row v is empty, so v has no neighbor to aggregate
  // from. N bits.
  std::vector<bool> without_neighbors;
  int64_t nodes_without_neighbors = 0;
  // Entries u of row v with u != v, and those of them whose reverse (v in
  // row u) is stored too: all of them for an undirected build.
  int64_t non_loop_edges = 0;
  int64_t reciprocated_edges = 0;
};

// Builds the CSR of the graph with `num_nodes` nodes and edges
// (src[i] -> dst[i]) and writes indptr.npy and indices.npy into `dir`.
// Row v lists the sources of the edges into v (the neighbors v aggregates
// from), sorted and without duplicates. `src` and `dst` are consumed (freed
// once counted) to keep peak memory at edges + CSR.
// With `origins`, *origins[e] is the index of the input edge CSR entry e
// came from (an undirected build's two entries of an edge share it; of
// duplicates, the first input edge is kept): how per-edge data (edge
// features) follows its edges into the CSR.
// REQUIRES: every ID in [0, num_nodes), src.size() == dst.size().
absl::StatusOr<CsrResult> WriteCsr(int64_t num_nodes, std::vector<NodeId> src,
                                   std::vector<NodeId> dst,
                                   const CsrOptions& options,
                                   const std::string& dir,
                                   std::vector<int64_t>* origins = nullptr);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_CSR_BUILDER_H_
