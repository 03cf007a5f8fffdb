// PartitionDataset: the file-based entry point. Kept apart from
// partition.cc so that users of PartitionInMemory need not link the dataset
// loader.
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "partition/internal/run.h"
#include "partition/partition.h"

namespace shardgnn {

namespace {

// Reads one array of the dataset, checking it against the manifest's
// checksum (if asked) and the shape the manifest implies.
template <typename T>
absl::StatusOr<std::vector<T>> ReadChecked(const std::string& dir,
                                           const std::string& file,
                                           const DatasetManifest& manifest,
                                           const PartitionOptions& options,
                                           const std::vector<int64_t>& shape) {
  const std::string path = JoinPath(dir, file);
  if (options.verify_checksums) {
    auto it = manifest.files.find(file);
    if (it == manifest.files.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          JoinPath(dir, kDatasetManifestFile), ": has no checksum for ", file));
    }
    ASSIGN_OR_RETURN(std::string sum, ChecksumFile(path));
    if (sum != it->second) {
      return absl::DataLossError(
          absl::StrCat(path, ": checksum ", sum, " does not match ", it->second,
                       " in the manifest (file damaged or replaced)"));
    }
  }
  ASSIGN_OR_RETURN(NpyArray<T> array,
                   ReadNpy<T>(path, static_cast<int>(shape.size())));
  if (array.shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape disagrees with the manifest"));
  }
  return std::move(array.data);
}

}  // namespace

absl::StatusOr<PartitionManifest> PartitionDataset(
    const std::string& dataset_dir, const std::string& out_dir,
    const PartitionOptions& options, PartitionTiming* timing) {
  namespace fs = std::filesystem;
  PartitionTiming local;
  if (timing == nullptr) timing = &local;
  *timing = {};
  // Cheap checks first, so that a typo does not cost a multi-GB load.
  std::error_code ec;
  if (!fs::is_directory(dataset_dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat(dataset_dir, ": dataset directory does not exist"));
  }
  if (fs::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        out_dir, ": output already exists; remove it or choose another path"));
  }
  if (options.num_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--parts must be at least 1 (got ", options.num_parts, ")"));
  }

  // The manifest alone says whether K fits the graph.
  ASSIGN_OR_RETURN(DatasetManifest header, ReadDatasetManifest(dataset_dir));
  if (options.num_parts > header.num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parts ", options.num_parts, " is larger than ",
                     dataset_dir, "'s ", header.num_nodes, " nodes"));
  }

  auto start = std::chrono::steady_clock::now();
  LoadDatasetOptions load_options;
  load_options.verify_checksums = options.verify_checksums;
  // Features are read after METIS has freed its graph, to lower the peak.
  // Typed datasets (features per type, no features.npy) load whole.
  const bool whole = header.typed();
  load_options.load_features = whole;
  ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(dataset_dir, load_options));
  timing->load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  timing->peak_rss_after_load = partition_internal::PeakRssBytes();

  // METIS's working memory is the peak of the whole run: keep the int64
  // neighbor lists (which METIS does not need, having its own int32 copy)
  // and the feature matrix out of memory meanwhile, and read them after.
  partition_internal::PipelineHooks hooks;
  if (whole) {
    absl::StatusOr<PartitionManifest> manifest =
        partition_internal::RunPartition(dataset, out_dir, options, hooks,
                                         timing);
    if (!manifest.ok()) {
      return Annotate(manifest.status(),
                      absl::StrCat("partitioning ", dataset_dir));
    }
    return manifest;
  }
  bool released = false;
  hooks.release_topology = [&] {
    dataset.indices = std::vector<NodeId>();
    released = true;
  };
  hooks.load_rest = [&]() -> absl::Status {
    if (released) {
      ASSIGN_OR_RETURN(
          dataset.indices,
          ReadChecked<NodeId>(dataset_dir, kIndicesFile, dataset.manifest,
                              options, {dataset.manifest.num_edges}));
    }
    ASSIGN_OR_RETURN(dataset.features,
                     ReadChecked<float>(
                         dataset_dir, kFeaturesFile, dataset.manifest, options,
                         {dataset.num_nodes(), dataset.manifest.feature_dim}));
    return absl::OkStatus();
  };
  absl::StatusOr<PartitionManifest> manifest = partition_internal::RunPartition(
      dataset, out_dir, options, hooks, timing);
  if (!manifest.ok()) {
    return Annotate(manifest.status(),
                    absl::StrCat("partitioning ", dataset_dir));
  }
  return manifest;
}

}  // namespace shardgnn
