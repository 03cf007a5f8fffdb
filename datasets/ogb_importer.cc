// ImportOgb: the OGB raw node-property layout.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/line_reader.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/edge_split.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/external_csr.h"
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

// The raw files of an OGB layout.
struct OgbInputs {
  std::string nodes, edge_count, edges, features;
  std::string labels;         // Empty: no labels (every node -1).
  std::string edge_features;  // raw/edge-feat.csv.gz; empty: none.
  std::string split_dir;
  std::map<std::string, std::string> node_splits;  // Empty for edge splits.
};

// The first data line of `path` has two comma-separated fields: a split of
// edges (link prediction), not of nodes.
absl::StatusOr<bool> HoldsPairs(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  absl::string_view line;
  while (reader->Next(&line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    return absl::StrContains(text, ',');
  }
  RETURN_IF_ERROR(reader->status());
  return false;
}

absl::StatusOr<OgbInputs> FindOgbInputs(const OgbImportOptions& options,
                                        bool* edge_split) {
  const std::string raw = JoinPath(options.input_dir, "raw");
  std::error_code ec;
  if (!fs::is_directory(raw, ec)) {
    return absl::NotFoundError(absl::StrCat(raw, ": directory not found (is ",
                                            options.input_dir,
                                            " an OGB raw layout?)"));
  }
  OgbInputs in;
  ASSIGN_OR_RETURN(in.nodes, FindInput(JoinPath(raw, "num-node-list.csv.gz")));
  ASSIGN_OR_RETURN(in.edge_count,
                   FindInput(JoinPath(raw, "num-edge-list.csv.gz")));
  ASSIGN_OR_RETURN(in.edges, FindInput(JoinPath(raw, "edge.csv.gz")));
  ASSIGN_OR_RETURN(in.features, FindInput(JoinPath(raw, "node-feat.csv.gz")));
  absl::StatusOr<std::string> edge_features =
      FindInput(JoinPath(raw, "edge-feat.csv.gz"));
  if (edge_features.ok()) in.edge_features = *edge_features;
  absl::StatusOr<std::string> labels =
      FindInput(JoinPath(raw, "node-label.csv.gz"));
  if (options.class_split.has_value()) {
    // A per-class random split replaces split/, which is not read.
    *edge_split = false;
    if (!labels.ok()) {
      return absl::Status(
          labels.status().code(),
          absl::StrCat(labels.status().message(),
                       " (a per-class random split needs node labels)"));
    }
    in.labels = *labels;
    return in;
  }
  ASSIGN_OR_RETURN(in.split_dir, FindSplitDir(options));
  ASSIGN_OR_RETURN(std::string train,
                   FindInput(JoinPath(in.split_dir, "train.csv.gz")));
  ASSIGN_OR_RETURN(*edge_split, HoldsPairs(train));
  // Link prediction datasets (ogbl-*) have no node labels.
  if (labels.ok()) {
    in.labels = *labels;
  } else if (!*edge_split) {
    return labels.status();
  }
  if (!*edge_split) {
    for (const char* name : {"train", "valid", "test"}) {
      ASSIGN_OR_RETURN(
          in.node_splits[name],
          FindInput(JoinPath(in.split_dir, absl::StrCat(name, ".csv.gz"))));
    }
  }
  return in;
}

// Builds the dataset directory `out_dir` from `in`: the whole graph of
// raw/edge.csv, with the node splits in `in` (none for an edge split) and
// the edges' features (raw/edge-feat.csv: row i for edge i, following it into
// the CSR, both ways for --undirected) unless `skip_edge_features`.
absl::StatusOr<BuildSummary> ImportOgbGraph(const OgbImportOptions& options,
                                            const OgbInputs& in,
                                            const std::string& out_dir,
                                            bool skip_edge_features = false) {
  auto start = std::chrono::steady_clock::now();
  const std::string& nodes_path = in.nodes;
  const std::string& count_path = in.edge_count;
  const std::string& edge_path = in.edges;
  const std::string& feat_path = in.features;
  const std::string& label_path = in.labels;
  const std::string& split_dir = in.split_dir;
  const std::map<std::string, std::string>& split_paths = in.node_splits;
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
  BuildSummary summary;
  // This thread reads labels and splits (small, so bad ones fail fast), then
  // the edges, and builds the CSR while the feature rows may still stream.
  datasets_internal::CsrResult result;
  int64_t edge_dim = 0, edge_nonfinite = 0;
  const bool edge_features = !in.edge_features.empty() && !skip_edge_features;
  absl::Status status = [&]() -> absl::Status {
    if (label_path.empty()) {
      labels.assign(static_cast<size_t>(n), -1);
    } else {
      ASSIGN_OR_RETURN(labels,
                       datasets_internal::ReadLabelColumn(label_path, n));
    }
    for (const auto& [name, path] : split_paths) {
      ASSIGN_OR_RETURN(splits[name], datasets_internal::ReadSplitText(path, n));
    }
    if (options.class_split.has_value()) {
      ASSIGN_OR_RETURN(splits, datasets_internal::MakeClassSplit(
                                   labels, *options.class_split, &summary.notes,
                                   &summary.warnings, label_path));
    }
    const datasets_internal::CsrOptions csr =
        datasets_internal::CsrOptionsFor(options.edges);
    if (options.out_of_core.memory_limit > 0) {
      ASSIGN_OR_RETURN(datasets_internal::ExternalCsrOptions ext,
                       datasets_internal::ImportOutOfCoreOptions(
                           options.out_of_core, n, csr, dir));
      ASSIGN_OR_RETURN(
          std::unique_ptr<datasets_internal::ExternalCsrBuilder> builder,
          datasets_internal::ExternalCsrBuilder::Create(n, ext));
      RETURN_IF_ERROR(datasets_internal::ForEachEdgeText(
          edge_path, datasets_internal::EdgeSeparator::kComma, n,
          [&](NodeId s, NodeId d) { return builder->Add(s, d); }));
      if (builder->edges_added() != m) {
        return absl::InvalidArgumentError(
            absl::StrCat(edge_path, ": has ", builder->edges_added(),
                         " edges but ", count_path, " says ", m));
      }
      if (m == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(edge_path, ": the graph has no edges"));
      }
      ASSIGN_OR_RETURN(result, builder->Finish(dir));
      summary.notes.push_back(datasets_internal::OutOfCoreNote(
          options.out_of_core, builder->stats()));
      return datasets_internal::WriteLabelsAndSplits(dir, labels, splits);
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
    datasets_internal::FloatRows rows;
    if (edge_features) {
      ASSIGN_OR_RETURN(rows,
                       datasets_internal::ReadFloatRows(
                           in.edge_features, m, /*edges=*/true, "the graph",
                           options.allow_nonfinite, &cancel, &edge_nonfinite));
      edge_dim = rows.dim;
    }
    std::vector<int64_t> origins;
    ASSIGN_OR_RETURN(result, datasets_internal::WriteCsr(
                                 n, std::move(src), std::move(dst), csr, dir,
                                 edge_features ? &origins : nullptr));
    if (edge_features) {
      // Row e of edge_features.npy: the features of the edge CSR entry e
      // came from.
      const auto d = static_cast<size_t>(edge_dim);
      std::vector<float> by_entry(origins.size() * d);
      for (size_t e = 0; e < origins.size(); ++e) {
        std::copy_n(rows.values.begin() + origins[e] * edge_dim, d,
                    by_entry.begin() + e * d);
      }
      RETURN_IF_ERROR(WriteNpy<float>(
          JoinPath(dir, kEdgeFeaturesFile),
          {static_cast<int64_t>(origins.size()), edge_dim}, by_entry));
    }
    return datasets_internal::WriteLabelsAndSplits(dir, labels, splits);
  }();
  if (!status.ok()) cancel = true;
  feature_thread.join();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(dim.status());

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
  manifest.edge_feature_dim = edge_dim;
  int64_t max_label = -1;
  for (int64_t label : labels) max_label = std::max(max_label, label);
  manifest.num_classes = max_label + 1;
  for (const auto& [name, nodes] : splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.source = absl::StrCat(
      "imported from the OGB raw layout at ", options.input_dir, " (split ",
      options.class_split.has_value() ? ClassSplitName(*options.class_split)
                                      : fs::path(split_dir).filename().string(),
      ")", options.edges.undirected ? "; reverse edges added" : "");
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  datasets_internal::NoteNonfiniteFeatures(nonfinite + edge_nonfinite,
                                           &summary);
  if (edge_dim > 0) {
    summary.notes.push_back(absl::StrCat(
        "edge features: ", edge_dim, " per edge from ", in.edge_features,
        " (edge_features.npy, a row per CSR entry)"));
  } else if (!in.edge_features.empty()) {
    summary.notes.push_back(absl::StrCat(
        in.edge_features,
        ": not imported with a link prediction split (the edge split does not "
        "carry edge features yet)"));
  }
  datasets_internal::WarnIfOneDirectional(
      datasets_internal::kImportUndirectedFix, &summary);
  return summary;
}

// Reads the pairs of split/<name>/<file> (.csv or .csv.gz), if present.
absl::Status ReadPairs(const std::string& split_dir, const std::string& name,
                       int64_t n, bool required, GivenEdgeSplit* given) {
  absl::StatusOr<std::string> path =
      FindInput(JoinPath(split_dir, absl::StrCat(name, ".csv.gz")));
  if (!path.ok()) return required ? path.status() : absl::OkStatus();
  std::vector<NodeId> src, dst;
  RETURN_IF_ERROR(datasets_internal::ReadEdgeText(
      *path, datasets_internal::EdgeSeparator::kComma, n, &src, &dst));
  std::vector<NodeId>& pairs = given->pairs[name];
  pairs.reserve(2 * src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    pairs.push_back(src[i]);
    pairs.push_back(dst[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> OgbSplitHoldsEdges(const OgbImportOptions& options) {
  bool edge_split = false;
  RETURN_IF_ERROR(FindOgbInputs(options, &edge_split).status());
  return edge_split;
}

absl::StatusOr<BuildSummary> ImportOgb(const OgbImportOptions& options,
                                       const std::string& out_dir) {
  bool edge_split = false;
  ASSIGN_OR_RETURN(OgbInputs in, FindOgbInputs(options, &edge_split));
  if (options.out_of_core.memory_limit > 0 && edge_split) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory-limit: ", in.split_dir,
        " is a link prediction split, which is applied in memory; import "
        "without --memory-limit"));
  }
  if (options.out_of_core.memory_limit > 0 && !in.edge_features.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory-limit: ", in.edge_features,
        ": edge features follow their edges into the CSR in memory; import "
        "without --memory-limit"));
  }
  if (!edge_split) return ImportOgbGraph(options, in, out_dir);
  // A link prediction split: the pairs first (bad ones fail fast), then the
  // whole graph under a temporary name, then the split dataset at out_dir
  // (whole or not at all).
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(out_dir, " already exists"));
  }
  ASSIGN_OR_RETURN(int64_t n, ReadCount(in.nodes));
  GivenEdgeSplit given;
  for (const char* name : {"train", "valid", "test"}) {
    RETURN_IF_ERROR(ReadPairs(in.split_dir, name, n, true, &given));
  }
  for (const char* name : {"valid_neg", "test_neg"}) {
    RETURN_IF_ERROR(ReadPairs(in.split_dir, name, n, false, &given));
  }
  const std::string whole =
      absl::StrCat(out_dir, ".before-edge-split-", getpid());
  absl::StatusOr<BuildSummary> built =
      ImportOgbGraph(options, in, whole, /*skip_edge_features=*/true);
  absl::StatusOr<EdgeSplitSummary> split =
      built.ok() ? [&]() -> absl::StatusOr<EdgeSplitSummary> {
    ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(whole));
    ASSIGN_OR_RETURN(EdgeSplitSummary s,
                     ApplyGivenEdgeSplit(given, options.seed, &dataset));
    RETURN_IF_ERROR(WriteDataset(dataset, out_dir));
    return s;
  }()
      : absl::StatusOr<EdgeSplitSummary>(built.status());
  fs::remove_all(whole, ec);
  if (!split.ok()) {
    return absl::Status(
        split.status().code(),
        absl::StrCat(in.split_dir, ": ", split.status().message()));
  }
  BuildSummary summary = *built;
  summary.out_dir = out_dir;
  summary.nodes_without_neighbors = split->nodes_without_neighbors;
  summary.split_nodes_without_neighbors.clear();
  ASSIGN_OR_RETURN(summary.manifest, ReadDatasetManifest(out_dir));
  summary.notes.push_back(absl::StrCat(
      "link prediction split ", fs::path(in.split_dir).filename().string(),
      ": ", split->train, " train / ", split->valid, " valid / ", split->test,
      " test pairs; ", split->removed_from_graph,
      " valid and test edges removed from the graph",
      given.pairs.count("valid_neg") && given.pairs.count("test_neg")
          ? "; negatives as given"
          : "; missing negatives drawn (as many as positives)"));
  return summary;
}

}  // namespace shardgnn
