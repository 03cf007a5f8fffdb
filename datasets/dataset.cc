#include "datasets/dataset.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/internal/dataset_dir.h"

namespace shardgnn {
namespace {

absl::Status Invalid(absl::string_view file, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", message));
}

// Checks the arrays of `d` against each other and against `m` (which may
// differ from d.manifest while a writer fills in counts). Features
// are checked only when `check_features` (LoadDataset may skip loading them).
absl::Status Validate(const DatasetManifest& m, const Dataset& d,
                      bool check_features) {
  if (d.indptr.empty()) return Invalid(kIndptrFile, "is empty (needs N+1)");
  const int64_t n = d.num_nodes();
  const int64_t e = d.num_edges();
  if (m.num_nodes != n) {
    return Invalid(kIndptrFile, absl::StrCat("has ", n + 1,
                                             " entries but the manifest says ",
                                             m.num_nodes, " nodes"));
  }
  if (m.num_edges != e) {
    return Invalid(kIndicesFile,
                   absl::StrCat("has ", e, " entries but the manifest says ",
                                m.num_edges, " edges"));
  }
  if (d.indptr[0] != 0) return Invalid(kIndptrFile, "first entry is not 0");
  for (int64_t v = 0; v < n; ++v) {
    if (d.indptr[v + 1] < d.indptr[v]) {
      return Invalid(kIndptrFile,
                     absl::StrCat("decreases at node ", v, " (", d.indptr[v],
                                  " -> ", d.indptr[v + 1], ")"));
    }
  }
  if (d.indptr[n] != e) {
    return Invalid(kIndptrFile,
                   absl::StrCat("last entry is ", d.indptr[n], " but ",
                                kIndicesFile, " has ", e, " entries"));
  }
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      NodeId u = d.indices[i];
      if (u < 0 || u >= n) {
        return Invalid(kIndicesFile,
                       absl::StrCat("entry ", i, " (row of node ", v,
                                    ") is node ", u, ", outside [0, ", n, ")"));
      }
      if (i > d.indptr[v] && u <= d.indices[i - 1]) {
        return Invalid(kIndicesFile,
                       absl::StrCat("row of node ", v,
                                    " is not sorted or has a duplicate at "
                                    "entry ",
                                    i));
      }
    }
  }
  if (m.feature_dim < 0)
    return Invalid(kDatasetManifestFile, "feature_dim < 0");
  if (check_features &&
      static_cast<int64_t>(d.features.size()) != n * m.feature_dim) {
    return Invalid(kFeaturesFile,
                   absl::StrCat("has ", d.features.size(), " values, expected ",
                                n, " nodes x ", m.feature_dim, " features"));
  }
  if (static_cast<int64_t>(d.labels.size()) != n) {
    return Invalid(kLabelsFile, absl::StrCat("has ", d.labels.size(),
                                             " entries, expected ", n));
  }
  for (int64_t v = 0; v < n; ++v) {
    if (d.labels[v] < -1 || d.labels[v] >= m.num_classes) {
      return Invalid(kLabelsFile,
                     absl::StrCat("label of node ", v, " is ", d.labels[v],
                                  ", outside [-1, ", m.num_classes, ")"));
    }
  }
  if (m.splits.size() != d.splits.size()) {
    return Invalid(kDatasetManifestFile,
                   absl::StrCat("lists ", m.splits.size(), " splits, data has ",
                                d.splits.size()));
  }
  for (const auto& [name, nodes] : d.splits) {
    std::string file = SplitFileName(name);
    auto it = m.splits.find(name);
    if (it == m.splits.end()) {
      return Invalid(kDatasetManifestFile,
                     absl::StrCat("does not list split \"", name, "\""));
    }
    if (it->second != static_cast<int64_t>(nodes.size())) {
      return Invalid(
          file, absl::StrCat("has ", nodes.size(), " nodes, the manifest says ",
                             it->second));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i] < 0 || nodes[i] >= n) {
        return Invalid(file, absl::StrCat("entry ", i, " is node ", nodes[i],
                                          ", outside [0, ", n, ")"));
      }
      if (i > 0 && nodes[i] <= nodes[i - 1]) {
        return Invalid(file, absl::StrCat("not sorted or has a duplicate at "
                                          "entry ",
                                          i));
      }
    }
  }
  if (m.edge_splits.size() != d.edge_splits.size()) {
    return Invalid(
        kDatasetManifestFile,
        absl::StrCat("lists ", m.edge_splits.size(), " edge splits, data has ",
                     d.edge_splits.size()));
  }
  for (const auto& [name, pairs] : d.edge_splits) {
    const std::string file = EdgeSplitFileName(name);
    auto it = m.edge_splits.find(name);
    if (it == m.edge_splits.end()) {
      return Invalid(kDatasetManifestFile,
                     absl::StrCat("does not list edge split \"", name, "\""));
    }
    if (pairs.size() % 2 != 0 ||
        it->second != static_cast<int64_t>(pairs.size() / 2)) {
      return Invalid(file, absl::StrCat("has ", pairs.size(),
                                        " node IDs, the manifest says ",
                                        it->second, " pairs"));
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i] < 0 || pairs[i] >= n) {
        return Invalid(file, absl::StrCat("pair ", i / 2, " names node ",
                                          pairs[i], ", outside [0, ", n, ")"));
      }
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<std::vector<T>> ReadArray(const std::string& dir,
                                         const std::string& name,
                                         const DatasetManifest& manifest,
                                         const LoadDatasetOptions& options,
                                         std::vector<int64_t> shape) {
  std::string path = JoinPath(dir, name);
  if (options.verify_checksums) {
    auto it = manifest.files.find(name);
    if (it == manifest.files.end()) {
      return Invalid(JoinPath(dir, kDatasetManifestFile),
                     absl::StrCat("has no checksum for ", name));
    }
    ASSIGN_OR_RETURN(std::string sum, ChecksumFile(path));
    if (sum != it->second) {
      return absl::DataLossError(
          absl::StrCat(path, ": checksum ", sum, " does not match ", it->second,
                       " in the manifest (file damaged or "
                       "replaced)"));
    }
  }
  ASSIGN_OR_RETURN(NpyArray<T> array,
                   ReadNpy<T>(path, static_cast<int>(shape.size())));
  if (array.shape != shape) {
    auto show = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) {
        absl::StrAppend(&out, i ? ", " : "", s[i]);
      }
      return out + "]";
    };
    return Invalid(path, absl::StrCat("shape is ", show(array.shape),
                                      ", the manifest implies ", show(shape)));
  }
  return std::move(array.data);
}

}  // namespace

std::string SplitFileName(const std::string& split) {
  return absl::StrCat("split_", split, ".npy");
}

std::string EdgeSplitFileName(const std::string& split) {
  return absl::StrCat("edges_", split, ".npy");
}

std::string DatasetContentChecksum(const DatasetManifest& m) {
  // One field per line, strings length-prefixed: no two manifests give the
  // same text.
  std::string text = absl::StrCat(
      "shardgnn-dataset-content/1\nnodes ", m.num_nodes, "\nedges ",
      m.num_edges, "\ndirected ", m.directed, "\nfeatures ", m.feature_dim, " ",
      m.feature_dtype, "\nclasses ", m.num_classes, "\n");
  for (const auto& [name, count] : m.splits) {
    absl::StrAppend(&text, "split ", name.size(), ":", name, " ", count, "\n");
  }
  for (const auto& [name, count] : m.edge_splits) {
    absl::StrAppend(&text, "edge split ", name.size(), ":", name, " ", count,
                    "\n");
  }
  for (const auto& [file, checksum] : m.files) {
    absl::StrAppend(&text, "file ", file.size(), ":", file, " ", checksum,
                    "\n");
  }
  Checksum sum;
  sum.Update(text);
  return sum.Hex();
}

namespace {

// Why `dir`, which has no manifest, is not a dataset directory, when it is
// what one is made from or made into: the command that makes one of it.
// Empty otherwise.
std::string WhatTheFolderIs(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(JoinPath(dir, "raw"), ec)) {
    return absl::StrCat(
        dir,
        " is raw OGB input, not a dataset directory: import it first with "
        "`shardgnn dataset import --format ogb --input ",
        dir,
        " --undirected --out DATASET_DIR` (--undirected for graphs listed "
        "once per edge, as OGB's are), or give it to `shardgnn run --dataset "
        "DIR`, which imports and partitions it");
  }
  if (std::filesystem::exists(JoinPath(dir, "partition.json"), ec)) {
    return absl::StrCat(dir,
                        " is a partition directory, not a dataset directory: "
                        "give the dataset it was made from (its "
                        "partition.json names it), or the partition where a "
                        "command takes --partition");
  }
  bool content = false, cites = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    content = content || ext == ".content";
    cites = cites || ext == ".cites";
  }
  if (content && cites) {
    return absl::StrCat(
        dir,
        " holds LINQS input (.content, .cites), not a dataset directory: "
        "import it first with `shardgnn dataset import --format linqs --input ",
        dir, " --out DATASET_DIR`");
  }
  return "";
}

}  // namespace

absl::StatusOr<DatasetManifest> ReadDatasetManifest(const std::string& dir) {
  std::string path = JoinPath(dir, kDatasetManifestFile);
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (absl::IsNotFound(text.status())) {
    const std::string what = WhatTheFolderIs(dir);
    if (!what.empty()) return absl::FailedPreconditionError(what);
  }
  if (!text.ok()) return text.status();
  return datasets_internal::ManifestFromJson(*text, path);
}

absl::StatusOr<Dataset> LoadDataset(const std::string& dir,
                                    const LoadDatasetOptions& options) {
  Dataset d;
  ASSIGN_OR_RETURN(d.manifest, ReadDatasetManifest(dir));
  const DatasetManifest& m = d.manifest;
  ASSIGN_OR_RETURN(d.indptr, ReadArray<int64_t>(dir, kIndptrFile, m, options,
                                                {m.num_nodes + 1}));
  ASSIGN_OR_RETURN(d.indices, ReadArray<NodeId>(dir, kIndicesFile, m, options,
                                                {m.num_edges}));
  if (options.load_features) {
    ASSIGN_OR_RETURN(d.features,
                     ReadArray<float>(dir, kFeaturesFile, m, options,
                                      {m.num_nodes, m.feature_dim}));
  }
  ASSIGN_OR_RETURN(d.labels, ReadArray<int64_t>(dir, kLabelsFile, m, options,
                                                {m.num_nodes}));
  for (const auto& [name, count] : m.splits) {
    ASSIGN_OR_RETURN(d.splits[name], ReadArray<NodeId>(dir, SplitFileName(name),
                                                       m, options, {count}));
  }
  for (const auto& [name, count] : m.edge_splits) {
    ASSIGN_OR_RETURN(d.edge_splits[name],
                     ReadArray<NodeId>(dir, EdgeSplitFileName(name), m, options,
                                       {count, 2}));
  }
  absl::Status valid = Validate(m, d, options.load_features);
  if (!valid.ok()) return Annotate(valid, dir);
  return d;
}

absl::Status ValidateDataset(const Dataset& dataset) {
  return Validate(dataset.manifest, dataset, /*check_features=*/true);
}

absl::Status WriteDataset(const Dataset& dataset, const std::string& out_dir) {
  if (dataset.indptr.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(out_dir, ": dataset has no indptr"));
  }
  DatasetManifest manifest = dataset.manifest;
  manifest.num_nodes = dataset.num_nodes();
  manifest.num_edges = dataset.num_edges();
  manifest.splits.clear();
  for (const auto& [name, nodes] : dataset.splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.edge_splits.clear();
  for (const auto& [name, pairs] : dataset.edge_splits) {
    manifest.edge_splits[name] = static_cast<int64_t>(pairs.size() / 2);
  }
  if (manifest.num_classes == 0 && !dataset.labels.empty()) {
    manifest.num_classes =
        *std::max_element(dataset.labels.begin(), dataset.labels.end()) + 1;
  }
  absl::Status valid = Validate(manifest, dataset, /*check_features=*/true);
  if (!valid.ok()) return Annotate(valid, "refusing to write dataset");
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();
  const int64_t n = manifest.num_nodes;
  RETURN_IF_ERROR(
      WriteNpy<int64_t>(JoinPath(dir, kIndptrFile), {n + 1}, dataset.indptr));
  RETURN_IF_ERROR(WriteNpy<NodeId>(JoinPath(dir, kIndicesFile),
                                   {manifest.num_edges}, dataset.indices));
  RETURN_IF_ERROR(WriteNpy<float>(JoinPath(dir, kFeaturesFile),
                                  {n, manifest.feature_dim}, dataset.features));
  RETURN_IF_ERROR(
      WriteNpy<int64_t>(JoinPath(dir, kLabelsFile), {n}, dataset.labels));
  for (const auto& [name, nodes] : dataset.splits) {
    RETURN_IF_ERROR(WriteNpy<NodeId>(JoinPath(dir, SplitFileName(name)),
                                     {static_cast<int64_t>(nodes.size())},
                                     nodes));
  }
  for (const auto& [name, pairs] : dataset.edge_splits) {
    RETURN_IF_ERROR(
        WriteNpy<NodeId>(JoinPath(dir, EdgeSplitFileName(name)),
                         {static_cast<int64_t>(pairs.size() / 2), 2}, pairs));
  }
  RETURN_IF_ERROR(datasets_internal::FinishDatasetDir(dir, manifest));
  return staging->Commit();
}

}  // namespace shardgnn
