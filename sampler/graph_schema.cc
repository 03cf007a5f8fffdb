#include "sampler/graph_schema.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shardgnn {

absl::StatusOr<GraphSchema> GraphSchema::FromManifest(
    const DatasetManifest& m) {
  if (!m.typed()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", m.name, "' has no node types"));
  }
  GraphSchema s;
  s.node_types = m.node_types;
  s.edge_types = m.edge_types;
  s.offsets.push_back(0);
  for (const NodeType& t : m.node_types)
    s.offsets.push_back(s.offsets.back() + t.count);
  for (const EdgeType& r : m.edge_types) {
    const int src = m.FindNodeType(r.src), dst = m.FindNodeType(r.dst);
    if (src < 0 || dst < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "relation ", EdgeTypeKey(r), " names a node type that is not one"));
    }
    s.src_type.push_back(src);
    s.dst_type.push_back(dst);
  }
  return s;
}

int GraphSchema::FindRelation(const std::string& name) const {
  int found = -1;
  for (int r = 0; r < num_relations(); ++r) {
    if (EdgeTypeKey(edge_types[r]) == name) return r;
    if (edge_types[r].relation == name) {
      if (found >= 0) return -1;  // Two relations of that name.
      found = r;
    }
  }
  return found;
}

bool IsRelationFanoutSpec(const std::string& text) {
  return text.find('=') != std::string::npos;
}

absl::StatusOr<std::vector<std::vector<int>>> ParseRelationFanouts(
    const std::string& text, const GraphSchema& schema) {
  std::vector<std::vector<int>> layers;
  for (absl::string_view layer : absl::StrSplit(text, ';')) {
    std::vector<int> fanouts(schema.num_relations(), 0);
    std::vector<bool> named(schema.num_relations(), false);
    bool have_default = false;
    int fallback = 0;
    for (absl::string_view entry : absl::StrSplit(layer, ',')) {
      entry = absl::StripAsciiWhitespace(entry);
      const size_t eq = entry.find('=');
      const absl::string_view value =
          eq == absl::string_view::npos ? entry : entry.substr(eq + 1);
      int n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < -1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--fanouts '", text, "': '", entry,
            "' is not relation=N or N (N a count, 0, or -1 for all)"));
      }
      if (eq == absl::string_view::npos) {
        if (have_default) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--fanouts '", text, "': a layer has two bare fanouts"));
        }
        have_default = true;
        fallback = n;
        continue;
      }
      const std::string name(absl::StripAsciiWhitespace(entry.substr(0, eq)));
      const int r = schema.FindRelation(name);
      if (r < 0) {
        std::vector<std::string> keys;
        for (const EdgeType& e : schema.edge_types)
          keys.push_back(EdgeTypeKey(e));
        return absl::InvalidArgumentError(
            absl::StrCat("--fanouts '", text, "': no relation '", name,
                         "' (or more than one of that name); the relations: ",
                         absl::StrJoin(keys, ", ")));
      }
      fanouts[r] = n;
      named[r] = true;
    }
    for (int r = 0; r < schema.num_relations(); ++r) {
      if (!named[r]) fanouts[r] = fallback;
    }
    layers.push_back(std::move(fanouts));
  }
  return layers;
}

int GraphSchema::TypeOf(NodeId node) const {
  if (node < 0 || node >= num_nodes()) return -1;
  // The last offset <= node (empty types share their offset with the next).
  auto it = std::upper_bound(offsets.begin(), offsets.end(), node);
  return static_cast<int>(it - offsets.begin()) - 1;
}

}  // namespace shardgnn
