// hetero-sbm (datasets/generators.h): papers, authors, venues and fields.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/internal/generator_parts.h"
#include "datasets/internal/import_util.h"
#include "datasets/typed_graph.h"

namespace shardgnn::datasets_internal {
namespace {

constexpr int64_t kTopicsPerPaper = 2;  // paper/has_topic/field.

// hetero-sbm's relations in the order of their edge types; their reverses
// follow in the same order.
enum HeteroRelation { kWrites, kCites, kPublishedIn, kHasTopic, kNumRelations };

struct RelationSpec {
  const char* src;
  const char* relation;
  const char* dst;
};

constexpr RelationSpec kHeteroRelations[kNumRelations] = {
    {"author", "writes", "paper"},
    {"paper", "cites", "paper"},
    {"paper", "published_in", "venue"},
    {"paper", "has_topic", "field"}};

// The hidden classes of hetero-sbm's node types.
struct HeteroModel {
  ClassIndex paper, author, venue, field;
  double homophily = 0;  // Of the edges (chance with edge features).
};

// Edge i of relation r in type-local IDs (see generators.h: the citing or
// written paper goes round the papers in turn, the other end is drawn by
// class).
void HeteroEdge(const HeteroModel& m, int64_t c, HeteroRelation r, int64_t i,
                uint64_t* state, int64_t* src, int64_t* dst) {
  const int64_t papers = static_cast<int64_t>(m.paper.classes.size());
  auto other = [&](const ClassIndex& type, int64_t paper) {
    return type.Draw(
        OtherEndClass(m.paper.classes[paper], c, m.homophily, state), state);
  };
  switch (r) {
    case kWrites:
      *dst = i % papers;
      *src = other(m.author, *dst);
      return;
    case kCites:
      *src = i % papers;
      for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
        *dst = other(m.paper, *src);
        if (*dst != *src) return;
      }
      *dst = (*src + 1 + UniformBelow(state, papers - 1)) % papers;
      return;
    case kPublishedIn:
      *src = i;
      *dst = other(m.venue, i);
      return;
    case kHasTopic:
      *src = i / kTopicsPerPaper;
      *dst = other(m.field, *src);
      return;
    case kNumRelations:
      return;
  }
}

// Each relation's edges and its reverse: relations[r] and
// relations[kNumRelations + r]. cites (and rev_cites) carry edge features
// when asked: each edge's destination class with probability `homophily`.
absl::Status HeteroEdges(const GeneratorOptions& o, const HeteroModel& m,
                         int threads, std::vector<RelationEdges>* relations) {
  const int64_t c = o.num_classes, d = o.edge_feature_dim;
  const int64_t papers = static_cast<int64_t>(m.paper.classes.size());
  const int64_t drawn = std::max<int64_t>(
      1, std::llround(static_cast<double>(o.num_nodes) * o.avg_degree / 2.0));
  const int64_t rest =
      std::max<int64_t>(0, drawn - (1 + kTopicsPerPaper) * papers);
  int64_t sizes[kNumRelations];
  sizes[kCites] = std::max(papers, rest / 2);
  sizes[kWrites] = std::max(papers, rest - rest / 2);
  sizes[kPublishedIn] = papers;
  sizes[kHasTopic] = kTopicsPerPaper * papers;
  const SignalRows signal(d, c, o.feature_noise,
                          MixSeed(o.seed, kEdgeCentroids));
  relations->assign(2 * kNumRelations, {});
  Progress progress("generating edges",
                    std::accumulate(sizes, sizes + kNumRelations, int64_t{0}),
                    "edges");
  int64_t done = 0;
  for (int ri = 0; ri < kNumRelations; ++ri) {
    const HeteroRelation r = static_cast<HeteroRelation>(ri);
    const RelationSpec& spec = kHeteroRelations[r];
    const int64_t size = sizes[r];
    RelationEdges& forward = (*relations)[r];
    forward.src_type = spec.src;
    forward.relation = spec.relation;
    forward.dst_type = spec.dst;
    forward.source =
        absl::StrCat("generated ", spec.src, "/", spec.relation, "/", spec.dst);
    forward.src.resize(size);
    forward.dst.resize(size);
    const bool features = r == kCites && d > 0;
    std::vector<float> reverse_features;
    if (features) {
      forward.feature_dim = d;
      forward.features.resize(size * d);
      reverse_features.resize(size * d);
    }
    auto work = [&](int64_t chunk, int) {
      const uint64_t stream = MixSeed(MixSeed(o.seed, kRelations), r);
      uint64_t state = MixSeed(stream, chunk);
      uint64_t pick = MixSeed(MixSeed(stream, kEdgeSignal), chunk);
      Gaussian noise(MixSeed(MixSeed(stream, kEdgeNoise), chunk));
      const int64_t end = std::min(size, (chunk + 1) * kEdgeChunk);
      for (int64_t i = chunk * kEdgeChunk; i < end; ++i) {
        HeteroEdge(m, c, r, i, &state, &forward.src[i], &forward.dst[i]);
        if (!features) continue;
        // cites: src -> dst, rev_cites: dst -> src.
        const int64_t to_dst = m.paper.classes[forward.dst[i]];
        const int64_t to_src = m.paper.classes[forward.src[i]];
        signal.Row(Uniform01(&pick) < o.homophily ? to_dst : -1, &noise,
                   &forward.features[i * d]);
        signal.Row(Uniform01(&pick) < o.homophily ? to_src : -1, &noise,
                   &reverse_features[i * d]);
      }
    };
    RETURN_IF_ERROR(RunChunks(
        (size + kEdgeChunk - 1) / kEdgeChunk, threads, work,
        [&](int64_t chunk, int) {
          progress.Update(done + std::min(size, (chunk + 1) * kEdgeChunk));
          return absl::OkStatus();
        }));
    done += size;
    // What TypedGraphOptions::add_reverse makes, except that rev_cites's
    // edge features carry its own destination's class.
    RelationEdges& reverse = (*relations)[kNumRelations + r];
    reverse.src_type = spec.dst;
    reverse.relation = absl::StrCat("rev_", spec.relation);
    reverse.dst_type = spec.src;
    reverse.src = forward.dst;
    reverse.dst = forward.src;
    reverse.feature_dim = forward.feature_dim;
    reverse.features = std::move(reverse_features);
    reverse.source = forward.source;
  }
  progress.Done();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BuildSummary> GenerateHeteroSbm(
    const GeneratorOptions& o, const std::string& out_dir,
    std::chrono::steady_clock::time_point start) {
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        out_dir, ": output already exists; remove it or choose another path"));
  }
  const int threads = std::max(1, o.threads);
  const int64_t c = o.num_classes, f = o.feature_dim, d = o.edge_feature_dim;
  const int64_t author_dim = (f + 1) / 2;
  const HeteroCounts counts = HeteroCountsFor(o);
  HeteroModel model;
  const uint64_t classes = MixSeed(o.seed, kTypeClasses);
  model.paper = BalancedClasses(counts.paper, c, MixSeed(classes, 0));
  model.author = BalancedClasses(counts.author, c, MixSeed(classes, 1));
  model.venue = BalancedClasses(counts.venue, c, MixSeed(classes, 2));
  model.field = BalancedClasses(counts.field, c, MixSeed(classes, 3));
  model.homophily = d > 0 ? 1.0 / static_cast<double>(c) : o.homophily;

  std::vector<RelationEdges> relations;
  RETURN_IF_ERROR(HeteroEdges(o, model, threads, &relations));
  const std::vector<NodeType> types = {{"paper", counts.paper, f},
                                       {"author", counts.author, author_dim},
                                       {"venue", counts.venue, 0},
                                       {"field", counts.field, 0}};
  Dataset dataset;
  BuildSummary summary;
  RETURN_IF_ERROR(BuildTypedGraph(types, std::move(relations),
                                  TypedGraphOptions(), &dataset, &summary));
  dataset.type_features.assign(types.size(), {});
  RETURN_IF_ERROR(TypeFeatures(model.paper.classes, f, o, kCentroids, kFeatures,
                               d > 0, threads, &dataset.type_features[0]));
  RETURN_IF_ERROR(TypeFeatures(model.author.classes, author_dim, o,
                               kAuthorCentroids, kAuthorFeatures, d > 0,
                               threads, &dataset.type_features[1]));
  // Papers are the first type: their global IDs are their local ones.
  dataset.labels.assign(o.num_nodes, -1);
  std::copy(model.paper.classes.begin(), model.paper.classes.end(),
            dataset.labels.begin());
  dataset.splits = datasets_internal::RandomSplit(
      dataset.labels, {"train", "valid", "test"}, o.split, o.seed);

  DatasetManifest& manifest = dataset.manifest;
  manifest.name = o.name.empty() ? "hetero-sbm" : o.name;
  manifest.directed = false;  // Every relation's reverse is stored.
  manifest.num_classes = c;
  manifest.target_types = {"paper"};
  manifest.source = absl::StrFormat(
      "generated: shardgnn dataset generate --kind hetero-sbm --nodes %d "
      "--avg-degree %g --features %d --classes %d --split %g,%g,%g "
      "--homophily %g --feature-noise %g --edge-features %d --seed %d",
      o.num_nodes, o.avg_degree, f, c, o.split[0], o.split[1], o.split[2],
      o.homophily, o.feature_noise, d, o.seed);
  RETURN_IF_ERROR(WriteDataset(dataset, out_dir));

  summary.out_dir = out_dir;
  ASSIGN_OR_RETURN(summary.manifest, ReadDatasetManifest(out_dir));
  for (const auto& [name, nodes] : dataset.splits) {
    int64_t& count = summary.split_nodes_without_neighbors[name];
    for (NodeId v : nodes) count += dataset.indptr[v + 1] == dataset.indptr[v];
  }
  // No self-loops, and every entry's reverse is stored (in the reverse
  // relation, deduplicated alike).
  summary.non_loop_edges = dataset.num_edges();
  summary.reciprocated_edges = dataset.num_edges();
  if (d > 0) summary.notes.push_back(kEdgeFeaturesNote);
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return summary;
}

}  // namespace shardgnn::datasets_internal
