// Offline partitioning: a canonical dataset directory in, a partition
// directory out.
//
// A partition directory holds
//   partition.json   the PartitionManifest (see partition_book.h):
//                    byte-identical for the same input, options and seed
//   timing.json      wall time and peak RSS of each stage (varies per run)
//   orig_ids.npy     int64 [N]: relabelled node ID -> original node ID
//   part-<p>/        one RocksDB shard per part (graphstore/shard_format.h)
//
// Nodes are assigned to parts by METIS k-way on the symmetrized graph with
// three balance constraints (nodes, train nodes, adjacency entries), by a
// streaming partitioner under the same constraints (restreaming FENNEL: a few
// sequential passes over the CSR, no copy of the graph, no 32-bit limit), or
// by a seeded balanced random deal, or given by the caller (PT-Scotch on MPI
// ranks: partition/distributed/distributed_partition.h). Then nodes are
// relabelled so that part p owns [node_ranges[p], node_ranges[p+1]), ordered by
// part and then original ID, and each part's shard is bulk-loaded. The
// directory is built under a temporary name and renamed when complete: a
// failure leaves nothing behind.
#ifndef SHARDGNN_PARTITION_PARTITION_H_
#define SHARDGNN_PARTITION_PARTITION_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/dataset.h"
#include "partition/partition_book.h"

namespace shardgnn {

enum class PartitionMethod { kMetis, kRandom, kStream, kPtScotch };

// "metis", "random", "stream", "ptscotch".
const char* PartitionMethodName(PartitionMethod method);
absl::StatusOr<PartitionMethod> ParsePartitionMethod(absl::string_view name);

// An assignment computed before the pipeline runs (PartitionMethod::kPtScotch:
// by PT-Scotch on the MPI ranks of `shardgnn partition --distributed`).
struct PrecomputedAssignment {
  std::vector<int32_t> part;      // [N], values in [0, K).
  double symmetrize_seconds = 0;  // Reading slices, symmetrizing.
  double assign_seconds = 0;      // Partitioning and gathering.
  std::vector<std::string> warnings;
};

struct PartitionOptions {
  int num_parts = 2;
  PartitionMethod method = PartitionMethod::kMetis;
  uint64_t seed = 0;
  // Allowed max/avg per balance constraint (METIS's and the stream's).
  double imbalance_tolerance = 1.05;
  // --method stream: at most this many passes over the graph (the first
  // assigns, the others refine; they stop when two in a row gain nothing;
  // see partition/internal/stream_assign.h).
  int stream_passes = 10;
  // Shards written at the same time (each on its own thread).
  int num_threads = 2;
  // Compare the dataset's files with its manifest checksums on load.
  bool verify_checksums = true;
  // Largest node count / adjacency length METIS can index (its idx_t is
  // 32-bit here). Above it, partitioning falls back to the stream and says
  // so.
  // Lowered only by tests.
  int64_t metis_index_limit = std::numeric_limits<int32_t>::max();
  // Required by kPtScotch (and read by no other method): its assignment,
  // checked against the dataset (size N, parts in [0, K), none empty).
  std::shared_ptr<const PrecomputedAssignment> precomputed;
};

// Wall seconds per stage and the process's peak RSS (bytes) at the end of
// each stage. Written to timing.json, never to partition.json.
struct PartitionTiming {
  double load_seconds = 0;
  double symmetrize_seconds = 0;  // Building METIS's int32 graph.
  double assign_seconds = 0;      // METIS or the random deal.
  double relabel_seconds = 0;     // Relabelling, stats, orig_ids.npy.
  double write_seconds = 0;       // Shards and manifest.
  double total_seconds = 0;
  int64_t peak_rss_after_load = 0;
  int64_t peak_rss_after_assign = 0;
  int64_t peak_rss_after_write = 0;

  std::string ToJson() const;
};

// Partitions the canonical dataset at `dataset_dir` into a new directory
// `out_dir` (which must not exist). Errors name the file or the bad value:
// K < 1 or K > N, an empty graph, an existing output, a missing or corrupt
// dataset, a METIS failure. On success returns what partition.json says;
// `timing` (optional) receives the stage timings.
absl::StatusOr<PartitionManifest> PartitionDataset(
    const std::string& dataset_dir, const std::string& out_dir,
    const PartitionOptions& options, PartitionTiming* timing = nullptr);

// The same for a dataset already in memory (importers, tests). The dataset's
// shape is checked (CSR offsets, ID ranges, array sizes) before any work.
absl::StatusOr<PartitionManifest> PartitionInMemory(
    const Dataset& dataset, const std::string& out_dir,
    const PartitionOptions& options, PartitionTiming* timing = nullptr);

// A few lines for people: edge cut, imbalance per constraint, warnings and,
// if `timing` is given, the time per stage.
std::string PartitionSummary(const PartitionManifest& manifest,
                             const PartitionTiming* timing = nullptr);

// PartitionSummary plus a per-part table (nodes, edges, splits, cut).
std::string DescribePartition(const PartitionManifest& manifest);

}  // namespace shardgnn

#endif  // SHARDGNN_PARTITION_PARTITION_H_
