#include "sampler/neighbor_sampler.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/buffers.h"
#include "common/sampling.h"
#include "common/status.h"
#include "sampler/internal/block_builder.h"

namespace shardgnn {

absl::StatusOr<std::unique_ptr<NeighborSampler>> NeighborSampler::Create(
    const GraphSource* source, SamplerOptions options) {
  if (source == nullptr)
    return absl::InvalidArgumentError("NeighborSampler: no graph source");
  if (options.fanouts.empty())
    return absl::InvalidArgumentError("NeighborSampler: fanouts is empty");
  for (size_t h = 0; h < options.fanouts.size(); ++h) {
    if (options.fanouts[h] < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("NeighborSampler: fanout ", options.fanouts[h],
                       " for hop ", h, " (use -1 for all neighbors)"));
    }
  }
  if (const GraphSchema* schema = source->schema(); schema != nullptr) {
    const int hops = static_cast<int>(options.fanouts.size());
    if (options.relation_fanouts.empty()) {
      for (int h = 0; h < hops; ++h) {
        options.relation_fanouts.emplace_back(schema->num_relations(),
                                              options.fanouts[h]);
      }
    }
    if (static_cast<int>(options.relation_fanouts.size()) != hops) {
      return absl::InvalidArgumentError(absl::StrCat(
          "NeighborSampler: relation fanouts for ",
          options.relation_fanouts.size(), " hops, fanouts for ", hops));
    }
    for (const std::vector<int>& hop : options.relation_fanouts) {
      if (static_cast<int>(hop.size()) != schema->num_relations()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "NeighborSampler: ", hop.size(), " relation fanouts for ",
            schema->num_relations(), " relations"));
      }
      for (int f : hop) {
        if (f < -1) {
          return absl::InvalidArgumentError(
              absl::StrCat("NeighborSampler: relation fanout ", f,
                           " (use -1 for all neighbors)"));
        }
      }
    }
  } else if (!options.relation_fanouts.empty()) {
    return absl::InvalidArgumentError(
        "NeighborSampler: relation fanouts for a graph without relations");
  }
  if (options.fetch_edge_features &&
      (source->schema() != nullptr || source->edge_feature_dim() < 1)) {
    return absl::FailedPreconditionError(
        source->schema() != nullptr
            ? "the edge features of a typed graph are not sampled yet"
            : "the graph has no edge features");
  }
  return std::unique_ptr<NeighborSampler>(
      new NeighborSampler(source, std::move(options)));
}

NeighborSampler::NeighborSampler(const GraphSource* source,
                                 SamplerOptions options)
    : source_(source), options_(std::move(options)) {}

NeighborSampler::~NeighborSampler() = default;

std::unique_ptr<internal::BlockBuilder> NeighborSampler::AcquireBuilder()
    const {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_builders_.empty()) {
      std::unique_ptr<internal::BlockBuilder> builder =
          std::move(idle_builders_.back());
      idle_builders_.pop_back();
      return builder;
    }
  }
  return std::make_unique<internal::BlockBuilder>(source_->num_nodes());
}

void NeighborSampler::ReleaseBuilder(
    std::unique_ptr<internal::BlockBuilder> builder) const {
  absl::MutexLock lock(&mu_);
  idle_builders_.push_back(std::move(builder));
}

namespace {

// Removes from `sampled` (frontier[i]'s neighbors in counts[i]-long runs)
// every neighbor u of v = frontier[i] with (v, u) excluded, in place.
void DropExcluded(absl::Span<const NodeId> frontier,
                  const ExcludedEdges& exclude, SampledNeighbors* sampled) {
  // A malformed answer is left for AddHop to reject.
  if (sampled->counts.size() != frontier.size()) return;
  int64_t total = 0;
  for (int64_t c : sampled->counts) {
    if (c < 0) return;
    total += c;
  }
  if (total != static_cast<int64_t>(sampled->neighbors.size())) return;
  size_t read = 0, write = 0;
  for (size_t i = 0; i < frontier.size(); ++i) {
    const int64_t count = sampled->counts[i];
    int64_t kept = 0;
    for (int64_t k = 0; k < count; ++k, ++read) {
      const NodeId u = sampled->neighbors[read];
      if (exclude.contains({frontier[i], u})) continue;
      sampled->neighbors[write++] = u;
      ++kept;
    }
    sampled->counts[i] = kept;
  }
  sampled->neighbors.resize(write);
}

}  // namespace

absl::Status NeighborSampler::Sample(absl::Span<const NodeId> seeds,
                                     uint64_t batch_seed, MiniBatch* out,
                                     const ExcludedEdges* exclude) const {
  std::unique_ptr<internal::BlockBuilder> builder = AcquireBuilder();
  absl::Status status =
      SampleWith(seeds, batch_seed, exclude, builder.get(), out);
  ReleaseBuilder(std::move(builder));
  return status;
}

absl::Status NeighborSampler::SampleWith(absl::Span<const NodeId> seeds,
                                         uint64_t batch_seed,
                                         const ExcludedEdges* exclude,
                                         internal::BlockBuilder* builder,
                                         MiniBatch* out) const {
  const int num_hops = num_layers();
  out->fetch_seconds = 0;
  RETURN_IF_ERROR(builder->Reset(seeds));
  out->seeds.assign(seeds.begin(), seeds.end());
  out->blocks.resize(num_hops);
  SampledNeighbors& sampled = builder->hop_sample();
  const bool typed = source_->schema() != nullptr;
  if (typed && exclude != nullptr && !exclude->empty()) {
    return absl::UnimplementedError(
        "excluded edges (link prediction) on a typed graph");
  }
  for (int h = 0; h < num_hops; ++h) {
    const uint64_t hop_seed = MixSeed(batch_seed, static_cast<uint64_t>(h));
    if (typed) {
      RETURN_IF_ERROR(source_->SampleTypedNeighbors(
          builder->frontier(), options_.relation_fanouts[h], options_.replace,
          hop_seed, &sampled));
      RETURN_IF_ERROR(builder->AddTypedHop(sampled.counts, sampled.neighbors,
                                           sampled.relations,
                                           &out->blocks[num_hops - 1 - h]));
      continue;
    }
    Block& block = out->blocks[num_hops - 1 - h];
    if (options_.fetch_edge_features) {
      if (exclude != nullptr && !exclude->empty()) {
        return absl::UnimplementedError(
            "excluded edges (link prediction) with edge features");
      }
      RETURN_IF_ERROR(source_->SampleNeighborsWithEdges(
          builder->frontier(), options_.fanouts[h], options_.replace, hop_seed,
          &sampled));
    } else {
      RETURN_IF_ERROR(
          source_->SampleNeighbors(builder->frontier(), options_.fanouts[h],
                                   options_.replace, hop_seed, &sampled));
    }
    if (exclude != nullptr && !exclude->empty())
      DropExcluded(builder->frontier(), *exclude, &sampled);
    RETURN_IF_ERROR(builder->AddHop(sampled.counts, sampled.neighbors, &block));
    if (options_.fetch_edge_features) {
      // Rows in the block's edge order, which is the sample's.
      const int64_t width = source_->edge_feature_dim();
      if (sampled.edge_ids.size() != sampled.neighbors.size()) {
        return absl::InternalError(absl::StrCat(
            "the graph source sampled ", sampled.neighbors.size(),
            " neighbors but named ", sampled.edge_ids.size(), " edges"));
      }
      block.edge_feature_dim = width;
      block.edge_features.resize(sampled.edge_ids.size() *
                                 static_cast<size_t>(width));
      RETURN_IF_ERROR(source_->FetchEdgeFeatures(sampled.edge_ids,
                                                 block.edge_features.data()));
    } else {
      block.edge_feature_dim = 0;
      block.edge_features.clear();
    }
  }
  ReserveWithHeadroom(&out->input_nodes, builder->nodes().size());
  out->input_nodes.assign(builder->nodes().begin(), builder->nodes().end());
  out->feature_dim = source_->feature_dim();
  if (typed) {
    out->features.clear();
    RETURN_IF_ERROR(FetchTypedInputs(out));
  } else if (options_.fetch_features) {
    const size_t need = out->input_nodes.size() * out->feature_dim;
    // A recycled batch's buffer (sampler/loader.h).
    ReserveWithHeadroom(&out->features, need);
    out->features.resize(need);
    const auto fetch_start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(
        source_->FetchFeatures(out->input_nodes, out->features.data()));
    out->fetch_seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - fetch_start)
                             .count();
  } else {
    out->features.clear();
  }
  if (options_.fetch_labels) {
    out->labels.resize(seeds.size() * source_->label_columns());
    RETURN_IF_ERROR(source_->FetchLabels(seeds, out->labels.data()));
  } else {
    out->labels.clear();
  }
  if (options_.fetch_degrees) {
    out->degrees.resize(out->input_nodes.size());
    RETURN_IF_ERROR(
        source_->FetchDegrees(out->input_nodes, out->degrees.data()));
  } else {
    out->degrees.clear();
  }
  return absl::OkStatus();
}

absl::Status NeighborSampler::FetchTypedInputs(MiniBatch* out) const {
  const GraphSchema& schema = *source_->schema();
  const int types = schema.num_node_types();
  const size_t n = out->input_nodes.size();
  out->input_types.resize(n);
  out->type_inputs.resize(types);
  out->type_features.resize(types);
  for (std::vector<int64_t>& inputs : out->type_inputs) inputs.clear();
  for (size_t i = 0; i < n; ++i) {
    const int t = schema.TypeOf(out->input_nodes[i]);
    if (t < 0) {
      return absl::InternalError(absl::StrCat(
          "input node ", out->input_nodes[i], " is of no node type"));
    }
    out->input_types[i] = t;
    out->type_inputs[t].push_back(static_cast<int64_t>(i));
  }
  const auto fetch_start = std::chrono::steady_clock::now();
  std::vector<NodeId> nodes;
  for (int t = 0; t < types; ++t) {
    const int64_t dim = schema.node_types[t].feature_dim;
    std::vector<float>& rows = out->type_features[t];
    if (!options_.fetch_features || dim == 0) {
      rows.clear();
      continue;
    }
    nodes.clear();
    for (int64_t i : out->type_inputs[t]) nodes.push_back(out->input_nodes[i]);
    rows.resize(nodes.size() * static_cast<size_t>(dim));
    RETURN_IF_ERROR(source_->FetchTypeFeatures(t, nodes, rows.data()));
  }
  out->fetch_seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - fetch_start)
                           .count();
  return absl::OkStatus();
}

absl::StatusOr<MiniBatch> NeighborSampler::Sample(
    absl::Span<const NodeId> seeds, uint64_t batch_seed) const {
  MiniBatch batch;
  RETURN_IF_ERROR(Sample(seeds, batch_seed, &batch));
  return batch;
}

void AccumulateStats(const MiniBatch& batch, SampleStats* stats) {
  stats->seeds += static_cast<int64_t>(batch.seeds.size());
  stats->input_nodes += static_cast<int64_t>(batch.input_nodes.size());
  for (const Block& block : batch.blocks)
    stats->sampled_edges += block.num_edges();
}

}  // namespace shardgnn
