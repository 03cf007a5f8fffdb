#include "partition/distributed/distributed_partition.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "partition/distributed/internal/mpi_util.h"
#include "partition/distributed/internal/ptscotch_part.h"
#include "partition/distributed/internal/slice_graph.h"
#include "partition/internal/run.h"

namespace shardgnn {
namespace {

using partition_internal::AgreeOnStatus;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string Megabytes(int64_t bytes) {
  return absl::StrFormat("%.0f MB", static_cast<double>(bytes) / 1e6);
}

// What every rank must agree on before reading: the dataset's shape and the
// checksums of its CSR files.
std::string Fingerprint(const DatasetManifest& m) {
  auto sum = [&](const char* file) {
    auto it = m.files.find(file);
    return it == m.files.end() ? std::string("-") : it->second;
  };
  return absl::StrCat(m.num_nodes, " nodes, ", m.num_edges, " entries, ",
                      kIndptrFile, " ", sum(kIndptrFile), ", ", kIndicesFile,
                      " ", sum(kIndicesFile));
}

class Run {
 public:
  Run(const std::string& dataset_dir, const std::string& out_dir,
      const PartitionOptions& options, DistributedPartitionResult* result)
      : dataset_dir_(dataset_dir),
        out_dir_(out_dir),
        options_(options),
        result_(result),
        rank_(result->rank),
        size_(result->num_ranks) {}

  absl::Status Go();

 private:
  // A progress line on rank 0's stderr.
  void Say(const std::string& line) const {
    if (rank_ == 0)
      std::fprintf(stderr, "partition: ptscotch: %s\n", line.c_str());
  }
  absl::Status CheckArguments(DatasetManifest* manifest) const;

  const std::string& dataset_dir_;
  const std::string& out_dir_;
  const PartitionOptions& options_;
  DistributedPartitionResult* result_;
  const int rank_;
  const int size_;
  MPI_Comm comm_ = MPI_COMM_WORLD;
};

absl::Status Run::CheckArguments(DatasetManifest* manifest) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (rank_ == 0 && fs::exists(out_dir_, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        out_dir_, ": output already exists; remove it or choose another path"));
  }
  if (options_.num_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--parts must be at least 1 (got ", options_.num_parts, ")"));
  }
  if (!fs::is_directory(dataset_dir_, ec)) {
    return absl::NotFoundError(
        absl::StrCat(dataset_dir_, ": dataset directory does not exist"));
  }
  ASSIGN_OR_RETURN(*manifest, ReadDatasetManifest(dataset_dir_));
  if (manifest->num_nodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(dataset_dir_, ": the graph has no nodes"));
  }
  if (options_.num_parts > manifest->num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parts ", options_.num_parts, " is larger than ",
                     dataset_dir_, "'s ", manifest->num_nodes, " nodes"));
  }
  if (options_.imbalance_tolerance < 1.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--imbalance must be at least 1.0 (got ",
                     options_.imbalance_tolerance, ")"));
  }
  return absl::OkStatus();
}

absl::Status Run::Go() {
  const auto start = std::chrono::steady_clock::now();
  DatasetManifest manifest;
  RETURN_IF_ERROR(AgreeOnStatus(CheckArguments(&manifest), comm_));
  // Every rank's copy of the dataset must be the same graph.
  const std::string mine = Fingerprint(manifest);
  const std::string root = partition_internal::BroadcastString(mine, 0, comm_);
  absl::Status same;
  if (mine != root) {
    same = absl::FailedPreconditionError(
        absl::StrCat(dataset_dir_, " differs from rank 0's (", mine, " here, ",
                     root, " there): every rank needs the same dataset"));
  }
  RETURN_IF_ERROR(AgreeOnStatus(same, comm_));
  const int64_t n = manifest.num_nodes;
  Say(absl::StrCat(size_, " ranks, ", n, " nodes, ", manifest.num_edges,
                   " entries, ", options_.num_parts,
                   " parts; each rank reads about ", n / size_, " rows"));

  partition_internal::SliceStats stats;
  ASSIGN_OR_RETURN(partition_internal::SliceGraph slice,
                   partition_internal::ReadSymmetricSlice(
                       dataset_dir_, manifest, comm_, &stats));
  int64_t sent = 0;
  MPI_Reduce(&stats.sent_reverse, &sent, 1, MPI_INT64_T, MPI_SUM, 0, comm_);
  const double symmetrize_seconds = SecondsSince(start);
  Say(absl::StrFormat("slices read and symmetrized in %.2f s (%s)",
                      symmetrize_seconds,
                      stats.symmetric_input
                          ? std::string("the input is symmetric: no exchange")
                          : absl::StrCat(sent, " reverse entries exchanged")));

  const int64_t rows = slice.end - slice.begin;
  const auto assign_start = std::chrono::steady_clock::now();
  partition_internal::PtScotchOptions scotch;
  scotch.num_parts = options_.num_parts;
  scotch.tolerance = options_.imbalance_tolerance;
  scotch.seed = options_.seed;
  scotch.heartbeat = rank_ == 0;
  ASSIGN_OR_RETURN(
      std::vector<int32_t> local_part,
      partition_internal::PtScotchPart(std::move(slice), n, scotch, comm_));

  // The part vector on rank 0 (counts fit an int: N <= SCOTCH_NUMMAX).
  auto precomputed = std::make_shared<PrecomputedAssignment>();
  const std::vector<int64_t> offsets =
      partition_internal::RankOffsets(n, size_);
  std::vector<int> counts(static_cast<size_t>(size_));
  std::vector<int> displs(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    counts[r] = static_cast<int>(offsets[r + 1] - offsets[r]);
    displs[r] = static_cast<int>(offsets[r]);
  }
  if (rank_ == 0) precomputed->part.resize(static_cast<size_t>(n));
  MPI_Gatherv(local_part.data(), static_cast<int>(rows), MPI_INT32_T,
              precomputed->part.data(), counts.data(), displs.data(),
              MPI_INT32_T, 0, comm_);
  local_part = {};
  local_part.shrink_to_fit();
  precomputed->symmetrize_seconds = symmetrize_seconds;
  precomputed->assign_seconds = SecondsSince(assign_start);
  int64_t rss = partition_internal::PeakRssBytes();
  std::vector<int64_t> rss_per_rank(static_cast<size_t>(size_));
  MPI_Gather(&rss, 1, MPI_INT64_T, rss_per_rank.data(), 1, MPI_INT64_T, 0,
             comm_);
  std::vector<std::string> rss_text;
  for (int64_t bytes : rss_per_rank) rss_text.push_back(Megabytes(bytes));
  Say(absl::StrFormat("assignment in %.2f s; peak RSS per rank so far: %s",
                      precomputed->assign_seconds,
                      absl::StrJoin(rss_text, ", ")));

  // Rank 0 writes the partition; the others wait without spinning.
  absl::Status written;
  if (rank_ == 0) {
    PartitionOptions options = options_;
    options.method = PartitionMethod::kPtScotch;
    options.precomputed = std::move(precomputed);
    absl::StatusOr<PartitionManifest> m =
        PartitionDataset(dataset_dir_, out_dir_, options, &result_->timing);
    if (m.ok()) {
      result_->manifest = *std::move(m);
      result_->peak_rss_per_rank = std::move(rss_per_rank);
      // The pipeline timed itself from its own start: the total is this
      // whole run's, from the first read of a slice.
      result_->timing.total_seconds = SecondsSince(start);
      const std::string timing_path = JoinPath(out_dir_, kPartitionTimingFile);
      absl::Status timing_written =
          WriteFileAtomic(timing_path, result_->timing.ToJson());
      if (!timing_written.ok()) {
        std::fprintf(stderr, "warning: %s: total time not updated: %s\n",
                     timing_path.c_str(),
                     std::string(timing_written.message()).c_str());
      }
    } else {
      written = m.status();
    }
  } else {
    precomputed.reset();
  }
  partition_internal::IdleBarrier(comm_);
  return AgreeOnStatus(written, comm_);
}

}  // namespace

DistributedPartitionResult PartitionDistributed(
    const std::string& dataset_dir, const std::string& out_dir,
    const PartitionOptions& options) {
  DistributedPartitionResult result;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // PT-Scotch may run threads that call MPI.
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS) {
      result.status = absl::UnavailableError("MPI_Init_thread failed");
      return result;
    }
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &result.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &result.num_ranks);
  Run run(dataset_dir, out_dir, options, &result);
  result.status = run.Go();
  if (!initialized) MPI_Finalize();
  return result;
}

}  // namespace shardgnn
