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
#include "datasets/typed_graph.h"

namespace shardgnn {
namespace {

constexpr int64_t kEdgeChunk = int64_t{1} << 20;  // Edges per RNG stream.
constexpr int64_t kRowChunk = 8192;               // Feature rows per stream.
constexpr int kMaxRetries = 64;
constexpr int64_t kTopicsPerPaper = 2;  // hetero-sbm: paper/has_topic/field.

// Independent seeds for each part of the output. New parts are appended, so
// that the outputs of older options stay byte-identical.
enum Stream : uint64_t {
  kLabels = 1,
  kPerm,
  kEdges,
  kCentroids,
  kFeatures,
  kEdgeCentroids,  // Edge features: class centroids,
  kEdgeSignal,     // which edges carry one,
  kEdgeNoise,      // their noise.
  kTypeClasses,    // hetero-sbm: each node type's hidden classes,
  kRelations,      // each relation's edges,
  kAuthorCentroids,
  kAuthorFeatures,
};

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

// The class of an edge's other end, given its first end's `cls`: the same
// with probability `homophily`, else one of the c - 1 others uniformly.
int64_t OtherEndClass(int64_t cls, int64_t c, double homophily,
                      uint64_t* state) {
  if (c > 1 && Uniform01(state) >= homophily) {
    cls = (cls + 1 + UniformBelow(state, c - 1)) % c;
  }
  return cls;
}

// Nodes (of one type) grouped by class, to draw a node of a class.
struct ClassIndex {
  std::vector<int64_t> classes;  // By node.
  std::vector<int64_t> begin;    // Nodes of class k are
  std::vector<NodeId> nodes;     // nodes[begin[k]..begin[k + 1]).

  // A node of class `cls` uniformly. REQUIRES: the class has a node.
  NodeId Draw(int64_t cls, uint64_t* state) const {
    return nodes[begin[cls] + UniformBelow(state, begin[cls + 1] - begin[cls])];
  }
};

// `count` nodes in c balanced classes (node v has class v % c, then the
// classes are shuffled with `seed`), indexed by class.
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

// The graph structure sbm and rmat share: labels and the edge sampler.
struct Model {
  ClassIndex classes;        // SBM: all of it; R-MAT: classes (labels) only.
  std::vector<NodeId> perm;  // R-MAT: internal ID -> final ID.
  int scale = 0;             // R-MAT: IDs drawn in [0, 2^scale).
};

// Rows of class signal: (centroid of the class + sigma * noise) * scale, with
// sigma = noise * sqrt(dim) and scale bringing the variance near 1; a row
// without a class is the noise alone.
class SignalRows {
 public:
  SignalRows(int64_t dim, int64_t classes, double noise, uint64_t seed)
      : dim_(dim),
        sigma_(noise * std::sqrt(static_cast<double>(dim))),
        scale_(1.0 / std::sqrt(1.0 + sigma_ * sigma_)),
        centroids_(classes * dim) {
    Gaussian rng(seed);
    for (double& x : centroids_) x = rng.Next();
  }

  // Writes dim values to `out`; cls < 0: no class.
  void Row(int64_t cls, Gaussian* rng, float* out) const {
    const double* centroid = cls < 0 ? nullptr : &centroids_[cls * dim_];
    for (int64_t k = 0; k < dim_; ++k) {
      const double mean = centroid == nullptr ? 0.0 : centroid[k];
      out[k] = static_cast<float>((mean + sigma_ * rng->Next()) * scale_);
    }
  }

 private:
  int64_t dim_;
  double sigma_;
  double scale_;
  std::vector<double> centroids_;
};

// Writes dim standard normal values to `out`: features without a class.
void NoiseRow(int64_t dim, Gaussian* rng, float* out) {
  for (int64_t k = 0; k < dim; ++k) out[k] = static_cast<float>(rng->Next());
}

// The node counts of hetero-sbm's types (see generators.h).
struct HeteroCounts {
  int64_t paper = 0, author = 0, venue = 0, field = 0;
};

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

// A node type's features, classes.size() x dim row-major into *out: each
// node's class centroid plus noise, or noise alone when `classless`; in row
// chunks of their own streams, `threads` at a time.
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

constexpr char kEdgeFeaturesNote[] =
    "edge features: node features carry no class and edges join classes at "
    "chance; a fraction `homophily` of the edges carry their destination's "
    "class in their features";

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

// hetero-sbm (generators.h): built in memory and written by WriteDataset.
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
    return GenerateHeteroSbm(options, out_dir, start);
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
