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
  if (!arrays.labels.empty() &&
      static_cast<int64_t>(arrays.labels.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("in-memory graph: ", arrays.labels.size(), " labels for ",
                     n, " nodes"));
  }
  return std::unique_ptr<InMemoryGraphSource>(new InMemoryGraphSource(arrays));
}

absl::StatusOr<std::unique_ptr<InMemoryGraphSource>>
InMemoryGraphSource::FromDataset(const Dataset& dataset) {
  GraphArrays arrays;
  arrays.indptr = dataset.indptr;
  arrays.indices = dataset.indices;
  arrays.features = dataset.features;
  arrays.feature_dim = dataset.feature_dim();
  arrays.labels = dataset.labels;
  return Create(arrays);
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
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(CheckId(nodes[i]));
    out[i] = arrays_.labels[nodes[i]];
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
