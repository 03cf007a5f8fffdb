// ImportOgbHetero: OGB's heterogeneous raw layout (ogbn-mag), as OGB's
// read_csv_heterograph_raw reads it, into a typed dataset.
//
// Node feature rows are read on a second thread while this one reads the
// labels, the splits and the relations' edges; the graph is then built in
// memory by BuildTypedGraph and written by WriteDataset.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/line_reader.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/import_util.h"
#include "datasets/internal/text_readers.h"
#include "datasets/typed_graph.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;
using datasets_internal::FindInput;
using datasets_internal::FloatRows;
using datasets_internal::ReadFloatRows;
using datasets_internal::SplitFields;

// Node type index -> a file of that type.
using TypeFiles = std::map<int, std::string>;

constexpr char kRelationSeparator[] = "___";
constexpr int64_t kProgressEvery = 1 << 16;
constexpr const char* kSplitNames[] = {"train", "valid", "test"};

absl::string_view Shorten(absl::string_view text) {
  return text.size() > 40 ? text.substr(0, 40) : text;
}

// The names of the subdirectories of `dir`, sorted.
absl::StatusOr<std::vector<std::string>> SubdirNames(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot list: ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Appends to *unused the entries of `dir` (shown as `shown`/<name>) whose
// name, without ".gz", is not in `known`.
void NoteUnused(const std::string& dir, const std::string& shown,
                const std::set<std::string>& known,
                std::vector<std::string>* unused) {
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::string plain = name;
    if (absl::EndsWith(plain, ".gz")) plain.resize(plain.size() - 3);
    if (known.count(plain) == 0) names.push_back(JoinPath(shown, name));
  }
  std::sort(names.begin(), names.end());
  unused->insert(unused->end(), names.begin(), names.end());
}

int FindType(const std::vector<NodeType>& types, absl::string_view name) {
  for (size_t t = 0; t < types.size(); ++t) {
    if (types[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

std::string TypeNames(const std::vector<NodeType>& types) {
  return absl::StrJoin(types, ", ", [](std::string* out, const NodeType& t) {
    out->append(t.name);
  });
}

absl::Status UnknownType(const std::string& dir, absl::string_view name,
                         const std::vector<NodeType>& types) {
  return absl::InvalidArgumentError(absl::StrCat(
      dir, ": node type ", Shorten(name),
      " is not in num-node-dict.csv (node types: ", TypeNames(types), ")"));
}

// raw/num-node-dict.csv: a line of type names, a line of their counts.
absl::StatusOr<std::vector<NodeType>> ReadNodeDict(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<NodeType> types;
  std::vector<absl::string_view> fields;
  absl::string_view line;
  int lines = 0;
  while (reader->Next(&line)) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    ++lines;
    SplitFields(line, ',', &fields);
    if (lines == 1) {
      for (absl::string_view field : fields) {
        std::string name(absl::StripAsciiWhitespace(field));
        if (!IsValidTypeName(name)) {
          return reader->LineError(absl::StrCat(
              "node type name \"", Shorten(name), "\" is not [A-Za-z0-9_.-]+"));
        }
        if (FindType(types, name) >= 0) {
          return reader->LineError(
              absl::StrCat("node type ", name, " is listed twice"));
        }
        types.push_back(NodeType{name, 0, 0});
      }
    } else if (lines == 2) {
      if (fields.size() != types.size()) {
        return reader->LineError(absl::StrCat(
            "expected ", types.size(), " counts (one per node type of line 1: ",
            TypeNames(types), "), found ", fields.size()));
      }
      for (size_t t = 0; t < fields.size(); ++t) {
        if (!ParseInt64(fields[t], &types[t].count) || types[t].count < 0) {
          return reader->LineError(absl::StrCat("\"", Shorten(fields[t]),
                                                "\" is not a node count (of ",
                                                types[t].name, ")"));
        }
      }
    } else {
      return reader->LineError(
          "expected 2 lines (the node type names, then their counts)");
    }
  }
  RETURN_IF_ERROR(reader->status());
  if (lines < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected 2 lines (the node type names, then their counts)"));
  }
  return types;
}

// The one count in num-edge-list.csv.
absl::StatusOr<int64_t> ReadCount(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values,
                   datasets_internal::ReadIntColumn(path));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected one edge count, found ", values.size(), " values"));
  }
  if (values[0] < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": negative edge count ", values[0]));
  }
  return values[0];
}

// A relation directory raw/relations/<src>___<relation>___<dst>.
struct RelationInput {
  std::string dir;
  std::string name;  // The directory's name.
  int src = 0;       // Node type indices.
  int dst = 0;
  std::string relation;
};

// The relation directories, in OGB's order (sorted by (src, relation, dst)),
// checked against raw/triplet-type-list.csv if there is one.
absl::StatusOr<std::vector<RelationInput>> FindRelations(
    const std::string& raw, const std::vector<NodeType>& types,
    std::vector<std::string>* notes) {
  const std::string root = JoinPath(raw, "relations");
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(
        absl::StrCat(root,
                     ": directory not found (OGB's heterogeneous layout has "
                     "raw/relations/<source type>___<relation>___<destination "
                     "type>/edge.csv.gz)"));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SubdirNames(root));
  std::vector<RelationInput> relations;
  for (const std::string& name : names) {
    RelationInput r;
    r.dir = JoinPath(root, name);
    r.name = name;
    std::vector<std::string> parts = absl::StrSplit(name, kRelationSeparator);
    if (parts.size() != 3 ||
        std::any_of(parts.begin(), parts.end(),
                    [](const std::string& p) { return p.empty(); })) {
      return absl::InvalidArgumentError(absl::StrCat(
          r.dir,
          ": directory name is not of the form <source type>___<relation>___"
          "<destination type>"));
    }
    for (int k : {0, 2}) {
      if (FindType(types, parts[k]) < 0) {
        return UnknownType(r.dir, parts[k], types);
      }
    }
    if (!IsValidTypeName(parts[1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(r.dir, ": relation name \"", Shorten(parts[1]),
                       "\" is not [A-Za-z0-9_.-]+"));
    }
    r.src = FindType(types, parts[0]);
    r.dst = FindType(types, parts[2]);
    r.relation = parts[1];
    relations.push_back(std::move(r));
  }
  if (relations.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(root, ": holds no relation directory"));
  }
  std::sort(relations.begin(), relations.end(),
            [&](const RelationInput& a, const RelationInput& b) {
              return std::tie(types[a.src].name, a.relation,
                              types[a.dst].name) <
                     std::tie(types[b.src].name, b.relation, types[b.dst].name);
            });

  absl::StatusOr<std::string> list =
      FindInput(JoinPath(raw, "triplet-type-list.csv.gz"));
  if (!list.ok()) return relations;
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(*list));
  std::set<std::string> listed;
  std::vector<absl::string_view> fields;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    SplitFields(line, ',', &fields);
    if (fields.size() != 3) {
      return reader->LineError(absl::StrCat(
          "expected 3 columns (source type,relation,destination type), found ",
          fields.size()));
    }
    std::string name = absl::StrJoin(
        fields, kRelationSeparator, [](std::string* out, absl::string_view f) {
          out->append(std::string(absl::StripAsciiWhitespace(f)));
        });
    if (!FindInput(JoinPath(JoinPath(root, name), "edge.csv.gz")).ok()) {
      return reader->LineError(
          absl::StrCat("relation ", Shorten(name),
                       " listed in triplet-type-list.csv has no edge file (",
                       JoinPath(JoinPath(root, name), "edge.csv[.gz]"), ")"));
    }
    listed.insert(std::move(name));
  }
  RETURN_IF_ERROR(reader->status());
  std::vector<std::string> unlisted;
  for (const RelationInput& r : relations) {
    if (listed.count(r.name) == 0) unlisted.push_back(r.name);
  }
  if (!unlisted.empty()) {
    notes->push_back(
        absl::StrCat("relations imported although triplet-type-list.csv does "
                     "not list them: ",
                     absl::StrJoin(unlisted, ", ")));
  }
  return relations;
}

// Reads the "src,dst" lines of relation `name`'s edge file: type-local IDs,
// src of type `from`, dst of type `to`.
absl::Status ReadTypedEdges(const std::string& path, const std::string& name,
                            const NodeType& from, const NodeType& to,
                            std::vector<int64_t>* src,
                            std::vector<int64_t>* dst) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(absl::StrCat("reading ", name, " edges"),
                    reader->file_size(), "bytes");
  std::vector<absl::string_view> fields;
  absl::string_view line;
  int64_t count = 0;
  while (reader->Next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    SplitFields(line, ',', &fields);
    if (fields.size() != 2) {
      return reader->LineError(
          absl::StrCat("expected 2 columns (src,dst), found ", fields.size()));
    }
    int64_t ids[2];
    for (int k = 0; k < 2; ++k) {
      const NodeType& type = k == 0 ? from : to;
      if (!ParseInt64(fields[k], &ids[k])) {
        return reader->LineError(absl::StrCat("\"", Shorten(fields[k]),
                                              "\" is not an integer node ID"));
      }
      if (ids[k] < 0 || ids[k] >= type.count) {
        return reader->LineError(absl::StrCat(
            k == 0 ? "source" : "destination", " ID ", ids[k],
            " is outside [0, ", type.count, ") of node type ", type.name));
      }
    }
    src->push_back(ids[0]);
    dst->push_back(ids[1]);
    if (++count % kProgressEvery == 0) progress.Update(reader->bytes_read());
  }
  RETURN_IF_ERROR(reader->status());
  progress.Update(reader->file_size());
  progress.Done();
  return absl::OkStatus();
}

// One relation's edges, with its edge features (edge-feat.csv, then
// edge_reltype.csv when it varies).
absl::StatusOr<RelationEdges> ReadRelation(const RelationInput& r,
                                           const std::vector<NodeType>& types,
                                           bool allow_nonfinite,
                                           int64_t* nonfinite,
                                           std::vector<std::string>* notes,
                                           std::vector<std::string>* unused) {
  ASSIGN_OR_RETURN(std::string edge_path,
                   FindInput(JoinPath(r.dir, "edge.csv.gz")));
  ASSIGN_OR_RETURN(std::string count_path,
                   FindInput(JoinPath(r.dir, "num-edge-list.csv.gz")));
  ASSIGN_OR_RETURN(int64_t m, ReadCount(count_path));
  RelationEdges edges;
  edges.src_type = types[r.src].name;
  edges.relation = r.relation;
  edges.dst_type = types[r.dst].name;
  edges.source = edge_path;
  // The count is only a hint (the file is checked against it below).
  edges.src.reserve(std::min<int64_t>(m, int64_t{1} << 28));
  edges.dst.reserve(std::min<int64_t>(m, int64_t{1} << 28));
  RETURN_IF_ERROR(ReadTypedEdges(edge_path, r.name, types[r.src], types[r.dst],
                                 &edges.src, &edges.dst));
  if (static_cast<int64_t>(edges.src.size()) != m) {
    return absl::InvalidArgumentError(
        absl::StrCat(edge_path, ": has ", edges.src.size(), " edges but ",
                     count_path, " says ", m));
  }
  const std::string what = absl::StrCat("relation ", r.name);
  absl::StatusOr<std::string> feat_path =
      FindInput(JoinPath(r.dir, "edge-feat.csv.gz"));
  if (feat_path.ok()) {
    ASSIGN_OR_RETURN(FloatRows rows,
                     ReadFloatRows(*feat_path, m, /*edges=*/true, what,
                                   allow_nonfinite, nullptr, nonfinite));
    edges.feature_dim = rows.dim;
    edges.features = std::move(rows.values);
  }
  absl::StatusOr<std::string> reltype_path =
      FindInput(JoinPath(r.dir, "edge_reltype.csv.gz"));
  if (reltype_path.ok()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> reltype,
                     datasets_internal::ReadIntColumn(*reltype_path));
    if (static_cast<int64_t>(reltype.size()) != m) {
      return absl::InvalidArgumentError(
          absl::StrCat(*reltype_path, ": has ", reltype.size(),
                       " values but the relation has ", m, " edges"));
    }
    auto [lo, hi] = std::minmax_element(reltype.begin(), reltype.end());
    if (reltype.empty() || *lo == *hi) {
      notes->push_back(
          absl::StrCat(r.name, "/edge_reltype.csv is constant",
                       reltype.empty() ? "" : absl::StrCat(" (", *lo, ")"),
                       ": not imported"));
    } else {
      // Appended as the last column of the relation's edge features.
      const int64_t dim = edges.feature_dim;
      std::vector<float> features;
      features.reserve(static_cast<size_t>(m * (dim + 1)));
      for (int64_t e = 0; e < m; ++e) {
        features.insert(features.end(), edges.features.begin() + e * dim,
                        edges.features.begin() + (e + 1) * dim);
        features.push_back(static_cast<float>(reltype[e]));
      }
      edges.features = std::move(features);
      edges.feature_dim = dim + 1;
      notes->push_back(absl::StrCat(
          r.name, "/edge_reltype.csv varies: kept as edge feature column ",
          dim + 1, " of the relation"));
    }
  }
  NoteUnused(
      r.dir, JoinPath("raw/relations", r.name),
      {"edge.csv", "num-edge-list.csv", "edge-feat.csv", "edge_reltype.csv"},
      unused);
  return edges;
}

// The subdirectories of `root` named after node types (none if `root` does
// not exist): type index -> directory.
absl::StatusOr<TypeFiles> FindTypeDirs(const std::string& root,
                                       const std::vector<NodeType>& types) {
  TypeFiles dirs;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return dirs;
  ASSIGN_OR_RETURN(std::vector<std::string> names, SubdirNames(root));
  for (const std::string& name : names) {
    const int t = FindType(types, name);
    if (t < 0) return UnknownType(JoinPath(root, name), name, types);
    dirs[t] = JoinPath(root, name);
  }
  return dirs;
}

// Each type's `file` in its directory of `dirs`.
absl::StatusOr<TypeFiles> FindTypeFiles(const TypeFiles& dirs,
                                        const std::string& file) {
  TypeFiles paths;
  for (const auto& [t, dir] : dirs) {
    ASSIGN_OR_RETURN(paths[t], FindInput(JoinPath(dir, file)));
  }
  return paths;
}

// The split directory to use: options.split, or the only one under split/.
absl::StatusOr<std::string> FindSplitDir(
    const OgbHeteroImportOptions& options) {
  const std::string root = JoinPath(options.input_dir, "split");
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
                     ": directory not found (OGB's heterogeneous layout needs "
                     "split/<name>/<node type>/{train,valid,test}.csv.gz)"));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SubdirNames(root));
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat(
        root,
        ": holds no split directory (OGB's heterogeneous layout needs "
        "split/<name>/<node type>/{train,valid,test}.csv.gz)"));
  }
  if (names.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        root, ": holds ", names.size(), " split directories (",
        absl::StrJoin(names, ", "), "); name one with --split-name"));
  }
  return JoinPath(root, names[0]);
}

// Where everything of an input is, found (and the small files read) before
// any large file is, so that a layout error fails fast.
struct HeteroInputs {
  std::string raw;
  std::vector<NodeType> types;   // feature_dim still 0.
  std::vector<int64_t> offsets;  // Of each type's global IDs, then N.
  std::vector<RelationInput> relations;
  TypeFiles features;
  TypeFiles labels;  // Of the target types.
  std::string split_dir;
  // Split type -> split name -> file.
  std::map<int, std::map<std::string, std::string>> splits;
  std::vector<std::string> notes;
};

absl::StatusOr<HeteroInputs> FindHeteroInputs(
    const OgbHeteroImportOptions& options) {
  HeteroInputs in;
  in.raw = JoinPath(options.input_dir, "raw");
  std::error_code ec;
  if (!fs::is_directory(in.raw, ec)) {
    return absl::NotFoundError(
        absl::StrCat(in.raw, ": directory not found (is ", options.input_dir,
                     " an OGB raw layout?)"));
  }
  ASSIGN_OR_RETURN(std::string dict_path,
                   FindInput(JoinPath(in.raw, "num-node-dict.csv.gz")));
  ASSIGN_OR_RETURN(in.types, ReadNodeDict(dict_path));
  in.offsets.assign(in.types.size() + 1, 0);
  for (size_t t = 0; t < in.types.size(); ++t) {
    in.offsets[t + 1] = in.offsets[t] + in.types[t].count;
  }
  if (in.offsets.back() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(dict_path, ": the graph has no nodes"));
  }
  ASSIGN_OR_RETURN(in.relations, FindRelations(in.raw, in.types, &in.notes));
  ASSIGN_OR_RETURN(TypeFiles dirs,
                   FindTypeDirs(JoinPath(in.raw, "node-feat"), in.types));
  ASSIGN_OR_RETURN(in.features, FindTypeFiles(dirs, "node-feat.csv.gz"));
  ASSIGN_OR_RETURN(dirs,
                   FindTypeDirs(JoinPath(in.raw, "node-label"), in.types));
  ASSIGN_OR_RETURN(in.labels, FindTypeFiles(dirs, "node-label.csv.gz"));
  std::vector<std::string> targets;
  for (const auto& [t, path] : in.labels) targets.push_back(in.types[t].name);
  if (options.class_split.has_value()) {  // Replaces split/, not read.
    if (in.labels.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(in.raw,
                       ": no raw/node-label/<type>/node-label.csv (a per-class "
                       "random split needs node labels)"));
    }
    return in;
  }
  ASSIGN_OR_RETURN(in.split_dir, FindSplitDir(options));
  ASSIGN_OR_RETURN(dirs, FindTypeDirs(in.split_dir, in.types));
  if (dirs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(in.split_dir,
                     ": holds no node type directory (expected "
                     "<node type>/{train,valid,test}.csv.gz)"));
  }
  for (const auto& [t, dir] : dirs) {
    if (in.labels.count(t) == 0) {
      const std::string& name = in.types[t].name;
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": a split of nodes that are not of the target type (", name,
          " has no raw/node-label/", name, "/node-label.csv; target types: ",
          targets.empty() ? "none" : absl::StrJoin(targets, ", "), ")"));
    }
    for (const char* split : kSplitNames) {
      ASSIGN_OR_RETURN(
          in.splits[t][split],
          FindInput(JoinPath(dir, absl::StrCat(split, ".csv.gz"))));
    }
  }
  return in;
}

// Reads the target types' labels into *labels (N entries, -1 for the other
// types) and the splits in global IDs, sorted, into *splits.
absl::Status ReadLabelsAndSplits(const HeteroInputs& in,
                                 std::vector<int64_t>* labels,
                                 datasets_internal::Splits* splits) {
  labels->assign(static_cast<size_t>(in.offsets.back()), -1);
  for (const auto& [t, path] : in.labels) {
    absl::StatusOr<std::vector<int64_t>> type_labels =
        datasets_internal::ReadLabelColumn(path, in.types[t].count);
    if (!type_labels.ok()) {
      return absl::Status(type_labels.status().code(),
                          absl::StrCat(type_labels.status().message(),
                                       " (node type ", in.types[t].name, ")"));
    }
    std::copy(type_labels->begin(), type_labels->end(),
              labels->begin() + in.offsets[t]);
  }
  for (const auto& [t, files] : in.splits) {
    for (const auto& [name, path] : files) {
      ASSIGN_OR_RETURN(
          std::vector<NodeId> nodes,
          datasets_internal::ReadSplitText(path, in.types[t].count));
      std::vector<NodeId>& global = (*splits)[name];
      for (NodeId v : nodes) global.push_back(in.offsets[t] + v);
    }
  }
  for (auto& [name, nodes] : *splits) std::sort(nodes.begin(), nodes.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BuildSummary> ImportOgbHetero(
    const OgbHeteroImportOptions& options, const std::string& out_dir) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(out_dir, " already exists"));
  }
  ASSIGN_OR_RETURN(HeteroInputs in, FindHeteroInputs(options));
  std::vector<NodeType> types = in.types;
  std::vector<std::string> notes = in.notes;
  std::vector<std::string> unused;

  // Node feature rows are read on a second thread while this one reads the
  // labels, splits and edges; a failure on either side stops the other.
  std::atomic<bool> cancel{false};
  std::vector<std::vector<float>> type_features(types.size());
  std::vector<int64_t> feature_dims(types.size(), 0);
  int64_t node_nonfinite = 0;
  absl::Status feature_status;
  std::thread feature_thread([&] {
    feature_status = [&]() -> absl::Status {
      for (const auto& [t, path] : in.features) {
        ASSIGN_OR_RETURN(
            FloatRows rows,
            ReadFloatRows(path, in.types[t].count, /*edges=*/false,
                          absl::StrCat("node type ", in.types[t].name),
                          options.allow_nonfinite, &cancel, &node_nonfinite));
        type_features[t] = std::move(rows.values);
        feature_dims[t] = rows.dim;
      }
      return absl::OkStatus();
    }();
    if (!feature_status.ok()) cancel = true;
  });
  std::vector<int64_t> labels;
  datasets_internal::Splits splits;
  std::vector<std::string> split_notes, split_warnings;
  std::vector<RelationEdges> relations;
  int64_t edge_nonfinite = 0;
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(ReadLabelsAndSplits(in, &labels, &splits));
    if (options.class_split.has_value()) {
      ASSIGN_OR_RETURN(splits, datasets_internal::MakeClassSplit(
                                   labels, *options.class_split, &split_notes,
                                   &split_warnings));
    }
    for (const RelationInput& r : in.relations) {
      if (cancel.load(std::memory_order_relaxed)) break;
      ASSIGN_OR_RETURN(RelationEdges edges,
                       ReadRelation(r, in.types, options.allow_nonfinite,
                                    &edge_nonfinite, &notes, &unused));
      relations.push_back(std::move(edges));
    }
    return absl::OkStatus();
  }();
  if (!status.ok()) cancel = true;
  feature_thread.join();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(feature_status);
  std::vector<std::string> featureless;
  for (size_t t = 0; t < types.size(); ++t) {
    types[t].feature_dim = feature_dims[t];
    if (feature_dims[t] == 0) featureless.push_back(types[t].name);
  }

  BuildSummary summary;
  Dataset dataset;
  TypedGraphOptions graph_options;
  graph_options.add_reverse = options.add_reverse;
  graph_options.keep_self_loops = options.keep_self_loops;
  RETURN_IF_ERROR(BuildTypedGraph(types, std::move(relations), graph_options,
                                  &dataset, &summary));
  DatasetManifest& manifest = dataset.manifest;
  manifest.name = options.name.empty()
                      ? datasets_internal::DefaultName(options.input_dir)
                      : options.name;
  int64_t max_label = -1;
  for (int64_t label : labels) max_label = std::max(max_label, label);
  manifest.num_classes = max_label + 1;
  manifest.target_types.clear();
  for (const auto& [t, path] : in.labels) {
    manifest.target_types.push_back(types[t].name);
  }
  for (const auto& [name, nodes] : splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.source =
      absl::StrCat("imported from the OGB heterogeneous raw layout at ",
                   options.input_dir, " (split ",
                   options.class_split.has_value()
                       ? ClassSplitName(*options.class_split)
                       : fs::path(in.split_dir).filename().string(),
                   ")", options.add_reverse ? "; reverse relations added" : "");
  dataset.type_features = std::move(type_features);
  dataset.labels = std::move(labels);
  dataset.splits = splits;
  RETURN_IF_ERROR(WriteDataset(dataset, out_dir));

  summary.out_dir = out_dir;
  ASSIGN_OR_RETURN(summary.manifest, ReadDatasetManifest(out_dir));
  // BuildTypedGraph counted the nodes without neighbors; here per split.
  for (const auto& [name, nodes] : splits) {
    int64_t& count = summary.split_nodes_without_neighbors[name];
    for (NodeId v : nodes) count += dataset.indptr[v + 1] == dataset.indptr[v];
  }
  datasets_internal::NoteNonfiniteFeatures(node_nonfinite + edge_nonfinite,
                                           &summary);
  if (!featureless.empty()) {
    notes.push_back(absl::StrCat(
        "node types without features (no raw/node-feat/<type>/node-feat.csv): ",
        absl::StrJoin(featureless, ", ")));
  }
  NoteUnused(in.raw, "raw",
             {"num-node-dict.csv", "triplet-type-list.csv", "relations",
              "node-feat", "node-label"},
             &unused);
  if (!unused.empty()) {
    notes.push_back(
        absl::StrCat("not imported: ", absl::StrJoin(unused, ", ")));
  }
  summary.notes.insert(summary.notes.end(), split_notes.begin(),
                       split_notes.end());
  summary.notes.insert(summary.notes.end(), notes.begin(), notes.end());
  summary.warnings.insert(summary.warnings.end(), split_warnings.begin(),
                          split_warnings.end());
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return summary;
}

}  // namespace shardgnn
