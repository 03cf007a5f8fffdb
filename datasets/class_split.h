// Random per-class node splits (`dataset import ... --split random:N,M
// --split-seed S`): N train and M valid nodes of every class, drawn uniformly
// at random with a seed, and the rest of the labeled nodes test, so that
// results can be reported over several splits as published protocols do
// (Shchur et al. 2018: 20 train and 30 valid per class).
//
// Every importer of labeled data takes these options (importers.h) and calls
// RandomClassSplit once on its labels; the dataset is written as with any other
// split (split_<name>.npy, sorted node indices). Functions here are pure and
// thread-safe.
#ifndef SHARDGNN_DATASETS_CLASS_SPLIT_H_
#define SHARDGNN_DATASETS_CLASS_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/types.h"

namespace shardgnn {

struct ClassSplitOptions {
  int64_t train_per_class = 20;  // N >= 1.
  int64_t valid_per_class = 30;  // M >= 0.
  uint64_t seed = 0;
};

// Whether `spec` asks for a per-class random split ("random:" prefix), as
// opposed to the fractions an edge list's --split also takes.
bool IsClassSplitSpec(absl::string_view spec);

// Parses "random:N,M" (N >= 1 train and M >= 0 valid nodes per class); the
// seed is left 0. InvalidArgument naming `spec` and the expected form
// otherwise.
absl::StatusOr<ClassSplitOptions> ParseClassSplit(absl::string_view spec);

// "random:N,M seed S": how a manifest's source and the summary name it.
std::string ClassSplitName(const ClassSplitOptions& options);

// A class with fewer than N + M labeled nodes.
struct SmallClass {
  int64_t label = 0;
  int64_t nodes = 0;  // Its labeled nodes.
};

struct ClassSplit {
  std::vector<NodeId> train, valid, test;  // Each sorted ascending.
  int64_t classes = 0;  // Classes with at least one labeled node.
  std::vector<SmallClass> small_classes;  // Ascending by label.
};

// Splits the labeled nodes (labels[v] >= 0; -1 = unlabeled, in no split) of
// every class c: shuffled with a generator seeded by (options.seed, c), the
// first N go to train, the next M to valid, the rest to test. A class with
// fewer than N + M nodes (a SmallClass) gets min(count, N) train, the rest of
// its nodes valid and none test. The result depends only on the labels and
// the options (same seed, byte-identical lists; the same on every platform).
// InvalidArgument if N < 1, M < 0, a label is below -1, or no node is
// labeled.
absl::StatusOr<ClassSplit> RandomClassSplit(const std::vector<int64_t>& labels,
                                            const ClassSplitOptions& options);

// One line for an import's summary: the split, its per-class counts and the
// number of classes.
std::string DescribeClassSplit(const ClassSplitOptions& options,
                               const ClassSplit& split);

// One line naming the small classes and their counts, and what they got;
// empty if there are none.
std::string SmallClassWarning(const ClassSplitOptions& options,
                              const ClassSplit& split);

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_CLASS_SPLIT_H_
