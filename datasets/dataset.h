// The canonical dataset directory: what every importer and generator writes and
// what `shardgnn partition` reads.
//
// Layout (documented for users in docs/formats.md):
//   manifest.json      name, counts, directed/undirected, feature dim and
//   dtype, classes, splits, checksums indptr.npy         int64 [N+1]   CSR row
//   offsets indices.npy        int64 [E]     CSR column indices: row v lists
//   the neighbors v aggregates from
//                                    (for an undirected graph both directions
//                                    are present)
//   features.npy       float32 [N, F]
//   labels.npy         int64 [N]     -1 = unlabeled
//   split_<name>.npy   int64 [n]     sorted node indices, one file per split
//   (train, valid, test)
//   edges_<name>.npy   int64 [m, 2]  link prediction only (edge_split.h):
//   node pairs of edge split <name> (train, valid, test, valid_neg, test_neg)
// Rows of the CSR are sorted and free of duplicates; self-loops are kept only
// if the importer was asked to.
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
// Split files are "split_<name>.npy".
std::string SplitFileName(const std::string& split);
// Edge split files (link prediction) are "edges_<name>.npy", int64 [m, 2].
std::string EdgeSplitFileName(const std::string& split);

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
  std::vector<int64_t> labels;  // N
  std::map<std::string, std::vector<NodeId>> splits;
  // Link prediction pairs per edge split, flattened (u0, v0, u1, v1, ...).
  std::map<std::string, std::vector<NodeId>> edge_splits;

  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
  int64_t feature_dim() const { return manifest.feature_dim; }
};

struct LoadDatasetOptions {
  bool verify_checksums = true;  // Compare every file against manifest.json.
  bool load_features =
      true;  // Partitioning counts edges first; features can be skipped.
};

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
