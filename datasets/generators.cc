#include "datasets/generators.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/peak_rss.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/internal/csr_builder.h"
#include "datasets/internal/dataset_dir.h"
#include "datasets/internal/generator_parts.h"
#include "datasets/internal/import_util.h"
#include "datasets/typed_graph.h"

namespace shardgnn::datasets_internal {

absl::Status RunChunks(
    int64_t num_chunks, int threads,
    const std::function<void(int64_t, int)>& work,
    const std::function<absl::Status(int64_t, int)>& finish) {
  for (int64_t first = 0; first < num_chunks; first += threads) {
    int count =
        static_cast<int>(std::min<int64_t>(threads, num_chunks - first));
    std::vector<std::thread> workers;
    for (int slot = 1; slot < count; ++slot) {
      workers.emplace_back(work, first + slot, slot);
    }
    work(first, 0);
    for (std::thread& w : workers) w.join();
    for (int slot = 0; slot < count; ++slot) {
      RETURN_IF_ERROR(finish(first + slot, slot));
    }
  }
  return absl::OkStatus();
}

int64_t OtherEndClass(int64_t cls, int64_t c, double homophily,
                      uint64_t* state) {
  if (c > 1 && Uniform01(state) >= homophily) {
    cls = (cls + 1 + UniformBelow(state, c - 1)) % c;
  }
  return cls;
}

ClassIndex BalancedClasses(int64_t count, int64_t c, uint64_t seed) {
  ClassIndex index;
  index.classes.resize(count);
  for (int64_t v = 0; v < count; ++v) index.classes[v] = v % c;
  Shuffle(index.classes, seed);
  index.begin.assign(c + 1, 0);
  for (int64_t label : index.classes) ++index.begin[label + 1];
  for (int64_t k = 0; k < c; ++k) index.begin[k + 1] += index.begin[k];
  index.nodes.resize(count);
  std::vector<int64_t> cursor(index.begin.begin(), index.begin.end() - 1);
  for (int64_t v = 0; v < count; ++v) {
    index.nodes[cursor[index.classes[v]]++] = v;
  }
  return index;
}

HeteroCounts HeteroCountsFor(const GeneratorOptions& o) {
  auto share = [&](double fraction) {
    return std::max<int64_t>(
        o.num_classes,
        std::llround(fraction * static_cast<double>(o.num_nodes)));
  };
  HeteroCounts counts;
  counts.author = share(0.35);
  counts.venue = share(0.05);
  counts.field = share(0.10);
  counts.paper = o.num_nodes - counts.author - counts.venue - counts.field;
  return counts;
}

absl::Status TypeFeatures(const std::vector<int64_t>& classes, int64_t dim,
                          const GeneratorOptions& o, Stream centroids,
                          Stream noise, bool classless, int threads,
                          std::vector<float>* out) {
  const int64_t count = static_cast<int64_t>(classes.size());
  out->assign(count * dim, 0.0f);
  const SignalRows signal(dim, o.num_classes, o.feature_noise,
                          MixSeed(o.seed, centroids));
  auto work = [&](int64_t chunk, int) {
    Gaussian rng(MixSeed(MixSeed(o.seed, noise), chunk));
    const int64_t begin = chunk * kRowChunk;
    const int64_t end = std::min(count, begin + kRowChunk);
    for (int64_t v = begin; v < end; ++v) {
      float* row = out->data() + v * dim;
      if (classless) {
        NoiseRow(dim, &rng, row);
      } else {
        signal.Row(classes[v], &rng, row);
      }
    }
  };
  return RunChunks((count + kRowChunk - 1) / kRowChunk, threads, work,
                   [](int64_t, int) { return absl::OkStatus(); });
}

}  // namespace shardgnn::datasets_internal

namespace shardgnn {
namespace {

using datasets_internal::BalancedClasses;
using datasets_internal::ClassIndex;
using datasets_internal::Gaussian;
using datasets_internal::HeteroCounts;
using datasets_internal::HeteroCountsFor;
using datasets_internal::kEdgeChunk;
using datasets_internal::kEdgeFeaturesNote;
using datasets_internal::kMaxRetries;
using datasets_internal::kRowChunk;
using datasets_internal::NoiseRow;
using datasets_internal::OtherEndClass;
using datasets_internal::RunChunks;
using datasets_internal::Shuffle;
using datasets_internal::SignalRows;
using datasets_internal::Stream;
using datasets_internal::Uniform01;
// The streams this file draws from (generator_parts.h).
using datasets_internal::kCentroids;
using datasets_internal::kEdgeCentroids;
using datasets_internal::kEdgeNoise;
using datasets_internal::kEdges;
using datasets_internal::kEdgeSignal;
using datasets_internal::kFeatures;
using datasets_internal::kLabels;
using datasets_internal::kPerm;

// The graph structure sbm and rmat share: labels and the edge sampler.
struct Model {
  ClassIndex classes;        // SBM: all of it; R-MAT: classes (labels) only.
  std::vector<NodeId> perm;  // R-MAT: internal ID -> final ID.
  int scale = 0;             // R-MAT: IDs drawn in [0, 2^scale).
};

absl::Status CheckOptions(const GeneratorOptions& o) {
  auto bad = [](absl::string_view message) {
    return absl::InvalidArgumentError(absl::StrCat("generate: ", message));
  };
  if (o.num_nodes < 2) return bad("--nodes must be at least 2");
  if (o.num_classes < 1) return bad("--classes must be at least 1");
  if (o.num_classes > o.num_nodes) return bad("more classes than nodes");
  if (o.feature_dim < 1) return bad("--features must be at least 1");
  if (!(o.avg_degree > 0) ||
      o.avg_degree > static_cast<double>(o.num_nodes - 1)) {
    return bad(absl::StrCat("--avg-degree must be in (0, nodes - 1], got ",
                            o.avg_degree));
  }
  if (!(o.homophily >= 0 && o.homophily <= 1)) {
    return bad("homophily must be in [0, 1]");
  }
  if (!(o.feature_noise >= 0)) return bad("feature noise must be >= 0");
  if (o.edge_feature_dim < 0) return bad("--edge-features must be >= 0");
  if (o.kind == GraphKind::kHeteroSbm) {
    const HeteroCounts counts = HeteroCountsFor(o);
    if (counts.paper < std::max<int64_t>(2, o.num_classes)) {
      return bad(absl::StrCat("hetero-sbm needs more --nodes: ", o.num_nodes,
                              " leave ", counts.paper,
                              " papers once authors, venues and fields have ",
                              o.num_classes, " or more each"));
    }
  }
  if (o.split.size() != 3 ||
      std::any_of(o.split.begin(), o.split.end(),
                  [](double f) { return !(f >= 0); }) ||
      std::accumulate(o.split.begin(), o.split.end(), 0.0) > 1.0 + 1e-6) {
    return bad("--split needs three fractions >= 0 summing to at most 1");
  }
  return absl::OkStatus();
}

// A graph this machine cannot hold is refused before anything is made: the
// edge lists alone (src and dst, 16 bytes an edge; hetero-sbm, which holds
// both directions and sorts them in memory, 80) must fit in its memory, and
// the CSR's indices, the features and the edge features in the output's file
// system. Both are lower bounds of what generation takes, so nothing
// feasible is refused.
absl::Status CheckMachineFits(const GeneratorOptions& o, int64_t edges,
                              const std::string& out_dir) {
  const double edge_bytes = o.kind == GraphKind::kHeteroSbm ? 80.0 : 16.0;
  const double memory = edge_bytes * static_cast<double>(edges) +
                        8.0 * static_cast<double>(o.num_nodes);
  const double ram = static_cast<double>(PhysicalMemoryBytes());
  const std::string graph =
      absl::StrCat(o.num_nodes, " nodes at average degree ", o.avg_degree);
  if (ram > 0 && memory > ram) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "generate: ", graph, " needs at least ", HumanBytes(memory),
        " of memory for its edge lists; this machine has ", HumanBytes(ram),
        ": fewer --nodes or a smaller --avg-degree"));
  }
  const double disk = 16.0 * static_cast<double>(edges) +
                      4.0 * static_cast<double>(o.num_nodes) *
                          static_cast<double>(o.feature_dim) +
                      8.0 * static_cast<double>(edges) *
                          static_cast<double>(o.edge_feature_dim);
  std::error_code ec;
  std::filesystem::path parent =
      std::filesystem::absolute(out_dir, ec).parent_path();
  const std::filesystem::space_info space = std::filesystem::space(parent, ec);
  if (!ec && disk > static_cast<double>(space.available)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("generate: ", graph, " and ", o.feature_dim,
                     " features need at least ", HumanBytes(disk), " on disk; ",
                     parent.string(), " has ", HumanBytes(space.available),
                     " free: fewer --nodes or --features, or another --out"));
  }
  return absl::OkStatus();
}

Model BuildModel(const GeneratorOptions& o) {
  Model model;
  const int64_t n = o.num_nodes, c = o.num_classes;
  if (o.kind == GraphKind::kSbm) {
    model.classes = BalancedClasses(n, c, MixSeed(o.seed, kLabels));
  } else {
    model.perm.resize(n);
    std::iota(model.perm.begin(), model.perm.end(), 0);
    Shuffle(model.perm, MixSeed(o.seed, kPerm));
    model.classes.classes.resize(n);
    for (int64_t x = 0; x < n; ++x) {
      model.classes.classes[model.perm[x]] = x % c;
    }
    while ((int64_t{1} << model.scale) < n) ++model.scale;
  }
  return model;
}

// One undirected SBM edge {u, v}, u != v.
void SbmEdge(const GeneratorOptions& o, const Model& m, uint64_t* state,
             NodeId* u, NodeId* v) {
  const int64_t n = o.num_nodes, c = o.num_classes;
  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    *u = UniformBelow(state, n);
    const int64_t cls =
        OtherEndClass(m.classes.classes[*u], c, o.homophily, state);
    *v = m.classes.Draw(cls, state);
    if (*v != *u) return;
  }
  *u = UniformBelow(state, n);  // Degenerate options: any distinct pair.
  *v = (*u + 1 + UniformBelow(state, n - 1)) % n;
}

// One R-MAT ID pair in [0, 2^scale)^2; quadrant thresholds in 1/65536.
void RmatPair(int scale, uint64_t* state, int64_t* u, int64_t* v) {
  constexpr uint64_t kA = 37355, kAB = kA + 12452, kABC = kAB + 12452;
  *u = 0;
  *v = 0;
  uint64_t bits = 0;
  for (int level = 0; level < scale; ++level) {
    if (level % 4 == 0) bits = SplitMix64(state);
    uint64_t r = bits & 0xffff;
    bits >>= 16;
    *u <<= 1;
    *v <<= 1;
    if (r < kA) {
    } else if (r < kAB) {
      *v |= 1;
    } else if (r < kABC) {
      *u |= 1;
    } else {
      *u |= 1;
      *v |= 1;
    }
  }
}

// One undirected R-MAT edge with planted communities (internal IDs mapped
// through the permutation).
void RmatEdge(const GeneratorOptions& o, const Model& m, uint64_t* state,
              NodeId* u, NodeId* v) {
  const int64_t n = o.num_nodes, c = o.num_classes;
  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    int64_t x, y;
    RmatPair(m.scale, state, &x, &y);
    if (c > 1) {
      // Move y within its block of c consecutive IDs to the wanted class.
      y = y - y % c + OtherEndClass(x % c, c, o.homophily, state);
    }
    if (x >= n || y >= n || x == y) continue;
    *u = m.perm[x];
    *v = m.perm[y];
    return;
  }
  *u = UniformBelow(state, n);
  *v = (*u + 1 + UniformBelow(state, n - 1)) % n;
}

// Writes edge_features.npy for the CSR in `dir` (its indptr.npy): entry e of
// row v carries v's class with probability `homophily`, else noise alone.
// Streamed in row chunks of their own streams.
absl::Status WriteEdgeFeatures(const GeneratorOptions& o,
                               const std::vector<int64_t>& labels, int threads,
                               const std::string& dir) {
  const int64_t n = o.num_nodes, d = o.edge_feature_dim;
  ASSIGN_OR_RETURN(NpyArray<int64_t> indptr,
                   ReadNpy<int64_t>(JoinPath(dir, kIndptrFile), 1));
  const std::vector<int64_t>& offsets = indptr.data;
  const int64_t e = offsets[n];
  const SignalRows signal(d, o.num_classes, o.feature_noise,
                          MixSeed(o.seed, kEdgeCentroids));
  ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> writer,
                   NpyWriter::Create(JoinPath(dir, kEdgeFeaturesFile),
                                     NpyDtype::kFloat32, {e, d}));
  std::vector<std::vector<float>> buffers(threads);
  Progress progress("generating edge features", e, "edges");
  auto work = [&](int64_t chunk, int slot) {
    uint64_t pick = MixSeed(MixSeed(o.seed, kEdgeSignal), chunk);
    Gaussian rng(MixSeed(MixSeed(o.seed, kEdgeNoise), chunk));
    const int64_t begin = chunk * kRowChunk;
    const int64_t end = std::min(n, begin + kRowChunk);
    std::vector<float>& out = buffers[slot];
    out.resize((offsets[end] - offsets[begin]) * d);
    float* p = out.data();
    for (int64_t v = begin; v < end; ++v) {
      for (int64_t i = offsets[v]; i < offsets[v + 1]; ++i, p += d) {
        signal.Row(Uniform01(&pick) < o.homophily ? labels[v] : -1, &rng, p);
      }
    }
  };
  RETURN_IF_ERROR(RunChunks(
      (n + kRowChunk - 1) / kRowChunk, threads, work,
      [&](int64_t chunk, int slot) {
        RETURN_IF_ERROR(
            writer->Append(buffers[slot].data(), buffers[slot].size()));
        progress.Update(offsets[std::min(n, (chunk + 1) * kRowChunk)]);
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(writer->Close());
  progress.Done();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphKind> ParseGraphKind(const std::string& text) {
  if (text == "sbm") return GraphKind::kSbm;
  if (text == "rmat") return GraphKind::kRmat;
  if (text == "hetero-sbm") return GraphKind::kHeteroSbm;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown graph kind \"", text, "\" (expected sbm, rmat or hetero-sbm)"));
}

const char* GraphKindName(GraphKind kind) {
  switch (kind) {
    case GraphKind::kSbm:
      return "sbm";
    case GraphKind::kRmat:
      return "rmat";
    case GraphKind::kHeteroSbm:
      return "hetero-sbm";
  }
  return "sbm";
}

absl::StatusOr<BuildSummary> GenerateDataset(const GeneratorOptions& options,
                                             const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(CheckOptions(options));
  const int threads = std::max(1, options.threads);
  const int64_t n = options.num_nodes;
  const int64_t f = options.feature_dim;
  const int64_t d = options.edge_feature_dim;
  const int64_t m = std::max<int64_t>(
      1, std::llround(static_cast<double>(n) * options.avg_degree / 2.0));
  RETURN_IF_ERROR(CheckMachineFits(options, m, out_dir));
  if (options.kind == GraphKind::kHeteroSbm) {
    return datasets_internal::GenerateHeteroSbm(options, out_dir, start);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();
  Model model = BuildModel(options);
  const std::vector<int64_t>& labels = model.classes.classes;
  // With edge features the edges join classes at chance.
  GeneratorOptions structure = options;
  if (d > 0)
    structure.homophily = 1.0 / static_cast<double>(options.num_classes);

  // Edges: chunk k fills src/dst[k * kEdgeChunk, ...) from its own stream.
  std::vector<NodeId> src(m), dst(m);
  {
    Progress progress("generating edges", m, "edges");
    int64_t chunks = (m + kEdgeChunk - 1) / kEdgeChunk;
    auto work = [&](int64_t chunk, int) {
      uint64_t state = MixSeed(MixSeed(options.seed, kEdges), chunk);
      int64_t end = std::min(m, (chunk + 1) * kEdgeChunk);
      for (int64_t i = chunk * kEdgeChunk; i < end; ++i) {
        if (options.kind == GraphKind::kSbm) {
          SbmEdge(structure, model, &state, &src[i], &dst[i]);
        } else {
          RmatEdge(structure, model, &state, &src[i], &dst[i]);
        }
      }
    };
    RETURN_IF_ERROR(RunChunks(chunks, threads, work, [&](int64_t chunk, int) {
      progress.Update(std::min(m, (chunk + 1) * kEdgeChunk));
      return absl::OkStatus();
    }));
    progress.Done();
  }
  datasets_internal::CsrOptions csr;
  csr.undirected = true;
  csr.threads = threads;
  ASSIGN_OR_RETURN(
      datasets_internal::CsrResult result,
      datasets_internal::WriteCsr(n, std::move(src), std::move(dst), csr, dir));

  // Features: centroid of the node's class plus noise, scaled to about unit
  // variance (noise alone with edge features), streamed in row chunks.
  {
    const SignalRows signal(f, options.num_classes, options.feature_noise,
                            MixSeed(options.seed, kCentroids));
    ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> writer,
                     NpyWriter::Create(JoinPath(dir, kFeaturesFile),
                                       NpyDtype::kFloat32, {n, f}));
    std::vector<std::vector<float>> buffers(threads);
    Progress progress("generating features", n, "rows");
    int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
    auto work = [&](int64_t chunk, int slot) {
      Gaussian rng(MixSeed(MixSeed(options.seed, kFeatures), chunk));
      int64_t begin = chunk * kRowChunk, end = std::min(n, begin + kRowChunk);
      std::vector<float>& out = buffers[slot];
      out.resize((end - begin) * f);
      float* p = out.data();
      for (int64_t v = begin; v < end; ++v, p += f) {
        if (d > 0) {
          NoiseRow(f, &rng, p);
        } else {
          signal.Row(labels[v], &rng, p);
        }
      }
    };
    RETURN_IF_ERROR(
        RunChunks(chunks, threads, work, [&](int64_t chunk, int slot) {
          RETURN_IF_ERROR(
              writer->Append(buffers[slot].data(), buffers[slot].size()));
          progress.Update(std::min(n, (chunk + 1) * kRowChunk));
          return absl::OkStatus();
        }));
    RETURN_IF_ERROR(writer->Close());
    progress.Done();
  }
  if (d > 0) RETURN_IF_ERROR(WriteEdgeFeatures(options, labels, threads, dir));

  datasets_internal::Splits splits = datasets_internal::RandomSplit(
      labels, {"train", "valid", "test"}, options.split, options.seed);
  RETURN_IF_ERROR(datasets_internal::WriteLabelsAndSplits(dir, labels, splits));

  DatasetManifest manifest;
  manifest.name =
      options.name.empty() ? GraphKindName(options.kind) : options.name;
  manifest.num_nodes = n;
  manifest.num_edges = result.num_edges;
  manifest.directed = false;
  manifest.feature_dim = f;
  manifest.num_classes = options.num_classes;
  manifest.edge_feature_dim = d;
  for (const auto& [name, nodes] : splits) {
    manifest.splits[name] = static_cast<int64_t>(nodes.size());
  }
  manifest.source = absl::StrFormat(
      "generated: shardgnn dataset generate --kind %s --nodes %d "
      "--avg-degree %g --features %d --classes %d --split %g,%g,%g "
      "--homophily %g --feature-noise %g --seed %d",
      GraphKindName(options.kind), n, options.avg_degree, f,
      options.num_classes, options.split[0], options.split[1], options.split[2],
      options.homophily, options.feature_noise, options.seed);
  if (d > 0) absl::StrAppend(&manifest.source, " --edge-features ", d);
  BuildSummary summary;
  summary.input_edges = m;
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  if (d > 0) summary.notes.push_back(kEdgeFeaturesNote);
  return summary;
}

}  // namespace shardgnn
