// Helpers shared by the dataset writer, the importers and the generators:
// manifest.json encoding and the last step of building a canonical dataset
// directory (checksums + manifest) for writers that stream their arrays
// straight to files instead of holding a Dataset in memory. Not part of the
// public API.
#ifndef SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_
#define SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/file_util.h"
#include "datasets/dataset.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/summary.h"

namespace shardgnn::datasets_internal {

// manifest.json text for `manifest` (adds "format" and "version").
std::string ManifestToJson(const DatasetManifest& manifest);

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
// output path, the manifest as written, the counts from the CSR build, the
// time since `start`).
absl::Status CommitDatasetDir(StagingDir* staging, DatasetManifest manifest,
                              const CsrResult& csr,
                              std::chrono::steady_clock::time_point start,
                              BuildSummary* summary);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_DATASET_DIR_H_
