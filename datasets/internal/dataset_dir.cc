#include "datasets/internal/dataset_dir.h"

#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/json_ints.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace shardgnn::datasets_internal {
namespace {

constexpr char kFormat[] = "shardgnn-dataset";
constexpr int kVersion = 1;
// Node types and relations a manifest may list.
constexpr size_t kMaxTypes = 4096;

}  // namespace

std::string ManifestToJson(const DatasetManifest& manifest) {
  nlohmann::json json;
  json["format"] = kFormat;
  json["version"] = kVersion;
  json["name"] = manifest.name;
  json["num_nodes"] = manifest.num_nodes;
  json["num_edges"] = manifest.num_edges;
  json["directed"] = manifest.directed;
  json["feature_dim"] = manifest.feature_dim;
  json["feature_dtype"] = manifest.feature_dtype;
  json["num_classes"] = manifest.num_classes;
  json["splits"] = manifest.splits;
  if (!manifest.edge_splits.empty()) json["edge_splits"] = manifest.edge_splits;
  // Written only when used, so that untyped manifests stay as they were.
  if (manifest.edge_feature_dim > 0)
    json["edge_feature_dim"] = manifest.edge_feature_dim;
  if (manifest.multilabel) json["multilabel"] = true;
  if (manifest.typed()) {
    nlohmann::json types = nlohmann::json::array();
    for (const NodeType& t : manifest.node_types) {
      types.push_back({{"name", t.name},
                       {"count", t.count},
                       {"feature_dim", t.feature_dim}});
    }
    json["node_types"] = types;
    nlohmann::json relations = nlohmann::json::array();
    for (const EdgeType& r : manifest.edge_types) {
      relations.push_back({{"src", r.src},
                           {"relation", r.relation},
                           {"dst", r.dst},
                           {"count", r.count},
                           {"feature_dim", r.feature_dim}});
    }
    json["edge_types"] = relations;
    json["target_types"] = manifest.target_types;
  }
  json["files"] = manifest.files;
  json["source"] = manifest.source;
  return json.dump(2) + "\n";
}

absl::StatusOr<DatasetManifest> ManifestFromJson(const std::string& text,
                                                 const std::string& path) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not valid JSON: ", e.what()));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object"));
  }
  const auto format = json.find("format");
  if (format == json.end() || !format->is_string() ||
      format->get<std::string>() != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": \"format\" is not \"", kFormat,
                     "\"; this is not a shardgnn dataset manifest"));
  }
  DatasetManifest manifest;
  try {
    const int64_t version = JsonIntField(json, "version", 0, kMaxJsonWidth);
    if (version != kVersion) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unsupported version ", version,
                       " (this build reads version ", kVersion, ")"));
    }
    manifest.name = json.at("name").get<std::string>();
    manifest.num_nodes = JsonIntField(json, "num_nodes", 0, kMaxJsonCount);
    manifest.num_edges = JsonIntField(json, "num_edges", 0, kMaxJsonCount);
    manifest.directed = json.at("directed").get<bool>();
    manifest.feature_dim = JsonIntField(json, "feature_dim", 0, kMaxJsonWidth);
    manifest.feature_dtype = json.at("feature_dtype").get<std::string>();
    manifest.num_classes = JsonIntField(json, "num_classes", 0, kMaxJsonWidth);
    const nlohmann::json& splits = json.at("splits");
    if (!splits.is_object()) {
      throw std::invalid_argument("field \"splits\" is not an object");
    }
    for (const auto& [name, count] : splits.items()) {
      manifest.splits[name] = JsonIntField(splits, name, 0, kMaxJsonCount);
    }
    if (json.contains("edge_splits")) {
      const nlohmann::json& edge_splits = json.at("edge_splits");
      if (!edge_splits.is_object()) {
        throw std::invalid_argument("field \"edge_splits\" is not an object");
      }
      for (const auto& [name, count] : edge_splits.items()) {
        manifest.edge_splits[name] =
            JsonIntField(edge_splits, name, 0, kMaxJsonCount);
      }
    }
    manifest.edge_feature_dim =
        json.contains("edge_feature_dim")
            ? JsonIntField(json, "edge_feature_dim", 0, kMaxJsonWidth)
            : 0;
    manifest.multilabel = json.value("multilabel", false);
    if (json.contains("node_types")) {
      const nlohmann::json& types = json.at("node_types");
      if (!types.is_array() || types.size() > kMaxTypes) {
        throw std::invalid_argument(absl::StrCat(
            "field \"node_types\" is not an array of at most ", kMaxTypes));
      }
      for (const nlohmann::json& t : types) {
        NodeType& type = manifest.node_types.emplace_back();
        type.name = t.at("name").get<std::string>();
        type.count = JsonIntField(t, "count", 0, kMaxJsonCount);
        type.feature_dim = JsonIntField(t, "feature_dim", 0, kMaxJsonWidth);
      }
      const nlohmann::json& relations = json.at("edge_types");
      if (!relations.is_array() || relations.size() > kMaxTypes) {
        throw std::invalid_argument(absl::StrCat(
            "field \"edge_types\" is not an array of at most ", kMaxTypes));
      }
      for (const nlohmann::json& r : relations) {
        EdgeType& type = manifest.edge_types.emplace_back();
        type.src = r.at("src").get<std::string>();
        type.relation = r.at("relation").get<std::string>();
        type.dst = r.at("dst").get<std::string>();
        type.count = JsonIntField(r, "count", 0, kMaxJsonCount);
        type.feature_dim = JsonIntField(r, "feature_dim", 0, kMaxJsonWidth);
      }
      manifest.target_types =
          json.value("target_types", std::vector<std::string>());
    }
    manifest.files = json.at("files").get<std::map<std::string, std::string>>();
    manifest.source = json.value("source", std::string());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": missing or malformed field: ", e.what()));
  }
  if (manifest.num_nodes * manifest.feature_dim > kMaxJsonCount) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": \"num_nodes\" x \"feature_dim\" (", manifest.num_nodes, " x ",
        manifest.feature_dim, ") is more than ", kMaxJsonCount, " values"));
  }
  for (const auto& [name, count] : manifest.splits) {
    if (count > manifest.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": split \"", name, "\" has ", count, " nodes, more than ",
          "\"num_nodes\" (", manifest.num_nodes, ")"));
    }
  }
  for (const NodeType& t : manifest.node_types) {
    if (t.count * t.feature_dim > kMaxJsonCount) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": node type \"", t.name, "\" has ", t.count, " x ",
          t.feature_dim, " feature values, more than ", kMaxJsonCount));
    }
  }
  for (const EdgeType& r : manifest.edge_types) {
    if (r.count * r.feature_dim > kMaxJsonCount) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": edge type \"", EdgeTypeKey(r), "\" has ", r.count, " x ",
          r.feature_dim, " edge feature values, more than ", kMaxJsonCount));
    }
  }
  if (manifest.num_edges * manifest.edge_feature_dim > kMaxJsonCount ||
      (manifest.multilabel &&
       manifest.num_nodes * manifest.num_classes > kMaxJsonCount)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": edge features or multi-label rows of more than ",
                     kMaxJsonCount, " values"));
  }
  if (manifest.feature_dtype != "float32") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": feature_dtype \"", manifest.feature_dtype,
                     "\" is not supported (only float32)"));
  }
  return manifest;
}

std::vector<std::string> DatasetFileNames(const DatasetManifest& manifest) {
  std::vector<std::string> names = {kIndptrFile, kIndicesFile};
  if (!manifest.typed()) names.push_back(kFeaturesFile);
  names.push_back(kLabelsFile);
  for (const auto& [split, count] : manifest.splits) {
    names.push_back(SplitFileName(split));
  }
  for (const auto& [split, count] : manifest.edge_splits) {
    names.push_back(EdgeSplitFileName(split));
  }
  if (!manifest.typed() && manifest.edge_feature_dim > 0)
    names.push_back(kEdgeFeaturesFile);
  if (manifest.typed()) {
    names.push_back(kEdgeTypesFile);
    for (const NodeType& t : manifest.node_types) {
      if (t.feature_dim > 0) names.push_back(NodeTypeFeaturesFileName(t.name));
    }
    for (size_t r = 0; r < manifest.edge_types.size(); ++r) {
      if (manifest.edge_types[r].feature_dim > 0)
        names.push_back(EdgeTypeFeaturesFileName(static_cast<int>(r)));
    }
  }
  return names;
}

absl::Status FinishDatasetDir(const std::string& dir,
                              DatasetManifest manifest) {
  const std::vector<std::string> names = DatasetFileNames(manifest);
  manifest.files.clear();
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(manifest.files[name], ChecksumFile(JoinPath(dir, name)));
  }
  return WriteFileAtomic(JoinPath(dir, kDatasetManifestFile),
                         ManifestToJson(manifest));
}

absl::Status CommitDatasetDir(StagingDir* staging, DatasetManifest manifest,
                              const CsrResult& csr, const Splits& splits,
                              std::chrono::steady_clock::time_point start,
                              BuildSummary* summary) {
  RETURN_IF_ERROR(FinishDatasetDir(staging->path(), std::move(manifest)));
  RETURN_IF_ERROR(staging->Commit());
  summary->out_dir = staging->final_path();
  ASSIGN_OR_RETURN(summary->manifest, ReadDatasetManifest(summary->out_dir));
  summary->duplicate_edges_dropped = csr.duplicate_edges_dropped;
  summary->self_loops_dropped = csr.self_loops_dropped;
  summary->max_degree = csr.max_degree;
  summary->nodes_without_neighbors = csr.nodes_without_neighbors;
  summary->split_nodes_without_neighbors.clear();
  for (const auto& [name, nodes] : splits) {
    int64_t& count = summary->split_nodes_without_neighbors[name];
    for (NodeId v : nodes) count += csr.without_neighbors[v];
  }
  summary->non_loop_edges = csr.non_loop_edges;
  summary->reciprocated_edges = csr.reciprocated_edges;
  summary->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return absl::OkStatus();
}

void WarnIfOneDirectional(absl::string_view fix, BuildSummary* summary) {
  const BuildSummary& s = *summary;
  if (!s.manifest.directed || s.non_loop_edges == 0) return;
  const bool few_reverse = 2 * s.reciprocated_edges < s.non_loop_edges;
  auto train = s.manifest.splits.find("train");
  auto train_alone = s.split_nodes_without_neighbors.find("train");
  const int64_t train_nodes =
      train == s.manifest.splits.end() ? 0 : train->second;
  const int64_t lonely = train_alone == s.split_nodes_without_neighbors.end()
                             ? 0
                             : train_alone->second;
  const bool lonely_train = train_nodes > 0 && 4 * lonely > train_nodes;
  if (!few_reverse && !lonely_train) return;
  std::string text = "the graph looks one-directional: ";
  if (few_reverse) {
    absl::StrAppend(
        &text, "only ", s.reciprocated_edges, " of ", s.non_loop_edges,
        absl::StrFormat(" edges (%.1f%%)",
                        100.0 * static_cast<double>(s.reciprocated_edges) /
                            static_cast<double>(s.non_loop_edges)),
        " have their reverse edge stored");
  }
  if (lonely_train) {
    absl::StrAppend(&text, few_reverse ? ", and " : "", lonely, " of ",
                    train_nodes,
                    " train nodes have no neighbor to aggregate from");
  }
  absl::StrAppend(&text, "; ", fix);
  summary->warnings.push_back(std::move(text));
}

}  // namespace shardgnn::datasets_internal
