#include "graphstore/shard_format.h"

#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "common/json_ints.h"
#include "nlohmann/json.hpp"

namespace shardgnn {

void EncodeNodeKey(NodeId id, char out[8]) {
  auto v = static_cast<uint64_t>(id);
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

std::string EncodeNodeKey(NodeId id) {
  std::string key(8, '\0');
  EncodeNodeKey(id, key.data());
  return key;
}

absl::StatusOr<NodeId> DecodeNodeKey(absl::string_view key) {
  if (key.size() != 8)
    return absl::DataLossError(
        absl::StrCat("node key has ", key.size(), " bytes, expected 8"));
  uint64_t v = 0;
  for (char c : key) v = (v << 8) | static_cast<unsigned char>(c);
  return static_cast<NodeId>(v);
}

std::string ShardMeta::ToJson() const {
  nlohmann::ordered_json j;
  j["format_version"] = format_version;
  j["part_id"] = part_id;
  j["num_parts"] = num_parts;
  j["node_start"] = node_start;
  j["node_end"] = node_end;
  j["num_nodes_total"] = num_nodes_total;
  j["num_edges"] = num_edges;
  j["feature_dim"] = feature_dim;
  j["num_classes"] = num_classes;
  j["split_counts"] = split_counts;
  j["partition_id"] = partition_id;
  j["content_checksum"] = content_checksum;
  return j.dump(2);
}

absl::StatusOr<ShardMeta> ShardMeta::FromJson(absl::string_view json) {
  try {
    auto j = nlohmann::json::parse(json);
    ShardMeta m;
    m.format_version =
        static_cast<int>(JsonIntField(j, "format_version", 0, kMaxJsonWidth));
    if (m.format_version != kShardFormatVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shard format version ", m.format_version,
          " is not supported (expected ", kShardFormatVersion, ")"));
    }
    m.num_parts =
        static_cast<int>(JsonIntField(j, "num_parts", 1, kMaxJsonWidth - 1));
    m.part_id =
        static_cast<int>(JsonIntField(j, "part_id", 0, m.num_parts - 1));
    m.num_nodes_total = JsonIntField(j, "num_nodes_total", 0, kMaxJsonCount);
    m.node_start = JsonIntField(j, "node_start", 0, m.num_nodes_total);
    m.node_end = JsonIntField(j, "node_end", m.node_start, m.num_nodes_total);
    m.num_edges = JsonIntField(j, "num_edges", 0, kMaxJsonCount);
    m.feature_dim = JsonIntField(j, "feature_dim", 0, kMaxJsonWidth);
    m.num_classes = JsonIntField(j, "num_classes", 0, kMaxJsonWidth);
    for (const auto& [name, count] : j.at("split_counts").items()) {
      m.split_counts[name] = JsonIntField(j.at("split_counts"), name, 0,
                                          m.node_end - m.node_start);
    }
    m.partition_id = j.at("partition_id").get<std::string>();
    m.content_checksum = j.at("content_checksum").get<std::string>();
    if (m.node_start < 0 || m.node_end < m.node_start ||
        m.node_end > m.num_nodes_total || m.feature_dim < 0) {
      return absl::DataLossError(
          "shard metadata has an inconsistent node range");
    }
    return m;
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat("shard metadata is not valid: ", e.what()));
  }
}

}  // namespace shardgnn
