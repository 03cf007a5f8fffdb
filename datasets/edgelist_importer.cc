// ImportEdgeList: "src dst" text (or an edge_index .npy) plus features and
// labels as .npy files.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/external_csr.h"
#include "datasets/internal/import_util.h"
#include "datasets/internal/text_readers.h"

namespace shardgnn {
namespace {

// The integers of the .npy at `path` (described by `header`; int64, or int32
// widened) of `ndim` dimensions; another dtype is an error naming it.
absl::StatusOr<std::vector<int64_t>> ReadIntegersNpy(const std::string& path,
                                                     const NpyHeader& header,
                                                     int ndim) {
  if (header.dtype == NpyDtype::kInt32) {
    ASSIGN_OR_RETURN(NpyArray<int32_t> array, ReadNpy<int32_t>(path, ndim));
    return std::vector<int64_t>(array.data.begin(), array.data.end());
  }
  ASSIGN_OR_RETURN(NpyArray<int64_t> array, ReadNpy<int64_t>(path, ndim));
  return std::move(array.data);
}

// Labels as int64 from an int64 or int32 .npy of shape [n].
absl::StatusOr<std::vector<int64_t>> ReadLabelsNpy(
    const std::string& path, int64_t n, const std::string& features) {
  ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
  ASSIGN_OR_RETURN(std::vector<int64_t> labels,
                   ReadIntegersNpy(path, header, 1));
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

// A split's nodes from a .npy of node indices (int64 or int32) or a bool
// mask of all `n` nodes (PyG's train_mask).
absl::StatusOr<std::vector<NodeId>> ReadSplitNpy(const std::string& path,
                                                 int64_t n) {
  ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
  std::vector<NodeId> nodes;
  if (header.dtype == NpyDtype::kBool) {
    ASSIGN_OR_RETURN(NpyArray<uint8_t> mask, ReadNpy<uint8_t>(path, 1));
    if (static_cast<int64_t>(mask.data.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a mask of ", mask.data.size(),
                       " entries, but the graph has ", n, " nodes"));
    }
    for (int64_t v = 0; v < n; ++v) {
      if (mask.data[v] != 0) nodes.push_back(v);
    }
    return nodes;
  }
  ASSIGN_OR_RETURN(nodes, ReadIntegersNpy(path, header, 1));
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

// Reads the [N, F] features at `path` (described by `h`, of element type T:
// float or double) in chunks and hands each chunk, as float32, to `sink` (may
// be null). A NaN or infinite value is an error naming its node and column
// unless `allow`; then *nonfinite counts them. A finite double beyond
// float32's range is always an error.
template <typename T>
absl::Status ReadFeaturesChecked(
    const std::string& path, const NpyHeader& h, bool allow, int64_t* nonfinite,
    const std::function<absl::Status(const float*, size_t)>& sink) {
  *nonfinite = 0;
  const int64_t total = h.NumElements();
  const int64_t dim = h.shape[1];
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  const size_t size =
      static_cast<size_t>(std::min<int64_t>(total, int64_t{1} << 20));
  std::vector<T> chunk(size);
  std::vector<float> narrow(std::is_same_v<T, float> ? 0 : size);
  for (int64_t done = 0; done < total;) {
    const int64_t take =
        std::min<int64_t>(total - done, static_cast<int64_t>(chunk.size()));
    if (!in.read(reinterpret_cast<char*>(chunk.data()),
                 static_cast<std::streamsize>(take * sizeof(T)))) {
      return absl::DataLossError(absl::StrCat(path, ": read failed"));
    }
    for (int64_t i = 0; i < take; ++i) {
      const T value = chunk[i];
      const int64_t at = done + i;
      if (!std::isfinite(value)) {
        if (!allow) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": ",
                           datasets_internal::NonfiniteFeatureError(
                               at / dim, at % dim + 1, value)));
        }
        ++*nonfinite;
      } else if (std::fabs(value) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": node ", at / dim, ", column ", at % dim + 1, ": ",
            static_cast<double>(value), " does not fit in float32 (at most ",
            std::numeric_limits<float>::max(), "); scale the features"));
      }
      if constexpr (!std::is_same_v<T, float>) {
        narrow[i] = static_cast<float>(value);
      }
    }
    if (sink) {
      const float* rows = nullptr;
      if constexpr (std::is_same_v<T, float>) {
        rows = chunk.data();
      } else {
        rows = narrow.data();
      }
      RETURN_IF_ERROR(sink(rows, static_cast<size_t>(take)));
    }
    done += take;
  }
  return absl::OkStatus();
}

// Checks the features at `path` (float32 or float64) as ReadFeaturesChecked
// does.
absl::Status CheckFeatures(const std::string& path, const NpyHeader& h,
                           bool allow, int64_t* nonfinite) {
  return h.dtype == NpyDtype::kFloat64
             ? ReadFeaturesChecked<double>(path, h, allow, nonfinite, nullptr)
             : ReadFeaturesChecked<float>(path, h, allow, nonfinite, nullptr);
}

// Writes the features at `path` to `out` as float32 [N, F]: a float32 file is
// copied as is, a float64 one converted (CheckFeatures passed on it).
absl::Status WriteFeatures(const std::string& path, const NpyHeader& h,
                           bool allow, const std::string& out) {
  if (h.dtype == NpyDtype::kFloat32) {
    std::error_code ec;
    std::filesystem::copy_file(path, out, ec);
    if (ec) {
      return absl::ResourceExhaustedError(
          absl::StrCat("copying ", path, ": ", ec.message()));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> writer,
                   NpyWriter::Create(out, NpyDtype::kFloat32, h.shape));
  int64_t nonfinite = 0;
  RETURN_IF_ERROR(ReadFeaturesChecked<double>(
      path, h, allow, &nonfinite, [&](const float* rows, size_t count) {
        return writer->Append(rows, count);
      }));
  return writer->Close();
}

// Whether `path` starts with the .npy magic string (whatever its name).
bool IsNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[6] = {};
  return in.read(magic, sizeof(magic)) &&
         std::string(magic, sizeof(magic)) == "\x93NUMPY";
}

// An integer .npy of edges: [2, E] (PyG's edge_index: row 0 the sources,
// row 1 the targets) or [E, 2] (one "src dst" pair per row); [2, 2] is read
// as edge_index. int64 or int32.
struct EdgeNpy {
  NpyHeader header;
  int64_t num_edges = 0;
  bool rows_are_ends = false;  // [2, E].
};

absl::StatusOr<EdgeNpy> OpenEdgeNpy(const std::string& path) {
  EdgeNpy edges;
  ASSIGN_OR_RETURN(edges.header, ReadNpyHeader(path));
  const NpyHeader& header = edges.header;
  const bool integer =
      header.dtype == NpyDtype::kInt64 || header.dtype == NpyDtype::kInt32;
  const std::vector<int64_t>& shape = header.shape;
  if (!integer || shape.size() != 2 || (shape[0] != 2 && shape[1] != 2)) {
    std::string dims;
    for (int64_t d : shape) absl::StrAppend(&dims, dims.empty() ? "" : ", ", d);
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": expected an int64 edge array of shape [2, E] (edge_index) or "
        "[E, 2], found ",
        NpyDescr(header.dtype), " [", dims, "]"));
  }
  edges.rows_are_ends = shape[0] == 2;
  edges.num_edges = edges.rows_are_ends ? shape[1] : shape[0];
  return edges;
}

// Reads `count` integers of `dtype` (int64 or int32) at byte `offset` of `in`
// into `out` as int64.
absl::Status ReadIdsAt(std::ifstream& in, const std::string& path,
                       NpyDtype dtype, int64_t offset, int64_t count,
                       std::vector<int64_t>* out,
                       std::vector<int32_t>* narrow) {
  out->resize(count);
  in.seekg(static_cast<std::streamoff>(offset));
  bool ok = false;
  if (dtype == NpyDtype::kInt32) {
    narrow->resize(count);
    ok = static_cast<bool>(
        in.read(reinterpret_cast<char*>(narrow->data()),
                static_cast<std::streamsize>(count * sizeof(int32_t))));
    std::copy(narrow->begin(), narrow->end(), out->begin());
  } else {
    ok = static_cast<bool>(
        in.read(reinterpret_cast<char*>(out->data()),
                static_cast<std::streamsize>(count * sizeof(int64_t))));
  }
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return absl::OkStatus();
}

// Hands the edges of `edges` (the .npy at `path`) to `sink` in order, read
// in chunks; every ID must be in [0, num_nodes).
absl::Status ForEachEdgeNpy(
    const std::string& path, const EdgeNpy& edges, int64_t num_nodes,
    absl::FunctionRef<absl::Status(NodeId, NodeId)> sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const NpyHeader& h = edges.header;
  const int64_t m = edges.num_edges;
  const auto size = static_cast<int64_t>(NpyElementSize(h.dtype));
  const auto base = static_cast<int64_t>(h.data_offset);
  constexpr int64_t kChunk = int64_t{1} << 18;
  Progress progress(absl::StrCat("reading ", path), m, "edges");
  std::vector<int64_t> first, second;
  std::vector<int32_t> narrow;
  for (int64_t done = 0; done < m;) {
    const int64_t take = std::min(kChunk, m - done);
    if (edges.rows_are_ends) {
      RETURN_IF_ERROR(ReadIdsAt(in, path, h.dtype, base + done * size, take,
                                &first, &narrow));
      RETURN_IF_ERROR(ReadIdsAt(in, path, h.dtype, base + (m + done) * size,
                                take, &second, &narrow));
    } else {
      RETURN_IF_ERROR(ReadIdsAt(in, path, h.dtype, base + 2 * done * size,
                                2 * take, &first, &narrow));
    }
    for (int64_t i = 0; i < take; ++i) {
      const NodeId s = edges.rows_are_ends ? first[i] : first[2 * i];
      const NodeId d = edges.rows_are_ends ? second[i] : first[2 * i + 1];
      for (NodeId v : {s, d}) {
        if (v < 0 || v >= num_nodes) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": edge ", done + i, " (", s, " -> ", d,
                           ") has node ", v, ", outside [0, ", num_nodes, ")"));
        }
      }
      RETURN_IF_ERROR(sink(s, d));
    }
    done += take;
    progress.Update(done);
  }
  progress.Done();
  return absl::OkStatus();
}

// Every edge of `edges_path` (text, or a .npy when `npy` is given) to `sink`;
// the first line of a text file is returned in *header_line when it was a
// header.
absl::Status ForEachEdge(const std::string& edges_path, const EdgeNpy* npy,
                         int64_t n,
                         absl::FunctionRef<absl::Status(NodeId, NodeId)> sink,
                         std::string* header_line) {
  if (npy != nullptr) return ForEachEdgeNpy(edges_path, *npy, n, sink);
  return datasets_internal::ForEachEdgeText(
      edges_path, datasets_internal::EdgeSeparator::kAuto, n, sink,
      header_line);
}

// The CSR of the edges of `edges_path` built out of core
// (ExternalCsrBuilder) under options.out_of_core; the runs go under `dir`.
// Sets summary->input_edges and notes how the build went.
absl::StatusOr<datasets_internal::CsrResult> BuildCsrOutOfCore(
    const EdgeListImportOptions& options, const std::string& edges_path,
    const EdgeNpy* npy, int64_t n, const datasets_internal::CsrOptions& csr,
    const std::string& dir, std::string* header_line, BuildSummary* summary) {
  ASSIGN_OR_RETURN(datasets_internal::ExternalCsrOptions ext,
                   datasets_internal::ImportOutOfCoreOptions(
                       options.out_of_core, n, csr, dir));
  if (npy != nullptr) {
    ext.max_entries = npy->num_edges * (csr.undirected ? 2 : 1);
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<datasets_internal::ExternalCsrBuilder> builder,
      datasets_internal::ExternalCsrBuilder::Create(n, ext));
  RETURN_IF_ERROR(ForEachEdge(
      edges_path, npy, n,
      [&](NodeId s, NodeId d) { return builder->Add(s, d); }, header_line));
  summary->input_edges = builder->edges_added();
  if (summary->input_edges == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(edges_path, ": the graph has no edges"));
  }
  ASSIGN_OR_RETURN(datasets_internal::CsrResult result, builder->Finish(dir));
  summary->notes.push_back(
      datasets_internal::OutOfCoreNote(options.out_of_core, builder->stats()));
  return result;
}

}  // namespace

absl::StatusOr<BuildSummary> ImportEdgeList(
    const EdgeListImportOptions& options, const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::string edges_path,
                   datasets_internal::FindInput(options.edges_path));
  ASSIGN_OR_RETURN(NpyHeader features, ReadNpyHeader(options.features_path));
  if ((features.dtype != NpyDtype::kFloat32 &&
       features.dtype != NpyDtype::kFloat64) ||
      features.shape.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.features_path,
        ": expected a float32 or float64 array of shape [nodes, features]"));
  }
  const int64_t n = features.shape[0];
  const int64_t dim = features.shape[1];
  if (n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.features_path, ": has 0 rows (the graph has no nodes)"));
  }
  int64_t nonfinite = 0;
  RETURN_IF_ERROR(CheckFeatures(options.features_path, features,
                                options.allow_nonfinite, &nonfinite));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> labels,
      ReadLabelsNpy(options.labels_path, n, options.features_path));
  datasets_internal::Splits splits;
  BuildSummary summary;
  if (options.split_paths.empty() && options.class_split.has_value()) {
    ASSIGN_OR_RETURN(splits, datasets_internal::MakeClassSplit(
                                 labels, *options.class_split, &summary.notes,
                                 &summary.warnings, options.labels_path));
  } else if (options.split_paths.empty()) {
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
  std::string header_line;  // Of a text edge list, if it has one.
  std::optional<EdgeNpy> npy;
  if (IsNpyFile(edges_path)) {
    ASSIGN_OR_RETURN(npy, OpenEdgeNpy(edges_path));
  }
  const datasets_internal::CsrOptions csr =
      datasets_internal::CsrOptionsFor(options.edges);
  std::unique_ptr<StagingDir> staging;
  datasets_internal::CsrResult result;
  if (options.out_of_core.memory_limit > 0) {
    ASSIGN_OR_RETURN(staging, StagingDir::Create(out_dir));
    ASSIGN_OR_RETURN(result, BuildCsrOutOfCore(
                                 options, edges_path, npy ? &*npy : nullptr, n,
                                 csr, staging->path(), &header_line, &summary));
  } else {
    std::vector<NodeId> src, dst;
    if (npy) {
      src.reserve(npy->num_edges);
      dst.reserve(npy->num_edges);
    }
    RETURN_IF_ERROR(ForEachEdge(
        edges_path, npy ? &*npy : nullptr, n,
        [&](NodeId s, NodeId d) {
          src.push_back(s);
          dst.push_back(d);
          return absl::OkStatus();
        },
        &header_line));
    summary.input_edges = static_cast<int64_t>(src.size());
    if (src.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(edges_path, ": the graph has no edges"));
    }
    ASSIGN_OR_RETURN(staging, StagingDir::Create(out_dir));
    ASSIGN_OR_RETURN(
        result, datasets_internal::WriteCsr(n, std::move(src), std::move(dst),
                                            csr, staging->path()));
  }
  const std::string& dir = staging->path();
  RETURN_IF_ERROR(WriteFeatures(options.features_path, features,
                                options.allow_nonfinite,
                                JoinPath(dir, kFeaturesFile)));
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
  manifest.source = absl::StrCat(
      "imported from edge list ", edges_path, " with features ",
      options.features_path, " and labels ", options.labels_path,
      options.edges.undirected ? "; reverse edges added" : "",
      !options.split_paths.empty() ? "; split from .npy files"
      : options.class_split.has_value()
          ? absl::StrCat("; split ", ClassSplitName(*options.class_split))
          : absl::StrCat("; random split with seed ", options.seed));
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  datasets_internal::NoteNonfiniteFeatures(nonfinite, &summary);
  if (features.dtype == NpyDtype::kFloat64) {
    summary.notes.push_back(
        absl::StrCat("features: float64 converted to float32 (",
                     options.features_path, ")"));
  }
  if (!header_line.empty()) {
    summary.notes.push_back(absl::StrCat("edges: line 1 (\"", header_line,
                                         "\") read as a header and skipped"));
  }
  datasets_internal::WarnIfOneDirectional(
      datasets_internal::kImportUndirectedFix, &summary);
  return summary;
}

}  // namespace shardgnn
