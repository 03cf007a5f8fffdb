#include "graphstore/shard_format.h"

#include "absl/strings/str_cat.h"
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
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version != kShardFormatVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shard format version ", m.format_version,
          " is not supported (expected ", kShardFormatVersion, ")"));
    }
    m.part_id = j.at("part_id").get<int>();
    m.num_parts = j.at("num_parts").get<int>();
    m.node_start = j.at("node_start").get<NodeId>();
    m.node_end = j.at("node_end").get<NodeId>();
    m.num_nodes_total = j.at("num_nodes_total").get<int64_t>();
    m.num_edges = j.at("num_edges").get<int64_t>();
    m.feature_dim = j.at("feature_dim").get<int64_t>();
    m.num_classes = j.at("num_classes").get<int64_t>();
    m.split_counts = j.at("split_counts").get<std::map<std::string, int64_t>>();
    m.partition_id = j.at("partition_id").get<std::string>();
    m.content_checksum = j.at("content_checksum").get<std::string>();
    if (m.node_start < 0 || m.node_end < m.node_start ||
        m.node_end > m.num_nodes_total || m.feature_dim < 0) {
      return absl::DataLossError(
          "shard metadata has an inconsistent node range");
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(
        absl::StrCat("shard metadata is not valid: ", e.what()));
  }
}

}  // namespace shardgnn
