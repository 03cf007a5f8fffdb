#include "sampler/graph_source.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/buffers.h"
#include "common/sampling.h"
#include "common/status.h"
#include "datasets/dataset.h"

namespace shardgnn {

absl::Status GraphSource::FetchFeaturesInto(absl::Span<const NodeId> nodes,
                                            absl::Span<const size_t> rows,
                                            float* out) const {
  if (rows.size() != nodes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FetchFeaturesInto: ", rows.size(), " rows for ",
                     nodes.size(), " nodes"));
  }
  return ScatterFeatures(nodes, rows, out);
}

absl::Status GraphSource::ScatterFeatures(absl::Span<const NodeId> nodes,
                                          absl::Span<const size_t> rows,
                                          float* out) const {
  const size_t dim = static_cast<size_t>(feature_dim());
  std::vector<float> buffer(nodes.size() * dim);
  RETURN_IF_ERROR(FetchFeatures(nodes, buffer.data()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::memcpy(out + rows[i] * dim, buffer.data() + i * dim,
                dim * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status GraphSource::SampleTypedNeighbors(absl::Span<const NodeId>,
                                               absl::Span<const int>, bool,
                                               uint64_t,
                                               SampledNeighbors*) const {
  return absl::UnimplementedError("this graph source has no node types");
}

absl::Status GraphSource::SampleNeighborsWithEdges(absl::Span<const NodeId>,
                                                   int, bool, uint64_t,
                                                   SampledNeighbors*) const {
  return absl::UnimplementedError("this graph source has no edge features");
}

absl::Status GraphSource::FetchEdgeFeatures(absl::Span<const int64_t>,
                                            float*) const {
  return absl::UnimplementedError("this graph source has no edge features");
}

absl::Status GraphSource::FetchTypeFeatures(int, absl::Span<const NodeId>,
                                            float*) const {
  return absl::UnimplementedError("this graph source has no node types");
}

absl::StatusOr<std::unique_ptr<InMemoryGraphSource>>
InMemoryGraphSource::Create(const GraphArrays& arrays) {
  if (arrays.indptr.empty())
    return absl::InvalidArgumentError("in-memory graph: indptr is empty");
  const int64_t n = static_cast<int64_t>(arrays.indptr.size()) - 1;
  if (arrays.indptr[0] != 0)
    return absl::InvalidArgumentError("in-memory graph: indptr[0] is not 0");
  for (int64_t v = 0; v < n; ++v) {
    if (arrays.indptr[v + 1] < arrays.indptr[v]) {
      return absl::InvalidArgumentError(
          absl::StrCat("in-memory graph: indptr decreases at node ", v));
    }
  }
  if (arrays.indptr[n] != static_cast<int64_t>(arrays.indices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("in-memory graph: indptr ends at ", arrays.indptr[n],
                     " but there are ", arrays.indices.size(), " indices"));
  }
  if (!arrays.features.empty() &&
      static_cast<int64_t>(arrays.features.size()) != n * arrays.feature_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "in-memory graph: ", arrays.features.size(), " feature values for ", n,
        " nodes of dimension ", arrays.feature_dim));
  }
  if (!arrays.edge_features.empty() &&
      (arrays.edge_feature_dim < 1 ||
       static_cast<int64_t>(arrays.edge_features.size()) !=
           static_cast<int64_t>(arrays.indices.size()) *
               arrays.edge_feature_dim)) {
    return absl::InvalidArgumentError(
        absl::StrCat("in-memory graph: ", arrays.edge_features.size(),
                     " edge feature values for ", arrays.indices.size(),
                     " edges of dimension ", arrays.edge_feature_dim));
  }
  if (arrays.label_columns < 1 ||
      (!arrays.labels.empty() && static_cast<int64_t>(arrays.labels.size()) !=
                                     n * arrays.label_columns)) {
    return absl::InvalidArgumentError(
        absl::StrCat("in-memory graph: ", arrays.labels.size(), " labels for ",
                     n, " nodes of ", arrays.label_columns, " columns"));
  }
  if (const GraphSchema* schema = arrays.schema; schema != nullptr) {
    if (schema->num_nodes() != n ||
        arrays.edge_types.size() != arrays.indices.size() ||
        static_cast<int>(arrays.type_features.size()) !=
            schema->num_node_types()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "in-memory graph: the schema's ", schema->num_nodes(), " nodes, ",
          arrays.edge_types.size(), " edge types for ", arrays.indices.size(),
          " edges, or features of ", arrays.type_features.size(), " of ",
          schema->num_node_types(), " node types do not agree"));
    }
    for (int t = 0; t < schema->num_node_types(); ++t) {
      const NodeType& type = schema->node_types[t];
      if (static_cast<int64_t>(arrays.type_features[t].size()) !=
          type.count * type.feature_dim) {
        return absl::InvalidArgumentError(
            absl::StrCat("in-memory graph: ", arrays.type_features[t].size(),
                         " feature values for node type ", type.name, " (",
                         type.count, " x ", type.feature_dim, ")"));
      }
    }
  }
  return std::unique_ptr<InMemoryGraphSource>(new InMemoryGraphSource(arrays));
}

absl::StatusOr<std::unique_ptr<InMemoryGraphSource>>
InMemoryGraphSource::FromDataset(const Dataset& dataset) {
  GraphArrays arrays;
  if (dataset.manifest.multilabel)
    arrays.label_columns = dataset.manifest.num_classes;
  arrays.indptr = dataset.indptr;
  arrays.indices = dataset.indices;
  arrays.features = dataset.features;
  arrays.feature_dim = dataset.feature_dim();
  arrays.labels = dataset.labels;
  if (!dataset.manifest.typed() && dataset.manifest.edge_feature_dim > 0 &&
      !dataset.edge_features.empty()) {
    arrays.edge_features = dataset.edge_features[0];
    arrays.edge_feature_dim = dataset.manifest.edge_feature_dim;
  }
  std::unique_ptr<GraphSchema> schema;
  if (dataset.manifest.typed()) {
    ASSIGN_OR_RETURN(GraphSchema s,
                     GraphSchema::FromManifest(dataset.manifest));
    schema = std::make_unique<GraphSchema>(std::move(s));
    arrays.schema = schema.get();
    arrays.edge_types = dataset.edge_types;
    for (const std::vector<float>& f : dataset.type_features)
      arrays.type_features.emplace_back(f);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<InMemoryGraphSource> source, Create(arrays));
  source->owned_schema_ = std::move(schema);
  return source;
}

absl::Status InMemoryGraphSource::CheckId(NodeId node) const {
  if (node < 0 || node >= num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ID ", node, " is out of range [0, ", num_nodes(), ")"));
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::SampleNeighbors(
    absl::Span<const NodeId> nodes, int fanout, bool replace, uint64_t seed,
    SampledNeighbors* out) const {
  out->counts.resize(nodes.size());
  out->neighbors.clear();
  const int64_t* indptr = arrays_.indptr.data();
  const NodeId* indices = arrays_.indices.data();
  // Room for the whole answer at once (grown by doubling, a large batch's
  // answer took a block of every size on the way, and the next epoch's
  // batches new ones again).
  size_t total = 0;
  for (const NodeId v : nodes) {
    if (v < 0 || v >= num_nodes()) return CheckId(v);
    total += static_cast<size_t>(
        SampledCount(indptr[v + 1] - indptr[v], fanout, replace));
  }
  ReserveWithHeadroom(&out->neighbors, total);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    const size_t before = out->neighbors.size();
    shardgnn::SampleNeighbors(indices + indptr[v], indptr[v + 1] - indptr[v],
                              fanout, replace, seed, v, &out->neighbors);
    out->counts[i] = static_cast<int64_t>(out->neighbors.size() - before);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::SampleTypedNeighbors(
    absl::Span<const NodeId> nodes, absl::Span<const int> fanouts, bool replace,
    uint64_t seed, SampledNeighbors* out) const {
  const GraphSchema* schema = arrays_.schema;
  if (schema == nullptr)
    return GraphSource::SampleTypedNeighbors(nodes, fanouts, replace, seed,
                                             out);
  if (static_cast<int>(fanouts.size()) != schema->num_relations()) {
    return absl::InvalidArgumentError(
        absl::StrCat(fanouts.size(), " fanouts for ", schema->num_relations(),
                     " relations"));
  }
  out->counts.resize(nodes.size());
  out->neighbors.clear();
  out->relations.clear();
  const int64_t* indptr = arrays_.indptr.data();
  const NodeId* indices = arrays_.indices.data();
  const int32_t* types = arrays_.edge_types.data();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    RETURN_IF_ERROR(CheckId(v));
    // The row is sorted by relation: each relation's neighbors are one run.
    const int64_t begin = indptr[v];
    out->counts[i] =
        SampleTypedRow(indices + begin, types + begin, indptr[v + 1] - begin,
                       fanouts.data(), schema->num_relations(), replace, seed,
                       v, &out->neighbors, &out->relations);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::SampleNeighborsWithEdges(
    absl::Span<const NodeId> nodes, int fanout, bool replace, uint64_t seed,
    SampledNeighbors* out) const {
  if (edge_feature_dim() == 0) {
    return GraphSource::SampleNeighborsWithEdges(nodes, fanout, replace, seed,
                                                 out);
  }
  out->counts.resize(nodes.size());
  out->edge_ids.clear();
  out->relations.clear();
  const int64_t* indptr = arrays_.indptr.data();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    RETURN_IF_ERROR(CheckId(v));
    const size_t before = out->edge_ids.size();
    SampleNeighborPositions(indptr[v], indptr[v + 1] - indptr[v], fanout,
                            replace, seed, v, &out->edge_ids);
    out->counts[i] = static_cast<int64_t>(out->edge_ids.size() - before);
  }
  out->neighbors.resize(out->edge_ids.size());
  for (size_t k = 0; k < out->edge_ids.size(); ++k)
    out->neighbors[k] = arrays_.indices[out->edge_ids[k]];
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::FetchEdgeFeatures(
    absl::Span<const int64_t> edges, float* out) const {
  const int64_t dim = edge_feature_dim();
  if (dim == 0) return GraphSource::FetchEdgeFeatures(edges, out);
  const auto count = static_cast<int64_t>(arrays_.indices.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i] < 0 || edges[i] >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge ", edges[i], " is out of range [0, ", count, ")"));
    }
    std::memcpy(out + i * dim, arrays_.edge_features.data() + edges[i] * dim,
                sizeof(float) * dim);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::FetchTypeFeatures(
    int type, absl::Span<const NodeId> nodes, float* out) const {
  const GraphSchema* schema = arrays_.schema;
  if (schema == nullptr)
    return GraphSource::FetchTypeFeatures(type, nodes, out);
  if (type < 0 || type >= schema->num_node_types()) {
    return absl::InvalidArgumentError(absl::StrCat("no node type ", type));
  }
  const int64_t dim = schema->node_types[type].feature_dim;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t local = schema->LocalIndex(nodes[i]);
    if (local < 0 || schema->TypeOf(nodes[i]) != type) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", nodes[i], " is not of type ",
                       schema->node_types[type].name));
    }
    std::memcpy(out + i * dim, arrays_.type_features[type].data() + local * dim,
                sizeof(float) * dim);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::FetchFeatures(absl::Span<const NodeId> nodes,
                                                float* out) const {
  const int64_t dim = arrays_.feature_dim;
  if (arrays_.features.empty() && dim > 0 && !nodes.empty()) {
    return absl::FailedPreconditionError("in-memory graph has no features");
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(CheckId(nodes[i]));
    std::memcpy(out + i * dim, arrays_.features.data() + nodes[i] * dim,
                sizeof(float) * dim);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::FetchLabels(absl::Span<const NodeId> nodes,
                                              int64_t* out) const {
  if (arrays_.labels.empty() && !nodes.empty())
    return absl::FailedPreconditionError("in-memory graph has no labels");
  const int64_t columns = arrays_.label_columns;
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(CheckId(nodes[i]));
    std::memcpy(out + i * columns, arrays_.labels.data() + nodes[i] * columns,
                sizeof(int64_t) * columns);
  }
  return absl::OkStatus();
}

absl::Status InMemoryGraphSource::FetchDegrees(absl::Span<const NodeId> nodes,
                                               int64_t* out) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(CheckId(nodes[i]));
    out[i] = arrays_.indptr[nodes[i] + 1] - arrays_.indptr[nodes[i]];
  }
  return absl::OkStatus();
}

}  // namespace shardgnn
