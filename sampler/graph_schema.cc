#include "sampler/graph_schema.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shardgnn {

namespace {

absl::Status SetRelations(GraphSchema* s) {
  for (const EdgeType& r : s->edge_types) {
    int src = -1, dst = -1;
    for (int t = 0; t < s->num_node_types(); ++t) {
      if (s->node_types[t].name == r.src) src = t;
      if (s->node_types[t].name == r.dst) dst = t;
    }
    if (src < 0 || dst < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "relation ", EdgeTypeKey(r), " names a node type that is not one"));
    }
    s->src_type.push_back(src);
    s->dst_type.push_back(dst);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphSchema> GraphSchema::FromManifest(
    const DatasetManifest& m) {
  if (!m.typed()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset '", m.name, "' has no node types"));
  }
  GraphSchema s;
  s.node_types = m.node_types;
  s.edge_types = m.edge_types;
  s.range_starts.push_back(0);
  for (int t = 0; t < s.num_node_types(); ++t) {
    s.range_types.push_back(t);
    s.range_locals.push_back(0);
    s.range_starts.push_back(s.range_starts.back() + m.node_types[t].count);
  }
  if (absl::Status st = SetRelations(&s); !st.ok()) return st;
  return s;
}

absl::StatusOr<GraphSchema> GraphSchema::FromParts(
    const std::vector<NodeType>& node_types,
    const std::vector<EdgeType>& edge_types,
    const std::vector<std::vector<NodeId>>& type_starts) {
  GraphSchema s;
  s.node_types = node_types;
  s.edge_types = edge_types;
  const size_t types = node_types.size();
  if (types == 0) return absl::InvalidArgumentError("no node types");
  std::vector<int64_t> seen(types, 0);
  s.range_starts.push_back(0);
  for (size_t p = 0; p < type_starts.size(); ++p) {
    const std::vector<NodeId>& starts = type_starts[p];
    if (starts.size() != types + 1 || starts[0] != s.range_starts.back()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "part ", p, ": ", starts.size(), " type starts (expected ", types + 1,
          ", the first at ", s.range_starts.back(), ")"));
    }
    for (size_t t = 0; t < types; ++t) {
      if (starts[t + 1] < starts[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("part ", p, ": the type starts decrease at type ",
                         node_types[t].name));
      }
      s.range_types.push_back(static_cast<int>(t));
      s.range_locals.push_back(seen[t]);
      seen[t] += starts[t + 1] - starts[t];
      s.range_starts.push_back(starts[t + 1]);
    }
  }
  for (size_t t = 0; t < types; ++t) {
    if (seen[t] != node_types[t].count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the parts hold ", seen[t], " nodes of type ", node_types[t].name,
          ", which has ", node_types[t].count));
    }
  }
  if (absl::Status st = SetRelations(&s); !st.ok()) return st;
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

namespace {

// The range holding `node` (the last start <= node: empty ranges share their
// start with the next); -1 outside the graph.
int RangeOf(const std::vector<NodeId>& starts, NodeId node) {
  if (starts.size() < 2 || node < 0 || node >= starts.back()) return -1;
  auto it = std::upper_bound(starts.begin(), starts.end(), node);
  return static_cast<int>(it - starts.begin()) - 1;
}

}  // namespace

int GraphSchema::TypeOf(NodeId node) const {
  const int range = RangeOf(range_starts, node);
  return range < 0 ? -1 : range_types[range];
}

int64_t GraphSchema::LocalIndex(NodeId node) const {
  const int range = RangeOf(range_starts, node);
  return range < 0 ? -1 : range_locals[range] + (node - range_starts[range]);
}

}  // namespace shardgnn
