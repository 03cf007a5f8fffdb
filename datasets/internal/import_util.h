// Small pieces shared by the importers and the generators: field splitting,
// input file lookup (plain or .gz), labels/splits output, seeded splits and the
// output directory's final step.
#ifndef SHARDGNN_DATASETS_INTERNAL_IMPORT_UTIL_H_
#define SHARDGNN_DATASETS_INTERNAL_IMPORT_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/types.h"
#include "datasets/class_split.h"
#include "datasets/summary.h"

namespace shardgnn::datasets_internal {

using Splits = std::map<std::string, std::vector<NodeId>>;

// Splits `line` at `sep` into *fields (cleared first). With sep == ' ', any
// run of spaces and tabs separates fields and leading/trailing blanks are
// ignored.
void SplitFields(absl::string_view line, char sep,
                 std::vector<absl::string_view>* fields);

// `path` if it exists, else `path` without a trailing ".gz" (or with one
// added) if that exists; otherwise NotFound naming `path`.
absl::StatusOr<std::string> FindInput(const std::string& path);

// A dataset name from an input path: the last component without trailing
// slashes and without ".gz" and one more extension ("data/cora.cites.gz" ->
// "cora").
std::string DefaultName(const std::string& path);

// A label field: an integer, an integral float ("3.0"), or "nan" / empty
// for unlabeled (-1). False for anything else, and for class indices outside
// [-1, 2^31).
bool ParseLabel(absl::string_view text, int64_t* label);

// Seeded random split of the labeled nodes (label >= 0) into names[i] with
// fractions[i] of them; each result sorted. Deterministic for a seed.
// REQUIRES: names.size() == fractions.size(), fractions >= 0, sum <= 1.
Splits RandomSplit(const std::vector<int64_t>& labels,
                   const std::vector<std::string>& names,
                   const std::vector<double>& fractions, uint64_t seed);

// Planetoid-style stratified split: `train_per_class` nodes of each class
// for train, then `num_valid` and `num_test` from the remaining labeled
// nodes. Fails (naming the class) if a class has too few nodes or the pool
// is too small.
absl::StatusOr<Splits> StratifiedSplit(const std::vector<int64_t>& labels,
                                       int64_t num_classes,
                                       int64_t train_per_class,
                                       int64_t num_valid, int64_t num_test,
                                       uint64_t seed);

// RandomClassSplit of `labels` as train, valid and test (each written, even
// if empty); its description appended to *notes and, when some classes are
// smaller than N + M, their warning to *warnings. Its errors start with
// "`labels_file`: " when that is given (the file the labels came from).
absl::StatusOr<Splits> MakeClassSplit(const std::vector<int64_t>& labels,
                                      const ClassSplitOptions& options,
                                      std::vector<std::string>* notes,
                                      std::vector<std::string>* warnings,
                                      const std::string& labels_file = "");

// What is wrong with the non-finite feature `value` of `node` in `column`
// (1-based, as the input counts its columns), and how to keep such values.
std::string NonfiniteFeatureError(int64_t node, int64_t column, float value);

// Records `count` non-finite feature values that were kept (allowed by the
// caller) in *summary, with a warning if there are any.
void NoteNonfiniteFeatures(int64_t count, BuildSummary* summary);

// Writes labels.npy and one split_<name>.npy per split into `dir`.
absl::Status WriteLabelsAndSplits(const std::string& dir,
                                  const std::vector<int64_t>& labels,
                                  const Splits& splits);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_IMPORT_UTIL_H_
