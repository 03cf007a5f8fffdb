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
  load_options.load_features = false;
  ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(dataset_dir, load_options));
  timing->load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  timing->peak_rss_after_load = partition_internal::PeakRssBytes();

  auto load_features = [&]() -> absl::Status {
    auto feature_start = std::chrono::steady_clock::now();
    const std::string path = JoinPath(dataset_dir, kFeaturesFile);
    if (options.verify_checksums) {
      auto it = dataset.manifest.files.find(kFeaturesFile);
      if (it == dataset.manifest.files.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(JoinPath(dataset_dir, kDatasetManifestFile),
                         ": has no checksum for ", kFeaturesFile));
      }
      ASSIGN_OR_RETURN(std::string sum, ChecksumFile(path));
      if (sum != it->second) {
        return absl::DataLossError(absl::StrCat(
            path, ": checksum ", sum, " does not match ", it->second,
            " in the manifest (file damaged or replaced)"));
      }
    }
    ASSIGN_OR_RETURN(NpyArray<float> features, ReadNpy<float>(path, 2));
    if (features.shape[0] != dataset.num_nodes() ||
        features.shape[1] != dataset.manifest.feature_dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": shape [", features.shape[0], ", ", features.shape[1],
          "] disagrees with the manifest's ", dataset.num_nodes(), " nodes x ",
          dataset.manifest.feature_dim, " features"));
    }
    dataset.features = std::move(features.data);
    timing->load_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      feature_start)
            .count();
    return absl::OkStatus();
  };
  absl::StatusOr<PartitionManifest> manifest = partition_internal::RunPartition(
      dataset, out_dir, options, load_features, timing);
  if (!manifest.ok()) {
    return Annotate(manifest.status(),
                    absl::StrCat("partitioning ", dataset_dir));
  }
  return manifest;
}

}  // namespace shardgnn
