#include "partition/distributed/internal/ptscotch_part.h"

#include <mpi.h>
#include <ptscotch.h>  // Includes <stdio.h>, <mpi.h> and scotch.h itself.

#include <algorithm>
#include <memory>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/progress.h"
#include "common/status.h"
#include "partition/distributed/internal/mpi_util.h"

namespace shardgnn::partition_internal {
namespace {

absl::Status ScotchError(const char* call, int rc) {
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("PT-Scotch: ", call, " failed (code ", rc,
                   "; its own message, if any, is on stderr)"));
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> PtScotchPart(
    SliceGraph slice, int64_t num_nodes, const PtScotchOptions& options,
    MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int64_t begin = slice.begin;
  const int64_t rows = slice.end - slice.begin;
  int64_t local_entries = static_cast<int64_t>(slice.neighbors.size());
  int64_t entries = 0;
  MPI_Allreduce(&local_entries, &entries, 1, MPI_INT64_T, MPI_SUM, comm);
  // Every rank sees the same figures: no agreement needed.
  if (num_nodes > SCOTCH_NUMMAX || entries > SCOTCH_NUMMAX) {
    return absl::OutOfRangeError(absl::StrCat(
        "the symmetrized graph has ", num_nodes, " nodes and ", entries,
        " adjacency entries; this PT-Scotch's SCOTCH_Num holds at most ",
        SCOTCH_NUMMAX));
  }

  std::vector<SCOTCH_Num> vertloctab;
  std::vector<SCOTCH_Num> edgeloctab;
  absl::Status copy = [&]() -> absl::Status {
    try {
      vertloctab.assign(slice.offsets.begin(), slice.offsets.end());
      edgeloctab.assign(slice.neighbors.begin(), slice.neighbors.end());
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          "out of memory copying this rank's slice for PT-Scotch");
    }
    return absl::OkStatus();
  }();
  slice = {};
  RETURN_IF_ERROR(AgreeOnStatus(copy, comm));

  SCOTCH_Dgraph graph;
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError("SCOTCH_dgraphInit", SCOTCH_dgraphInit(&graph, comm)), comm));
  std::unique_ptr<SCOTCH_Dgraph, void (*)(SCOTCH_Dgraph*)> graph_guard(
      &graph, SCOTCH_dgraphExit);
  const SCOTCH_Num vertlocnbr = static_cast<SCOTCH_Num>(rows);
  const SCOTCH_Num edgelocnbr = static_cast<SCOTCH_Num>(edgeloctab.size());
  // Collective; PT-Scotch reduces its error codes, so every rank returns the
  // same one.
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError(
          "SCOTCH_dgraphBuild",
          SCOTCH_dgraphBuild(&graph, /*baseval=*/0, vertlocnbr,
                             /*vertlocmax=*/vertlocnbr, vertloctab.data(),
                             /*vendloctab=*/vertloctab.data() + 1,
                             /*veloloctab=*/nullptr, /*vlblloctab=*/nullptr,
                             edgelocnbr, /*edgelocsiz=*/edgelocnbr,
                             edgeloctab.data(), /*edgegsttab=*/nullptr,
                             /*edloloctab=*/nullptr)),
      comm));
  // Symmetry, ranges, no self-loops: what PT-Scotch relies on.
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError("SCOTCH_dgraphCheck", SCOTCH_dgraphCheck(&graph)), comm));

  SCOTCH_Strat strategy;
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError("SCOTCH_stratInit", SCOTCH_stratInit(&strategy)), comm));
  std::unique_ptr<SCOTCH_Strat, void (*)(SCOTCH_Strat*)> strategy_guard(
      &strategy, SCOTCH_stratExit);
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError(
          "SCOTCH_stratDgraphMapBuild",
          SCOTCH_stratDgraphMapBuild(&strategy, SCOTCH_STRATBALANCE,
                                     static_cast<SCOTCH_Num>(size),
                                     static_cast<SCOTCH_Num>(options.num_parts),
                                     options.tolerance - 1.0)),
      comm));

  // A context of its own, deterministic (Debian's build is not by default:
  // its threads race) with a random state of its own seeded the same on
  // every rank: the same input, seed and rank count give the same parts.
  SCOTCH_Context context;
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError("SCOTCH_contextInit", SCOTCH_contextInit(&context)), comm));
  std::unique_ptr<SCOTCH_Context, void (*)(SCOTCH_Context*)> context_guard(
      &context, SCOTCH_contextExit);
  absl::Status configured = ScotchError("SCOTCH_contextRandomClone",
                                        SCOTCH_contextRandomClone(&context));
  if (configured.ok()) {
    configured = ScotchError(
        "SCOTCH_contextOptionSetNum",
        SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1));
  }
  if (configured.ok()) {
    // PT-Scotch's threads per rank: the host's hardware threads shared by the
    // ranks on it (by default each rank starts one per hardware thread, and
    // ranks sharing a host then fight over its cores: 2 ranks on 2 cores ran
    // twice as long).
    MPI_Comm host;
    int ranks_here = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                            &host) == MPI_SUCCESS) {
      MPI_Comm_size(host, &ranks_here);
      MPI_Comm_free(&host);
    }
    const int threads = std::max(
        1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_here);
    configured =
        ScotchError("SCOTCH_contextThreadSpawn",
                    SCOTCH_contextThreadSpawn(&context, threads, nullptr));
  }
  if (configured.ok()) {
    SCOTCH_contextRandomSeed(
        &context, static_cast<SCOTCH_Num>(options.seed & 0x7fffffff));
  }
  RETURN_IF_ERROR(AgreeOnStatus(configured, comm));
  SCOTCH_Dgraph bound;
  RETURN_IF_ERROR(AgreeOnStatus(
      ScotchError("SCOTCH_contextBindDgraph",
                  SCOTCH_contextBindDgraph(&context, &graph, &bound)),
      comm));
  std::unique_ptr<SCOTCH_Dgraph, void (*)(SCOTCH_Dgraph*)> bound_guard(
      &bound, SCOTCH_dgraphExit);
  std::vector<SCOTCH_Num> part(static_cast<size_t>(rows) + 1, -1);
  int rc = 0;
  {
    std::unique_ptr<StageHeartbeat> heartbeat;
    if (options.heartbeat) {
      ProgressOptions every_few_seconds;
      every_few_seconds.interval_seconds = 5;
      heartbeat = std::make_unique<StageHeartbeat>(
          absl::StrCat("partition: ptscotch k-way (", options.num_parts,
                       " parts on ", size, " ranks) running"),
          every_few_seconds);
    }
    rc = SCOTCH_dgraphPart(&bound, static_cast<SCOTCH_Num>(options.num_parts),
                           &strategy, part.data());
  }
  RETURN_IF_ERROR(AgreeOnStatus(ScotchError("SCOTCH_dgraphPart", rc), comm));
  std::vector<int32_t> out(static_cast<size_t>(rows));
  absl::Status range;
  for (int64_t i = 0; i < rows; ++i) {
    if (part[i] < 0 || part[i] >= options.num_parts) {
      range = absl::InternalError(absl::StrCat("PT-Scotch assigned node ",
                                               begin + i, " to part ", part[i],
                                               " of ", options.num_parts));
      break;
    }
    out[i] = static_cast<int32_t>(part[i]);
  }
  RETURN_IF_ERROR(AgreeOnStatus(range, comm));
  return out;
}

}  // namespace shardgnn::partition_internal
