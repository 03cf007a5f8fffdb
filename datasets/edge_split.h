// Link prediction splits of a dataset's edges, as the GAE protocol (Kipf &
// Welling 2016) makes them: the edges are shuffled with a seed and dealt into
// train, valid and test by the given fractions; valid and test edges are
// removed from the graph (so that messages never pass over an edge the model
// is asked to predict), and as many negative pairs as positives are drawn for
// valid and test: uniform node pairs that are not edges of the whole graph,
// not self loops, and not repeated. An undirected graph's edge {u, v} is one
// candidate (listed as u < v) and leaves the graph in both directions; a
// directed graph's edges are candidates one by one.
//
// The result is a canonical dataset directory with edge splits
// (dataset.h: edges_<name>.npy for train, valid, test, valid_neg, test_neg);
// node labels and node splits are kept as they are.
//
// A split can also be given (OGB's split/<name>/ of edges, `dataset import
// --format ogb`): ApplyGivenEdgeSplit keeps the given pairs, removes the valid
// and test positives from the graph the same way, and draws the negatives
// that were not given.
#ifndef SHARDGNN_DATASETS_EDGE_SPLIT_H_
#define SHARDGNN_DATASETS_EDGE_SPLIT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/dataset.h"
#include "datasets/summary.h"

namespace shardgnn {

// The GAE protocol's fractions, as ParseEdgeSplit reads them.
inline constexpr char kGaeEdgeSplit[] = "0.85,0.05,0.10";

struct EdgeSplitOptions {
  double train = 0.85;
  double valid = 0.05;
  double test = 0.10;
  uint64_t seed = 0;
};

// Parses "TRAIN,VALID,TEST" (e.g. "0.85,0.05,0.10"): three non-negative
// fractions summing to 1 (within 1e-6), train positive.
absl::StatusOr<EdgeSplitOptions> ParseEdgeSplit(const std::string& text);

struct EdgeSplitSummary {
  int64_t candidates = 0;  // Edges (undirected: pairs) that could be dealt.
  int64_t train = 0, valid = 0, test = 0;
  int64_t self_loops_kept = 0;  // Stay in the graph, never a target.
  // Nodes left with an empty row once valid and test edges are removed.
  int64_t nodes_without_neighbors = 0;
  // Given splits: valid and test positives that were edges of the graph
  // (undirected: pairs, each leaving in both directions).
  int64_t removed_from_graph = 0;
};

// Splits `dataset`'s edges in place (rebuilding its CSR from the train edges
// and setting dataset->edge_splits). Fails, changing nothing, when the split
// leaves no train edge, the dataset already has edge splits, or the graph is
// too dense to draw the negatives.
absl::StatusOr<EdgeSplitSummary> SplitEdges(const EdgeSplitOptions& options,
                                            Dataset* dataset);

// Pairs by edge split name, flattened (u0, v0, u1, v1, ...): "train",
// "valid" and "test" (positives) are required, "valid_neg" and "test_neg"
// optional.
struct GivenEdgeSplit {
  std::map<std::string, std::vector<NodeId>> pairs;
};

// Sets `dataset`'s edge splits to `given`: valid and test positives are
// removed from the graph (both directions when undirected; a pair that is no
// edge stays a target), and a missing valid_neg/test_neg gets as many
// negatives as positives, drawn as SplitEdges draws them (seeded by `seed`).
// Fails, changing nothing, on a missing or unknown split name, no train pair,
// a node outside the graph (naming split and pair), edge splits already
// present, or a graph too dense for the negatives.
absl::StatusOr<EdgeSplitSummary> ApplyGivenEdgeSplit(
    const GivenEdgeSplit& given, uint64_t seed, Dataset* dataset);

// Loads the dataset at `in_dir`, splits its edges and writes the result to
// `out_dir` (which must not exist; written whole or not at all).
absl::StatusOr<EdgeSplitSummary> SplitDatasetEdges(
    const std::string& in_dir, const EdgeSplitOptions& options,
    const std::string& out_dir);

// Builds a dataset with `build` under a temporary name next to `out_dir`,
// splits its edges into `out_dir` (SplitDatasetEdges) and removes the
// temporary one, so `out_dir` appears whole or not at all
// (`dataset import|generate --edge-split`, and `run --task link` on raw
// input). `out_dir` must not exist. The summary is the build's, its counts of
// neighborless nodes those of the graph that remains; *split (if not null)
// receives what the split did.
absl::StatusOr<BuildSummary> BuildWithEdgeSplit(
    const EdgeSplitOptions& options, const std::string& out_dir,
    const std::function<absl::StatusOr<BuildSummary>(const std::string&)>&
        build,
    EdgeSplitSummary* split);

// "edge split (seed S): T train / V valid / X test of N edges, ...": one line
// for the user, without a newline.
std::string DescribeEdgeSplit(const EdgeSplitSummary& split, uint64_t seed);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_EDGE_SPLIT_H_
