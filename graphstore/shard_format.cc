#include "graphstore/shard_format.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "common/json_ints.h"
#include "datasets/type_json.h"
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
  if (typed()) {
    j["node_types"] = NodeTypesJson(node_types);
    j["edge_types"] = EdgeTypesJson(edge_types);
    j["type_starts"] = type_starts;
  }
  if (label_columns != 1) j["label_columns"] = label_columns;
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
    if (j.contains("node_types")) {
      for (const auto& t : j.at("node_types")) {
        NodeType type;
        type.name = t.at("name").get<std::string>();
        type.count = JsonIntField(t, "count", 0, kMaxJsonCount);
        type.feature_dim = JsonIntField(t, "feature_dim", 0, kMaxJsonWidth);
        m.node_types.push_back(std::move(type));
      }
      if (m.node_types.empty()) {
        return absl::DataLossError(
            "shard metadata is not valid: \"node_types\" is empty");
      }
      for (const auto& e : j.at("edge_types")) {
        EdgeType type;
        type.src = e.at("src").get<std::string>();
        type.relation = e.at("relation").get<std::string>();
        type.dst = e.at("dst").get<std::string>();
        type.count = JsonIntField(e, "count", 0, kMaxJsonCount);
        type.feature_dim = JsonIntField(e, "feature_dim", 0, kMaxJsonWidth);
        m.edge_types.push_back(std::move(type));
      }
      for (const auto& v : j.at("type_starts")) {
        m.type_starts.push_back(
            JsonInt(v, "type_starts", 0, m.num_nodes_total));
      }
    } else if (j.contains("edge_types") || j.contains("type_starts")) {
      return absl::DataLossError(
          "shard metadata is not valid: \"edge_types\" or \"type_starts\" "
          "without \"node_types\"");
    }
    if (j.contains("label_columns")) {
      m.label_columns = JsonIntField(j, "label_columns", 1, kMaxJsonWidth);
    }
    absl::Status types = CheckShardMetaTypes(m);
    if (!types.ok()) {
      return absl::DataLossError(
          absl::StrCat("shard metadata is not valid: ", types.message()));
    }
    return m;
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat("shard metadata is not valid: ", e.what()));
  }
}

int ShardMeta::TypeOf(NodeId id) const {
  if (!typed() || id < node_start || id >= node_end ||
      type_starts.size() != node_types.size() + 1) {
    return -1;
  }
  // The last t with type_starts[t] <= id (empty types share a start).
  auto it = std::upper_bound(type_starts.begin(), type_starts.end(), id);
  return static_cast<int>(it - type_starts.begin()) - 1;
}

absl::Status CheckShardMetaTypes(const ShardMeta& m) {
  auto bad = [](auto&&... what) {
    return absl::InvalidArgumentError(absl::StrCat(what...));
  };
  if (m.label_columns < 1 ||
      (m.label_columns > 1 && m.label_columns != m.num_classes)) {
    return bad("label_columns ", m.label_columns,
               " is neither 1 nor num_classes (", m.num_classes, ")");
  }
  if (!m.typed()) {
    if (!m.edge_types.empty() || !m.type_starts.empty()) {
      return bad("edge_types or type_starts given without node_types");
    }
    return absl::OkStatus();
  }
  const size_t num_types = m.node_types.size();
  if (num_types > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
      m.edge_types.size() >
          static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return bad("too many node or edge types");
  }
  int64_t total = 0;
  for (size_t t = 0; t < num_types; ++t) {
    const NodeType& type = m.node_types[t];
    if (!IsValidTypeName(type.name)) {
      return bad("node type \"", type.name,
                 "\" is not a type name ([A-Za-z0-9_.-]+)");
    }
    for (size_t u = 0; u < t; ++u) {
      if (m.node_types[u].name == type.name) {
        return bad("node type \"", type.name, "\" is listed twice");
      }
    }
    if (type.count < 0 || type.feature_dim < 0) {
      return bad("node type \"", type.name, "\" has a negative count or width");
    }
    total += type.count;
  }
  if (total != m.num_nodes_total) {
    return bad("the node types count ", total, " nodes, the graph has ",
               m.num_nodes_total);
  }
  auto known = [&](const std::string& name) {
    for (const NodeType& t : m.node_types) {
      if (t.name == name) return true;
    }
    return false;
  };
  for (const EdgeType& e : m.edge_types) {
    if (!IsValidTypeName(e.relation) || !known(e.src) || !known(e.dst) ||
        e.count < 0 || e.feature_dim < 0) {
      return bad("edge type \"", EdgeTypeKey(e),
                 "\" has a bad relation name, names a node type not in "
                 "node_types, or has a negative count or width");
    }
  }
  if (m.type_starts.size() != num_types + 1) {
    return bad("type_starts has ", m.type_starts.size(), " values for ",
               num_types, " node types (expected ", num_types + 1, ")");
  }
  if (m.type_starts.front() != m.node_start ||
      m.type_starts.back() != m.node_end) {
    return bad("type_starts runs from ", m.type_starts.front(), " to ",
               m.type_starts.back(), ", not over the owned range [",
               m.node_start, ", ", m.node_end, ")");
  }
  for (size_t t = 0; t < num_types; ++t) {
    const int64_t owned = m.type_starts[t + 1] - m.type_starts[t];
    if (owned < 0) {
      return bad("type_starts decreases at type ", t, " (\"",
                 m.node_types[t].name, "\")");
    }
    if (owned > m.node_types[t].count) {
      return bad("type_starts gives ", owned, " nodes of type \"",
                 m.node_types[t].name, "\", which has ", m.node_types[t].count);
    }
  }
  return absl::OkStatus();
}

}  // namespace shardgnn
