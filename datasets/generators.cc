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
#include "datasets/internal/import_util.h"

namespace shardgnn {
namespace {

constexpr int64_t kEdgeChunk = int64_t{1} << 20;  // Edges per RNG stream.
constexpr int64_t kRowChunk = 8192;               // Feature rows per stream.
constexpr int kMaxRetries = 64;

// Independent seeds for each part of the output.
enum Stream : uint64_t { kLabels = 1, kPerm, kEdges, kCentroids, kFeatures };

double Uniform01(uint64_t* state) {
  return static_cast<double>(SplitMix64(state) >> 11) * 0x1p-53;
}

// Standard normal values by Box-Muller, from SplitMix64 (the same on every
// platform, unlike std::normal_distribution).
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : state_(seed) {}
  double Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = (static_cast<double>(SplitMix64(&state_) >> 11) + 1.0) *
                0x1p-53;  // (0, 1]
    double u2 = Uniform01(&state_);
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// Runs work(chunk, slot) for every chunk in [0, num_chunks), `threads`
// chunks at a time (slot = position in the round), then finish(chunk, slot)
// for each chunk of the round in order on the calling thread. Each chunk's
// randomness depends only on its index, so the output does not depend on
// the thread count.
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

void Shuffle(std::vector<int64_t>& values, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[UniformBelow(&state, i)]);
  }
}

// The graph structure both kinds share: labels and the edge sampler.
struct Model {
  std::vector<int64_t> labels;       // By final node ID.
  std::vector<int64_t> class_begin;  // SBM: nodes of class c are
  std::vector<NodeId> class_nodes;   // class_nodes[class_begin[c]..c+1).
  std::vector<NodeId> perm;          // R-MAT: internal ID -> final ID.
  int scale = 0;                     // R-MAT: IDs drawn in [0, 2^scale).
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
  if (o.split.size() != 3 ||
      std::any_of(o.split.begin(), o.split.end(),
                  [](double f) { return !(f >= 0); }) ||
      std::accumulate(o.split.begin(), o.split.end(), 0.0) > 1.0 + 1e-6) {
    return bad("--split needs three fractions >= 0 summing to at most 1");
  }
  return absl::OkStatus();
}

// A graph this machine cannot hold is refused before anything is made: the
// edge lists alone (src and dst, 16 bytes an edge) must fit in its memory,
// and the CSR's indices and the features in the output's file system. Both
// are lower bounds of what generation takes, so nothing feasible is refused.
absl::Status CheckMachineFits(const GeneratorOptions& o, int64_t edges,
                              const std::string& out_dir) {
  const double memory = 16.0 * static_cast<double>(edges) +
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
                          static_cast<double>(o.feature_dim);
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
    // Balanced classes in random order.
    model.labels.resize(n);
    for (int64_t v = 0; v < n; ++v) model.labels[v] = v % c;
    Shuffle(model.labels, MixSeed(o.seed, kLabels));
    model.class_begin.assign(c + 1, 0);
    for (int64_t label : model.labels) ++model.class_begin[label + 1];
    for (int64_t k = 0; k < c; ++k) {
      model.class_begin[k + 1] += model.class_begin[k];
    }
    model.class_nodes.resize(n);
    std::vector<int64_t> cursor(model.class_begin.begin(),
                                model.class_begin.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      model.class_nodes[cursor[model.labels[v]]++] = v;
    }
  } else {
    model.perm.resize(n);
    std::iota(model.perm.begin(), model.perm.end(), 0);
    Shuffle(model.perm, MixSeed(o.seed, kPerm));
    model.labels.resize(n);
    for (int64_t x = 0; x < n; ++x) model.labels[model.perm[x]] = x % c;
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
    int64_t cls = m.labels[*u];
    if (c > 1 && Uniform01(state) >= o.homophily) {
      cls = (cls + 1 + UniformBelow(state, c - 1)) % c;
    }
    int64_t size = m.class_begin[cls + 1] - m.class_begin[cls];
    *v = m.class_nodes[m.class_begin[cls] + UniformBelow(state, size)];
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
      int64_t want = x % c;
      if (Uniform01(state) >= o.homophily) {
        want = (want + 1 + UniformBelow(state, c - 1)) % c;
      }
      y = y - y % c + want;
    }
    if (x >= n || y >= n || x == y) continue;
    *u = m.perm[x];
    *v = m.perm[y];
    return;
  }
  *u = UniformBelow(state, n);
  *v = (*u + 1 + UniformBelow(state, n - 1)) % n;
}

}  // namespace

absl::StatusOr<GraphKind> ParseGraphKind(const std::string& text) {
  if (text == "sbm") return GraphKind::kSbm;
  if (text == "rmat") return GraphKind::kRmat;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown graph kind \"", text, "\" (expected sbm or rmat)"));
}

const char* GraphKindName(GraphKind kind) {
  return kind == GraphKind::kSbm ? "sbm" : "rmat";
}

absl::StatusOr<BuildSummary> GenerateDataset(const GeneratorOptions& options,
                                             const std::string& out_dir) {
  auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(CheckOptions(options));
  const int threads = std::max(1, options.threads);
  const int64_t n = options.num_nodes;
  const int64_t f = options.feature_dim;
  const int64_t m = std::max<int64_t>(
      1, std::llround(static_cast<double>(n) * options.avg_degree / 2.0));
  RETURN_IF_ERROR(CheckMachineFits(options, m, out_dir));
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));
  const std::string& dir = staging->path();
  Model model = BuildModel(options);

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
          SbmEdge(options, model, &state, &src[i], &dst[i]);
        } else {
          RmatEdge(options, model, &state, &src[i], &dst[i]);
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
  // variance, streamed in row chunks.
  {
    const double sigma =
        options.feature_noise * std::sqrt(static_cast<double>(f));
    const double scale = 1.0 / std::sqrt(1.0 + sigma * sigma);
    std::vector<double> centroids(options.num_classes * f);
    Gaussian centroid_rng(MixSeed(options.seed, kCentroids));
    for (double& x : centroids) x = centroid_rng.Next();
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
      for (int64_t v = begin; v < end; ++v) {
        const double* centroid = &centroids[model.labels[v] * f];
        for (int64_t k = 0; k < f; ++k) {
          *p++ = static_cast<float>((centroid[k] + sigma * rng.Next()) * scale);
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

  datasets_internal::Splits splits = datasets_internal::RandomSplit(
      model.labels, {"train", "valid", "test"}, options.split, options.seed);
  RETURN_IF_ERROR(
      datasets_internal::WriteLabelsAndSplits(dir, model.labels, splits));

  DatasetManifest manifest;
  manifest.name =
      options.name.empty() ? GraphKindName(options.kind) : options.name;
  manifest.num_nodes = n;
  manifest.num_edges = result.num_edges;
  manifest.directed = false;
  manifest.feature_dim = f;
  manifest.num_classes = options.num_classes;
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
  BuildSummary summary;
  summary.input_edges = m;
  RETURN_IF_ERROR(datasets_internal::CommitDatasetDir(
      staging.get(), manifest, result, splits, start, &summary));
  return summary;
}

}  // namespace shardgnn
