// The random pieces the dataset generators share (datasets/generators.cc,
// datasets/internal/hetero_sbm.cc): the streams each part of an output draws
// from, Gaussian rows, nodes drawn by class, chunked parallel work.
#ifndef SHARDGNN_DATASETS_INTERNAL_GENERATOR_PARTS_H_
#define SHARDGNN_DATASETS_INTERNAL_GENERATOR_PARTS_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sampling.h"
#include "common/types.h"
#include "datasets/generators.h"

namespace shardgnn::datasets_internal {

// Edges per RNG stream, and feature rows per stream.
inline constexpr int64_t kEdgeChunk = int64_t{1} << 20;
inline constexpr int64_t kRowChunk = 8192;
// Draws of an edge that may be refused (a self-loop) before giving up.
inline constexpr int kMaxRetries = 64;

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

inline double Uniform01(uint64_t* state) {
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

// Fisher-Yates with common/sampling.h's generator.
inline void Shuffle(std::vector<int64_t>& values, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[UniformBelow(&state, i)]);
  }
}

// Runs work(chunk, slot) for every chunk in [0, num_chunks), `threads`
// chunks at a time (slot = position in the round), then finish(chunk, slot)
// for each chunk of the round in order on the calling thread. Each chunk's
// randomness depends only on its index, so the output does not depend on
// the thread count.
absl::Status RunChunks(int64_t num_chunks, int threads,
                       const std::function<void(int64_t, int)>& work,
                       const std::function<absl::Status(int64_t, int)>& finish);

// The class of an edge's other end, given its first end's `cls`: the same
// with probability `homophily`, else one of the c - 1 others uniformly.
int64_t OtherEndClass(int64_t cls, int64_t c, double homophily,
                      uint64_t* state);

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
ClassIndex BalancedClasses(int64_t count, int64_t c, uint64_t seed);

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
inline void NoiseRow(int64_t dim, Gaussian* rng, float* out) {
  for (int64_t k = 0; k < dim; ++k) out[k] = static_cast<float>(rng->Next());
}

// The node counts of hetero-sbm's types (see generators.h).
struct HeteroCounts {
  int64_t paper = 0, author = 0, venue = 0, field = 0;
};

HeteroCounts HeteroCountsFor(const GeneratorOptions& o);

// A node type's features, classes.size() x dim row-major into *out: each
// node's class centroid plus noise, or noise alone when `classless`; in row
// chunks of their own streams, `threads` at a time.
absl::Status TypeFeatures(const std::vector<int64_t>& classes, int64_t dim,
                          const GeneratorOptions& o, Stream centroids,
                          Stream noise, bool classless, int threads,
                          std::vector<float>* out);

// The summary note of a graph generated with edge features.
inline constexpr char kEdgeFeaturesNote[] =
    "edge features: node features carry no class and edges join classes at "
    "chance; a fraction `homophily` of the edges carry their destination's "
    "class in their features";

// hetero-sbm (generators.h): built in memory and written by WriteDataset.
absl::StatusOr<BuildSummary> GenerateHeteroSbm(
    const GeneratorOptions& o, const std::string& out_dir,
    std::chrono::steady_clock::time_point start);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_GENERATOR_PARTS_H_
