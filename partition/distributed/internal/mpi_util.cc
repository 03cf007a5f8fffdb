#include "partition/distributed/internal/mpi_util.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace shardgnn::partition_internal {

absl::Status AgreeOnStatus(const absl::Status& local, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = local.ok() ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return absl::OkStatus();
  int code = static_cast<int>(local.code());
  MPI_Bcast(&code, 1, MPI_INT, first, comm);
  std::string message = BroadcastString(
      rank == first ? std::string(local.message()) : std::string(), first,
      comm);
  if (first > 0 && size > 1)
    message = absl::StrCat("rank ", first, ": ", message);
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

std::string BroadcastString(const std::string& value, int root, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int length = static_cast<int>(std::min<size_t>(value.size(), 1 << 20));
  MPI_Bcast(&length, 1, MPI_INT, root, comm);
  std::string out = rank == root
                        ? value.substr(0, length)
                        : std::string(static_cast<size_t>(length), '\0');
  if (length > 0) MPI_Bcast(out.data(), length, MPI_CHAR, root, comm);
  return out;
}

std::vector<int64_t> RankOffsets(int64_t num_nodes, int num_ranks) {
  std::vector<int64_t> offsets(static_cast<size_t>(num_ranks) + 1);
  for (int r = 0; r <= num_ranks; ++r) {
    offsets[r] =
        static_cast<int64_t>(static_cast<__int128>(num_nodes) * r / num_ranks);
  }
  return offsets;
}

int OwnerRank(const std::vector<int64_t>& offsets, int64_t v) {
  return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), v) -
                          offsets.begin() - 1);
}

void IdleBarrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace shardgnn::partition_internal
