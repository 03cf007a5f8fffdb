#include "datasets/typed_graph.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {

absl::Status Invalid(const std::string& where, const std::string& message) {
  return absl::InvalidArgumentError(
      where.empty() ? message : absl::StrCat(where, ": ", message));
}

// A relation's edges (u -> v) in both directions once each: its own reverse.
bool IsSymmetric(const RelationEdges& r) {
  if (r.src_type != r.dst_type) return false;
  std::vector<std::pair<int64_t, int64_t>> forward, backward;
  forward.reserve(r.src.size());
  backward.reserve(r.src.size());
  for (size_t i = 0; i < r.src.size(); ++i) {
    forward.emplace_back(r.src[i], r.dst[i]);
    backward.emplace_back(r.dst[i], r.src[i]);
  }
  std::sort(forward.begin(), forward.end());
  std::sort(backward.begin(), backward.end());
  forward.erase(std::unique(forward.begin(), forward.end()), forward.end());
  backward.erase(std::unique(backward.begin(), backward.end()), backward.end());
  return forward == backward;
}

// One CSR entry while building: its relation, its source (global ID) and the
// edge's index in its relation's input.
struct Entry {
  int32_t relation;
  int64_t source;
  int64_t edge;
  bool operator<(const Entry& o) const {
    if (relation != o.relation) return relation < o.relation;
    if (source != o.source) return source < o.source;
    return edge < o.edge;
  }
};

}  // namespace

absl::Status BuildTypedGraph(const std::vector<NodeType>& node_types,
                             std::vector<RelationEdges> relations,
                             const TypedGraphOptions& options, Dataset* dataset,
                             BuildSummary* summary) {
  DatasetManifest& m = dataset->manifest;
  m.node_types.clear();
  m.edge_types.clear();
  if (node_types.empty()) return Invalid("", "a typed graph needs node types");
  int64_t num_nodes = 0;
  std::vector<int64_t> offset;
  for (const NodeType& t : node_types) {
    if (!IsValidTypeName(t.name)) {
      return Invalid("", absl::StrCat("node type \"", t.name,
                                      "\" is not a valid type name "
                                      "([A-Za-z0-9_.-]+)"));
    }
    if (m.FindNodeType(t.name) >= 0) {
      return Invalid(
          "", absl::StrCat("node type \"", t.name, "\" is listed twice"));
    }
    if (t.count < 0 || t.feature_dim < 0) {
      return Invalid("", absl::StrCat("node type \"", t.name,
                                      "\" has a negative count or width"));
    }
    m.node_types.push_back(t);
    offset.push_back(num_nodes);
    num_nodes += t.count;
  }

  // Check every relation as given, drop its self-loops.
  const size_t given = relations.size();
  for (RelationEdges& r : relations) {
    const std::string key =
        absl::StrCat(r.src_type, "/", r.relation, "/", r.dst_type);
    const int s = m.FindNodeType(r.src_type);
    const int d = m.FindNodeType(r.dst_type);
    if (s < 0 || d < 0) {
      return Invalid(r.source,
                     absl::StrCat("relation \"", key, "\" names node type \"",
                                  s < 0 ? r.src_type : r.dst_type,
                                  "\", which is not a node type"));
    }
    if (!IsValidTypeName(r.relation)) {
      return Invalid(r.source, absl::StrCat("relation name \"", r.relation,
                                            "\" is not a valid type name "
                                            "([A-Za-z0-9_.-]+)"));
    }
    if (r.src.size() != r.dst.size() || r.feature_dim < 0 ||
        r.features.size() !=
            r.src.size() * static_cast<size_t>(r.feature_dim)) {
      return Invalid(
          r.source,
          absl::StrCat("relation \"", key, "\": ", r.src.size(), " sources, ",
                       r.dst.size(), " destinations and ", r.features.size(),
                       " edge feature values (width ", r.feature_dim,
                       ") do not agree"));
    }
    summary->input_edges += static_cast<int64_t>(r.src.size());
    size_t kept = 0;
    for (size_t i = 0; i < r.src.size(); ++i) {
      const int64_t u = r.src[i], v = r.dst[i];
      if (u < 0 || u >= m.node_types[s].count || v < 0 ||
          v >= m.node_types[d].count) {
        const bool bad_src = u < 0 || u >= m.node_types[s].count;
        return Invalid(
            r.source,
            absl::StrCat("edge ", i, " of relation \"", key, "\" names ",
                         r.src_type == r.dst_type
                             ? std::string()
                             : (bad_src ? r.src_type : r.dst_type) + " ",
                         bad_src ? u : v, ", outside [0, ",
                         (bad_src ? m.node_types[s] : m.node_types[d]).count,
                         ")"));
      }
      if (s == d && u == v && !options.keep_self_loops) {
        ++summary->self_loops_dropped;
        continue;
      }
      r.src[kept] = u;
      r.dst[kept] = v;
      std::copy_n(r.features.begin() + i * r.feature_dim, r.feature_dim,
                  r.features.begin() + kept * r.feature_dim);
      ++kept;
    }
    r.src.resize(kept);
    r.dst.resize(kept);
    r.features.resize(kept * r.feature_dim);
  }
  if (options.add_reverse) {
    for (size_t i = 0; i < given; ++i) {
      const RelationEdges& r = relations[i];
      if (IsSymmetric(r)) {
        summary->notes.push_back(absl::StrCat(
            "relation \"", r.src_type, "/", r.relation, "/", r.dst_type,
            "\" lists every edge both ways: no reverse relation added"));
        continue;
      }
      RelationEdges reverse;
      reverse.src_type = r.dst_type;
      reverse.relation = absl::StrCat("rev_", r.relation);
      reverse.dst_type = r.src_type;
      reverse.src = r.dst;
      reverse.dst = r.src;
      reverse.feature_dim = r.feature_dim;
      reverse.features = r.features;
      reverse.source = r.source;
      relations.push_back(std::move(reverse));
    }
  }
  for (const RelationEdges& r : relations) {
    if (m.FindEdgeType(r.src_type, r.relation, r.dst_type) >= 0) {
      return Invalid(r.source,
                     absl::StrCat("relation \"", r.src_type, "/", r.relation,
                                  "/", r.dst_type, "\" is given twice"));
    }
    EdgeType& type = m.edge_types.emplace_back();
    type.src = r.src_type;
    type.relation = r.relation;
    type.dst = r.dst_type;
    type.feature_dim = r.feature_dim;
  }

  // Counting sort into rows (by destination), then each row sorted by
  // (relation, source, input order) and deduplicated keeping the first.
  std::vector<int64_t> indptr(num_nodes + 1, 0);
  for (const RelationEdges& r : relations) {
    const int64_t base = offset[m.FindNodeType(r.dst_type)];
    for (int64_t v : r.dst) ++indptr[base + v + 1];
  }
  for (int64_t v = 0; v < num_nodes; ++v) indptr[v + 1] += indptr[v];
  std::vector<Entry> entries(indptr[num_nodes]);
  {
    std::vector<int64_t> cursor(indptr.begin(), indptr.end() - 1);
    for (size_t ri = 0; ri < relations.size(); ++ri) {
      const RelationEdges& r = relations[ri];
      const int64_t src_base = offset[m.FindNodeType(r.src_type)];
      const int64_t dst_base = offset[m.FindNodeType(r.dst_type)];
      for (size_t i = 0; i < r.src.size(); ++i) {
        entries[cursor[dst_base + r.dst[i]]++] = {static_cast<int32_t>(ri),
                                                  src_base + r.src[i],
                                                  static_cast<int64_t>(i)};
      }
    }
  }
  dataset->indptr.assign(num_nodes + 1, 0);
  dataset->indices.clear();
  dataset->edge_types.clear();
  dataset->indices.reserve(entries.size());
  dataset->edge_types.reserve(entries.size());
  std::vector<int64_t> kept_edge;  // Input index of each kept entry.
  kept_edge.reserve(entries.size());
  summary->max_degree = 0;
  summary->nodes_without_neighbors = 0;
  for (int64_t v = 0; v < num_nodes; ++v) {
    auto begin = entries.begin() + indptr[v];
    auto end = entries.begin() + indptr[v + 1];
    std::sort(begin, end);
    const size_t row_start = dataset->indices.size();
    for (auto it = begin; it != end; ++it) {
      if (it != begin && it->relation == (it - 1)->relation &&
          it->source == (it - 1)->source) {
        ++summary->duplicate_edges_dropped;
        continue;
      }
      dataset->indices.push_back(it->source);
      dataset->edge_types.push_back(it->relation);
      kept_edge.push_back(it->edge);
    }
    const int64_t degree =
        static_cast<int64_t>(dataset->indices.size() - row_start);
    summary->max_degree = std::max(summary->max_degree, degree);
    if (degree == 0) ++summary->nodes_without_neighbors;
    dataset->indptr[v + 1] = static_cast<int64_t>(dataset->indices.size());
  }
  entries.clear();
  entries.shrink_to_fit();

  // Per relation: its count, and its edge features in its entries' CSR order.
  bool any_features = false;
  for (const RelationEdges& r : relations)
    any_features = any_features || r.feature_dim > 0;
  dataset->edge_features.assign(any_features ? relations.size() : 0, {});
  for (size_t e = 0; e < dataset->edge_types.size(); ++e) {
    const int32_t ri = dataset->edge_types[e];
    ++m.edge_types[ri].count;
    const RelationEdges& r = relations[ri];
    if (r.feature_dim == 0) continue;
    std::vector<float>& out = dataset->edge_features[ri];
    const auto row = r.features.begin() + kept_edge[e] * r.feature_dim;
    out.insert(out.end(), row, row + r.feature_dim);
  }
  m.num_nodes = num_nodes;
  m.num_edges = static_cast<int64_t>(dataset->indices.size());
  m.feature_dim = 0;
  m.edge_feature_dim = 0;
  m.directed = !options.add_reverse;
  return absl::OkStatus();
}

}  // namespace shardgnn
