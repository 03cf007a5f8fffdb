#include "partition/partition_book.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/json_ints.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/type_json.h"
#include "nlohmann/json.hpp"

namespace shardgnn {
namespace {

// Bounds of partition.json's counts (besides common/json_ints.h's).
constexpr int64_t kMaxParts = 1 << 20;
constexpr size_t kMaxTypes = 4096;  // Node types, relations.

}  // namespace

std::string PartDirName(int part) { return absl::StrCat("part-", part); }

std::string PartitionManifest::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = kPartitionFormat;
  j["format_version"] = format_version;
  j["dataset"] = {{"name", dataset_name},       {"checksum", dataset_checksum},
                  {"num_nodes", num_nodes},     {"num_edges", num_edges},
                  {"directed", directed},       {"feature_dim", feature_dim},
                  {"num_classes", num_classes}, {"splits", splits}};
  j["num_nodes"] = num_nodes;
  j["num_edges"] = num_edges;
  j["feature_dim"] = feature_dim;
  j["num_classes"] = num_classes;
  j["num_parts"] = num_parts;
  j["method"] = method;
  j["requested_method"] = requested_method;
  j["seed"] = seed;
  j["partition_id"] = partition_id;
  j["node_ranges"] = node_ranges;
  j["orig_ids"] = {{"file", kOrigIdsFile}, {"checksum", orig_ids_checksum}};
  nlohmann::ordered_json parts_json = nlohmann::ordered_json::array();
  for (const PartInfo& p : parts) {
    parts_json.push_back({{"part", p.part},
                          {"dir", p.dir},
                          {"nodes", p.nodes},
                          {"edges", p.edges},
                          {"cut_edges", p.cut_edges},
                          {"split_counts", p.split_counts},
                          {"content_checksum", p.content_checksum}});
  }
  if (typed()) {
    for (size_t p = 0; p < parts.size(); ++p)
      parts_json[p]["type_starts"] = parts[p].type_starts;
  }
  j["parts"] = parts_json;
  j["edge_cut"] = {{"edges", edge_cut}, {"fraction", edge_cut_fraction}};
  nlohmann::ordered_json balance_json = nlohmann::ordered_json::object();
  for (const auto& [name, b] : balance) {
    balance_json[name] = {
        {"max", b.max}, {"avg", b.avg}, {"imbalance", b.Imbalance()}};
  }
  j["balance"] = balance_json;
  j["warnings"] = warnings;
  if (!edge_splits.empty()) {
    nlohmann::ordered_json e;
    for (const auto& [name, pairs] : edge_splits) {
      auto it = edge_split_checksums.find(name);
      e[name] = {
          {"pairs", pairs},
          {"checksum", it == edge_split_checksums.end() ? "" : it->second}};
    }
    j["edge_splits"] = e;
  }
  if (typed()) {
    j["node_types"] = NodeTypesJson(node_types);
    j["edge_types"] = EdgeTypesJson(edge_types);
  }
  if (multilabel) j["multilabel"] = true;
  return j.dump(2) + "\n";
}

absl::StatusOr<PartitionManifest> PartitionManifest::FromJson(
    absl::string_view json) {
  PartitionManifest m;
  try {
    auto j = nlohmann::json::parse(json.begin(), json.end());
    if (j.at("format").get<std::string>() != kPartitionFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a partition manifest (format '",
                       j.at("format").get<std::string>(), "')"));
    }
    m.format_version =
        static_cast<int>(JsonIntField(j, "format_version", 0, kMaxJsonWidth));
    if (m.format_version != kPartitionFormatVersion) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported format_version ", m.format_version,
                       " (this build reads ", kPartitionFormatVersion, ")"));
    }
    const auto& d = j.at("dataset");
    m.dataset_name = d.at("name").get<std::string>();
    m.dataset_checksum = d.at("checksum").get<std::string>();
    m.directed = d.at("directed").get<bool>();
    for (const auto& [name, count] : d.at("splits").items()) {
      m.splits[name] = JsonIntField(d.at("splits"), name, 0, kMaxJsonCount);
    }
    m.num_nodes = JsonIntField(j, "num_nodes", 0, kMaxJsonCount);
    m.num_edges = JsonIntField(j, "num_edges", 0, kMaxJsonCount);
    m.feature_dim = JsonIntField(j, "feature_dim", 0, kMaxJsonWidth);
    m.num_classes = JsonIntField(j, "num_classes", 0, kMaxJsonWidth);
    m.num_parts = static_cast<int>(JsonIntField(j, "num_parts", 1, kMaxParts));
    m.method = j.at("method").get<std::string>();
    m.requested_method = j.at("requested_method").get<std::string>();
    if (!j.at("seed").is_number_unsigned()) {
      throw std::invalid_argument(
          absl::StrCat("field \"seed\" is ", j.at("seed").dump(),
                       ", not an unsigned 64-bit integer"));
    }
    m.seed = j.at("seed").get<uint64_t>();
    m.partition_id = j.at("partition_id").get<std::string>();
    const auto& ranges = j.at("node_ranges");
    if (!ranges.is_array() || ranges.size() > kMaxParts + 1) {
      throw std::invalid_argument(
          "field \"node_ranges\" is not an array of at most 2^20 + 1 "
          "offsets");
    }
    for (size_t i = 0; i < ranges.size(); ++i) {
      m.node_ranges.push_back(JsonInt(
          ranges[i], absl::StrCat("node_ranges[", i, "]"), 0, m.num_nodes));
    }
    m.orig_ids_checksum = j.at("orig_ids").at("checksum").get<std::string>();
    for (const auto& p : j.at("parts")) {
      PartInfo info;
      info.part = static_cast<int>(JsonIntField(p, "part", 0, kMaxParts));
      info.dir = p.at("dir").get<std::string>();
      info.nodes = JsonIntField(p, "nodes", 0, kMaxJsonCount);
      info.edges = JsonIntField(p, "edges", 0, kMaxJsonCount);
      info.cut_edges = JsonIntField(p, "cut_edges", 0, kMaxJsonCount);
      for (const auto& [name, count] : p.at("split_counts").items()) {
        info.split_counts[name] =
            JsonIntField(p.at("split_counts"), name, 0, kMaxJsonCount);
      }
      info.content_checksum = p.at("content_checksum").get<std::string>();
      if (p.contains("type_starts")) {
        const auto& starts = p.at("type_starts");
        if (!starts.is_array() || starts.size() > kMaxTypes + 1) {
          throw std::invalid_argument(absl::StrCat(
              "parts[", info.part, "].type_starts is not an array"));
        }
        for (size_t i = 0; i < starts.size(); ++i) {
          info.type_starts.push_back(JsonInt(
              starts[i],
              absl::StrCat("parts[", info.part, "].type_starts[", i, "]"), 0,
              m.num_nodes));
        }
      }
      m.parts.push_back(std::move(info));
    }
    m.edge_cut = JsonIntField(j.at("edge_cut"), "edges", 0, kMaxJsonCount);
    m.edge_cut_fraction = j.at("edge_cut").at("fraction").get<double>();
    for (const auto& [name, b] : j.at("balance").items()) {
      m.balance[name] = {JsonIntField(b, "max", 0, kMaxJsonCount),
                         b.at("avg").get<double>()};
    }
    m.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (j.contains("edge_splits")) {
      for (const auto& [name, e] : j.at("edge_splits").items()) {
        m.edge_splits[name] = JsonIntField(e, "pairs", 0, kMaxJsonCount);
        m.edge_split_checksums[name] = e.at("checksum").get<std::string>();
      }
    }
    if (j.contains("node_types")) {
      const auto& types = j.at("node_types");
      const auto& relations = j.at("edge_types");
      if (!types.is_array() || types.size() > kMaxTypes ||
          !relations.is_array() || relations.size() > kMaxTypes) {
        throw std::invalid_argument(
            "node_types and edge_types are not arrays of at most 4096");
      }
      for (const auto& t : types) {
        m.node_types.push_back(
            {t.at("name").get<std::string>(),
             JsonIntField(t, "count", 0, kMaxJsonCount),
             JsonIntField(t, "feature_dim", 0, kMaxJsonWidth)});
      }
      for (const auto& r : relations) {
        EdgeType type;
        type.src = r.at("src").get<std::string>();
        type.relation = r.at("relation").get<std::string>();
        type.dst = r.at("dst").get<std::string>();
        type.count = JsonIntField(r, "count", 0, kMaxJsonCount);
        type.feature_dim = JsonIntField(r, "feature_dim", 0, kMaxJsonWidth);
        m.edge_types.push_back(std::move(type));
      }
    }
    m.multilabel = j.contains("multilabel") && j.at("multilabel").get<bool>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  if (m.num_parts < 1 ||
      m.node_ranges.size() != static_cast<size_t>(m.num_parts) + 1 ||
      m.parts.size() != static_cast<size_t>(m.num_parts)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_parts ", m.num_parts, " disagrees with ", m.node_ranges.size(),
        " node_ranges and ", m.parts.size(), " parts"));
  }
  if (m.node_ranges.back() != m.num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node_ranges end at ", m.node_ranges.back(),
                     " but num_nodes is ", m.num_nodes));
  }
  for (int p = 0; p < m.num_parts; ++p) {
    if (m.parts[p].part != p ||
        m.parts[p].nodes != m.node_ranges[p + 1] - m.node_ranges[p]) {
      return absl::InvalidArgumentError(
          absl::StrCat("parts[", p, "] disagrees with node_ranges (part ",
                       m.parts[p].part, ", ", m.parts[p].nodes, " nodes)"));
    }
  }
  if (m.typed()) {
    const size_t types = m.node_types.size();
    int64_t total = 0;
    for (const NodeType& t : m.node_types) total += t.count;
    if (total != m.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node_types count ", total, " nodes, num_nodes is ", m.num_nodes));
    }
    for (int p = 0; p < m.num_parts; ++p) {
      const std::vector<NodeId>& starts = m.parts[p].type_starts;
      bool fits = starts.size() == types + 1 &&
                  starts.front() == m.node_ranges[p] &&
                  starts.back() == m.node_ranges[p + 1] &&
                  std::is_sorted(starts.begin(), starts.end());
      if (!fits) {
        return absl::InvalidArgumentError(
            absl::StrCat("parts[", p, "].type_starts is not ", types + 1,
                         " non-decreasing IDs from ", m.node_ranges[p], " to ",
                         m.node_ranges[p + 1]));
      }
    }
  }
  ASSIGN_OR_RETURN(PartitionBook book, PartitionBook::Create(m.node_ranges));
  (void)book;
  return m;
}

absl::StatusOr<std::vector<NodeId>> ReadPartitionEdgeSplit(
    const std::string& dir, const PartitionManifest& manifest,
    const std::string& name) {
  auto count = manifest.edge_splits.find(name);
  if (count == manifest.edge_splits.end()) {
    return absl::NotFoundError(absl::StrCat(
        dir, ": the partition has no edge split '", name,
        "'; partition a dataset made with `shardgnn dataset import|generate "
        "--edge-split 0.85,0.05,0.10`"));
  }
  const std::string path = JoinPath(dir, absl::StrCat("edges_", name, ".npy"));
  ASSIGN_OR_RETURN(std::string checksum, ChecksumFile(path));
  auto want = manifest.edge_split_checksums.find(name);
  if (want != manifest.edge_split_checksums.end() && checksum != want->second) {
    return absl::DataLossError(absl::StrCat(
        path, ": checksum ", checksum, " differs from partition.json's ",
        want->second, " (a damaged or replaced file)"));
  }
  ASSIGN_OR_RETURN(NpyArray<int64_t> array, ReadNpy<int64_t>(path, 2));
  if (array.shape[0] != count->second || array.shape[1] != 2) {
    return absl::DataLossError(
        absl::StrCat(path, ": shape [", array.shape[0], ", ", array.shape[1],
                     "], expected [", count->second, ", 2]"));
  }
  for (size_t i = 0; i < array.data.size(); ++i) {
    if (array.data[i] < 0 || array.data[i] >= manifest.num_nodes) {
      return absl::DataLossError(
          absl::StrCat(path, ": pair ", i / 2, " names node ", array.data[i],
                       ", outside the graph's ", manifest.num_nodes, " nodes"));
    }
  }
  return std::move(array.data);
}

absl::StatusOr<PartitionManifest> ReadPartitionManifest(
    const std::string& dir) {
  std::string path = JoinPath(dir, kPartitionManifestFile);
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  absl::StatusOr<PartitionManifest> m = PartitionManifest::FromJson(text);
  if (!m.ok()) return Annotate(m.status(), path);
  return m;
}

absl::StatusOr<PartitionBook> PartitionBook::Create(
    std::vector<NodeId> node_ranges) {
  if (node_ranges.size() < 2 || node_ranges[0] != 0) {
    return absl::InvalidArgumentError(
        "node_ranges must hold at least two offsets and start at 0");
  }
  for (size_t i = 1; i < node_ranges.size(); ++i) {
    if (node_ranges[i] < node_ranges[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("node_ranges decrease at index ", i, " (",
                       node_ranges[i - 1], " then ", node_ranges[i], ")"));
    }
  }
  return PartitionBook(std::move(node_ranges));
}

absl::StatusOr<PartitionBook> PartitionBook::FromManifest(
    const PartitionManifest& manifest) {
  return Create(manifest.node_ranges);
}

int PartitionBook::Owner(NodeId id) const {
  if (id < 0 || id >= num_nodes()) return -1;
  // The first part whose end exceeds id; empty parts are skipped naturally.
  auto it = std::upper_bound(node_ranges_.begin() + 1, node_ranges_.end(), id);
  return static_cast<int>(it - (node_ranges_.begin() + 1));
}

}  // namespace shardgnn

namespace shardgnn {

absl::Status CheckShardOfPartition(const PartitionManifest& manifest,
                                   const ShardMeta& meta, int part) {
  auto differ = [&](absl::string_view what, const auto& shard,
                    const auto& partition) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the shard of part ", part, " does not belong to partition ",
        manifest.partition_id, ": its ", what, " is ", shard,
        ", the partition's is ", partition,
        " (a shard copied from another partition, or a part directory "
        "renamed?)"));
  };
  if (meta.partition_id != manifest.partition_id)
    return differ("partition id", meta.partition_id, manifest.partition_id);
  if (meta.num_parts != manifest.num_parts)
    return differ("number of parts", meta.num_parts, manifest.num_parts);
  if (part < 0 || part >= manifest.num_parts ||
      manifest.node_ranges.size() !=
          static_cast<size_t>(manifest.num_parts) + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("part ", part, " is not one of the partition's ",
                     manifest.num_parts, " parts"));
  }
  if (meta.part_id != part) return differ("part number", meta.part_id, part);
  const NodeId start = manifest.node_ranges[static_cast<size_t>(part)];
  const NodeId end = manifest.node_ranges[static_cast<size_t>(part) + 1];
  if (meta.node_start != start || meta.node_end != end) {
    return differ("node range",
                  absl::StrCat("[", meta.node_start, ", ", meta.node_end, ")"),
                  absl::StrCat("[", start, ", ", end, ")"));
  }
  if (meta.num_nodes_total != manifest.num_nodes)
    return differ("graph's node count", meta.num_nodes_total,
                  manifest.num_nodes);
  if (meta.feature_dim != manifest.feature_dim)
    return differ("feature width", meta.feature_dim, manifest.feature_dim);
  if (meta.num_classes != manifest.num_classes)
    return differ("class count", meta.num_classes, manifest.num_classes);
  if (meta.typed() != manifest.typed()) {
    return differ("node types", meta.typed() ? "typed" : "untyped",
                  manifest.typed() ? "typed" : "untyped");
  }
  if (manifest.typed() &&
      meta.type_starts !=
          manifest.parts[static_cast<size_t>(part)].type_starts) {
    return differ(
        "node type ranges", absl::StrJoin(meta.type_starts, ","),
        absl::StrJoin(manifest.parts[static_cast<size_t>(part)].type_starts,
                      ","));
  }
  for (const PartInfo& info : manifest.parts) {
    if (info.part == part && !info.content_checksum.empty() &&
        info.content_checksum != meta.content_checksum) {
      return differ("content checksum", meta.content_checksum,
                    info.content_checksum);
    }
  }
  return absl::OkStatus();
}

}  // namespace shardgnn
