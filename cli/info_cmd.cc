// `shardgnn info PATH`: a dataset, a partition, one part's shard or a run
// directory, for people.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "graphstore/shard_store.h"
#include "nlohmann/json.hpp"
#include "partition/partition.h"
#include "partition/partition_book.h"

namespace shardgnn::cli {
namespace {

std::string DescribeDataset(const DatasetManifest& m) {
  std::string out;
  if (m.typed()) {
    out = absl::StrFormat(
        "dataset '%s': typed, %d nodes of %d types, %d edges of %d relations "
        "(%s), %d classes%s on %s\n",
        m.name, m.num_nodes, m.node_types.size(), m.num_edges,
        m.edge_types.size(),
        m.directed ? "as given" : "reverse relations added", m.num_classes,
        m.multilabel ? " (multi-label)" : "",
        m.target_types.empty() ? "no type"
                               : absl::StrJoin(m.target_types, ", "));
    for (size_t t = 0; t < m.node_types.size(); ++t) {
      const NodeType& type = m.node_types[t];
      absl::StrAppendFormat(
          &out, "  node type %-16s %10d nodes (IDs from %d), %s\n", type.name,
          type.count, m.NodeTypeOffset(static_cast<int>(t)),
          type.feature_dim > 0 ? absl::StrCat(type.feature_dim, " features")
                               : std::string("no features"));
    }
    for (const EdgeType& r : m.edge_types) {
      absl::StrAppendFormat(
          &out, "  relation %-32s %10d edges%s\n", EdgeTypeKey(r), r.count,
          r.feature_dim > 0
              ? absl::StrCat(", ", r.feature_dim, " edge features")
              : std::string());
    }
  } else {
    out = absl::StrFormat(
        "dataset '%s': %d nodes, %d edges (%s), %d %s features, %d "
        "classes%s\n",
        m.name, m.num_nodes, m.num_edges,
        m.directed ? "directed" : "undirected, both directions counted",
        m.feature_dim, m.feature_dtype, m.num_classes,
        m.multilabel ? " (multi-label)" : "");
    if (m.edge_feature_dim > 0)
      absl::StrAppendFormat(&out, "  %d edge features\n", m.edge_feature_dim);
  }
  if (m.num_nodes > 0) {
    absl::StrAppendFormat(&out, "  average degree %.2f\n",
                          static_cast<double>(m.num_edges) / m.num_nodes);
  }
  for (const auto& [name, count] : m.splits) {
    absl::StrAppendFormat(&out, "  split %-8s %10d nodes (%.1f%%)\n", name,
                          count,
                          m.num_nodes > 0 ? 100.0 * count / m.num_nodes : 0);
  }
  if (!m.source.empty()) absl::StrAppend(&out, "  source: ", m.source, "\n");
  for (const auto& [file, sum] : m.files) {
    absl::StrAppendFormat(&out, "  %-18s xxh64 %s\n", file, sum);
  }
  return out;
}

// One line from timing.json: seconds per stage, peak RSS at the end.
std::string DescribeTiming(const std::string& json) {
  auto j = nlohmann::ordered_json::parse(json, nullptr,
                                         /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  std::string out = "\n  last run:";
  std::string rss;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number()) continue;
    absl::string_view name = key;
    if (absl::ConsumeSuffix(&name, "_seconds")) {
      absl::StrAppendFormat(&out, " %s %.1fs", name, value.get<double>());
    } else if (key == "peak_rss_after_write") {
      rss = absl::StrCat(", peak RSS ", HumanBytes(value.get<double>()));
    }
  }
  return absl::StrCat(out, rss, "\n");
}

// Opens every part's shard (disk mode, read-only: its metadata only) and
// checks it is the one the manifest describes.
absl::Status CheckShards(const std::string& dir,
                         const PartitionManifest& manifest) {
  for (int p = 0; p < manifest.num_parts; ++p) {
    ShardStoreOptions options;
    options.path = JoinPath(dir, absl::StrCat("part-", p));
    options.block_cache_bytes = int64_t{8} << 20;
    absl::StatusOr<std::unique_ptr<ShardStore>> shard =
        ShardStore::Open(options);
    if (!shard.ok()) return Annotate(shard.status(), options.path);
    RETURN_IF_ERROR(Annotate(
        CheckShardOfPartition(manifest, (*shard)->Meta(), p), options.path));
  }
  std::printf("shards: all %d parts belong to this partition\n",
              manifest.num_parts);
  return absl::OkStatus();
}

// The number at `key` of object `j`, or NaN when absent or not a number.
double Number(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return NAN;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

// The string at `key` of object `j`, or "" when absent or not a string.
std::string Text(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// Parses the JSON file at `path`; an unreadable or damaged file is an error
// naming it.
absl::StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object"));
  }
  return j;
}

// summary.json: how the run was set up, its result and where its time went.
std::string DescribeSummary(const nlohmann::json& s) {
  std::string out;
  const std::string mode = Text(s, "mode");
  if (s.contains("dataset_name")) {
    absl::StrAppend(&out, "  dataset: ", Text(s, "dataset_name"), "\n");
  }
  if (mode == "in-process") {
    absl::StrAppend(&out, "  mode: in-process, dataset ", Text(s, "dataset"),
                    "\n");
  } else if (!mode.empty()) {
    absl::StrAppendFormat(&out, "  mode: %s, %.0f trainer(s), partition %s\n",
                          mode, Number(s, "world_size"),
                          Text(s, "partition_id"));
  }
  if (s.contains("model") && s["model"].is_object()) {
    const nlohmann::json& m = s["model"];
    absl::StrAppendFormat(
        &out,
        "  model: %s, %.0f layers, hidden %.0f, batch %.0f, features %s, %s "
        "parameters\n",
        Text(m, "kind"), Number(m, "layers"), Number(m, "hidden"),
        Number(m, "batch_size"), Text(m, "feature_norm"),
        HumanCount(Number(s, "num_parameters")));
  }
  if (s.value("task", std::string("node")) == "link") {
    absl::StrAppendFormat(
        &out,
        "  result: link prediction, test auc %.4f, ap %.4f, mrr %.4f, "
        "hits@20 %.4f (%s), best val auc %.4f at epoch %.0f; %.0f epochs "
        "run%s\n",
        Number(s, "test_auc"), Number(s, "test_ap"), Number(s, "test_mrr"),
        Number(s, "test_hits@20"), Text(s, "test_method"),
        Number(s, "best_valid_auc"), Number(s, "best_epoch"),
        Number(s, "epochs_run"),
        s.value("stopped_early", false) == true ? " (stopped early)" : "");
  } else {
    absl::StrAppendFormat(
        &out,
        "  result: test acc %.4f (%s), best val acc %.4f at epoch %.0f; %.0f "
        "epochs run%s\n",
        Number(s, "test_acc"), Text(s, "test_method"),
        Number(s, "best_val_acc"), Number(s, "best_epoch"),
        Number(s, "epochs_run"),
        s.value("stopped_early", false) == true ? " (stopped early)" : "");
  }
  absl::StrAppendFormat(&out, "  time: train %.1fs",
                        Number(s, "train_seconds"));
  if (s.contains("epoch_time") && s["epoch_time"].is_object()) {
    const nlohmann::json& t = s["epoch_time"];
    absl::StrAppendFormat(&out,
                          "; per epoch %.2fs (steps %.2fs, eval %.2fs), %s "
                          "seeds/s",
                          Number(t, "epoch_seconds"), Number(t, "step_seconds"),
                          Number(t, "eval_seconds"),
                          HumanCount(Number(t, "seeds_per_second")));
  }
  const double rss = s.contains("process")
                         ? Number(s["process"], "peak_rss_bytes")
                         : static_cast<double>(NAN);
  if (!std::isnan(rss)) absl::StrAppend(&out, "; peak RSS ", HumanBytes(rss));
  absl::StrAppend(&out, "\n");
  return out;
}

// metrics.jsonl: how many epochs and the last one's figures.
absl::StatusOr<std::string> DescribeMetrics(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  std::string line;
  nlohmann::json last;
  int epochs = 0;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr,
                                             /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": not a JSON object (file damaged?)"));
    }
    last = std::move(j);
    ++epochs;
  }
  if (epochs == 0) return std::string("  metrics.jsonl: no epoch yet\n");
  const bool link = last.contains("valid_auc");
  return absl::StrFormat(
      "  metrics.jsonl: %d epoch(s); last: epoch %.0f, loss %.4f, train %s "
      "%.4f, val %s %.4f, %.2fs\n",
      epochs, Number(last, "epoch"), Number(last, "loss"), link ? "auc" : "acc",
      Number(last, link ? "train_auc" : "train_acc"), link ? "auc" : "acc",
      Number(last, link ? "valid_auc" : "val_acc"),
      Number(last, "epoch_seconds"));
}

bool IsRunDirectory(const std::string& dir) {
  std::error_code ec;
  for (const char* file : {"summary.json", "metrics.jsonl", "model.json"}) {
    if (std::filesystem::exists(JoinPath(dir, file), ec)) return true;
  }
  return false;
}

// A run directory of `train` or `run`; one still running (or stopped) has
// metrics.jsonl but neither summary.json nor model.json yet.
absl::Status DescribeRun(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string out = absl::StrCat("run directory ", dir, "\n");
  const std::string summary_path = JoinPath(dir, "summary.json");
  if (fs::exists(summary_path, ec)) {
    ASSIGN_OR_RETURN(nlohmann::json summary, ReadJson(summary_path));
    absl::StrAppend(&out, DescribeSummary(summary));
  } else {
    absl::StrAppend(&out,
                    "  no summary.json: the run is still going or stopped "
                    "before its end\n");
  }
  const std::string metrics_path = JoinPath(dir, "metrics.jsonl");
  if (fs::exists(metrics_path, ec)) {
    ASSIGN_OR_RETURN(std::string metrics, DescribeMetrics(metrics_path));
    absl::StrAppend(&out, metrics);
  }
  const std::string model_path = JoinPath(dir, "model.json");
  if (fs::exists(model_path, ec)) {
    ASSIGN_OR_RETURN(nlohmann::json model, ReadJson(model_path));
    absl::StrAppendFormat(
        &out,
        "  model.json: %s, %.0f layers, %.0f input features -> %.0f classes, "
        "parameters in %s\n",
        Text(model, "kind"), Number(model, "layers"), Number(model, "in_dim"),
        Number(model, "num_classes"), Text(model, "parameters"));
  }
  std::printf("%s", out.c_str());
  return absl::OkStatus();
}

// One part's shard directory (part-P): its metadata, and whether it belongs
// to the partition in the directory above it, when there is one.
absl::Status DescribeShard(const std::string& dir) {
  ShardStoreOptions options;
  options.path = dir;
  options.block_cache_bytes = int64_t{8} << 20;
  absl::StatusOr<std::unique_ptr<ShardStore>> shard = ShardStore::Open(options);
  if (!shard.ok()) return Annotate(shard.status(), dir);
  const ShardMeta& m = (*shard)->Meta();
  std::string out = absl::StrFormat(
      "shard %s: part %d of %d, nodes [%d,%d) (%d of the graph's %d), %d "
      "adjacency entries, %d features, %d classes\n",
      dir, m.part_id, m.num_parts, m.node_start, m.node_end,
      m.node_end - m.node_start, m.num_nodes_total, m.num_edges, m.feature_dim,
      m.num_classes);
  for (const auto& [name, count] : m.split_counts) {
    absl::StrAppendFormat(&out, "  split %-8s %10d nodes\n", name, count);
  }
  absl::StrAppendFormat(&out, "  partition_id %s\n  content checksum %s\n",
                        m.partition_id, m.content_checksum);
  std::printf("%s", out.c_str());
  std::string parent =
      std::filesystem::path(dir).lexically_normal().parent_path().string();
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!std::filesystem::exists(JoinPath(parent, kPartitionManifestFile), ec)) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(PartitionManifest manifest, ReadPartitionManifest(parent));
  RETURN_IF_ERROR(Annotate(CheckShardOfPartition(manifest, m, m.part_id), dir));
  std::printf("  belongs to the partition in %s\n", parent.c_str());
  return absl::OkStatus();
}

absl::Status RunInfo(std::string path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A manifest file itself may be named: use its directory.
  if (fs::is_regular_file(path, ec)) {
    std::string name = fs::path(path).filename().string();
    if (name != kPartitionManifestFile && name != kDatasetManifestFile &&
        name != "summary.json") {
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ": not a directory, partition.json, manifest.json or "
                       "summary.json"));
    }
    path = fs::path(path).parent_path().string();
    if (path.empty()) path = ".";
  }
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such directory"));
  }
  if (fs::exists(JoinPath(path, kPartitionManifestFile), ec)) {
    absl::StatusOr<PartitionManifest> m = ReadPartitionManifest(path);
    if (!m.ok()) return m.status();
    std::printf("%s", DescribePartition(*m).c_str());
    // timing.json is informational: shown when present and readable.
    absl::StatusOr<std::string> timing =
        ReadFileToString(JoinPath(path, kPartitionTimingFile));
    if (timing.ok()) std::printf("%s", DescribeTiming(*timing).c_str());
    return CheckShards(path, *m);
  }
  if (fs::exists(JoinPath(path, kDatasetManifestFile), ec)) {
    absl::StatusOr<DatasetManifest> m = ReadDatasetManifest(path);
    if (!m.ok()) return m.status();
    std::printf("%s", DescribeDataset(*m).c_str());
    return absl::OkStatus();
  }
  if (IsRunDirectory(path)) return DescribeRun(path);
  // A RocksDB database: one part's shard.
  if (fs::exists(JoinPath(path, "CURRENT"), ec)) return DescribeShard(path);
  return absl::NotFoundError(absl::StrCat(
      path, ": neither a dataset directory (", kDatasetManifestFile,
      "), a partition directory (", kPartitionManifestFile,
      "), a part's shard (part-P) nor a run directory (summary.json, "
      "metrics.jsonl)"));
}

}  // namespace

void AddInfoCommand(CLI::App& app, absl::Status* result) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "info",
      "Describe a dataset, partition, part (part-P) or run directory for "
      "people");
  cmd->add_option("path", *path, "Dataset, partition, part-P or run directory")
      ->required();
  cmd->callback([path, result] { *result = RunInfo(*path); });
}

}  // namespace shardgnn::cli
