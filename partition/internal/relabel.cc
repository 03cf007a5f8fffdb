#include "partition/internal/relabel.h"

#include <algorithm>

namespace shardgnn::partition_internal {

Relabeling Relabel(const std::vector<int32_t>& part, int num_parts) {
  const int64_t n = static_cast<int64_t>(part.size());
  Relabeling r;
  r.node_ranges.assign(num_parts + 1, 0);
  for (int32_t p : part) ++r.node_ranges[p + 1];
  for (int p = 0; p < num_parts; ++p) {
    r.node_ranges[p + 1] += r.node_ranges[p];
  }
  std::vector<NodeId> cursor(r.node_ranges.begin(), r.node_ranges.end() - 1);
  r.orig_ids.resize(n);
  r.new_ids.resize(n);
  // Original IDs are visited in ascending order, so within a part they stay
  // in ascending order: the relabelling is deterministic and stable.
  for (NodeId v = 0; v < n; ++v) {
    NodeId id = cursor[part[v]]++;
    r.orig_ids[id] = v;
    r.new_ids[v] = id;
  }
  return r;
}

void SetTypeStarts(const DatasetManifest& manifest, Relabeling* r) {
  if (!manifest.typed()) return;
  const size_t parts = r->node_ranges.size() - 1;
  const size_t types = manifest.node_types.size();
  // counts[p][t]: part p's nodes of type t.
  std::vector<std::vector<NodeId>> counts(parts, std::vector<NodeId>(types, 0));
  NodeId orig = 0;
  for (size_t t = 0; t < types; ++t) {
    for (int64_t k = 0; k < manifest.node_types[t].count; ++k, ++orig) {
      const NodeId id = r->new_ids[orig];
      const size_t p = static_cast<size_t>(
          std::upper_bound(r->node_ranges.begin(), r->node_ranges.end(), id) -
          r->node_ranges.begin() - 1);
      ++counts[p][t];
    }
  }
  r->type_starts.assign(parts, {});
  for (size_t p = 0; p < parts; ++p) {
    std::vector<NodeId>& starts = r->type_starts[p];
    starts.push_back(r->node_ranges[p]);
    for (size_t t = 0; t < types; ++t)
      starts.push_back(starts.back() + counts[p][t]);
  }
}

PartStats ComputeStats(const Dataset& dataset, const std::vector<int32_t>& part,
                       int num_parts) {
  PartStats s;
  s.parts.resize(num_parts);
  for (int p = 0; p < num_parts; ++p) {
    s.parts[p].part = p;
    s.parts[p].dir = PartDirName(p);
  }
  const int64_t n = dataset.num_nodes();
  for (NodeId u = 0; u < n; ++u) {
    PartInfo& info = s.parts[part[u]];
    ++info.nodes;
    const int64_t begin = dataset.indptr[u];
    const int64_t end = dataset.indptr[u + 1];
    info.edges += end - begin;
    for (int64_t e = begin; e < end; ++e) {
      if (part[dataset.indices[e]] != part[u]) ++info.cut_edges;
    }
  }
  for (const auto& [name, ids] : dataset.splits) {
    for (PartInfo& info : s.parts) info.split_counts[name] = 0;
    for (NodeId v : ids) ++s.parts[part[v]].split_counts[name];
  }
  auto figure = [&](auto count) {
    BalanceFigure b;
    int64_t total = 0;
    for (const PartInfo& info : s.parts) {
      int64_t c = count(info);
      total += c;
      b.max = std::max(b.max, c);
    }
    b.avg = static_cast<double>(total) / num_parts;
    return b;
  };
  s.balance["nodes"] = figure([](const PartInfo& i) { return i.nodes; });
  s.balance["edges"] = figure([](const PartInfo& i) { return i.edges; });
  if (dataset.manifest.typed()) {
    // Each node type's spread: the figure METIS balanced for it.
    const auto& types = dataset.manifest.node_types;
    std::vector<std::vector<int64_t>> per_part(
        static_cast<size_t>(num_parts), std::vector<int64_t>(types.size()));
    NodeId v = 0;
    for (size_t t = 0; t < types.size(); ++t) {
      for (int64_t k = 0; k < types[t].count; ++k, ++v)
        ++per_part[static_cast<size_t>(part[v])][t];
    }
    for (size_t t = 0; t < types.size(); ++t) {
      BalanceFigure b;
      for (const auto& counts : per_part) b.max = std::max(b.max, counts[t]);
      b.avg = static_cast<double>(types[t].count) / num_parts;
      s.balance["nodes_" + types[t].name] = b;
    }
  }
  if (dataset.splits.count("train")) {
    s.balance["train_nodes"] =
        figure([](const PartInfo& i) { return i.split_counts.at("train"); });
  }
  for (const PartInfo& info : s.parts) s.edge_cut += info.cut_edges;
  return s;
}

std::map<std::string, std::vector<NodeId>> RelabelSplits(
    const Dataset& dataset, const std::vector<NodeId>& new_ids) {
  std::map<std::string, std::vector<NodeId>> out;
  for (const auto& [name, ids] : dataset.splits) {
    std::vector<NodeId>& mapped = out[name];
    mapped.reserve(ids.size());
    for (NodeId v : ids) mapped.push_back(new_ids[v]);
    std::sort(mapped.begin(), mapped.end());
  }
  return out;
}

}  // namespace shardgnn::partition_internal
