// `shardgnn info PATH`: a dataset or partition manifest, for people.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  std::string out = absl::StrFormat(
      "dataset '%s': %d nodes, %d edges (%s), %d %s features, %d classes\n",
      m.name, m.num_nodes, m.num_edges,
      m.directed ? "directed" : "undirected, both directions counted",
      m.feature_dim, m.feature_dtype, m.num_classes);
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

absl::Status RunInfo(std::string path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A manifest file itself may be named: use its directory.
  if (fs::is_regular_file(path, ec)) {
    std::string name = fs::path(path).filename().string();
    if (name != kPartitionManifestFile && name != kDatasetManifestFile) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": not a directory, partition.json or manifest.json"));
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
  return absl::NotFoundError(absl::StrCat(
      path, ": neither a dataset directory (", kDatasetManifestFile,
      ") nor a partition directory (", kPartitionManifestFile, ")"));
}

}  // namespace

void AddInfoCommand(CLI::App& app, absl::Status* result) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Describe a dataset or partition directory for people");
  cmd->add_option("path", *path, "Dataset or partition directory")->required();
  cmd->callback([path, result] { *result = RunInfo(*path); });
}

}  // namespace shardgnn::cli
