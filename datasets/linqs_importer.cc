// ImportLinqs: LINQS .content / .cites files (Cora, Citeseer, Pubmed in their
// original form).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/line_reader.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/import_util.h"

namespace shardgnn {
namespace {

using datasets_internal::SplitFields;

struct Content {
  std::unordered_map<std::string, NodeId> index;  // paper id -> node
  std::vector<float> features;                    // N x dim
  int64_t dim = -1;
  std::vector<int64_t> labels;
  std::vector<std::string> class_names;  // Sorted; label = position.
  int64_t nonfinite = 0;                 // NaN/infinite features kept.
};

// Non-finite features are an error unless `allow_nonfinite`.
absl::StatusOr<Content> ReadContent(const std::string& path,
                                    bool allow_nonfinite) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  Content content;
  std::vector<std::string> node_class;
  std::vector<absl::string_view> fields;
  absl::string_view line;
  while (reader->Next(&line)) {
    SplitFields(line, ' ', &fields);
    if (fields.empty()) continue;
    if (fields.size() < 3) {
      return reader->LineError(
          absl::StrCat("expected <id> <features...> <class>, found ",
                       fields.size(), " columns"));
    }
    int64_t dim = static_cast<int64_t>(fields.size()) - 2;
    if (content.dim < 0) content.dim = dim;
    if (dim != content.dim) {
      return reader->LineError(absl::StrCat("expected ", content.dim + 2,
                                            " columns (as on the first line), "
                                            "found ",
                                            fields.size()));
    }
    std::string id(fields[0]);
    NodeId node = static_cast<NodeId>(node_class.size());
    if (!content.index.emplace(id, node).second) {
      return reader->LineError(
          absl::StrCat("paper id \"", id, "\" appears twice"));
    }
    for (int64_t k = 1; k <= dim; ++k) {
      float value;
      if (!ParseFloat(fields[k], &value)) {
        return reader->LineError(absl::StrCat("column ", k + 1, ": \"",
                                              fields[k], "\" is not a number"));
      }
      if (!std::isfinite(value)) {
        if (!allow_nonfinite) {
          return reader->LineError(
              datasets_internal::NonfiniteFeatureError(node, k + 1, value));
        }
        ++content.nonfinite;
      }
      content.features.push_back(value);
    }
    node_class.emplace_back(fields.back());
  }
  RETURN_IF_ERROR(reader->status());
  if (node_class.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the graph has no nodes"));
  }
  content.class_names = node_class;
  std::sort(content.class_names.begin(), content.class_names.end());
  content.class_names.erase(
      std::unique(content.class_names.begin(), content.class_names.end()),
      content.class_names.end());
  for (const std::string& name : node_class) {
    content.labels.push_back(std::lower_bound(content.class_names.begin(),
                                              content.class_names.end(), name) -
                             content.class_names.begin());
  }
  return content;
}

}  // namespace

absl::StatusOr<BuildSummary> ImportLinqs(const LinqsImportOptions& options,
                                         const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::string content_path,
                   datasets_internal::FindInput(options.content_path));
  ASSIGN_OR_RETURN(std::string cites_path,
                   datasets_internal::FindInput(options.cites_path));
  ASSIGN_OR_RETURN(Content content,
                   ReadContent(content_path, options.allow_nonfinite));
  const int64_t n = static_cast<int64_t>(content.labels.size());
  const int64_t num_classes = static_cast<int64_t>(content.class_names.size());

  BuildSummary summary;
  std::vector<NodeId> src, dst;
  {
    ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader,
                     LineReader::Open(cites_path));
    std::vector<absl::string_view> fields;
    absl::string_view line;
    while (reader->Next(&line)) {
      SplitFields(line, ' ', &fields);
      if (fields.empty()) continue;
      if (fields.size() != 2) {
        return reader->LineError(
            absl::StrCat("expected 2 columns (<cited id> <citing id>), found ",
                         fields.size()));
      }
      ++summary.input_edges;
      NodeId ends[2];
      bool known = true;
      for (int k = 0; k < 2; ++k) {
        auto it = content.index.find(std::string(fields[k]));
        if (it == content.index.end()) {
          if (!options.skip_unknown_ids) {
            return reader->LineError(absl::StrCat(
                "paper id \"", fields[k], "\" is not in ", content_path,
                " (skip such edges with --skip-unknown-ids)"));
          }
          known = false;
          break;
        }
        ends[k] = it->second;
      }
      if (!known) {
        ++summary.unknown_ids_dropped;
        continue;
      }
      src.push_back(ends[1]);  // citing -> cited
      dst.push_back(ends[0]);
    }
    RETURN_IF_ERROR(reader->status());
  }
  if (src.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(cites_path, ": the graph has no edges"));
  }
  absl::StatusOr<datasets_internal::Splits> splits =
      options.class_split.has_value()
          ? datasets_internal::MakeClassSplit(content.labels,
                                              *options.class_split,
                                              &summary.notes, &summary.warnings)
          : datasets_internal::StratifiedSplit(
                content.labels, num_classes, options.train_per_class,
                options.num_valid, options.num_test, options.seed);
  if (!splits.ok()) return Annotate(splits.status(), content_path);

  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();
  const datasets_internal::CsrOptions csr =
      datasets_internal::CsrOptionsFor(options.edges);
  ASSIGN_OR_RETURN(
      datasets_internal::CsrResult result,
      datasets_internal::WriteCsr(n, std::move(src), std::move(dst), csr, dir));
  RETURN_IF_ERROR(WriteNpy<float>(JoinPath(dir, kFeaturesFile),
                                  {n, content.dim}, content.features));
  RETURN_IF_ERROR(
      datasets_internal::WriteLabelsAndSplits(dir, content.labels, *splits));

  DatasetManifest manifest;
  manifest.name = options.name.empty()
                      ? datasets_internal::DefaultName(content_path)
                      : options.name;
  manifest.num_nodes = n;
  manifest.num_edges = result.num_edges;
  manifest.directed = !options.edges.undirected;
  manifest.feature_dim = content.dim;
  manifest.num_classes = num_classes;
  for (const auto& [name, nodes] : *splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  std::string classes;
  for (size_t c = 0; c < content.class_names.size(); ++c) {
    absl::StrAppend(&classes, c ? ", " : "", c, "=", content.class_names[c]);
  }
  manifest.source = absl::StrCat(
      "imported from LINQS files ", content_path, " and ", cites_path,
      options.edges.undirected ? " (symmetrized)" : " (citing -> cited)",
      options.class_split.has_value()
          ? absl::StrCat("; split ", ClassSplitName(*options.class_split))
          : absl::StrCat("; stratified split with seed ", options.seed, " (",
                         options.train_per_class, " per class train, ",
                         options.num_valid, " valid, ", options.num_test,
                         " test)"),
      "; classes: ", classes);
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, *splits, start, &summary));
  datasets_internal::NoteNonfiniteFeatures(content.nonfinite, &summary);
  datasets_internal::WarnIfOneDirectional(
      "citations are stored citing -> cited only (--directed); without "
      "--directed both directions are stored",
      &summary);
  return summary;
}

}  // namespace shardgnn
