// Importers: turn graph data users already have into a canonical dataset
// directory (see dataset.h).
//
//   ImportOgb       OGB raw node-property layout (ogbn-arxiv, ogbn-products,
//                   the bundled graphs in datasets/)
//   ImportLinqs     LINQS .content / .cites (Cora, Citeseer, Pubmed in their
//                   original form)
//   ImportEdgeList  "src dst" text or edge_index.npy, plus features and labels
//                   as .npy files
//
// Every input may be plain text or gzip (detected from the bytes). Edges are
// parsed straight into int64 arrays and turned into CSR by counting sort (or,
// for an edge list or OGB folder larger than memory, sorted on disk under a
// memory limit: OutOfCoreOptions); OGB feature rows are streamed into
// features.npy as they are read, so an ogbn-products-sized input is never held
// as text or as a whole feature matrix.
// An input edge "src dst" means messages flow src -> dst: it is stored in dst's
// CSR row (the neighbors dst aggregates from); with `undirected` also in src's.
// Rows come out sorted; duplicate edges are always removed and self-loops
// dropped unless asked to keep them, and the counts are reported in the
// returned summary, with the nodes left without neighbors (per split too) and
// a warning when a graph stored one-directional looks like an undirected one
// listed once per edge (few edges with their reverse, or many train nodes that
// aggregate from nothing). The output is built in a temporary directory beside
// `out_dir` and renamed when complete: on any error nothing is left behind, and
// `out_dir` must not exist. Errors name the input file and, for text, the line.
// A NaN or infinite feature value fails the import, naming the file, the node
// and the column, unless `allow_nonfinite` is set: then the values are kept
// and counted in the summary (BuildSummary::nonfinite_features, a warning).
// Long steps print progress lines (common/progress.h). Thread-compatible.
#ifndef SHARDGNN_DATASETS_IMPORTERS_H_
#define SHARDGNN_DATASETS_IMPORTERS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/class_split.h"
#include "datasets/summary.h"

namespace shardgnn {

// Edge cleaning shared by all importers.
struct EdgeOptions {
  bool undirected = false;  // Store every edge in both directions.
  bool keep_self_loops =
      false;  // Otherwise (u, u) edges are dropped and counted.
};

// Building the CSR out of core (`dataset import --memory-limit`), for edge
// lists larger than memory: edges are read in chunks, sorted into runs on
// disk in the output's staging directory and merged
// (datasets/internal/external_csr.h). The output, the summary's counts and
// every error are the in-memory import's; the summary notes the runs. Labels,
// splits and N bits per node stay in memory, features are streamed. Too small
// a limit for what the process already holds is an error saying so; so is a
// graph of more than 2^32 nodes.
struct OutOfCoreOptions {
  // Nonzero: build out of core so that the process's resident memory stays
  // under about this many bytes.
  int64_t memory_limit = 0;
  // Tests: entries per sorted run and per merge read buffer, replacing what
  // memory_limit allows (0: from it).
  int64_t run_entries = 0;
  int64_t read_buffer_entries = 0;
};

struct OgbImportOptions {
  std::string input_dir;  // Holds raw/ and split/.
  // Which split/<name>/ to use (`dataset import --split-name`); empty: the
  // only one there (an error naming them if there are several).
  std::string split;
  // Given: a per-class random split of the labeled nodes (class_split.h)
  // instead of split/, which need not exist; raw/node-label.csv must.
  std::optional<ClassSplitOptions> class_split;
  EdgeOptions edges;
  std::string name;  // Dataset name; empty: the input directory's name.
  bool allow_nonfinite = false;  // Keep NaN/infinite features (see above).
  uint64_t seed = 0;  // Of the negatives an edge split does not give.
  // Out of core for the node-property layout; refused with edge features
  // (raw/edge-feat.csv) or a link prediction split, both built in memory.
  OutOfCoreOptions out_of_core;
};

// Reads raw/num-node-list.csv, raw/num-edge-list.csv, raw/edge.csv ("src,dst"),
// raw/node-feat.csv (one row of comma-separated floats per node),
// raw/node-label.csv (one label per node; "nan" = unlabeled) and
// split/<name>/{train,valid,test}.csv (one node index per line), each .csv or
// .csv.gz.
//
// A link prediction split (OGB's ogbl-* layout, as CSV) has "src,dst" lines
// in split/<name>/{train,valid,test}.csv and optionally valid_neg.csv and
// test_neg.csv (shared negative pairs); node-label.csv is then optional. The
// graph is raw/edge.csv without the valid and test positives; the pairs become
// the dataset's edge splits (datasets/edge_split.h ApplyGivenEdgeSplit, missing
// negatives drawn with `seed`).
absl::StatusOr<BuildSummary> ImportOgb(const OgbImportOptions& options,
                                       const std::string& out_dir);

// Whether the split ImportOgb would use holds edges (link prediction) rather
// than nodes. Fails as ImportOgb would on a missing file or split directory.
absl::StatusOr<bool> OgbSplitHoldsEdges(const OgbImportOptions& options);

struct LinqsImportOptions {
  std::string content_path;  // "<id> <features...> <class name>", tab- or
                             // space-separated.
  std::string
      cites_path;  // "<cited id> <citing id>": the edge citing -> cited.
  // Citation graphs are used undirected by default.
  EdgeOptions edges = {/*undirected=*/true, /*keep_self_loops=*/false};
  // Cites lines naming a paper missing from .content (Citeseer has some): an
  // error unless skipped.
  bool skip_unknown_ids = false;
  // Planetoid-style seeded stratified split.
  int64_t train_per_class = 20;
  int64_t num_valid = 500;
  int64_t num_test = 1000;
  uint64_t seed = 0;
  // Given: a per-class random split (class_split.h) instead.
  std::optional<ClassSplitOptions> class_split;
  std::string name;              // Empty: the .content file's base name.
  bool allow_nonfinite = false;  // Keep NaN/infinite features (see above).
};

// Node i is the i-th line of .content; classes are numbered in sorted order of
// their names.
absl::StatusOr<BuildSummary> ImportLinqs(const LinqsImportOptions& options,
                                         const std::string& out_dir);

struct EdgeListImportOptions {
  // "src dst" per line (space, tab or comma; '#' and '%' lines are
  // comments; a first line of column names is skipped and noted), or a .npy
  // (recognized by its content) of int64 or int32 IDs shaped [2, E] (PyG's
  // edge_index: sources, then targets) or [E, 2].
  std::string edges_path;
  // float32 or float64 .npy [N, F] (float64 is stored as float32, noted; a
  // value beyond float32's range is an error); N defines the node count.
  std::string features_path;
  std::string labels_path;  // int64 or int32 .npy [N]; -1 = unlabeled.
  // Optional split name -> .npy of node indices (int64 or int32) or a bool
  // mask [N] (PyG's train_mask). Empty: a seeded random split of the labeled
  // nodes with `split_fractions` (train, valid, test).
  std::map<std::string, std::string> split_paths;
  std::vector<double> split_fractions = {0.1, 0.1, 0.8};
  uint64_t seed = 0;
  // Given (and split_paths empty): a per-class random split (class_split.h)
  // instead of split_fractions.
  std::optional<ClassSplitOptions> class_split;
  EdgeOptions edges;
  std::string name;              // Empty: the edge file's base name.
  bool allow_nonfinite = false;  // Keep NaN/infinite features (see above).
  OutOfCoreOptions out_of_core;
};

absl::StatusOr<BuildSummary> ImportEdgeList(
    const EdgeListImportOptions& options, const std::string& out_dir);

// Typed (heterogeneous) graphs: the output is a typed dataset (dataset.h,
// "Typed (heterogeneous) datasets"), built in memory by BuildTypedGraph
// (typed_graph.h). Both importers check every ID against its type's count and
// every feature row against its type's width, naming the file and line.

struct OgbHeteroImportOptions {
  std::string input_dir;  // Holds raw/ and split/.
  // Which split/<name>/ to use; empty: the only one there.
  std::string split;
  // Given: a per-class random split of the target types' labeled nodes
  // (class_split.h; classes numbered as in the labels) instead of split/,
  // which need not exist.
  std::optional<ClassSplitOptions> class_split;
  bool add_reverse = false;  // TypedGraphOptions::add_reverse.
  bool keep_self_loops = false;
  std::string name;  // Empty: the input directory's name.
  bool allow_nonfinite = false;
};

// OGB's heterogeneous raw layout (ogbn-mag), each file .csv or .csv.gz:
// raw/num-node-dict.csv (a line of type names, a line of their counts),
// raw/relations/<src>___<rel>___<dst>/edge.csv ("src,dst" in type-local
// IDs), num-edge-list.csv (the edge count), and optionally edge_reltype.csv
// (kept as a 1-wide edge feature when it varies) and edge-feat.csv (rows of
// floats: the relation's edge features); raw/node-feat/<type>/node-feat.csv
// (a type's feature rows; types without have none), raw/node-label/<type>/
// node-label.csv (the target types' labels), split/<name>/<type>/{train,valid,
// test}.csv (type-local node indices of the target types).
absl::StatusOr<BuildSummary> ImportOgbHetero(
    const OgbHeteroImportOptions& options, const std::string& out_dir);

struct HgbImportOptions {
  std::string input_dir;  // node.dat, link.dat, label.dat, label.dat.test.
  bool add_reverse = false;
  bool keep_self_loops = false;
  std::string name;  // Empty: the input directory's name.
  bool allow_nonfinite = false;
  // HGB's protocol: label.dat is split at random into train and validation
  // (this fraction to validation, seeded); label.dat.test is the test set.
  double valid_fraction = 0.2;
  uint64_t seed = 0;
  // Given: a per-class random split (class_split.h) of every labeled node of
  // label.dat and label.dat.test together instead; refused for multi-label
  // data (a node of several classes belongs to no one class).
  std::optional<ClassSplitOptions> class_split;
};

// The Heterogeneous Graph Benchmark's layout (HGB, Lv et al. 2021), tab-
// separated: node.dat "id<TAB>name<TAB>type[<TAB>f1,f2,...]" (global IDs, each
// type's features of one width or absent), link.dat "src<TAB>dst<TAB>link
// type<TAB>weight" (src -> dst; a relation per link type; weights that are
// not all 1 kept as a 1-wide edge feature), label.dat and label.dat.test
// "id<TAB>name<TAB>type<TAB>label" (comma-separated labels: a multi-label
// set), and the optional info.dat and meta.dat (counts checked when given).
absl::StatusOr<BuildSummary> ImportHgb(const HgbImportOptions& options,
                                       const std::string& out_dir);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_IMPORTERS_H_
