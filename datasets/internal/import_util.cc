#include "datasets/internal/import_util.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/line_reader.h"
#include "common/npy.h"
#include "common/sampling.h"
#include "common/status.h"
#include "datasets/dataset.h"

namespace shardgnn::datasets_internal {

std::string NonfiniteFeatureError(int64_t node, int64_t column, float value) {
  return absl::StrCat("node ", node, ", column ", column, ": ", value,
                      " is not finite (NaN and infinite features make a NaN "
                      "loss; dataset import --allow-nonfinite keeps them)");
}

void NoteNonfiniteFeatures(int64_t count, BuildSummary* summary) {
  summary->nonfinite_features = count;
  if (count == 0) return;
  summary->warnings.push_back(absl::StrCat(
      count, count == 1 ? " feature value is" : " feature values are",
      " NaN or infinite, kept as --allow-nonfinite asks; training on them "
      "gives a NaN loss unless the model never reads them"));
}
namespace {

// Seeded Fisher-Yates shuffle (SplitMix64, so the result is the same on
// every platform).
void Shuffle(std::vector<NodeId>& nodes, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = nodes.size(); i > 1; --i) {
    size_t j = UniformBelow(&state, i);
    std::swap(nodes[i - 1], nodes[j]);
  }
}

}  // namespace

void SplitFields(absl::string_view line, char sep,
                 std::vector<absl::string_view>* fields) {
  fields->clear();
  if (sep != ' ') {
    size_t start = 0;
    while (true) {
      size_t pos = line.find(sep, start);
      if (pos == absl::string_view::npos) {
        fields->push_back(line.substr(start));
        return;
      }
      fields->push_back(line.substr(start, pos - start));
      start = pos + 1;
    }
  }
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    fields->push_back(line.substr(start, i - start));
  }
}

absl::StatusOr<std::string> FindInput(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  std::string other = absl::EndsWith(path, ".gz")
                          ? path.substr(0, path.size() - 3)
                          : absl::StrCat(path, ".gz");
  if (std::filesystem::is_regular_file(other, ec)) return other;
  return absl::NotFoundError(absl::StrCat(path, ": file not found"));
}

std::string DefaultName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  std::string name = std::filesystem::path(p).filename().string();
  if (absl::EndsWith(name, ".gz")) name.resize(name.size() - 3);
  size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name.empty() ? "dataset" : name;
}

bool ParseLabel(absl::string_view text, int64_t* label) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty() || absl::EqualsIgnoreCase(text, "nan")) {
    *label = -1;
    return true;
  }
  constexpr int64_t kLimit = int64_t{1} << 31;  // A manifest's most classes.
  int64_t parsed;
  if (!ParseInt64(text, &parsed)) {
    float value;
    if (!ParseFloat(text, &value) || !std::isfinite(value) ||
        value != std::floor(value) || value < -1.0f ||
        value >= static_cast<float>(kLimit)) {
      return false;
    }
    parsed = static_cast<int64_t>(value);
  }
  if (parsed < -1 || parsed >= kLimit) return false;
  *label = parsed;
  return true;
}

Splits RandomSplit(const std::vector<int64_t>& labels,
                   const std::vector<std::string>& names,
                   const std::vector<double>& fractions, uint64_t seed) {
  std::vector<NodeId> labeled;
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] >= 0) labeled.push_back(static_cast<NodeId>(v));
  }
  Shuffle(labeled, MixSeed(seed, 0x5e11));
  Splits splits;
  const double total = static_cast<double>(labeled.size());
  size_t begin = 0;
  double cumulative = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    cumulative += fractions[i];
    size_t end = std::min(
        labeled.size(), static_cast<size_t>(std::llround(cumulative * total)));
    std::vector<NodeId> part(labeled.begin() + begin, labeled.begin() + end);
    std::sort(part.begin(), part.end());
    splits[names[i]] = std::move(part);
    begin = end;
  }
  return splits;
}

absl::StatusOr<Splits> StratifiedSplit(const std::vector<int64_t>& labels,
                                       int64_t num_classes,
                                       int64_t train_per_class,
                                       int64_t num_valid, int64_t num_test,
                                       uint64_t seed) {
  std::vector<std::vector<NodeId>> by_class(num_classes);
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] >= 0) by_class[labels[v]].push_back(static_cast<NodeId>(v));
  }
  Splits splits;
  std::vector<NodeId> rest;
  for (int64_t c = 0; c < num_classes; ++c) {
    std::vector<NodeId>& nodes = by_class[c];
    if (static_cast<int64_t>(nodes.size()) < train_per_class) {
      return absl::InvalidArgumentError(absl::StrCat(
          "class ", c, " has ", nodes.size(), " nodes, fewer than the ",
          train_per_class, " training nodes per class asked for"));
    }
    Shuffle(nodes, MixSeed(seed, static_cast<uint64_t>(c)));
    splits["train"].insert(splits["train"].end(), nodes.begin(),
                           nodes.begin() + train_per_class);
    rest.insert(rest.end(), nodes.begin() + train_per_class, nodes.end());
  }
  if (static_cast<int64_t>(rest.size()) < num_valid + num_test) {
    return absl::InvalidArgumentError(absl::StrCat(
        "only ", rest.size(), " labeled nodes remain after ",
        "training; cannot take ", num_valid, " valid + ", num_test, " test"));
  }
  std::sort(rest.begin(), rest.end());
  Shuffle(rest, MixSeed(seed, 0xa11));
  splits["valid"].assign(rest.begin(), rest.begin() + num_valid);
  splits["test"].assign(rest.begin() + num_valid,
                        rest.begin() + num_valid + num_test);
  for (auto& [name, nodes] : splits) std::sort(nodes.begin(), nodes.end());
  return splits;
}

absl::StatusOr<Splits> MakeClassSplit(const std::vector<int64_t>& labels,
                                      const ClassSplitOptions& options,
                                      std::vector<std::string>* notes,
                                      std::vector<std::string>* warnings,
                                      const std::string& labels_file) {
  absl::StatusOr<ClassSplit> made = RandomClassSplit(labels, options);
  if (!made.ok() && !labels_file.empty()) {
    return absl::Status(
        made.status().code(),
        absl::StrCat(labels_file, ": ", made.status().message()));
  }
  ASSIGN_OR_RETURN(ClassSplit split, std::move(made));
  notes->push_back(DescribeClassSplit(options, split));
  std::string warning = SmallClassWarning(options, split);
  if (!warning.empty()) warnings->push_back(std::move(warning));
  Splits splits;
  splits["train"] = std::move(split.train);
  splits["valid"] = std::move(split.valid);
  splits["test"] = std::move(split.test);
  return splits;
}

absl::Status WriteLabelsAndSplits(const std::string& dir,
                                  const std::vector<int64_t>& labels,
                                  const Splits& splits) {
  RETURN_IF_ERROR(WriteNpy<int64_t>(JoinPath(dir, kLabelsFile),
                                    {static_cast<int64_t>(labels.size())},
                                    labels));
  for (const auto& [name, nodes] : splits) {
    RETURN_IF_ERROR(WriteNpy<NodeId>(JoinPath(dir, SplitFileName(name)),
                                     {static_cast<int64_t>(nodes.size())},
                                     nodes));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::datasets_internal
