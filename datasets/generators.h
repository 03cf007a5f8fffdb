// Synthetic datasets of any size, written as canonical dataset directories (see
// dataset.h).
//
//   kSbm   stochastic block model: C equal-probability classes; each
//          undirected edge joins two nodes of the same class with
//          probability `homophily`, else nodes of two different classes.
//          Degrees are near-Poisson.
//   kRmat  R-MAT power law (a, b, c, d = 0.57, 0.19, 0.19, 0.05): heavily
//          skewed degrees. Classes are planted communities: a fraction
//          `homophily` of the edges have their second end moved to a node of
//          the first end's class with about the same R-MAT weight, so the
//          skew survives and labels stay learnable. Node IDs are shuffled
//          (seeded) so that high-degree nodes are not all at the front.
//
// In both, features are the class centroid (a seeded Gaussian vector) plus
// Gaussian noise, scaled to about unit variance; the default noise makes a
// node's own features a weak signal and its neighborhood's a strong one, so a
// GNN clearly beats an MLP. Graphs are undirected (both directions stored),
// free of self-loops and duplicates; every node is labeled and split at random
// into train/valid/test.
//
//   kHeteroSbm  a typed academic graph (dataset.h, "Typed (heterogeneous)
//          datasets"). Node types, in this order of global IDs: paper (50% of
//          num_nodes), author (35%), venue (5%) and field (the rest, about
//          10%), each at least num_classes. Relations author/writes/paper,
//          paper/cites/paper, paper/published_in/venue and
//          paper/has_topic/field, each with its reverse "rev_<relation>"
//          (so every type receives messages). Every node has a hidden class
//          (balanced, in random order); only papers are labeled (target type
//          "paper") and split. A paper of class c is published in one venue,
//          has 2 topics (fields), cites papers and is written by authors,
//          each end drawn from the nodes of class c with probability
//          `homophily`, else from another class. Papers have features (their
//          class centroid plus noise, as above, feature_dim wide); authors
//          have features of their own class's centroid plus noise,
//          ceil(feature_dim / 2) wide; venues and fields have none. So a
//          paper's label shows weakly in its features and strongly in its
//          typed neighborhood (a typed GNN beats an MLP). avg_degree: as for
//          kSbm, num_nodes * avg_degree / 2 edges are drawn and each is
//          stored both ways; one venue and 2 topics per paper come first and
//          the rest is split evenly between cites and writes (each at least
//          one per paper: citing paper and written paper go round the papers
//          in turn; an author may write no paper). Built in memory: about
//          64 bytes per stored edge (edge lists and the CSR being sorted),
//          the features, and up to 8 bytes per value of edge features: at
//          1M nodes and 10M stored edges a peak of about 640 MB (870 MB with
//          16-wide edge features), in about 2 s (4 s) on one core.
//
// Edge features (edge_feature_dim D > 0), on any kind: labels are then
// predictable only through the edge features. Node features carry no class
// (standard normal noise), edges join classes at chance (the homophily
// option is used for the edge features instead), and a fraction `homophily`
// of the edges carry their destination's class in their D values (a class
// centroid in D dimensions plus noise, feature_noise as above); the rest
// carry noise alone. One edge is a weak hint, the mean over a node's incoming
// edges a strong one. kSbm/kRmat: edge_features.npy (row e = CSR entry e, the
// destination being the row's node), streamed after the CSR. kHeteroSbm:
// paper/cites/paper and rev_cites have D-wide edge features, the other
// relations none; every other node feature and relation is then class-blind.
//
// Deterministic: the same options (seed included) give byte-identical files
// whatever the thread count. Memory (kSbm, kRmat): the edge arrays, the CSR
// and a few feature chunks; features and edge features are streamed to disk.
// The output is built in a temporary directory and renamed when complete;
// `out_dir` must not exist. Thread-compatible.
#ifndef SHARDGNN_DATASETS_GENERATORS_H_
#define SHARDGNN_DATASETS_GENERATORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/summary.h"

namespace shardgnn {

enum class GraphKind { kSbm, kRmat, kHeteroSbm };

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
  // Fraction of edges inside a class; with edge features, of the edges
  // carrying their destination's class (see the top of this file).
  double homophily = 0.8;
  // Noise standard deviation relative to the centroid scale; 1.0 gives an MLP
  // on raw features a weak signal.
  double feature_noise = 1.0;
  // Width of the edge features; 0: none (see the top of this file).
  int64_t edge_feature_dim = 0;
  int threads = 2;   // Worker threads; does not change the output.
  std::string name;  // Empty: the kind's name ("sbm", "rmat", "hetero-sbm").
};

// Fails with InvalidArgument on nonsensical options (no nodes, too few nodes
// for the degree or, for kHeteroSbm, for a type of each class; bad split;
// negative edge_feature_dim), with ResourceExhausted on a graph larger than
// this machine's memory or the output's free disk space, and with
// AlreadyExists if `out_dir` exists.
absl::StatusOr<BuildSummary> GenerateDataset(const GeneratorOptions& options,
                                             const std::string& out_dir);

// "sbm" / "rmat" / "hetero-sbm" <-> GraphKind.
absl::StatusOr<GraphKind> ParseGraphKind(const std::string& text);
const char* GraphKindName(GraphKind kind);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_GENERATORS_H_
