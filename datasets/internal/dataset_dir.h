// Helpers shared by the dataset writer, the importers and the generators:
// manifest.json encoding and the last step of building a canonical dataset
// directory (checksums + manifest) for writers that stream their arrays
// straight to files instead of holding a Dataset in memory. Not part of the
// public API.
#ifndef SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_
#define SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/file_util.h"
#include "datasets/dataset.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/import_util.h"
#include "datasets/summary.h"

namespace shardgnn::datasets_internal {

// manifest.json text for `manifest` (adds "format" and "version").
std::string ManifestToJson(const DatasetManifest& manifest);

// The array files a dataset with this manifest has, in a fixed order.
std::vector<std::string> DatasetFileNames(const DatasetManifest& manifest);

// Parses manifest.json text; `path` only names the file in errors.
absl::StatusOr<DatasetManifest> ManifestFromJson(const std::string& text,
                                                 const std::string& path);

// Computes the checksum of every array file in `dir` that a canonical
// dataset holds (indptr, indices, features, labels, one file per split in
// manifest.splits), stores them in manifest.files and writes manifest.json
// atomically. Files must already be complete.
absl::Status FinishDatasetDir(const std::string& dir, DatasetManifest manifest);

// The last step every importer and generator shares: FinishDatasetDir on the
// staging directory, the rename into place, and the rest of *summary (the
// output path, the manifest as written, the counts from the CSR build and,
// per split of `splits`, its nodes without neighbors, the time since `start`).
absl::Status CommitDatasetDir(StagingDir* staging, DatasetManifest manifest,
                              const CsrResult& csr, const Splits& splits,
                              std::chrono::steady_clock::time_point start,
                              BuildSummary* summary);

// Adds a warning to *summary when a graph stored one-directional looks like
// an undirected graph that lists each edge once: fewer than half of its edges
// have their reverse edge stored, or more than a quarter of its train nodes
// have no neighbor to aggregate from. `fix` ends the warning: how to store
// both directions with this importer. Call after CommitDatasetDir.
void WarnIfOneDirectional(absl::string_view fix, BuildSummary* summary);

// `fix` for the importers whose --undirected flag stores both directions.
inline constexpr absl::string_view kImportUndirectedFix =
    "if its edges are undirected, import with --undirected to store both "
    "directions";

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_
