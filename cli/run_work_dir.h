// The launcher's work dir (`shardgnn run --work-dir`): the datasets it
// imported and the partitions it made, kept for later runs and reused only
// for the same content.
//
//   WORK_DIR/datasets/<name>-<input checksum>/
//   WORK_DIR/partitions/<name>-<K>parts-<method>-seed<S>-<dataset checksum>/
//
// The input checksum is XXH64 over every file under a raw OGB input's raw/
// and split/ (path, size and bytes) and the import options (an edge split and
// its seed among them); the dataset
// checksum is DatasetContentChecksum of the dataset's manifest (datasets/
// dataset.h). So another dataset with the same name, or an input edited in
// place, gets directories of its own: nothing is reused for other content, and
// no directory is overwritten (imports and partitions are built under a
// temporary name and renamed when complete). Every step prints one line
// saying what it reused or made, and why. Thread-compatible.
#ifndef SHARDGNN_CLI_RUN_WORK_DIR_H_
#define SHARDGNN_CLI_RUN_WORK_DIR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shardgnn::cli {

struct RunDataOptions {
  std::string work_dir;
  // A canonical dataset directory (used in place), or raw OGB input to import
  // with reverse edges added.
  std::string input;
  std::string name;  // Name of an import; empty: the input's folder name.
  std::string
      split_name;  // Which split/<name>/ to import; empty: the only one.
  // Link prediction: "TRAIN,VALID,TEST" fractions to split a raw input's
  // edges into at import (datasets/edge_split.h, seeded by `seed`); empty:
  // none. Such an import is its own directory: the input imported without a
  // split, or with another, is not reused for it.
  std::string edge_split;
  int num_parts = 2;
  std::string method = "metis";  // PartitionMethod's name.
  uint64_t seed = 0;
};

// True if `dir` holds a canonical dataset (its manifest.json).
bool IsDatasetDir(const std::string& dir);

// Imports `options.input` into the work dir unless it is a dataset directory
// or was imported before from the same content, then partitions the dataset
// unless a partition of the same content with the same options is there.
// Returns the partition directory. A directory found under the expected name
// whose manifest disagrees with what it should hold is an error naming it, not
// reused.
absl::StatusOr<std::string> PreparePartition(const RunDataOptions& options);

// The run directory of a launcher (`run`, `launch`): `out_dir`, created, or
// when empty a fresh WORK_DIR/runs/<DATASET>-<YYYYmmdd-HHMMSS>[-N] (DATASET:
// `dataset`, the name the partition records, characters other than letters,
// digits, '-', '_' and '.' replaced by '_'; without it, no prefix).
// ALREADY_EXISTS when it holds a finished run (summary.json).
absl::StatusOr<std::string> CreateRunDirectory(const std::string& out_dir,
                                               const std::string& work_dir,
                                               const std::string& dataset);

// The token file of a launcher's own cluster: a fresh random token, mode 0600
// in the work dir, named on the children's command lines by its path only,
// and removed when the object goes (a launcher killed outright leaves it: a
// token of servers that died with it; the next launcher removes such files).
class GeneratedToken {
 public:
  static absl::StatusOr<std::unique_ptr<GeneratedToken>> Create(
      const std::string& work_dir);
  ~GeneratedToken();
  GeneratedToken(const GeneratedToken&) = delete;
  GeneratedToken& operator=(const GeneratedToken&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit GeneratedToken(std::string path) : path_(std::move(path)) {}

  std::string path_;
};

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_RUN_WORK_DIR_H_
