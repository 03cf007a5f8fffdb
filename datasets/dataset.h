// The canonical dataset directory: what every importer and generator writes and
// what `shardgnn partition` reads.
//
// Layout (documented for users in docs/formats.md):
//   manifest.json      name, counts, directed/undirected, feature dim and
//                      dtype, classes, splits, node and edge types, checksums
//   indptr.npy         int64 [N+1]   CSR row offsets
//   indices.npy        int64 [E]     CSR column indices: row v lists the
//                      neighbors v aggregates from (for an undirected graph
//                      both directions are present)
//   features.npy       float32 [N, F]  (untyped datasets)
//   labels.npy         int64 [N]     -1 = unlabeled (multi-label datasets:
//                      [N, C] rows of 0/1, or of -1 for unlabeled nodes)
//   split_<name>.npy   int64 [n]     sorted node indices, one file per split
//                      (train, valid, test)
//   edges_<name>.npy   int64 [m, 2]  link prediction only (edge_split.h):
//                      node pairs of edge split <name> (train, valid, test,
//                      valid_neg, test_neg)
//   edge_features.npy  float32 [E, D]  optional (untyped datasets): row e is
//                      the features of CSR entry e
// Rows of the CSR are sorted and free of duplicates; self-loops are kept only
// if the importer was asked to.
//
// Typed (heterogeneous) datasets are the same directory with node and edge
// types (manifest.json "node_types", "edge_types"; an untyped dataset is the
// one-type case and lists none):
//   - node IDs are global: type t owns the contiguous range [offset_t,
//     offset_t + count_t), in the manifest's order of node_types (a node's ID
//     within its type, its type-local ID, is ID - offset_t);
//   - indptr/indices are the union of every relation's edges over global IDs;
//     edge_types.npy (int32 [E]) gives each CSR entry's relation (an index
//     into edge_types), and each row is sorted by (relation, neighbor) with no
//     (relation, neighbor) twice. An entry u in row v of relation r means
//     u -> v, u of r's source type and v of its destination type;
//   - features_<type>.npy (float32 [count_t, F_t]) for each type with
//     features (F_t > 0); no features.npy (feature_dim is 0);
//   - edge_features_<r>.npy (float32 [count_r, D_r]) for each relation r with
//     edge features: row k belongs to relation r's k-th entry in CSR order;
//   - labels and splits in global IDs; a labeled node is of one of
//     target_types.
//
// Dataset holds all of it in memory; for inputs larger than memory the
// importers stream straight to the files instead (see importers.h). Functions
// here are thread-compatible.
#ifndef SHARDGNN_DATASETS_DATASET_H_
#define SHARDGNN_DATASETS_DATASET_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"

namespace shardgnn {

inline constexpr char kDatasetManifestFile[] = "manifest.json";
inline constexpr char kIndptrFile[] = "indptr.npy";
inline constexpr char kIndicesFile[] = "indices.npy";
inline constexpr char kFeaturesFile[] = "features.npy";
inline constexpr char kLabelsFile[] = "labels.npy";
inline constexpr char kEdgeTypesFile[] = "edge_types.npy";
inline constexpr char kEdgeFeaturesFile[] = "edge_features.npy";
// A typed dataset's per-type features: "features_<type>.npy".
std::string NodeTypeFeaturesFileName(const std::string& type);
// A typed dataset's per-relation edge features: "edge_features_<r>.npy", r
// the relation's index in DatasetManifest::edge_types.
std::string EdgeTypeFeaturesFileName(int relation);
// Split files are "split_<name>.npy".
std::string SplitFileName(const std::string& split);
// Edge split files (link prediction) are "edges_<name>.npy", int64 [m, 2].
std::string EdgeSplitFileName(const std::string& split);

// A node type of a typed dataset.
struct NodeType {
  std::string name;  // [A-Za-z0-9_.-]+, unique among the node types.
  int64_t count = 0;
  int64_t feature_dim = 0;  // 0: the type has no features.
};

// A canonical edge type (src, relation, dst) of a typed dataset: messages
// flow from nodes of type src to nodes of type dst.
struct EdgeType {
  std::string src;
  std::string relation;  // [A-Za-z0-9_.-]+; the triple is unique.
  std::string dst;
  int64_t count = 0;        // Its CSR entries.
  int64_t feature_dim = 0;  // Of its edge features; 0: none.
};

// "src/relation/dst", how messages and fanouts name a relation.
std::string EdgeTypeKey(const EdgeType& type);

// Whether `name` may name a node type or relation: [A-Za-z0-9_.-]+ (it
// becomes part of file names).
bool IsValidTypeName(const std::string& name);

// What manifest.json says.
struct DatasetManifest {
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges =
      0;  // Entries of indices.npy (an undirected edge counts twice).
  bool directed = false;
  int64_t feature_dim = 0;
  std::string feature_dtype = "float32";
  int64_t num_classes = 0;
  std::map<std::string, int64_t> splits;  // split name -> node count
  // Link prediction (datasets/edge_split.h): split name ("train", "valid",
  // "test", "valid_neg", "test_neg") -> pair count. Empty for node tasks.
  std::map<std::string, int64_t> edge_splits;
  std::map<std::string, std::string> files;  // file name -> XXH64 hex checksum
  std::string source;  // Free text: where the data came from, how it was made.
  // Untyped datasets: the width of edge_features.npy; 0: none.
  int64_t edge_feature_dim = 0;
  // Typed datasets (see the top of this file); empty for untyped ones.
  std::vector<NodeType> node_types;
  std::vector<EdgeType> edge_types;
  // The node types that carry labels (typed datasets with labels).
  std::vector<std::string> target_types;
  // Multi-label targets: labels.npy is int64 [N, num_classes], each row all 0
  // or 1 (the node's set of classes) or all -1 (unlabeled).
  bool multilabel = false;

  bool typed() const { return !node_types.empty(); }
  // Typed datasets: the first global ID of node type `t` (an index into
  // node_types); its type's index for a global ID (-1 outside [0, N)).
  int64_t NodeTypeOffset(int t) const;
  int NodeTypeOf(int64_t node) const;
  // The index of the node type or relation named so; -1 if none.
  int FindNodeType(const std::string& name) const;
  int FindEdgeType(const std::string& src, const std::string& relation,
                   const std::string& dst) const;
};

absl::StatusOr<DatasetManifest> ReadDatasetManifest(const std::string& dir);

// XXH64 (16 hex digits) over what the manifest says about the data: counts,
// direction, feature dim and dtype, classes, splits and every file's checksum;
// not the name or the source text. Two dataset directories with the same
// content checksum hold the same data. Cheap: reads no array file (it trusts
// the manifest's checksums, which LoadDataset verifies).
std::string DatasetContentChecksum(const DatasetManifest& manifest);

// A whole dataset in memory.
struct Dataset {
  DatasetManifest manifest;
  std::vector<int64_t> indptr;  // N+1
  std::vector<NodeId> indices;  // E
  std::vector<float> features;  // N*F, row-major
  std::vector<int64_t> labels;  // N (multilabel: N * num_classes)
  std::map<std::string, std::vector<NodeId>> splits;
  // Link prediction pairs per edge split, flattened (u0, v0, u1, v1, ...).
  std::map<std::string, std::vector<NodeId>> edge_splits;
  // Typed datasets: each CSR entry's relation (E), and each node type's
  // features (count_t * F_t, row-major; empty for a type without).
  std::vector<int32_t> edge_types;
  std::vector<std::vector<float>> type_features;
  // Edge features, row-major: untyped datasets one matrix of E rows (or
  // none); typed ones one per relation of count_r rows (empty for a
  // relation without).
  std::vector<std::vector<float>> edge_features;

  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
  int64_t feature_dim() const { return manifest.feature_dim; }
};

struct LoadDatasetOptions {
  bool verify_checksums = true;  // Compare every file against manifest.json.
  bool load_features =
      true;  // Partitioning counts edges first; features can be skipped.
};

// FAILED_PRECONDITION naming the dataset (`where`: its directory, or empty)
// if it is typed or multi-label, which `what` ("partitioning", "training")
// does not take yet; OK otherwise.
absl::Status RequireUntyped(const DatasetManifest& manifest,
                            const std::string& where, const std::string& what);

// Loads and validates a canonical dataset directory: shapes agree with the
// manifest, indptr is monotone, every index is in [0, N), labels are in [-1,
// classes), split indices are in range. Errors name the file.
absl::StatusOr<Dataset> LoadDataset(const std::string& dir,
                                    const LoadDatasetOptions& options = {});

// Checks the in-memory invariants LoadDataset checks (used by writers before
// they commit).
absl::Status ValidateDataset(const Dataset& dataset);

// Writes `dataset` as a canonical directory at `out_dir`, which must not exist.
// The directory is built under a temporary name and renamed when complete;
// manifest counts and checksums are filled in from the data.
absl::Status WriteDataset(const Dataset& dataset, const std::string& out_dir);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_DATASET_H_
