#include "datasets/class_split.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/sampling.h"

namespace shardgnn {
namespace {

constexpr absl::string_view kPrefix = "random:";
// Keeps these draws apart from other users of the same seed.
constexpr uint64_t kSalt = 0xc1a55;
// The small classes a warning names before "and N more".
constexpr size_t kNamedSmallClasses = 10;

}  // namespace

bool IsClassSplitSpec(absl::string_view spec) {
  return absl::StartsWith(spec, kPrefix);
}

absl::StatusOr<ClassSplitOptions> ParseClassSplit(absl::string_view spec) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("split '", spec, "': ", why,
                     " (expected random:N,M: N >= 1 train and M >= 0 valid "
                     "nodes per class, e.g. random:20,30)"));
  };
  if (!IsClassSplitSpec(spec)) return bad("does not start with random:");
  std::vector<absl::string_view> parts =
      absl::StrSplit(spec.substr(kPrefix.size()), ',');
  if (parts.size() != 2) {
    return bad(parts.size() == 1 ? "M is missing" : "too many numbers");
  }
  ClassSplitOptions options;
  int64_t* fields[2] = {&options.train_per_class, &options.valid_per_class};
  for (int i = 0; i < 2; ++i) {
    if (!absl::SimpleAtoi(parts[i], fields[i])) {
      return bad(absl::StrCat("'", parts[i], "' is not an integer"));
    }
  }
  if (options.train_per_class < 1) {
    return bad("N must be at least 1 (a split without train nodes)");
  }
  if (options.valid_per_class < 0) return bad("M must not be negative");
  return options;
}

std::string ClassSplitName(const ClassSplitOptions& options) {
  return absl::StrCat(kPrefix, options.train_per_class, ",",
                      options.valid_per_class, " seed ", options.seed);
}

absl::StatusOr<ClassSplit> RandomClassSplit(const std::vector<int64_t>& labels,
                                            const ClassSplitOptions& options) {
  if (options.train_per_class < 1 || options.valid_per_class < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a per-class split needs N >= 1 train and M >= 0 valid nodes per "
        "class, not ",
        options.train_per_class, " and ", options.valid_per_class));
  }
  // (label, node) of the labeled nodes, grouped by label with nodes ascending:
  // each class's draw starts from the same order whatever the input order.
  std::vector<std::pair<int64_t, NodeId>> labeled;
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", v, " has label ", labels[v],
                       " (labels are classes >= 0, or -1 for unlabeled)"));
    }
    if (labels[v] >= 0) labeled.emplace_back(labels[v], v);
  }
  if (labeled.empty()) {
    return absl::InvalidArgumentError(
        "no node is labeled: a per-class split needs labels");
  }
  std::sort(labeled.begin(), labeled.end());

  ClassSplit split;
  const int64_t n = options.train_per_class;
  const int64_t m = options.valid_per_class;
  std::vector<NodeId> nodes;
  for (size_t begin = 0; begin < labeled.size();) {
    const int64_t label = labeled[begin].first;
    size_t end = begin;
    nodes.clear();
    while (end < labeled.size() && labeled[end].first == label) {
      nodes.push_back(labeled[end++].second);
    }
    begin = end;
    // Fisher-Yates with SplitMix64: the same draw on every platform.
    uint64_t state =
        MixSeed(MixSeed(options.seed, kSalt), static_cast<uint64_t>(label));
    for (size_t i = nodes.size(); i > 1; --i) {
      std::swap(nodes[i - 1], nodes[UniformBelow(&state, i)]);
    }
    const auto count = static_cast<int64_t>(nodes.size());
    const int64_t train = std::min(count, n);
    const int64_t valid = std::min(count - train, m);
    split.train.insert(split.train.end(), nodes.begin(), nodes.begin() + train);
    split.valid.insert(split.valid.end(), nodes.begin() + train,
                       nodes.begin() + train + valid);
    split.test.insert(split.test.end(), nodes.begin() + train + valid,
                      nodes.end());
    ++split.classes;
    if (count < n + m) split.small_classes.push_back({label, count});
  }
  for (std::vector<NodeId>* list : {&split.train, &split.valid, &split.test}) {
    std::sort(list->begin(), list->end());
  }
  return split;
}

std::string DescribeClassSplit(const ClassSplitOptions& options,
                               const ClassSplit& split) {
  return absl::StrCat(
      "split ", ClassSplitName(options), ": ", options.train_per_class,
      " train and ", options.valid_per_class, " valid nodes per class (",
      split.classes, split.classes == 1 ? " class" : " classes",
      "), the other ", split.test.size(), " labeled nodes test");
}

std::string SmallClassWarning(const ClassSplitOptions& options,
                              const ClassSplit& split) {
  const std::vector<SmallClass>& small = split.small_classes;
  if (small.empty()) return "";
  std::string named;
  for (size_t i = 0; i < small.size() && i < kNamedSmallClasses; ++i) {
    absl::StrAppend(&named, i ? ", " : "", "class ", small[i].label, " (",
                    small[i].nodes, small[i].nodes == 1 ? " node)" : " nodes)");
  }
  if (small.size() > kNamedSmallClasses) {
    absl::StrAppend(&named, " and ", small.size() - kNamedSmallClasses,
                    " more");
  }
  const int64_t n = options.train_per_class;
  const int64_t m = options.valid_per_class;
  return absl::StrCat(small.size(),
                      small.size() == 1 ? " class has" : " classes have",
                      " fewer than ", n + m, " (", n, " + ", m,
                      ") labeled nodes: ", named, "; each got up to ", n,
                      " train, the rest valid (up to ", m, "), none test");
}

}  // namespace shardgnn
