// Synthetic datasets of any size, written as canonical dataset directories (see
// dataset.h).
//
//   kSbm   stochastic block model: C equal-probability classes; each undirected
//   edge joins two nodes of the same
//          class with probability `homophily`, else nodes of two different
//          classes. Degrees are near-Poisson.
//   kRmat  R-MAT power law (a, b, c, d = 0.57, 0.19, 0.19, 0.05): heavily
//   skewed degrees. Classes are planted
//          communities: a fraction `homophily` of the edges have their second
//          end moved to a node of the first end's class with about the same
//          R-MAT weight, so the skew survives and labels stay learnable. Node
//          IDs are shuffled (seeded) so that high-degree nodes are not all at
//          the front.
//
// In both, features are the class centroid (a seeded Gaussian vector) plus
// Gaussian noise, scaled to about unit variance; the default noise makes a
// node's own features a weak signal and its neighborhood's a strong one, so a
// GNN clearly beats an MLP. Graphs are undirected (both directions stored),
// free of self-loops and duplicates; every node is labeled and split at random
// into train/valid/test.
//
// Deterministic: the same options (seed included) give byte-identical files
// whatever the thread count. Memory: the edge arrays, the CSR and a few feature
// chunks; features are streamed to disk. The output is built in a temporary
// directory and renamed when complete; `out_dir` must not exist.
// Thread-compatible.
#ifndef SHARDGNN_DATASETS_GENERATORS_H_
#define SHARDGNN_DATASETS_GENERATORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/summary.h"

namespace shardgnn {

enum class GraphKind { kSbm, kRmat };

struct GeneratorOptions {
  GraphKind kind = GraphKind::kSbm;
  int64_t num_nodes = 10000;
  // Stored (directed) edges per node before dedupe: N * avg_degree / 2
  // undirected edges are drawn.
  double avg_degree = 10;
  int64_t feature_dim = 32;
  int64_t num_classes = 8;
  std::vector<double> split = {
      0.1, 0.1, 0.8};  // train, valid, test fractions of the nodes.
  uint64_t seed = 0;
  double homophily = 0.8;  // Fraction of edges inside a class.
  // Noise standard deviation relative to the centroid scale; 1.0 gives an MLP
  // on raw features a weak signal.
  double feature_noise = 1.0;
  int threads = 2;   // Worker threads; does not change the output.
  std::string name;  // Empty: "sbm" or "rmat".
};

// Fails with InvalidArgument on nonsensical options (no nodes, too few nodes
// for the degree, bad split).
absl::StatusOr<BuildSummary> GenerateDataset(const GeneratorOptions& options,
                                             const std::string& out_dir);

// "sbm" / "rmat" <-> GraphKind.
absl::StatusOr<GraphKind> ParseGraphKind(const std::string& text);
const char* GraphKindName(GraphKind kind);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_GENERATORS_H_
