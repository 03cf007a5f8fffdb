#include "graphstore/internal/answer_checks.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace shardgnn::internal {

ShardBounds BoundsOf(const ShardMeta& meta) {
  ShardBounds bounds;
  bounds.known = true;
  bounds.node_start = meta.node_start;
  bounds.node_end = meta.node_end;
  bounds.num_nodes_total = meta.num_nodes_total;
  bounds.num_edges = meta.num_edges;
  bounds.feature_dim = meta.feature_dim;
  bounds.num_classes = meta.num_classes;
  bounds.label_columns = meta.label_columns;
  bounds.num_relations = static_cast<int64_t>(meta.edge_types.size());
  for (const NodeType& t : meta.node_types) {
    bounds.type_feature_dims.push_back(t.feature_dim);
  }
  return bounds;
}

absl::Status CheckTypedInfo(const ShardMeta& meta, int64_t max_message_bytes) {
  absl::Status s = CheckShardMetaTypes(meta);
  if (!s.ok())
    return absl::DataLossError(absl::StrCat("reports ", s.message()));
  for (const NodeType& t : meta.node_types) {
    if (t.feature_dim > max_message_bytes / int64_t{sizeof(float)}) {
      return absl::DataLossError(absl::StrCat(
          "reports node type \"", t.name, "\" of feature_dim ", t.feature_dim,
          " (a row must fit in ", max_message_bytes, " bytes)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTypedSample(absl::Span<const NodeId> ids,
                              absl::Span<const int> fanouts,
                              const SampledNeighbors& s, const ShardBounds& b) {
  if (s.relations.size() != s.neighbors.size()) {
    return absl::DataLossError(absl::StrCat(s.relations.size(),
                                            " relations for ",
                                            s.neighbors.size(), " neighbors"));
  }
  // Counts, their sum and the neighbors' range as for one fanout; "all" is
  // the bound unless every fanout is bounded (per relation: below).
  int64_t most = 0;
  bool unbounded = false;
  for (int f : fanouts) {
    if (f < 0) unbounded = true;
    most += std::max(f, 0);
  }
  const int64_t fanout_bound =
      unbounded ? -1 : std::min<int64_t>(most, std::numeric_limits<int>::max());
  absl::Status untyped = CheckSample(ids, static_cast<int>(fanout_bound), s, b);
  if (!untyped.ok()) return untyped;
  const int64_t num_relations =
      b.known && b.num_relations > 0
          ? std::min<int64_t>(b.num_relations,
                              static_cast<int64_t>(fanouts.size()))
          : static_cast<int64_t>(fanouts.size());
  std::vector<int64_t> per_relation(static_cast<size_t>(num_relations), 0);
  size_t k = 0;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    std::fill(per_relation.begin(), per_relation.end(), 0);
    for (int64_t j = 0; j < s.counts[i]; ++j, ++k) {
      const int32_t r = s.relations[k];
      if (r < 0 || r >= num_relations || fanouts[r] == 0) {
        return absl::DataLossError(absl::StrCat(
            "neighbor ", s.neighbors[k], " of node ", ids[i], " has relation ",
            r, ", not one sampled (", num_relations, " relations, fanout ",
            r >= 0 && r < num_relations ? absl::StrCat(fanouts[r]) : "none",
            ")"));
      }
      if (++per_relation[static_cast<size_t>(r)] > fanouts[r] &&
          fanouts[r] >= 0) {
        return absl::DataLossError(
            absl::StrCat("node ", ids[i], " got more than fanout ", fanouts[r],
                         " neighbors of relation ", r));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInfo(const proto::InfoResponse& r,
                       int64_t max_message_bytes) {
  auto bad = [](auto&&... what) {
    return absl::DataLossError(absl::StrCat("reports ", what...));
  };
  if (r.num_parts() < 1) return bad("num_parts ", r.num_parts());
  if (r.part_id() < 0 || r.part_id() >= r.num_parts()) {
    return bad("part ", r.part_id(), " of ", r.num_parts(), " parts");
  }
  if (r.node_start() < 0 || r.node_end() < r.node_start() ||
      r.node_end() > r.num_nodes_total()) {
    return bad("node range [", r.node_start(), ", ", r.node_end(),
               ") in a graph of ", r.num_nodes_total(), " nodes");
  }
  if (r.num_edges() < 0) return bad("num_edges ", r.num_edges());
  if (r.feature_dim() < 0 ||
      r.feature_dim() > max_message_bytes / int64_t{sizeof(float)}) {
    return bad("feature_dim ", r.feature_dim(), " (a row must fit in ",
               max_message_bytes, " bytes)");
  }
  if (r.num_classes() < 0 ||
      r.num_classes() > std::numeric_limits<int32_t>::max()) {
    return bad("num_classes ", r.num_classes());
  }
  for (const auto& [name, count] : r.split_counts()) {
    if (count < 0 || count > r.node_end() - r.node_start()) {
      return bad("split '", name, "' of ", count, " nodes, but serves ",
                 r.node_end() - r.node_start());
    }
  }
  if (r.feature_port() > 65535) return bad("feature_port ", r.feature_port());
  return absl::OkStatus();
}

absl::Status CheckSample(absl::Span<const NodeId> ids, int fanout,
                         const SampledNeighbors& s, const ShardBounds& b) {
  const int64_t received = static_cast<int64_t>(s.neighbors.size());
  int64_t total = 0;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    const int64_t c = s.counts[i];
    if (c < 0 || (fanout >= 0 && c > fanout)) {
      return absl::DataLossError(absl::StrCat("count ", c, " for node ", ids[i],
                                              ", outside [0, fanout ", fanout,
                                              "]"));
    }
    if (fanout < 0 && b.known && c > b.num_edges) {
      return absl::DataLossError(absl::StrCat(
          "count ", c, " for node ", ids[i], ", more than the shard's ",
          b.num_edges, " adjacency entries"));
    }
    if (c > received - total) {
      return absl::DataLossError(absl::StrCat("counts add up to more than the ",
                                              received, " neighbors received"));
    }
    total += c;
  }
  if (total != received) {
    return absl::DataLossError(absl::StrCat(
        "counts add up to ", total, ", but ", received, " neighbors came"));
  }
  const int64_t end =
      b.known ? b.num_nodes_total : std::numeric_limits<int64_t>::max();
  for (NodeId u : s.neighbors) {
    if (u < 0 || u >= end) {
      return absl::DataLossError(absl::StrCat(
          "neighbor ", u, " is outside the graph's [0, ", end, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFeatureDim(int64_t feature_dim, int64_t max_message_bytes,
                             const ShardBounds& b) {
  if (feature_dim < 0 || feature_dim > max_message_bytes ||
      (b.known && feature_dim != b.feature_dim)) {
    return absl::DataLossError(absl::StrCat(
        "rows of feature_dim ", feature_dim,
        b.known ? absl::StrCat(", but Info said ", b.feature_dim) : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(absl::Span<const NodeId> ids,
                         const std::vector<int64_t>& labels,
                         const ShardBounds& b) {
  const int64_t end =
      b.known ? b.num_classes : std::numeric_limits<int64_t>::max();
  if (b.label_columns > 1) {
    const size_t cols = static_cast<size_t>(b.label_columns);
    if (labels.size() != ids.size() * cols) {
      return absl::DataLossError(absl::StrCat(labels.size(), " labels for ",
                                              ids.size(), " nodes of ", cols,
                                              " classes"));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t* row = labels.data() + i * cols;
      const bool unlabeled = row[0] == -1;
      for (size_t c = 0; c < cols; ++c) {
        const bool ok = unlabeled ? row[c] == -1 : (row[c] == 0 || row[c] == 1);
        if (!ok) {
          return absl::DataLossError(absl::StrCat(
              "label row of node ", ids[i], " holds ", row[c], " in class ", c,
              " (a row is all 0/1, or all -1 when unlabeled)"));
        }
      }
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < -1 || labels[i] >= end) {
      return absl::DataLossError(absl::StrCat("label ", labels[i], " for node ",
                                              ids[i], ", outside [-1, ", end,
                                              ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDegrees(absl::Span<const NodeId> ids,
                          const std::vector<int64_t>& degrees,
                          const ShardBounds& b) {
  const int64_t most =
      b.known ? b.num_edges : std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < degrees.size(); ++i) {
    if (degrees[i] < 0 || degrees[i] > most) {
      return absl::DataLossError(absl::StrCat(
          "degree ", degrees[i], " for node ", ids[i], ", outside [0, ", most,
          "] (the shard's adjacency entries)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSplit(absl::string_view name,
                        const std::vector<NodeId>& nodes,
                        const ShardBounds& b) {
  const NodeId start = b.known ? b.node_start : 0;
  const NodeId end = b.known ? b.node_end : std::numeric_limits<NodeId>::max();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < start || nodes[i] >= end) {
      return absl::DataLossError(
          absl::StrCat("split '", name, "' holds node ", nodes[i],
                       ", outside the served [", start, ", ", end, ")"));
    }
    if (i > 0 && nodes[i] <= nodes[i - 1]) {
      return absl::DataLossError(absl::StrCat("split '", name,
                                              "' is not sorted at entry ", i,
                                              " (node ", nodes[i], ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
