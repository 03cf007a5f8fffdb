// ImportHgb: the Heterogeneous Graph Benchmark's text layout (HGB, Lv et al.
// 2021: DBLP, ACM, IMDB, Freebase), read into memory and written as a typed
// dataset through BuildTypedGraph and WriteDataset.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/line_reader.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/import_util.h"
#include "datasets/typed_graph.h"

namespace shardgnn {
namespace {

using datasets_internal::SplitFields;

constexpr int64_t kProgressEvery = 1 << 16;
// Type numbers, link types and class indices: int32 in the dataset.
constexpr int64_t kMaxIndex = int64_t{1} << 31;
// The most entries a multi-label [N, C] label matrix may have (16 GB).
constexpr int64_t kMaxLabelEntries = int64_t{1} << 31;

// A field quoted in an error, cut to a readable length.
std::string Quote(absl::string_view field) {
  return absl::StrCat("\"", field.size() > 40 ? field.substr(0, 40) : field,
                      field.size() > 40 ? "...\"" : "\"");
}

// A non-negative integer below `limit`, or false.
// "reading node.dat", for progress lines.
std::string ReadingTask(const std::string& path) {
  return absl::StrCat("reading ",
                      std::filesystem::path(path).filename().string());
}

bool ParseIndex(absl::string_view text, int64_t limit, int64_t* value) {
  return ParseInt64(text, value) && *value >= 0 && *value < limit;
}

// node.dat, one entry per line in file order.
struct NodeRow {
  int64_t id;
  int64_t line;
  int64_t feature_offset;  // Into Nodes::values.
  int32_t type;
  int32_t width;  // 0: no features.
};

struct Nodes {
  std::string path;
  std::vector<NodeRow> rows;
  std::vector<int64_t> row_of;  // Global ID -> index into rows.
  std::vector<float> values;    // Every row's features, in file order.
  std::vector<NodeType> types;  // Named "0", "1", ... in ID order.
  std::vector<int64_t> offsets;
  int64_t nonfinite = 0;

  int64_t size() const { return static_cast<int64_t>(rows.size()); }
  int32_t TypeOf(int64_t id) const { return rows[row_of[id]].type; }
};

absl::Status ReadNodeLines(const std::string& path, bool allow_nonfinite,
                           Nodes* nodes) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(ReadingTask(path), reader->file_size(), "bytes");
  // Per type number: the width of its first row, and that row's line.
  std::map<int64_t, std::pair<int32_t, int64_t>> widths;
  std::vector<absl::string_view> fields, values;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, '\t', &fields);
    if (fields.size() < 3 || fields.size() > 4) {
      return reader->LineError(absl::StrCat(
          "expected 3 or 4 tab-separated columns (id, name, type[, "
          "features]), found ",
          fields.size()));
    }
    NodeRow row;
    row.line = reader->line_number();
    row.feature_offset = static_cast<int64_t>(nodes->values.size());
    int64_t type;
    if (!ParseIndex(fields[0], kMaxIndex * kMaxIndex, &row.id)) {
      return reader->LineError(absl::StrCat(
          Quote(fields[0]), " is not a node ID (an integer >= 0)"));
    }
    if (!ParseIndex(fields[2], kMaxIndex, &type)) {
      return reader->LineError(absl::StrCat("node type ", Quote(fields[2]),
                                            " is not an integer in [0, 2^31)"));
    }
    row.type = static_cast<int32_t>(type);
    row.width = 0;
    if (fields.size() == 4 && !absl::StripAsciiWhitespace(fields[3]).empty()) {
      SplitFields(fields[3], ',', &values);
      for (size_t k = 0; k < values.size(); ++k) {
        float value;
        if (!ParseFloat(values[k], &value)) {
          return reader->LineError(absl::StrCat(
              "feature ", k + 1, ": ", Quote(values[k]), " is not a number"));
        }
        if (!std::isfinite(value)) {
          if (!allow_nonfinite) {
            return reader->LineError(datasets_internal::NonfiniteFeatureError(
                row.id, static_cast<int64_t>(k) + 1, value));
          }
          ++nodes->nonfinite;
        }
        nodes->values.push_back(value);
      }
      row.width = static_cast<int32_t>(values.size());
    }
    auto [it, first] =
        widths.emplace(type, std::make_pair(row.width, row.line));
    if (!first && it->second.first != row.width) {
      return reader->LineError(absl::StrCat(
          "node type ", type, " has ", row.width, " features here but ",
          it->second.first, " on line ", it->second.second,
          " (a type's rows all have features of one width, or none)"));
    }
    nodes->rows.push_back(row);
    if (nodes->size() % kProgressEvery == 0) {
      progress.Update(reader->bytes_read());
    }
  }
  RETURN_IF_ERROR(reader->status());
  progress.Update(reader->file_size());
  progress.Done();
  return absl::OkStatus();
}

// Reads node.dat and checks HGB's ID layout: IDs 0..N-1, each once, and each
// type one contiguous range, types numbered 0..T-1 in ID order.
absl::StatusOr<Nodes> ReadNodes(const std::string& path, bool allow_nonfinite) {
  Nodes nodes;
  nodes.path = path;
  RETURN_IF_ERROR(ReadNodeLines(path, allow_nonfinite, &nodes));
  const int64_t n = nodes.size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the graph has no nodes"));
  }
  nodes.row_of.assign(n, -1);
  for (int64_t r = 0; r < n; ++r) {
    const NodeRow& row = nodes.rows[r];
    if (row.id >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", row.line, ": node ID ", row.id, " is outside [0, ", n,
          "): HGB numbers the ", n, " nodes of node.dat 0..", n - 1));
    }
    if (nodes.row_of[row.id] >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", row.line, ": node ID ", row.id, " appears twice (also on ",
          "line ", nodes.rows[nodes.row_of[row.id]].line, ")"));
    }
    nodes.row_of[row.id] = r;
  }
  // N distinct IDs below N: each of 0..N-1 once.
  int32_t type = -1;
  for (int64_t id = 0; id < n; ++id) {
    const NodeRow& row = nodes.rows[nodes.row_of[id]];
    if (row.type == type) {
      ++nodes.types.back().count;
      continue;
    }
    if (row.type != type + 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", row.line, ": node ID ", id, " is of type ", row.type,
          id == 0 ? absl::StrCat(", the first ID")
                  : absl::StrCat(" after IDs of type ", type),
          ": HGB numbers the node types 0, 1, ... in ID order, each one "
          "contiguous range of IDs"));
    }
    type = row.type;
    NodeType t;
    t.name = absl::StrCat(type);
    t.count = 1;
    t.feature_dim = row.width;
    nodes.types.push_back(t);
    nodes.offsets.push_back(id);
  }
  return nodes;
}

// One link type of link.dat, as read.
struct Link {
  int32_t src_type;
  int32_t dst_type;
  int64_t line;  // Its first line.
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<float> weights;
  bool weighted = false;  // Some weight differs from 1.
};

struct Links {
  std::map<int64_t, Link> by_type;  // Link type -> its edges.
  int64_t nonfinite = 0;
};

absl::StatusOr<Links> ReadLinks(const std::string& path, const Nodes& nodes,
                                bool allow_nonfinite) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(ReadingTask(path), reader->file_size(), "bytes");
  Links links;
  int64_t count = 0;
  std::vector<absl::string_view> fields;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, '\t', &fields);
    if (fields.size() < 3 || fields.size() > 4) {
      return reader->LineError(absl::StrCat(
          "expected 4 tab-separated columns (src, dst, link type, weight), "
          "found ",
          fields.size()));
    }
    int64_t ids[2];
    for (int k = 0; k < 2; ++k) {
      if (!ParseInt64(fields[k], &ids[k])) {
        return reader->LineError(absl::StrCat(
            Quote(fields[k]), " is not a node ID (an integer >= 0)"));
      }
      if (ids[k] < 0 || ids[k] >= nodes.size()) {
        return reader->LineError(absl::StrCat("node ID ", ids[k], " is not in ",
                                              nodes.path, " (", nodes.size(),
                                              " nodes)"));
      }
    }
    int64_t link_type;
    if (!ParseIndex(fields[2], kMaxIndex, &link_type)) {
      return reader->LineError(absl::StrCat("link type ", Quote(fields[2]),
                                            " is not an integer in [0, 2^31)"));
    }
    float weight = 1;
    if (fields.size() == 4) {
      if (!ParseFloat(fields[3], &weight)) {
        return reader->LineError(
            absl::StrCat("weight ", Quote(fields[3]), " is not a number"));
      }
      if (!std::isfinite(weight)) {
        if (!allow_nonfinite) {
          return reader->LineError(absl::StrCat(
              "weight ", weight,
              " is not finite (weights are kept as edge features; dataset "
              "import --allow-nonfinite keeps such values)"));
        }
        ++links.nonfinite;
      }
    }
    const int32_t src_type = nodes.TypeOf(ids[0]);
    const int32_t dst_type = nodes.TypeOf(ids[1]);
    auto [it, first] = links.by_type.try_emplace(link_type);
    Link& link = it->second;
    if (first) {
      link.src_type = src_type;
      link.dst_type = dst_type;
      link.line = reader->line_number();
    } else if (link.src_type != src_type || link.dst_type != dst_type) {
      return reader->LineError(absl::StrCat(
          "link type ", link_type, " joins node types ", src_type, " -> ",
          dst_type, " here but ", link.src_type, " -> ", link.dst_type,
          " on line ", link.line,
          " (each link type is one relation between two node types)"));
    }
    link.src.push_back(ids[0] - nodes.offsets[src_type]);
    link.dst.push_back(ids[1] - nodes.offsets[dst_type]);
    link.weights.push_back(weight);
    if (weight != 1) link.weighted = true;
    if (++count % kProgressEvery == 0) progress.Update(reader->bytes_read());
  }
  RETURN_IF_ERROR(reader->status());
  progress.Update(reader->file_size());
  progress.Done();
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the graph has no edges"));
  }
  return links;
}

// label.dat and label.dat.test together.
struct Labels {
  int32_t type = -1;  // The labeled node type.
  std::string first;  // "file:line" of the first label, for errors.
  bool multilabel = false;
  int64_t num_classes = 0;
  std::string max_class_at;    // "file:line" of the largest class index.
  std::vector<int64_t> nodes;  // In file order.
  std::vector<std::vector<int64_t>> classes;  // Each node's classes.
  std::vector<std::string> where;             // Global ID -> "file:line" or "".
};

// Appends `path`'s labels to *labels; the nodes it labels to *split.
absl::Status ReadLabels(const std::string& path, const Nodes& nodes,
                        Labels* labels, std::vector<NodeId>* split) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<absl::string_view> fields, values;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.empty()) continue;
    SplitFields(line, '\t', &fields);
    if (fields.size() != 4) {
      return reader->LineError(absl::StrCat(
          "expected 4 tab-separated columns (id, name, type, label), found ",
          fields.size()));
    }
    const std::string here = absl::StrCat(path, ":", reader->line_number());
    int64_t id, type;
    if (!ParseInt64(fields[0], &id)) {
      return reader->LineError(absl::StrCat(
          Quote(fields[0]), " is not a node ID (an integer >= 0)"));
    }
    if (id < 0 || id >= nodes.size()) {
      return reader->LineError(absl::StrCat("node ID ", id, " is not in ",
                                            nodes.path, " (", nodes.size(),
                                            " nodes)"));
    }
    if (!ParseIndex(fields[2], kMaxIndex, &type)) {
      return reader->LineError(absl::StrCat("node type ", Quote(fields[2]),
                                            " is not an integer in [0, 2^31)"));
    }
    const int32_t node_type = nodes.TypeOf(id);
    if (type != node_type) {
      return reader->LineError(absl::StrCat("node ", id, " is of type ",
                                            node_type, " in ", nodes.path,
                                            ", not ", type));
    }
    if (labels->type < 0) {
      labels->type = node_type;
      labels->first = here;
    } else if (node_type != labels->type) {
      return reader->LineError(absl::StrCat(
          "node ", id, " is of type ", node_type,
          ", but the labels are on type ", labels->type, " (", labels->first,
          "); the labeled nodes must all be of one type"));
    }
    if (!labels->where[id].empty()) {
      return reader->LineError(absl::StrCat(
          "node ", id, " is labeled twice (also at ", labels->where[id], ")"));
    }
    SplitFields(fields[3], ',', &values);
    if (values.size() > 1) labels->multilabel = true;
    std::vector<int64_t> classes;
    for (absl::string_view value : values) {
      int64_t c;
      if (!ParseIndex(value, kMaxIndex, &c)) {
        return reader->LineError(
            absl::StrCat("label ", Quote(fields[3]),
                         " is not a class index or a comma-separated list of "
                         "them (integers in [0, 2^31))"));
      }
      if (c + 1 > labels->num_classes) {
        labels->num_classes = c + 1;
        labels->max_class_at = here;
      }
      classes.push_back(c);
    }
    labels->where[id] = here;
    labels->nodes.push_back(id);
    labels->classes.push_back(std::move(classes));
    split->push_back(id);
  }
  RETURN_IF_ERROR(reader->status());
  std::sort(split->begin(), split->end());
  return absl::OkStatus();
}

// Dataset::labels: N entries, or N x C multi-hot rows when multi-label.
absl::StatusOr<std::vector<int64_t>> LabelArray(const Labels& labels,
                                                int64_t n) {
  if (!labels.multilabel) {
    std::vector<int64_t> out(n, -1);
    for (size_t i = 0; i < labels.nodes.size(); ++i) {
      out[labels.nodes[i]] = labels.classes[i][0];
    }
    return out;
  }
  const int64_t c = labels.num_classes;
  if (n > kMaxLabelEntries / c) {
    return absl::InvalidArgumentError(absl::StrCat(
        labels.max_class_at, ": class ", c - 1, " makes a multi-label matrix ",
        "of ", n, " x ", c, " entries, more than ", kMaxLabelEntries));
  }
  std::vector<int64_t> out(n * c, -1);
  for (size_t i = 0; i < labels.nodes.size(); ++i) {
    int64_t* row = out.data() + labels.nodes[i] * c;
    std::fill(row, row + c, 0);
    for (int64_t k : labels.classes[i]) row[k] = 1;
  }
  return out;
}

// Checks meta.dat's node counts against node.dat: lines "Node Total: N",
// "Total nodes: N" and "Node Type_<t>: N" (or "...: <text>: N"), also in
// meta.dat's JSON form ("Node Type_0": 4057,). Other lines are ignored.
absl::Status CheckMeta(const std::string& path, const Nodes& nodes) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  absl::string_view line;
  while (reader->Next(&line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    absl::ConsumePrefix(&text, "{");
    absl::ConsumeSuffix(&text, "}");
    absl::ConsumeSuffix(&text, ",");
    const size_t colon = text.find(':');
    if (colon == absl::string_view::npos) continue;
    std::string key =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(absl::StripSuffix(
            absl::StripPrefix(absl::StripAsciiWhitespace(text.substr(0, colon)),
                              "\""),
            "\"")));
    absl::string_view value =
        absl::StripAsciiWhitespace(text.substr(text.rfind(':') + 1));
    int64_t count;
    if (!ParseInt64(value, &count)) continue;
    if (key == "node total" || key == "total nodes") {
      if (count != nodes.size()) {
        return reader->LineError(absl::StrCat(
            "says ", count, " nodes, ", nodes.path, " has ", nodes.size()));
      }
      continue;
    }
    absl::string_view rest = key;
    int64_t type;
    if ((absl::ConsumePrefix(&rest, "node type_") ||
         absl::ConsumePrefix(&rest, "node type ")) &&
        ParseIndex(rest, kMaxIndex, &type)) {
      const int64_t actual = type < static_cast<int64_t>(nodes.types.size())
                                 ? nodes.types[type].count
                                 : 0;
      if (count != actual) {
        return reader->LineError(absl::StrCat("says ", count, " nodes of type ",
                                              type, ", ", nodes.path, " has ",
                                              actual));
      }
    }
  }
  return reader->status();
}

// The summary's counts that BuildTypedGraph leaves: per split the nodes
// without neighbors, and the stored edges between distinct nodes whose
// reverse is stored too (of any relation).
void CountNeighbors(const Dataset& d, BuildSummary* summary) {
  summary->split_nodes_without_neighbors.clear();
  for (const auto& [name, split] : d.splits) {
    int64_t& count = summary->split_nodes_without_neighbors[name];
    for (NodeId v : split) count += d.indptr[v + 1] == d.indptr[v];
  }
  // Rows are sorted by (relation, neighbor): sort a copy by neighbor alone.
  std::vector<NodeId> sorted = d.indices;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    std::sort(sorted.begin() + d.indptr[v], sorted.begin() + d.indptr[v + 1]);
  }
  summary->non_loop_edges = 0;
  summary->reciprocated_edges = 0;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      const NodeId u = d.indices[i];
      if (u == v) continue;
      ++summary->non_loop_edges;
      summary->reciprocated_edges += std::binary_search(
          sorted.begin() + d.indptr[u], sorted.begin() + d.indptr[u + 1], v);
    }
  }
}

}  // namespace

absl::StatusOr<BuildSummary> ImportHgb(const HgbImportOptions& options,
                                       const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  if (!(options.valid_fraction >= 0 && options.valid_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the validation fraction must be in [0, 1), not ",
                     options.valid_fraction));
  }
  // Fail before reading a large input, not after (WriteDataset checks too).
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        out_dir, ": output already exists; remove it or choose another path"));
  }
  const std::string& dir = options.input_dir;
  ASSIGN_OR_RETURN(std::string node_path,
                   datasets_internal::FindInput(JoinPath(dir, "node.dat")));
  ASSIGN_OR_RETURN(std::string link_path,
                   datasets_internal::FindInput(JoinPath(dir, "link.dat")));
  ASSIGN_OR_RETURN(std::string label_path,
                   datasets_internal::FindInput(JoinPath(dir, "label.dat")));
  absl::StatusOr<std::string> test_path =
      datasets_internal::FindInput(JoinPath(dir, "label.dat.test"));
  if (!test_path.ok() && !absl::IsNotFound(test_path.status())) {
    return test_path.status();
  }

  ASSIGN_OR_RETURN(Nodes nodes, ReadNodes(node_path, options.allow_nonfinite));
  const int64_t n = nodes.size();
  const std::string meta_path = JoinPath(dir, "meta.dat");
  if (std::filesystem::is_regular_file(meta_path, ec)) {
    RETURN_IF_ERROR(CheckMeta(meta_path, nodes));
  }
  ASSIGN_OR_RETURN(Links links,
                   ReadLinks(link_path, nodes, options.allow_nonfinite));

  Labels labels;
  labels.where.resize(n);
  std::vector<NodeId> labeled, test;
  RETURN_IF_ERROR(ReadLabels(label_path, nodes, &labels, &labeled));
  if (labeled.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label_path, ": no labeled nodes"));
  }
  if (test_path.ok()) {
    RETURN_IF_ERROR(ReadLabels(*test_path, nodes, &labels, &test));
  }
  labels.where = {};
  if (labels.multilabel && options.class_split.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        label_path,
        ": multi-label (some nodes have several comma-separated labels); a "
        "per-class random split needs one class per node"));
  }

  BuildSummary summary;
  Dataset dataset;
  {
    std::vector<RelationEdges> relations;
    for (auto& [link_type, link] : links.by_type) {
      RelationEdges r;
      r.src_type = nodes.types[link.src_type].name;
      r.relation = absl::StrCat(link_type);
      r.dst_type = nodes.types[link.dst_type].name;
      r.src = std::move(link.src);
      r.dst = std::move(link.dst);
      if (link.weighted) {
        r.feature_dim = 1;
        r.features = std::move(link.weights);
        summary.notes.push_back(absl::StrCat(
            "link type ", link_type,
            " has weights other than 1: kept as its 1-wide edge feature"));
      }
      r.source = absl::StrCat(link_path, " (link type ", link_type, ")");
      relations.push_back(std::move(r));
    }
    links.by_type.clear();
    TypedGraphOptions graph_options;
    graph_options.add_reverse = options.add_reverse;
    graph_options.keep_self_loops = options.keep_self_loops;
    RETURN_IF_ERROR(BuildTypedGraph(nodes.types, std::move(relations),
                                    graph_options, &dataset, &summary));
  }

  // Each type's features in ID order.
  dataset.type_features.resize(nodes.types.size());
  for (size_t t = 0; t < nodes.types.size(); ++t) {
    const NodeType& type = nodes.types[t];
    if (type.feature_dim == 0) continue;
    std::vector<float>& out = dataset.type_features[t];
    out.reserve(type.count * type.feature_dim);
    for (int64_t id = nodes.offsets[t]; id < nodes.offsets[t] + type.count;
         ++id) {
      const NodeRow& row = nodes.rows[nodes.row_of[id]];
      out.insert(out.end(), nodes.values.begin() + row.feature_offset,
                 nodes.values.begin() + row.feature_offset + row.width);
    }
  }
  nodes.values = {};

  DatasetManifest& manifest = dataset.manifest;
  manifest.name =
      options.name.empty() ? datasets_internal::DefaultName(dir) : options.name;
  manifest.num_classes = labels.num_classes;
  manifest.multilabel = labels.multilabel;
  manifest.target_types = {nodes.types[labels.type].name};
  ASSIGN_OR_RETURN(dataset.labels, LabelArray(labels, n));
  if (options.class_split.has_value()) {
    // Over label.dat and label.dat.test together.
    ASSIGN_OR_RETURN(dataset.splits, datasets_internal::MakeClassSplit(
                                         dataset.labels, *options.class_split,
                                         &summary.notes, &summary.warnings));
    for (const auto& [name, split] : dataset.splits) {
      manifest.splits[name] = static_cast<int64_t>(split.size());
    }
  } else {
    std::vector<int64_t> in_label_dat(n, -1);
    for (NodeId v : labeled) in_label_dat[v] = 0;
    datasets_internal::Splits splits = datasets_internal::RandomSplit(
        in_label_dat, {"valid", "train"},
        {options.valid_fraction, 1 - options.valid_fraction}, options.seed);
    if (!test.empty()) splits["test"] = std::move(test);
    for (auto& [name, split] : splits) {
      if (split.empty()) continue;
      manifest.splits[name] = static_cast<int64_t>(split.size());
      dataset.splits[name] = std::move(split);
    }
  }
  manifest.source = absl::StrFormat(
      "imported from the HGB layout at %s (node types and relations named by "
      "their numbers in node.dat and link.dat); %s",
      dir,
      options.class_split.has_value()
          ? absl::StrCat("split ", ClassSplitName(*options.class_split),
                         " over label.dat",
                         test_path.ok() ? " and label.dat.test" : "")
          : absl::StrFormat(
                "label.dat split at random with seed %d, %g of it to valid%s",
                options.seed, options.valid_fraction,
                test_path.ok() ? "; label.dat.test is the test split" : ""));
  if (labels.multilabel) {
    summary.notes.push_back(absl::StrCat("multi-label: ", labels.num_classes,
                                         " classes, labels stored as 0/1 "
                                         "rows"));
  }
  if (!test_path.ok() && !options.class_split.has_value()) {
    summary.notes.push_back("no label.dat.test: no test split");
  }

  RETURN_IF_ERROR(WriteDataset(dataset, out_dir));

  summary.out_dir = out_dir;
  ASSIGN_OR_RETURN(summary.manifest, ReadDatasetManifest(out_dir));
  CountNeighbors(dataset, &summary);
  datasets_internal::NoteNonfiniteFeatures(nodes.nonfinite + links.nonfinite,
                                           &summary);
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return summary;
}

}  // namespace shardgnn
