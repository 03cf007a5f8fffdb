// WriteCsr out of core: the same indptr.npy and indices.npy, byte for byte,
// and the same CsrResult, from edges handed over one at a time, within a
// memory budget. For edge lists larger than memory (`dataset import
// --memory-limit`).
//
// How: each edge becomes its CSR entries (row = destination, column =
// source; with `undirected` also the reverse entry; self-loops kept or
// dropped as WriteCsr does), packed as row << 32 | column in 8 bytes, which
// fill a buffer; a full buffer is sorted (in `csr.threads` slices, each its
// own run), deduplicated and written as sorted runs to temporary files.
// Finish() merges the runs (several passes if there are more than one pass can
// read at once), drops the duplicates across runs, and writes indptr as rows
// complete and indices through a raw temporary file (its length is known only
// at the end). For a directed graph the reverse-edge count
// (CsrResult::reciprocated_edges) needs each entry's transpose: the merge
// writes those as runs too, and a last pass joins them with the CSR.
// Graphs of up to 2^32 nodes (the packing). Memory: the buffer
// (`memory_bytes`, or `run_entries` entries) plus N bits
// (CsrResult::without_neighbors) and I/O buffers of a few MiB; never the edge
// array or indptr.
#ifndef SHARDGNN_DATASETS_INTERNAL_EXTERNAL_CSR_H_
#define SHARDGNN_DATASETS_INTERNAL_EXTERNAL_CSR_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"
#include "datasets/importers.h"
#include "datasets/internal/csr_builder.h"

namespace shardgnn::datasets_internal {

struct ExternalCsrOptions {
  CsrOptions csr;
  // Bytes for entries (8 bytes each): the sort buffer, then the merge's read
  // buffers. At least 1 MiB unless run_entries is set.
  int64_t memory_bytes = 0;
  // Tests: entries per sorted run and per merge read buffer, overriding
  // memory_bytes (tiny values force many runs and merge passes).
  int64_t run_entries = 0;
  int64_t read_buffer_entries = 0;
  // A bound on the entries the edges make, if known (an edge .npy's edges,
  // twice for undirected); the sort buffer is not reserved beyond it. 0:
  // unknown.
  int64_t max_entries = 0;
  // Where the runs go (created; removed by Finish and by the destructor).
  std::string temp_dir;
};

// What the build did, for the import summary.
struct ExternalCsrStats {
  int64_t runs = 0;          // Sorted runs of the input's entries.
  int64_t merge_passes = 0;  // Passes over the entries, the last included.
  int64_t entries_per_run = 0;
  int64_t peak_temp_bytes = 0;  // Largest total size of the temporary files.
};

// Not thread-safe. Owns its temporary directory.
class ExternalCsrBuilder {
 public:
  // Fails on more than 2^32 nodes or too little memory.
  static absl::StatusOr<std::unique_ptr<ExternalCsrBuilder>> Create(
      int64_t num_nodes, const ExternalCsrOptions& options);
  ~ExternalCsrBuilder();
  ExternalCsrBuilder(const ExternalCsrBuilder&) = delete;
  ExternalCsrBuilder& operator=(const ExternalCsrBuilder&) = delete;

  // Adds the edge src -> dst. REQUIRES: both in [0, num_nodes); Finish not
  // called yet. Fails only on a write error of a run.
  absl::Status Add(NodeId src, NodeId dst);
  int64_t edges_added() const { return edges_added_; }

  // Writes indptr.npy and indices.npy into `dir` as WriteCsr(num_nodes, the
  // edges in the order added, options.csr, dir) would, and returns the same
  // result (origins are not supported). Removes the temporary files.
  absl::StatusOr<CsrResult> Finish(const std::string& dir);
  const ExternalCsrStats& stats() const { return stats_; }

 private:
  ExternalCsrBuilder(int64_t num_nodes, const ExternalCsrOptions& options,
                     int64_t run_entries, int64_t read_buffer_entries);
  // Sorts, dedupes and writes *buffer as runs (appended to `runs`) and
  // clears it.
  absl::Status FlushRun(std::vector<uint64_t>* buffer,
                        std::vector<std::string>* runs);
  // Merges `runs` into one run while there are more than the fan-in.
  absl::Status MergeDown(std::vector<std::string>* runs, int64_t fan_in);
  std::string NewTempPath(const char* what);
  void NoteTempBytes();

  const int64_t num_nodes_;
  const ExternalCsrOptions options_;
  const int64_t run_entries_;
  const int64_t read_buffer_entries_;
  const int64_t fan_in_;           // Runs one merge pass reads at once.
  const int64_t reserve_entries_;  // Of buffer_, once.
  std::vector<uint64_t> buffer_;   // row << 32 | column.
  std::vector<std::string> runs_;
  int64_t edges_added_ = 0;
  int64_t next_temp_ = 0;
  // Duplicates found inside runs (WriteCsr's RowStats).
  int64_t removed_ = 0;
  int64_t removed_self_ = 0;
  int64_t self_loops_dropped_ = 0;
  ExternalCsrStats stats_;
};

// The options of an import's out-of-core build under `limit`: the sort buffer
// is what limit.memory_limit leaves beside the process's resident memory now
// (the program, labels, splits), N bits and a reserve for I/O buffers; runs go
// to `dir`/.csr-runs. An error naming --memory-limit when less than 1 MiB is
// left (unless the test sizes are set).
absl::StatusOr<ExternalCsrOptions> ImportOutOfCoreOptions(
    const OutOfCoreOptions& limit, int64_t num_nodes, const CsrOptions& csr,
    const std::string& dir);

// The summary note of an out-of-core build.
std::string OutOfCoreNote(const OutOfCoreOptions& limit,
                          const ExternalCsrStats& stats);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_EXTERNAL_CSR_H_
