// ImportEdgeList: "src dst" text (or an edge_index .npy) plus features and
// labels as .npy files.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/import_util.h"
#include "datasets/internal/text_readers.h"

namespace shardgnn {
namespace {

// Labels as int64 from an int64 or int32 .npy of shape [n].
absl::StatusOr<std::vector<int64_t>> ReadLabelsNpy(
    const std::string& path, int64_t n, const std::string& features) {
  ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
  std::vector<int64_t> labels;
  if (header.dtype == NpyDtype::kInt32) {
    ASSIGN_OR_RETURN(NpyArray<int32_t> array, ReadNpy<int32_t>(path, 1));
    labels.assign(array.data.begin(), array.data.end());
  } else {
    ASSIGN_OR_RETURN(NpyArray<int64_t> array, ReadNpy<int64_t>(path, 1));
    labels = std::move(array.data);
  }
  if (static_cast<int64_t>(labels.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", labels.size(), " labels but ", features,
                     " has ", n, " rows"));
  }
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": label of node ", v, " is ", labels[v],
                       " (classes are >= 0, -1 = unlabeled)"));
    }
  }
  return labels;
}

absl::StatusOr<std::vector<NodeId>> ReadSplitNpy(const std::string& path,
                                                 int64_t n) {
  ASSIGN_OR_RETURN(NpyArray<int64_t> array, ReadNpy<int64_t>(path, 1));
  std::vector<NodeId> nodes = std::move(array.data);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= n) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": entry ", i,
                                                     " is node ", nodes[i],
                                                     ", outside [0, ", n, ")"));
    }
  }
  std::sort(nodes.begin(), nodes.end());
  auto repeat = std::adjacent_find(nodes.begin(), nodes.end());
  if (repeat != nodes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": node ", *repeat, " is listed twice"));
  }
  return nodes;
}

// Reads the float32 [N, F] features at `path` (described by `h`) in chunks:
// a NaN or infinite value is an error naming its node and column unless
// `allow`; then *nonfinite counts them.
absl::Status CheckFeaturesFinite(const std::string& path, const NpyHeader& h,
                                 bool allow, int64_t* nonfinite) {
  *nonfinite = 0;
  const int64_t total = h.NumElements();
  const int64_t dim = h.shape[1];
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  std::vector<float> chunk(
      static_cast<size_t>(std::min<int64_t>(total, int64_t{1} << 20)));
  for (int64_t done = 0; done < total;) {
    const int64_t take =
        std::min<int64_t>(total - done, static_cast<int64_t>(chunk.size()));
    if (!in.read(reinterpret_cast<char*>(chunk.data()),
                 static_cast<std::streamsize>(take * sizeof(float)))) {
      return absl::DataLossError(absl::StrCat(path, ": read failed"));
    }
    for (int64_t i = 0; i < take; ++i) {
      if (std::isfinite(chunk[i])) continue;
      if (!allow) {
        const int64_t at = done + i;
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ",
                         datasets_internal::NonfiniteFeatureError(
                             at / dim, at % dim + 1, chunk[i])));
      }
      ++*nonfinite;
    }
    done += take;
  }
  return absl::OkStatus();
}

// Whether `path` starts with the .npy magic string (whatever its name).
bool IsNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[6] = {};
  return in.read(magic, sizeof(magic)) &&
         std::string(magic, sizeof(magic)) == "\x93NUMPY";
}

// Edges from an integer .npy: [2, E] (PyG's edge_index: row 0 the sources,
// row 1 the targets) or [E, 2] (one "src dst" pair per row); [2, 2] is read
// as edge_index. int64 or int32; every ID in [0, num_nodes).
absl::Status ReadEdgeNpy(const std::string& path, int64_t num_nodes,
                         std::vector<NodeId>* src, std::vector<NodeId>* dst) {
  ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
  const bool integer =
      header.dtype == NpyDtype::kInt64 || header.dtype == NpyDtype::kInt32;
  const std::vector<int64_t>& shape = header.shape;
  const bool rows_are_ends = shape.size() == 2 && shape[0] == 2;
  if (!integer || shape.size() != 2 || (shape[0] != 2 && shape[1] != 2)) {
    std::string dims;
    for (int64_t d : shape) absl::StrAppend(&dims, dims.empty() ? "" : ", ", d);
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": expected an int64 edge array of shape [2, E] (edge_index) or "
        "[E, 2], found ",
        NpyDescr(header.dtype), " [", dims, "]"));
  }
  std::vector<int64_t> ids;
  if (header.dtype == NpyDtype::kInt32) {
    ASSIGN_OR_RETURN(NpyArray<int32_t> array, ReadNpy<int32_t>(path, 2));
    ids.assign(array.data.begin(), array.data.end());
  } else {
    ASSIGN_OR_RETURN(NpyArray<int64_t> array, ReadNpy<int64_t>(path, 2));
    ids = std::move(array.data);
  }
  const int64_t m = rows_are_ends ? shape[1] : shape[0];
  src->resize(m);
  dst->resize(m);
  for (int64_t e = 0; e < m; ++e) {
    const NodeId s = rows_are_ends ? ids[e] : ids[2 * e];
    const NodeId d = rows_are_ends ? ids[m + e] : ids[2 * e + 1];
    for (NodeId v : {s, d}) {
      if (v < 0 || v >= num_nodes) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": edge ", e, " (", s, " -> ", d, ") has node ",
                         v, ", outside [0, ", num_nodes, ")"));
      }
    }
    (*src)[e] = s;
    (*dst)[e] = d;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BuildSummary> ImportEdgeList(
    const EdgeListImportOptions& options, const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::string edges_path,
                   datasets_internal::FindInput(options.edges_path));
  ASSIGN_OR_RETURN(NpyHeader features, ReadNpyHeader(options.features_path));
  if (features.dtype != NpyDtype::kFloat32 || features.shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.features_path,
                     ": expected a float32 array of shape [nodes, features]"));
  }
  const int64_t n = features.shape[0];
  const int64_t dim = features.shape[1];
  if (n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.features_path, ": has 0 rows (the graph has no nodes)"));
  }
  int64_t nonfinite = 0;
  RETURN_IF_ERROR(CheckFeaturesFinite(options.features_path, features,
                                      options.allow_nonfinite, &nonfinite));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> labels,
      ReadLabelsNpy(options.labels_path, n, options.features_path));
  datasets_internal::Splits splits;
  if (options.split_paths.empty()) {
    if (options.split_fractions.size() != 3) {
      return absl::InvalidArgumentError(
          "split fractions: expected three (train, valid, test)");
    }
    splits =
        datasets_internal::RandomSplit(labels, {"train", "valid", "test"},
                                       options.split_fractions, options.seed);
  } else {
    for (const auto& [name, path] : options.split_paths) {
      ASSIGN_OR_RETURN(splits[name], ReadSplitNpy(path, n));
    }
  }
  BuildSummary summary;
  std::vector<NodeId> src, dst;
  if (IsNpyFile(edges_path)) {
    RETURN_IF_ERROR(ReadEdgeNpy(edges_path, n, &src, &dst));
  } else {
    RETURN_IF_ERROR(datasets_internal::ReadEdgeText(
        edges_path, datasets_internal::EdgeSeparator::kAuto, n, &src, &dst));
  }
  summary.input_edges = static_cast<int64_t>(src.size());
  if (src.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(edges_path, ": the graph has no edges"));
  }

  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();
  const datasets_internal::CsrOptions csr =
      datasets_internal::CsrOptionsFor(options.edges);
  ASSIGN_OR_RETURN(
      datasets_internal::CsrResult result,
      datasets_internal::WriteCsr(n, std::move(src), std::move(dst), csr, dir));
  // The features file is already a valid float32 [N, F] .npy: copy it as is.
  std::error_code ec;
  std::filesystem::copy_file(options.features_path,
                             JoinPath(dir, kFeaturesFile), ec);
  if (ec) {
    return absl::ResourceExhaustedError(
        absl::StrCat("copying ", options.features_path, ": ", ec.message()));
  }
  RETURN_IF_ERROR(datasets_internal::WriteLabelsAndSplits(dir, labels, splits));

  DatasetManifest manifest;
  manifest.name = options.name.empty()
                      ? datasets_internal::DefaultName(edges_path)
                      : options.name;
  manifest.num_nodes = n;
  manifest.num_edges = result.num_edges;
  manifest.directed = !options.edges.undirected;
  manifest.feature_dim = dim;
  int64_t max_label = -1;
  for (int64_t label : labels) max_label = std::max(max_label, label);
  manifest.num_classes = max_label + 1;
  for (const auto& [name, nodes] : splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.source =
      absl::StrCat("imported from edge list ", edges_path, " with features ",
                   options.features_path, " and labels ", options.labels_path,
                   options.edges.undirected ? "; reverse edges added" : "",
                   options.split_paths.empty()
                       ? absl::StrCat("; random split with seed ", options.seed)
                       : "; split from .npy files");
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  datasets_internal::NoteNonfiniteFeatures(nonfinite, &summary);
  datasets_internal::WarnIfOneDirectional(
      datasets_internal::kImportUndirectedFix, &summary);
  return summary;
}

}  // namespace shardgnn
