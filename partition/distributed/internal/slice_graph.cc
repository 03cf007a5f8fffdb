#include "partition/distributed/internal/slice_graph.h"

#include <algorithm>
#include <climits>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/sampling.h"
#include "common/status.h"
#include "partition/distributed/internal/mpi_util.h"
#include "partition/distributed/internal/npy_slice.h"

namespace shardgnn::partition_internal {
namespace {

// Runs `work`, turning an allocation failure into a status.
template <typename F>
absl::Status Guarded(F&& work) {
  try {
    return work();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory building this rank's slice of the graph");
  }
}

// Sorts and deduplicates each row of `g` in place, compacting.
void SortRows(SliceGraph* g) {
  const int64_t rows = g->end - g->begin;
  int64_t write = 0;
  int64_t row_begin = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row_end = g->offsets[i + 1];
    int64_t* first = g->neighbors.data() + row_begin;
    int64_t* last = g->neighbors.data() + row_end;
    if (!std::is_sorted(first, last)) std::sort(first, last);
    last = std::unique(first, last);
    int64_t* out = g->neighbors.data() + write;
    if (out != first) std::copy(first, last, out);
    g->offsets[i] = write;
    write += last - first;
    row_begin = row_end;
  }
  g->offsets[rows] = write;
  g->neighbors.resize(static_cast<size_t>(write));
  g->neighbors.shrink_to_fit();
}

}  // namespace

absl::StatusOr<SliceGraph> ReadSymmetricSlice(const std::string& dataset_dir,
                                              const DatasetManifest& manifest,
                                              MPI_Comm comm,
                                              SliceStats* stats) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t n = manifest.num_nodes;
  const int64_t num_entries = manifest.num_edges;
  const std::vector<int64_t> offsets = RankOffsets(n, size);
  SliceGraph g;
  g.begin = offsets[rank];
  g.end = offsets[rank + 1];
  const int64_t rows = g.end - g.begin;
  std::vector<int64_t> indptr;
  std::vector<int64_t> indices;
  *stats = {};

  // This rank's rows, checked.
  absl::Status read = Guarded([&]() -> absl::Status {
    const std::string indptr_path = JoinPath(dataset_dir, kIndptrFile);
    ASSIGN_OR_RETURN(indptr,
                     ReadInt64Slice(indptr_path, n + 1, g.begin, g.end + 1));
    for (int64_t i = 0; i <= rows; ++i) {
      if (indptr[i] < 0 || indptr[i] > num_entries ||
          (i > 0 && indptr[i] < indptr[i - 1])) {
        return absl::InvalidArgumentError(
            absl::StrCat(indptr_path, ": entry ", g.begin + i, " (", indptr[i],
                         ") is outside [0, ", num_entries, "] or decreases"));
      }
    }
    if ((g.begin == 0 && indptr.front() != 0) ||
        (g.end == n && indptr.back() != num_entries)) {
      return absl::InvalidArgumentError(
          absl::StrCat(indptr_path, ": must run from 0 to ", num_entries));
    }
    const std::string indices_path = JoinPath(dataset_dir, kIndicesFile);
    ASSIGN_OR_RETURN(indices, ReadInt64Slice(indices_path, num_entries,
                                             indptr.front(), indptr.back()));
    for (size_t e = 0; e < indices.size(); ++e) {
      if (indices[e] < 0 || indices[e] >= n) {
        return absl::InvalidArgumentError(absl::StrCat(
            indices_path, ": entry ", indptr.front() + static_cast<int64_t>(e),
            " (", indices[e], ") is outside [0, ", n, ")"));
      }
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(AgreeOnStatus(read, comm));
  stats->input_entries = static_cast<int64_t>(indices.size());
  const int64_t base = indptr.front();

  // Symmetric already? The sum of a hash of (u, v) over all entries equals
  // that of (v, u) exactly when the multiset of entries is symmetric (up to
  // a 2^-64 chance). Self-loops are left out: PT-Scotch refuses them.
  uint64_t sums[2] = {0, 0};
  for (int64_t i = 0; i < rows; ++i) {
    const uint64_t u = static_cast<uint64_t>(g.begin + i);
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const uint64_t v = static_cast<uint64_t>(indices[e - base]);
      if (v == u) continue;
      sums[0] += MixSeed(u, v);
      sums[1] += MixSeed(v, u);
    }
  }
  uint64_t total[2] = {0, 0};
  MPI_Allreduce(sums, total, 2, MPI_UINT64_T, MPI_SUM, comm);
  stats->symmetric_input = total[0] == total[1];

  // Reverse entries to their targets' owners, as (target, source) pairs.
  std::vector<int64_t> received;
  if (!stats->symmetric_input) {
    std::vector<int> send_counts(static_cast<size_t>(size), 0);
    std::vector<int> send_displs(static_cast<size_t>(size), 0);
    std::vector<int> recv_counts(static_cast<size_t>(size), 0);
    std::vector<int> recv_displs(static_cast<size_t>(size), 0);
    std::vector<int64_t> send;
    absl::Status pack = Guarded([&]() -> absl::Status {
      std::vector<int64_t> count(static_cast<size_t>(size), 0);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
          const int64_t v = indices[e - base];
          if (v != g.begin + i) count[OwnerRank(offsets, v)] += 2;
        }
      }
      int64_t sum = 0;
      for (int r = 0; r < size; ++r) {
        sum += count[r];
        if (sum > INT_MAX) {
          return absl::OutOfRangeError(absl::StrCat(
              "this rank sends ", sum / 2,
              "+ reverse entries, more than one MPI_Alltoallv takes: use "
              "more ranks"));
        }
        send_counts[r] = static_cast<int>(count[r]);
        if (r > 0) send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
      }
      send.resize(static_cast<size_t>(sum));
      std::vector<int> cursor = send_displs;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t u = g.begin + i;
        for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
          const int64_t v = indices[e - base];
          if (v == u) continue;
          int& at = cursor[OwnerRank(offsets, v)];
          send[at++] = v;
          send[at++] = u;
        }
      }
      stats->sent_reverse = sum / 2;
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(AgreeOnStatus(pack, comm));
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT,
                 comm);
    absl::Status room = Guarded([&]() -> absl::Status {
      int64_t sum = 0;
      for (int r = 0; r < size; ++r) {
        if (r > 0) recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
        sum += recv_counts[r];
      }
      if (sum > INT_MAX) {
        return absl::OutOfRangeError(absl::StrCat(
            "this rank receives ", sum / 2,
            " reverse entries, more than one MPI_Alltoallv takes: use more "
            "ranks"));
      }
      received.resize(static_cast<size_t>(sum));
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(AgreeOnStatus(room, comm));
    MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(),
                  MPI_INT64_T, received.data(), recv_counts.data(),
                  recv_displs.data(), MPI_INT64_T, comm);
  }

  // Rows: this rank's entries and the reverse entries received, sorted and
  // deduplicated.
  absl::Status build = Guarded([&]() -> absl::Status {
    g.offsets.assign(static_cast<size_t>(rows) + 1, 0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        if (indices[e - base] != g.begin + i) ++g.offsets[i + 1];
      }
    }
    for (size_t j = 0; j < received.size(); j += 2) {
      const int64_t u = received[j];
      if (u < g.begin || u >= g.end) {
        return absl::InternalError(absl::StrCat(
            "received a reverse entry for node ", u, ", owned elsewhere"));
      }
      ++g.offsets[u - g.begin + 1];
    }
    for (int64_t i = 0; i < rows; ++i) g.offsets[i + 1] += g.offsets[i];
    g.neighbors.resize(static_cast<size_t>(g.offsets[rows]));
    std::vector<int64_t> cursor(g.offsets.begin(), g.offsets.end() - 1);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        const int64_t v = indices[e - base];
        if (v != g.begin + i) g.neighbors[cursor[i]++] = v;
      }
    }
    indices = {};
    indptr = {};
    for (size_t j = 0; j < received.size(); j += 2) {
      g.neighbors[cursor[received[j] - g.begin]++] = received[j + 1];
    }
    received = {};
    SortRows(&g);
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(AgreeOnStatus(build, comm));
  return g;
}

}  // namespace shardgnn::partition_internal
