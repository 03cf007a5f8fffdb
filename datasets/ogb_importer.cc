// ImportOgb: the OGB raw node-property layout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/import_util.h"
#include "datasets/internal/text_readers.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using datasets_internal::FindInput;

// The one count in num-node-list.csv / num-edge-list.csv.
absl::StatusOr<int64_t> ReadCount(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values,
                   datasets_internal::ReadIntColumn(path));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected one count, found ", values.size(),
        " (only single-graph node-property datasets are supported)"));
  }
  if (values[0] < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": negative count ", values[0]));
  }
  return values[0];
}

// The split directory to use: options.split, or the only one under split/.
absl::StatusOr<std::string> FindSplitDir(const OgbImportOptions& options) {
  std::string root = JoinPath(options.input_dir, "split");
  std::error_code ec;
  if (!options.split.empty()) {
    std::string dir = JoinPath(root, options.split);
    if (!fs::is_directory(dir, ec)) {
      return absl::NotFoundError(
          absl::StrCat(dir, ": split directory not found"));
    }
    return dir;
  }
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(
        absl::StrCat(root,
                     ": directory not found (OGB layout needs "
                     "split/<name>/{train,valid,test}.csv.gz)"));
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    return absl::NotFoundError(
        absl::StrCat(root,
                     ": holds no split directory (OGB layout needs "
                     "split/<name>/{train,valid,test}.csv.gz)"));
  }
  if (names.size() > 1) {
    // OgbImportOptions::split is `dataset import --split-name`.
    return absl::InvalidArgumentError(absl::StrCat(
        root, ": holds ", names.size(), " split directories (",
        absl::StrJoin(names, ", "), "); name one with --split-name"));
  }
  return JoinPath(root, names[0]);
}

}  // namespace

absl::StatusOr<BuildSummary> ImportOgb(const OgbImportOptions& options,
                                       const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  const std::string raw = JoinPath(options.input_dir, "raw");
  std::error_code ec;
  if (!fs::is_directory(raw, ec)) {
    return absl::NotFoundError(absl::StrCat(raw, ": directory not found (is ",
                                            options.input_dir,
                                            " an OGB raw layout?)"));
  }
  ASSIGN_OR_RETURN(std::string nodes_path,
                   FindInput(JoinPath(raw, "num-node-list.csv.gz")));
  ASSIGN_OR_RETURN(std::string count_path,
                   FindInput(JoinPath(raw, "num-edge-list.csv.gz")));
  ASSIGN_OR_RETURN(std::string edge_path,
                   FindInput(JoinPath(raw, "edge.csv.gz")));
  ASSIGN_OR_RETURN(std::string feat_path,
                   FindInput(JoinPath(raw, "node-feat.csv.gz")));
  ASSIGN_OR_RETURN(std::string label_path,
                   FindInput(JoinPath(raw, "node-label.csv.gz")));
  ASSIGN_OR_RETURN(std::string split_dir, FindSplitDir(options));
  std::map<std::string, std::string> split_paths;
  for (const char* name : {"train", "valid", "test"}) {
    ASSIGN_OR_RETURN(
        split_paths[name],
        FindInput(JoinPath(split_dir, absl::StrCat(name, ".csv.gz"))));
  }
  ASSIGN_OR_RETURN(int64_t n, ReadCount(nodes_path));
  ASSIGN_OR_RETURN(int64_t m, ReadCount(count_path));
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(nodes_path, ": the graph has no nodes"));
  }

  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();

  // Feature rows stream into features.npy on a second thread. A failure on
  // either side stops the other.
  std::atomic<bool> cancel{false};
  absl::StatusOr<int64_t> dim = int64_t{0};
  int64_t nonfinite = 0;
  std::thread feature_thread([&] {
    dim = datasets_internal::StreamFeatureRows(
        feat_path, n, JoinPath(dir, kFeaturesFile), &cancel,
        options.allow_nonfinite, &nonfinite);
    if (!dim.ok()) cancel = true;
  });
  std::vector<NodeId> src, dst;
  std::vector<int64_t> labels;
  datasets_internal::Splits splits;
  // This thread reads labels and splits (small, so bad ones fail fast), then
  // the edges, and builds the CSR while the feature rows may still stream.
  datasets_internal::CsrResult result;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(labels, datasets_internal::ReadLabelColumn(label_path, n));
    for (const auto& [name, path] : split_paths) {
      ASSIGN_OR_RETURN(splits[name], datasets_internal::ReadSplitText(path, n));
    }
    // The count is only a hint (the file is checked against it below).
    src.reserve(std::min<int64_t>(m, int64_t{1} << 28));
    dst.reserve(std::min<int64_t>(m, int64_t{1} << 28));
    RETURN_IF_ERROR(datasets_internal::ReadEdgeText(
        edge_path, datasets_internal::EdgeSeparator::kComma, n, &src, &dst));
    if (static_cast<int64_t>(src.size()) != m) {
      return absl::InvalidArgumentError(absl::StrCat(edge_path, ": has ",
                                                     src.size(), " edges but ",
                                                     count_path, " says ", m));
    }
    if (m == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(edge_path, ": the graph has no edges"));
    }
    const datasets_internal::CsrOptions csr =
        datasets_internal::CsrOptionsFor(options.edges);
    ASSIGN_OR_RETURN(result, datasets_internal::WriteCsr(
                                 n, std::move(src), std::move(dst), csr, dir));
    return datasets_internal::WriteLabelsAndSplits(dir, labels, splits);
  }();
  if (!status.ok()) cancel = true;
  feature_thread.join();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(dim.status());

  BuildSummary summary;
  summary.out_dir = out_dir;
  summary.input_edges = m;
  DatasetManifest& manifest = summary.manifest;
  manifest.name = options.name.empty()
                      ? datasets_internal::DefaultName(options.input_dir)
                      : options.name;
  manifest.num_nodes = n;
  manifest.num_edges = result.num_edges;
  manifest.directed = !options.edges.undirected;
  manifest.feature_dim = *dim;
  int64_t max_label = -1;
  for (int64_t label : labels) max_label = std::max(max_label, label);
  manifest.num_classes = max_label + 1;
  for (const auto& [name, nodes] : splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.source =
      absl::StrCat("imported from the OGB raw layout at ", options.input_dir,
                   " (split ", fs::path(split_dir).filename().string(), ")",
                   options.edges.undirected ? "; reverse edges added" : "");
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  datasets_internal::NoteNonfiniteFeatures(nonfinite, &summary);
  datasets_internal::WarnIfOneDirectional(
      datasets_internal::kImportUndirectedFix, &summary);
  return summary;
}

}  // namespace shardgnn
