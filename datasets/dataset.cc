#include "datasets/dataset.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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

// Why `name` cannot name a node type or relation; empty if it can.
std::string BadTypeName(const std::string& name) {
  if (IsValidTypeName(name)) return "";
  return absl::StrCat("\"", name,
                      "\" is not a type or relation name ([A-Za-z0-9_.-]+)");
}

// An untyped dataset's edge features (one matrix, a row per CSR entry).
absl::Status ValidateUntypedEdgeData(const DatasetManifest& m, const Dataset& d,
                                     bool check_features) {
  if (!d.edge_types.empty()) {
    return Invalid(kEdgeTypesFile,
                   "given for a dataset without node types (\"node_types\")");
  }
  if (!m.edge_types.empty() || !m.target_types.empty()) {
    return Invalid(kDatasetManifestFile,
                   "lists edge or target types but no node types");
  }
  if (!check_features) return absl::OkStatus();
  const int64_t values = m.num_edges * m.edge_feature_dim;
  const int64_t have =
      d.edge_features.empty()
          ? 0
          : static_cast<int64_t>(
                d.edge_features.size() == 1 ? d.edge_features[0].size() : -1);
  if (have != values) {
    return Invalid(kEdgeFeaturesFile,
                   absl::StrCat("has ", have, " values, expected ", m.num_edges,
                                " edges x ", m.edge_feature_dim, " features"));
  }
  return absl::OkStatus();
}

// A typed dataset's types against its arrays: the types' ranges cover the
// nodes, every CSR entry's relation joins the right types, rows are sorted by
// (relation, neighbor), counts and feature sizes agree.
absl::Status ValidateTypes(const DatasetManifest& m, const Dataset& d,
                           bool check_features) {
  const int64_t n = d.num_nodes();
  if (m.feature_dim != 0 || (check_features && !d.features.empty())) {
    return Invalid(kDatasetManifestFile,
                   "a typed dataset has features per node type "
                   "(features_<type>.npy), not features.npy: feature_dim "
                   "must be 0");
  }
  if (m.edge_feature_dim != 0) {
    return Invalid(kDatasetManifestFile,
                   "a typed dataset has edge features per relation: "
                   "edge_feature_dim must be 0");
  }
  int64_t total = 0;
  for (size_t t = 0; t < m.node_types.size(); ++t) {
    const NodeType& type = m.node_types[t];
    const std::string bad = BadTypeName(type.name);
    if (!bad.empty()) return Invalid(kDatasetManifestFile, bad);
    if (m.FindNodeType(type.name) != static_cast<int>(t)) {
      return Invalid(
          kDatasetManifestFile,
          absl::StrCat("node type \"", type.name, "\" is listed twice"));
    }
    total += type.count;
  }
  if (total != n) {
    return Invalid(kDatasetManifestFile,
                   absl::StrCat("node types count ", total,
                                " nodes, the "
                                "graph has ",
                                n));
  }
  std::vector<int> src_type(m.edge_types.size()), dst_type(m.edge_types.size());
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    const EdgeType& type = m.edge_types[r];
    const std::string bad = BadTypeName(type.relation);
    if (!bad.empty()) return Invalid(kDatasetManifestFile, bad);
    src_type[r] = m.FindNodeType(type.src);
    dst_type[r] = m.FindNodeType(type.dst);
    if (src_type[r] < 0 || dst_type[r] < 0) {
      return Invalid(kDatasetManifestFile,
                     absl::StrCat("edge type \"", EdgeTypeKey(type),
                                  "\" names a node type not in node_types"));
    }
    if (m.FindEdgeType(type.src, type.relation, type.dst) !=
        static_cast<int>(r)) {
      return Invalid(kDatasetManifestFile,
                     absl::StrCat("edge type \"", EdgeTypeKey(type),
                                  "\" is listed twice"));
    }
  }
  if (static_cast<int64_t>(d.edge_types.size()) != d.num_edges()) {
    return Invalid(kEdgeTypesFile,
                   absl::StrCat("has ", d.edge_types.size(),
                                " entries, expected ", d.num_edges()));
  }
  const int num_relations = static_cast<int>(m.edge_types.size());
  std::vector<int64_t> counts(m.edge_types.size(), 0);
  for (int64_t v = 0; v < n; ++v) {
    const int v_type = m.NodeTypeOf(v);
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      const int32_t r = d.edge_types[i];
      if (r < 0 || r >= num_relations) {
        return Invalid(kEdgeTypesFile,
                       absl::StrCat("entry ", i, " is relation ", r,
                                    ", outside [0, ", num_relations, ")"));
      }
      const NodeId u = d.indices[i];
      if (dst_type[r] != v_type || src_type[r] != m.NodeTypeOf(u)) {
        return Invalid(
            kEdgeTypesFile,
            absl::StrCat("entry ", i, " (", u, " -> ", v, ") is of relation \"",
                         EdgeTypeKey(m.edge_types[r]), "\" but joins a ",
                         m.node_types[m.NodeTypeOf(u)].name, " to a ",
                         m.node_types[v_type].name));
      }
      if (i > d.indptr[v] &&
          (r < d.edge_types[i - 1] ||
           (r == d.edge_types[i - 1] && u <= d.indices[i - 1]))) {
        return Invalid(kIndicesFile,
                       absl::StrCat("row of node ", v,
                                    " is not sorted by (relation, neighbor) "
                                    "or has a duplicate at entry ",
                                    i));
      }
      ++counts[r];
    }
  }
  for (int r = 0; r < num_relations; ++r) {
    if (counts[r] != m.edge_types[r].count) {
      return Invalid(
          kDatasetManifestFile,
          absl::StrCat("edge type \"", EdgeTypeKey(m.edge_types[r]), "\" has ",
                       counts[r], " edges, the manifest says ",
                       m.edge_types[r].count));
    }
  }
  if (!check_features) return absl::OkStatus();
  if (d.type_features.size() != m.node_types.size()) {
    return Invalid(kDatasetManifestFile,
                   absl::StrCat("lists ", m.node_types.size(),
                                " node types, the data has features for ",
                                d.type_features.size()));
  }
  for (size_t t = 0; t < m.node_types.size(); ++t) {
    const NodeType& type = m.node_types[t];
    if (static_cast<int64_t>(d.type_features[t].size()) !=
        type.count * type.feature_dim) {
      return Invalid(
          NodeTypeFeaturesFileName(type.name),
          absl::StrCat("has ", d.type_features[t].size(), " values, expected ",
                       type.count, " x ", type.feature_dim));
    }
  }
  bool any_edge_features = false;
  for (const EdgeType& type : m.edge_types)
    any_edge_features = any_edge_features || type.feature_dim > 0;
  if (!any_edge_features && d.edge_features.empty()) return absl::OkStatus();
  if (d.edge_features.size() != m.edge_types.size()) {
    return Invalid(kDatasetManifestFile,
                   absl::StrCat("lists ", m.edge_types.size(),
                                " edge types, the data has edge features for ",
                                d.edge_features.size()));
  }
  for (int r = 0; r < num_relations; ++r) {
    const EdgeType& type = m.edge_types[r];
    if (static_cast<int64_t>(d.edge_features[r].size()) !=
        type.count * type.feature_dim) {
      return Invalid(
          EdgeTypeFeaturesFileName(r),
          absl::StrCat("has ", d.edge_features[r].size(), " values, expected ",
                       type.count, " x ", type.feature_dim));
    }
  }
  return absl::OkStatus();
}

// Labels in [-1, classes) (multi-label: rows of 0/1 or of -1), and in a
// typed dataset only on nodes of its target types.
absl::Status ValidateLabels(const DatasetManifest& m, const Dataset& d) {
  const int64_t n = d.num_nodes();
  const int64_t width = m.multilabel ? m.num_classes : 1;
  if (static_cast<int64_t>(d.labels.size()) != n * width) {
    return Invalid(
        kLabelsFile,
        absl::StrCat(
            "has ", d.labels.size(), " entries, expected ", n,
            m.multilabel ? absl::StrCat(" x ", width) : std::string()));
  }
  std::vector<bool> target(m.node_types.size(), m.target_types.empty());
  for (const std::string& name : m.target_types) {
    const int t = m.FindNodeType(name);
    if (t < 0) {
      return Invalid(
          kDatasetManifestFile,
          absl::StrCat("target type \"", name, "\" is not a node type"));
    }
    target[t] = true;
  }
  for (int64_t v = 0; v < n; ++v) {
    const int64_t* row = d.labels.data() + v * width;
    bool labeled = false;
    if (m.multilabel) {
      const bool unlabeled =
          std::all_of(row, row + width, [](int64_t x) { return x == -1; });
      const bool set = std::all_of(row, row + width,
                                   [](int64_t x) { return x == 0 || x == 1; });
      if (!unlabeled && !set) {
        return Invalid(
            kLabelsFile,
            absl::StrCat("row of node ", v, " is neither all 0/1 nor all -1"));
      }
      labeled = set;
    } else {
      if (row[0] < -1 || row[0] >= m.num_classes) {
        return Invalid(kLabelsFile,
                       absl::StrCat("label of node ", v, " is ", row[0],
                                    ", outside [-1, ", m.num_classes, ")"));
      }
      labeled = row[0] >= 0;
    }
    if (labeled && m.typed() && !target[m.NodeTypeOf(v)]) {
      return Invalid(kLabelsFile,
                     absl::StrCat("node ", v, " is labeled but of type \"",
                                  m.node_types[m.NodeTypeOf(v)].name,
                                  "\", not a target type"));
    }
  }
  return absl::OkStatus();
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
      // Typed rows are sorted by (relation, neighbor), checked with the
      // relations (ValidateTypes).
      if (!m.typed() && i > d.indptr[v] && u <= d.indices[i - 1]) {
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
  if (check_features && !m.typed() &&
      static_cast<int64_t>(d.features.size()) != n * m.feature_dim) {
    return Invalid(kFeaturesFile,
                   absl::StrCat("has ", d.features.size(), " values, expected ",
                                n, " nodes x ", m.feature_dim, " features"));
  }
  if (m.typed()) {
    RETURN_IF_ERROR(ValidateTypes(m, d, check_features));
  } else {
    RETURN_IF_ERROR(ValidateUntypedEdgeData(m, d, check_features));
  }
  RETURN_IF_ERROR(ValidateLabels(m, d));
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

std::string NodeTypeFeaturesFileName(const std::string& type) {
  return absl::StrCat("features_", type, ".npy");
}

std::string EdgeTypeFeaturesFileName(int relation) {
  return absl::StrCat("edge_features_", relation, ".npy");
}

std::string EdgeTypeKey(const EdgeType& type) {
  return absl::StrCat(type.src, "/", type.relation, "/", type.dst);
}

bool IsValidTypeName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '.' || c == '-';
  });
}

int64_t DatasetManifest::NodeTypeOffset(int t) const {
  int64_t offset = 0;
  for (int i = 0; i < t && i < static_cast<int>(node_types.size()); ++i)
    offset += node_types[i].count;
  return offset;
}

int DatasetManifest::NodeTypeOf(int64_t node) const {
  if (node < 0) return -1;
  int64_t end = 0;
  for (size_t t = 0; t < node_types.size(); ++t) {
    end += node_types[t].count;
    if (node < end) return static_cast<int>(t);
  }
  return -1;
}

int DatasetManifest::FindNodeType(const std::string& name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

int DatasetManifest::FindEdgeType(const std::string& src,
                                  const std::string& relation,
                                  const std::string& dst) const {
  for (size_t r = 0; r < edge_types.size(); ++r) {
    const EdgeType& e = edge_types[r];
    if (e.src == src && e.relation == relation && e.dst == dst)
      return static_cast<int>(r);
  }
  return -1;
}

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
  // Lines only for what untyped datasets without edge features lack, so that
  // their checksums stay what they were.
  if (m.edge_feature_dim > 0)
    absl::StrAppend(&text, "edge features ", m.edge_feature_dim, "\n");
  if (m.multilabel) absl::StrAppend(&text, "multilabel\n");
  for (const NodeType& t : m.node_types) {
    absl::StrAppend(&text, "node type ", t.name.size(), ":", t.name, " ",
                    t.count, " ", t.feature_dim, "\n");
  }
  for (const EdgeType& r : m.edge_types) {
    const std::string key = EdgeTypeKey(r);
    absl::StrAppend(&text, "edge type ", key.size(), ":", key, " ", r.count,
                    " ", r.feature_dim, "\n");
  }
  for (const std::string& t : m.target_types)
    absl::StrAppend(&text, "target type ", t.size(), ":", t, "\n");
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
  if (std::filesystem::exists(JoinPath(dir, "raw/num-node-dict.csv.gz"), ec)) {
    return absl::StrCat(
        dir,
        " is raw heterogeneous OGB input, not a dataset directory: import it "
        "first with `shardgnn dataset import --format ogb-hetero --input ",
        dir, " --add-reverse --out DATASET_DIR`");
  }
  if (std::filesystem::exists(JoinPath(dir, "node.dat"), ec) &&
      std::filesystem::exists(JoinPath(dir, "link.dat"), ec)) {
    return absl::StrCat(
        dir,
        " holds HGB input (node.dat, link.dat), not a dataset directory: "
        "import it first with `shardgnn dataset import --format hgb --input ",
        dir, " --add-reverse --out DATASET_DIR`");
  }
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
    // cora.content or, as the bundled datasets ship it, cora.content.gz.
    std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, ".gz")) name.resize(name.size() - 3);
    content = content || absl::EndsWith(name, ".content");
    cites = cites || absl::EndsWith(name, ".cites");
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
  if (m.typed()) {
    ASSIGN_OR_RETURN(d.edge_types, ReadArray<int32_t>(dir, kEdgeTypesFile, m,
                                                      options, {m.num_edges}));
  }
  if (options.load_features && !m.typed()) {
    ASSIGN_OR_RETURN(d.features,
                     ReadArray<float>(dir, kFeaturesFile, m, options,
                                      {m.num_nodes, m.feature_dim}));
    if (m.edge_feature_dim > 0) {
      ASSIGN_OR_RETURN(d.edge_features.emplace_back(),
                       ReadArray<float>(dir, kEdgeFeaturesFile, m, options,
                                        {m.num_edges, m.edge_feature_dim}));
    }
  }
  if (options.load_features && m.typed()) {
    for (const NodeType& t : m.node_types) {
      std::vector<float>& features = d.type_features.emplace_back();
      if (t.feature_dim == 0) continue;
      ASSIGN_OR_RETURN(
          features, ReadArray<float>(dir, NodeTypeFeaturesFileName(t.name), m,
                                     options, {t.count, t.feature_dim}));
    }
    bool any = false;
    for (const EdgeType& r : m.edge_types) any = any || r.feature_dim > 0;
    for (size_t r = 0; any && r < m.edge_types.size(); ++r) {
      std::vector<float>& features = d.edge_features.emplace_back();
      const EdgeType& type = m.edge_types[r];
      if (type.feature_dim == 0) continue;
      ASSIGN_OR_RETURN(
          features,
          ReadArray<float>(dir, EdgeTypeFeaturesFileName(static_cast<int>(r)),
                           m, options, {type.count, type.feature_dim}));
    }
  }
  std::vector<int64_t> label_shape = {m.num_nodes};
  if (m.multilabel) label_shape.push_back(m.num_classes);
  ASSIGN_OR_RETURN(
      d.labels, ReadArray<int64_t>(dir, kLabelsFile, m, options, label_shape));
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

absl::Status RequireUntyped(const DatasetManifest& m, const std::string& where,
                            const std::string& what) {
  std::string kind;
  if (m.typed()) {
    kind = absl::StrCat("typed (", m.node_types.size(), " node types, ",
                        m.edge_types.size(), " relations)");
  } else if (m.multilabel) {
    kind = "multi-label";
  } else {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      where.empty() ? "" : absl::StrCat(where, ": "), "dataset '", m.name,
      "' is ", kind, "; ", what, " takes untyped, single-label datasets only"));
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
  if (manifest.num_classes == 0 && !dataset.labels.empty() &&
      !manifest.multilabel) {
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
  if (!manifest.typed()) {
    RETURN_IF_ERROR(WriteNpy<float>(JoinPath(dir, kFeaturesFile),
                                    {n, manifest.feature_dim},
                                    dataset.features));
    if (manifest.edge_feature_dim > 0) {
      RETURN_IF_ERROR(
          WriteNpy<float>(JoinPath(dir, kEdgeFeaturesFile),
                          {manifest.num_edges, manifest.edge_feature_dim},
                          dataset.edge_features[0]));
    }
  } else {
    RETURN_IF_ERROR(WriteNpy<int32_t>(JoinPath(dir, kEdgeTypesFile),
                                      {manifest.num_edges},
                                      dataset.edge_types));
    for (size_t t = 0; t < manifest.node_types.size(); ++t) {
      const NodeType& type = manifest.node_types[t];
      if (type.feature_dim == 0) continue;
      RETURN_IF_ERROR(WriteNpy<float>(
          JoinPath(dir, NodeTypeFeaturesFileName(type.name)),
          {type.count, type.feature_dim}, dataset.type_features[t]));
    }
    for (size_t r = 0; r < manifest.edge_types.size(); ++r) {
      const EdgeType& type = manifest.edge_types[r];
      if (type.feature_dim == 0) continue;
      RETURN_IF_ERROR(WriteNpy<float>(
          JoinPath(dir, EdgeTypeFeaturesFileName(static_cast<int>(r))),
          {type.count, type.feature_dim}, dataset.edge_features[r]));
    }
  }
  std::vector<int64_t> label_shape = {n};
  if (manifest.multilabel) label_shape.push_back(manifest.num_classes);
  RETURN_IF_ERROR(WriteNpy<int64_t>(JoinPath(dir, kLabelsFile), label_shape,
                                    dataset.labels));
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
