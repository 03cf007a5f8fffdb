#include "datasets/internal/text_readers.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/line_reader.h"
#include "common/npy.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/internal/import_util.h"

namespace shardgnn::datasets_internal {
namespace {

constexpr int64_t kProgressEvery = 1 << 16;

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::string_view Shorten(absl::string_view field) {
  return field.size() > 40 ? field.substr(0, 40) : field;
}

}  // namespace

absl::Status ReadEdgeText(const std::string& path, EdgeSeparator sep,
                          int64_t num_nodes, std::vector<NodeId>* src,
                          std::vector<NodeId>* dst, std::string* header) {
  return ForEachEdgeText(
      path, sep, num_nodes,
      [&](NodeId s, NodeId d) {
        src->push_back(s);
        dst->push_back(d);
        return absl::OkStatus();
      },
      header);
}

absl::Status ForEachEdgeText(
    const std::string& path, EdgeSeparator sep, int64_t num_nodes,
    absl::FunctionRef<absl::Status(NodeId src, NodeId dst)> sink,
    std::string* header) {
  if (header != nullptr) header->clear();
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(absl::StrCat("reading ", BaseName(path)),
                    reader->file_size(), "bytes");
  absl::string_view line;
  std::vector<absl::string_view> fields;
  int64_t count = 0;
  while (reader->Next(&line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    char c = ' ';
    if (sep == EdgeSeparator::kComma ||
        (sep == EdgeSeparator::kAuto &&
         line.find(',') != absl::string_view::npos)) {
      c = ',';
    }
    SplitFields(line, c, &fields);
    if (fields.empty()) continue;
    if (header != nullptr && reader->line_number() == 1) {
      NodeId unused;
      if (std::none_of(fields.begin(), fields.end(), [&](absl::string_view f) {
            return ParseInt64(f, &unused);
          })) {
        *header = std::string(Shorten(line));
        continue;
      }
    }
    if (fields.size() != 2) {
      // A third column is most often a weight: say what to do with it.
      const std::string hint =
          fields.size() == 3
              ? absl::StrCat(
                    " (a weight column? edge weights are not used: keep the "
                    "first two columns, e.g. ",
                    c == ',' ? "cut -d, -f1,2" : "awk '{print $1, $2}'", ")")
              : "";
      return reader->LineError(
          absl::StrCat("expected 2 columns (src", c == ',' ? "," : " ",
                       "dst), found ", fields.size(), hint));
    }
    NodeId ids[2];
    for (int k = 0; k < 2; ++k) {
      if (!ParseInt64(fields[k], &ids[k])) {
        return reader->LineError(absl::StrCat("\"", Shorten(fields[k]),
                                              "\" is not an integer node ID"));
      }
      if (ids[k] < 0 || ids[k] >= num_nodes) {
        return reader->LineError(absl::StrCat(
            "node ID ", ids[k], " is outside [0, ", num_nodes, ")"));
      }
    }
    RETURN_IF_ERROR(sink(ids[0], ids[1]));
    if (++count % kProgressEvery == 0) progress.Update(reader->bytes_read());
  }
  RETURN_IF_ERROR(reader->status());
  progress.Update(reader->file_size());
  progress.Done();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<int64_t> values;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.empty()) continue;
    int64_t value;
    if (!ParseInt64(line, &value)) {
      return reader->LineError(
          absl::StrCat("\"", Shorten(line), "\" is not an integer"));
    }
    values.push_back(value);
  }
  RETURN_IF_ERROR(reader->status());
  return values;
}

absl::StatusOr<std::vector<int64_t>> ReadLabelColumn(const std::string& path,
                                                     int64_t num_nodes) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<int64_t> labels;
  labels.reserve(num_nodes);
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.find(',') != absl::string_view::npos) {
      return reader->LineError(
          "expected 1 label per line, found several columns (multi-task "
          "labels are not supported)");
    }
    int64_t label;
    if (!ParseLabel(line, &label) || label < -1) {
      return reader->LineError(absl::StrCat(
          "\"", Shorten(line), "\" is not a class index (or nan)"));
    }
    if (static_cast<int64_t>(labels.size()) == num_nodes) {
      return reader->LineError(absl::StrCat("more labels than the ", num_nodes,
                                            " nodes of the graph"));
    }
    labels.push_back(label);
  }
  RETURN_IF_ERROR(reader->status());
  if (static_cast<int64_t>(labels.size()) != num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", labels.size(),
                     " labels but the graph has ", num_nodes, " nodes"));
  }
  return labels;
}

absl::StatusOr<int64_t> StreamFeatureRows(
    const std::string& path, int64_t num_nodes, const std::string& npy_path,
    const std::atomic<bool>* cancel, bool allow_nonfinite, int64_t* nonfinite) {
  *nonfinite = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(absl::StrCat("reading ", BaseName(path)), num_nodes,
                    "rows");
  std::unique_ptr<NpyWriter> writer;
  std::vector<float> chunk;
  std::vector<absl::string_view> fields;
  int64_t dim = -1;
  int64_t rows = 0;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return absl::CancelledError("feature import cancelled");
    }
    SplitFields(line, ',', &fields);
    if (dim < 0) {
      dim = static_cast<int64_t>(fields.size());
      ASSIGN_OR_RETURN(writer, NpyWriter::Create(npy_path, NpyDtype::kFloat32,
                                                 {num_nodes, dim}));
      chunk.reserve(std::max<int64_t>(1, (1 << 22) / dim) * dim);
    } else if (static_cast<int64_t>(fields.size()) != dim) {
      return reader->LineError(absl::StrCat("expected ", dim,
                                            " feature columns (as on line 1), "
                                            "found ",
                                            fields.size()));
    }
    if (rows == num_nodes) {
      return reader->LineError(absl::StrCat("more feature rows than the ",
                                            num_nodes, " nodes of the graph"));
    }
    for (size_t k = 0; k < fields.size(); ++k) {
      float value;
      if (!ParseFloat(fields[k], &value)) {
        return reader->LineError(absl::StrCat("column ", k + 1, ": \"",
                                              Shorten(fields[k]),
                                              "\" is not a number"));
      }
      if (!std::isfinite(value)) {
        if (!allow_nonfinite) {
          return reader->LineError(
              NonfiniteFeatureError(rows, static_cast<int64_t>(k) + 1, value));
        }
        ++*nonfinite;
      }
      chunk.push_back(value);
    }
    ++rows;
    if (chunk.size() + dim > chunk.capacity()) {
      RETURN_IF_ERROR(writer->Append(chunk.data(), chunk.size()));
      chunk.clear();
      progress.Update(rows);
    }
  }
  RETURN_IF_ERROR(reader->status());
  if (rows != num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", rows, " feature rows but the graph has ",
                     num_nodes, " nodes"));
  }
  if (writer == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no feature rows"));
  }
  RETURN_IF_ERROR(writer->Append(chunk.data(), chunk.size()));
  RETURN_IF_ERROR(writer->Close());
  progress.Update(rows);
  progress.Done();
  return dim;
}

absl::StatusOr<std::vector<NodeId>> ReadSplitText(const std::string& path,
                                                  int64_t num_nodes) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<NodeId> nodes;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (line.empty()) continue;
    NodeId v;
    if (!ParseInt64(line, &v)) {
      return reader->LineError(
          absl::StrCat("\"", Shorten(line), "\" is not an integer node index"));
    }
    if (v < 0 || v >= num_nodes) {
      return reader->LineError(
          absl::StrCat("node index ", v, " is outside [0, ", num_nodes, ")"));
    }
    nodes.push_back(v);
  }
  RETURN_IF_ERROR(reader->status());
  std::sort(nodes.begin(), nodes.end());
  auto repeat = std::adjacent_find(nodes.begin(), nodes.end());
  if (repeat != nodes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": node ", *repeat, " is listed twice"));
  }
  return nodes;
}

absl::StatusOr<FloatRows> ReadFloatRows(const std::string& path, int64_t rows,
                                        bool edges, const std::string& what,
                                        bool allow_nonfinite,
                                        const std::atomic<bool>* cancel,
                                        int64_t* nonfinite) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Progress progress(absl::StrCat("reading features of ", what), rows, "rows");
  FloatRows out;
  std::vector<absl::string_view> fields;
  const char* unit = edges ? "edge" : "node";
  int64_t row = 0;
  absl::string_view line;
  while (reader->Next(&line)) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return absl::CancelledError("feature import cancelled");
    }
    SplitFields(line, ',', &fields);
    if (row == 0) {
      out.dim = static_cast<int64_t>(fields.size());
      out.values.reserve(static_cast<size_t>(rows * out.dim));
    } else if (static_cast<int64_t>(fields.size()) != out.dim) {
      return reader->LineError(absl::StrCat("expected ", out.dim,
                                            " feature columns (as on line 1), "
                                            "found ",
                                            fields.size()));
    }
    if (row == rows) {
      return reader->LineError(absl::StrCat("more feature rows than the ", rows,
                                            " ", unit, "s of ", what));
    }
    for (size_t k = 0; k < fields.size(); ++k) {
      float value;
      if (!ParseFloat(fields[k], &value)) {
        return reader->LineError(absl::StrCat("column ", k + 1, ": \"",
                                              Shorten(fields[k]),
                                              "\" is not a number"));
      }
      if (!std::isfinite(value)) {
        if (!allow_nonfinite) {
          const int64_t column = static_cast<int64_t>(k) + 1;
          return reader->LineError(
              edges
                  ? absl::StrCat("edge ", row, ", column ", column, ": ", value,
                                 " is not finite (dataset import "
                                 "--allow-nonfinite keeps it)")
                  : NonfiniteFeatureError(row, column, value));
        }
        ++*nonfinite;
      }
      out.values.push_back(value);
    }
    if (++row % kProgressEvery == 0) progress.Update(row);
  }
  RETURN_IF_ERROR(reader->status());
  if (row != rows) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", row, " feature rows but ", what, " has ",
                     rows, " ", unit, rows == 1 ? "" : "s"));
  }
  progress.Update(row);
  progress.Done();
  return out;
}

}  // namespace shardgnn::datasets_internal
