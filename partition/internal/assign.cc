#include "partition/internal/assign.h"

#include <metis.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "common/status.h"
#include "partition/internal/stream_assign.h"

namespace shardgnn::partition_internal {
namespace {

static_assert(sizeof(idx_t) == sizeof(int32_t),
              "this file assumes METIS with 32-bit idx_t (Debian's build)");

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

const std::vector<NodeId>* TrainSplit(const Dataset& dataset) {
  auto it = dataset.splits.find("train");
  return it == dataset.splits.end() ? nullptr : &it->second;
}

// Fisher-Yates with SplitMix64: the same seed gives the same order on every
// platform (std::shuffle's algorithm is implementation-defined).
void Shuffle(std::vector<NodeId>* items, uint64_t* state) {
  for (size_t i = items->size(); i > 1; --i) {
    size_t j = UniformBelow(state, i);
    std::swap((*items)[i - 1], (*items)[j]);
  }
}

// While alive, what this process writes to stdout goes to a temporary file
// instead (METIS prints its complaints there with printf, "***Cannot bisect
// a graph with 0 vertices!", between the progress lines); Take() restores
// stdout and returns what was written. Partitioning prints nothing else to
// stdout while METIS runs.
class StdoutCapture {
 public:
  StdoutCapture() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    saved_ = file_ != nullptr ? dup(STDOUT_FILENO) : -1;
    if (saved_ >= 0 && dup2(fileno(file_), STDOUT_FILENO) < 0) {
      close(saved_);
      saved_ = -1;
    }
  }
  ~StdoutCapture() { Take(); }
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;

  std::string Take() {
    std::string text;
    if (saved_ >= 0) {
      std::fflush(stdout);
      dup2(saved_, STDOUT_FILENO);
      close(saved_);
      saved_ = -1;
      std::rewind(file_);
      char buffer[4096];
      size_t got;
      while (text.size() < (1 << 16) &&
             (got = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) {
        text.append(buffer, got);
      }
    }
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    return text;
  }

 private:
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

// METIS's lines, "***" and blanks trimmed, joined by "; ".
std::string MetisSaid(absl::string_view text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    while (absl::ConsumePrefix(&line, "*")) {
    }
    if (!line.empty()) lines.emplace_back(line);
  }
  return absl::StrJoin(lines, "; ");
}

absl::Status MetisError(int rc) {
  switch (rc) {
    case METIS_OK:
      return absl::OkStatus();
    case METIS_ERROR_INPUT:
      return absl::InvalidArgumentError("METIS rejected its input");
    case METIS_ERROR_MEMORY:
      return absl::ResourceExhaustedError("METIS ran out of memory");
    default:
      return absl::InternalError(absl::StrCat("METIS failed (code ", rc, ")"));
  }
}

// The balanced random assignment in place of `result`'s, with a warning
// saying why the requested method's could not be used.
Assignment FallBackToRandom(Assignment result, const Dataset& dataset,
                            const PartitionOptions& options,
                            const std::string& why) {
  result.warnings.push_back(
      absl::StrCat(why, "; fell back to --method random (balanced, seeded)"));
  result.method = PartitionMethod::kRandom;
  const auto start = std::chrono::steady_clock::now();
  result.part = RandomAssignment(dataset, options.num_parts, options.seed);
  result.assign_seconds = SecondsSince(start);
  return result;
}

int64_t EmptyParts(const std::vector<int32_t>& part, int k) {
  std::vector<char> used(static_cast<size_t>(k), 0);
  for (int32_t p : part) used[static_cast<size_t>(p)] = 1;
  return std::count(used.begin(), used.end(), 0);
}

Assignment AssignByStream(Assignment result, const Dataset& dataset,
                          const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int k = options.num_parts;
  StreamAssignOptions stream;
  stream.num_parts = k;
  stream.passes = options.stream_passes;
  stream.tolerance = options.imbalance_tolerance;
  result.part = StreamAssignment(dataset, stream);
  result.assign_seconds = SecondsSince(start);
  const int64_t empty = EmptyParts(result.part, k);
  if (empty > 0) {
    // A part without nodes serves nothing and trains nothing; the random
    // assignment fills every part (k <= n).
    return FallBackToRandom(
        std::move(result), dataset, options,
        absl::StrCat("the stream left ", empty, " of ", k, " parts empty (",
                     dataset.num_nodes(), " nodes are too few for ", k,
                     " parts)"));
  }
  return result;
}

}  // namespace

absl::StatusOr<MetisGraph> SymmetrizeForMetis(
    const std::vector<int64_t>& indptr, const std::vector<NodeId>& indices,
    int64_t index_limit) {
  const int64_t n = static_cast<int64_t>(indptr.size()) - 1;
  if (n + 1 > index_limit) {
    return absl::OutOfRangeError(absl::StrCat(
        "the graph has ", n, " nodes; METIS's 32-bit idx_t holds at most ",
        index_limit));
  }
  // An undirected dataset already stores both directions. Recognize that
  // with one sequential pass (the sum of a hash of (u, v) over all entries
  // equals that of (v, u) exactly when the entry multiset is symmetric, up to
  // a 2^-64 chance) and then copy the rows as they are, instead of building
  // the union of both directions at twice the size.
  uint64_t forward = 0;
  uint64_t backward = 0;
  int64_t entries = 0;
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t e = indptr[u]; e < indptr[u + 1]; ++e) {
      const NodeId v = indices[e];
      if (v == u) continue;
      forward += MixSeed(static_cast<uint64_t>(u), static_cast<uint64_t>(v));
      backward += MixSeed(static_cast<uint64_t>(v), static_cast<uint64_t>(u));
      ++entries;
    }
  }
  const bool symmetric = forward == backward;
  const int64_t total = symmetric ? entries : 2 * entries;
  if (total > index_limit) {
    return absl::OutOfRangeError(absl::StrCat(
        "the symmetrized graph has ", symmetric ? "" : "up to ", total,
        " adjacency entries; METIS's 32-bit idx_t holds at most ",
        index_limit));
  }
  MetisGraph g;
  g.xadj.assign(n + 1, 0);
  g.adjncy.resize(total);
  // Row sizes (before deduplication), then offsets.
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t e = indptr[u]; e < indptr[u + 1]; ++e) {
      const NodeId v = indices[e];
      if (v == u) continue;
      ++g.xadj[u + 1];
      if (!symmetric) ++g.xadj[v + 1];
    }
  }
  for (int64_t u = 0; u < n; ++u) g.xadj[u + 1] += g.xadj[u];
  {
    std::vector<int32_t> cursor(g.xadj.begin(), g.xadj.end() - 1);
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t e = indptr[u]; e < indptr[u + 1]; ++e) {
        const NodeId v = indices[e];
        if (v == u) continue;
        g.adjncy[cursor[u]++] = static_cast<int32_t>(v);
        if (!symmetric) g.adjncy[cursor[v]++] = static_cast<int32_t>(u);
      }
    }
  }
  // Sort and deduplicate each row, compacting in place (rows only move
  // left, so a row is read before anything overwrites it).
  Progress progress("symmetrize", n, "nodes");
  int32_t write = 0;
  int32_t row_begin = 0;
  for (int64_t u = 0; u < n; ++u) {
    const int32_t row_end = g.xadj[u + 1];
    int32_t* first = g.adjncy.data() + row_begin;
    int32_t* last = g.adjncy.data() + row_end;
    if (!std::is_sorted(first, last)) std::sort(first, last);
    last = std::unique(first, last);
    int32_t* out = g.adjncy.data() + write;
    if (out != first) std::copy(first, last, out);
    g.xadj[u] = write;
    write += static_cast<int32_t>(last - first);
    row_begin = row_end;
    progress.Update(u + 1);
  }
  g.xadj[n] = write;
  if (write < total) {
    g.adjncy.resize(write);
    g.adjncy.shrink_to_fit();
  }
  progress.Done();
  return g;
}

std::vector<int32_t> RandomAssignment(const Dataset& dataset, int num_parts,
                                      uint64_t seed) {
  const int64_t n = dataset.num_nodes();
  std::vector<char> is_train(n, 0);
  std::vector<NodeId> train;
  if (const auto* split = TrainSplit(dataset)) {
    for (NodeId v : *split) {
      if (!is_train[v]) train.push_back(v);
      is_train[v] = 1;
    }
  }
  std::vector<NodeId> rest;
  rest.reserve(n - train.size());
  for (NodeId v = 0; v < n; ++v) {
    if (!is_train[v]) rest.push_back(v);
  }
  uint64_t state = MixSeed(seed, 0x70617274 /* "part" */);
  Shuffle(&train, &state);
  Shuffle(&rest, &state);
  std::vector<int32_t> part(n);
  int64_t i = 0;
  for (NodeId v : train) part[v] = static_cast<int32_t>(i++ % num_parts);
  for (NodeId v : rest) part[v] = static_cast<int32_t>(i++ % num_parts);
  return part;
}

absl::StatusOr<Assignment> AssignParts(
    const Dataset& dataset, const PartitionOptions& options,
    const std::function<void()>& graph_built) {
  const int64_t n = dataset.num_nodes();
  const int k = options.num_parts;
  Assignment result;
  result.method = options.method;
  auto start = std::chrono::steady_clock::now();
  if (k == 1) {
    result.part.assign(n, 0);
    result.assign_seconds = SecondsSince(start);
    return result;
  }
  if (options.method == PartitionMethod::kRandom) {
    result.part = RandomAssignment(dataset, k, options.seed);
    result.assign_seconds = SecondsSince(start);
    return result;
  }
  if (options.method == PartitionMethod::kStream) {
    return AssignByStream(std::move(result), dataset, options);
  }

  absl::StatusOr<MetisGraph> graph = SymmetrizeForMetis(
      dataset.indptr, dataset.indices, options.metis_index_limit);
  result.symmetrize_seconds = SecondsSince(start);
  // A graph METIS cannot index: the stream, which has no such limit, with a
  // warning saying why.
  if (absl::IsOutOfRange(graph.status())) {
    result.warnings.push_back(absl::StrCat(graph.status().message(),
                                           "; fell back to --method stream"));
    result.method = PartitionMethod::kStream;
    return AssignByStream(std::move(result), dataset, options);
  }
  if (!graph.ok()) return graph.status();

  // Balance constraints, interleaved per node as METIS wants: one per node,
  // one per train node, the node's adjacency entries. A constraint that is
  // zero everywhere would make METIS divide by zero: drop it.
  std::vector<char> is_train(n, 0);
  int64_t num_train = 0;
  if (const auto* split = TrainSplit(dataset)) {
    for (NodeId v : *split) {
      num_train += is_train[v] ? 0 : 1;
      is_train[v] = 1;
    }
  }
  const int64_t num_entries = dataset.indptr[n];
  if (num_entries > options.metis_index_limit) {
    return absl::OutOfRangeError(absl::StrCat(
        num_entries, " adjacency entries overflow METIS's vertex weights"));
  }
  const bool use_train = num_train > 0;
  const bool use_degree = num_entries > 0;
  // A typed graph balances each node type's nodes (one constraint per
  // non-empty type) instead of all nodes together.
  const DatasetManifest& manifest = dataset.manifest;
  std::vector<int64_t> type_end;  // Typed: the end of each type's IDs.
  std::vector<int> type_slot;     // Its constraint.
  int node_constraints = 1;
  if (manifest.typed()) {
    node_constraints = 0;
    int64_t end = 0;
    for (const NodeType& t : manifest.node_types) {
      end += t.count;
      type_end.push_back(end);
      type_slot.push_back(t.count > 0 ? node_constraints++ : -1);
    }
  }
  idx_t ncon = node_constraints + (use_train ? 1 : 0) + (use_degree ? 1 : 0);
  std::vector<idx_t> vwgt(static_cast<size_t>(n) * ncon);
  size_t type = 0;
  for (int64_t v = 0; v < n; ++v) {
    idx_t* w = vwgt.data() + v * ncon;
    if (type_end.empty()) {
      *w++ = 1;
    } else {
      while (v >= type_end[type]) ++type;
      w[type_slot[type]] = 1;  // The others stay 0.
      w += node_constraints;
    }
    if (use_train) *w++ = is_train[v];
    if (use_degree) {
      *w++ = static_cast<idx_t>(dataset.indptr[v + 1] - dataset.indptr[v]);
    }
  }
  is_train = {};

  if (graph_built) graph_built();
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t nparts = k;
  idx_t objval = 0;
  std::vector<real_t> ubvec(ncon,
                            static_cast<real_t>(options.imbalance_tolerance));
  idx_t metis_options[METIS_NOPTIONS];
  int rc = METIS_SetDefaultOptions(metis_options);
  if (rc != METIS_OK) return MetisError(rc);
  metis_options[METIS_OPTION_SEED] =
      static_cast<idx_t>(options.seed & 0x7fffffff);
  metis_options[METIS_OPTION_NUMBERING] = 0;
  std::vector<int32_t> part(n);
  start = std::chrono::steady_clock::now();
  const std::string what =
      absl::StrCat("metis k-way (", k, " parts, ", ncon, " constraints)");
  Progress progress(what, n, "nodes");
  std::string metis_said;
  {
    // METIS reports nothing until it returns, which takes minutes on large
    // graphs: say it is still running.
    ProgressOptions every_few_seconds;
    every_few_seconds.interval_seconds = 5;
    StageHeartbeat heartbeat(absl::StrCat("partition: ", what, " running"),
                             every_few_seconds);
    StdoutCapture capture;
    rc = METIS_PartGraphKway(
        &nvtxs, &ncon, graph->xadj.data(), graph->adjncy.data(), vwgt.data(),
        /*vsize=*/nullptr, /*adjwgt=*/nullptr, &nparts,
        /*tpwgts=*/nullptr, ubvec.data(), metis_options, &objval, part.data());
    metis_said = MetisSaid(capture.Take());
  }
  if (rc != METIS_OK) {
    return Annotate(
        MetisError(rc),
        absl::StrCat("partitioning ", n, " nodes into ", k, " parts",
                     metis_said.empty() ? "" : ": METIS says ", metis_said));
  }
  progress.Update(n);
  progress.Done();
  result.assign_seconds = SecondsSince(start);
  for (int64_t v = 0; v < n; ++v) {
    if (part[v] < 0 || part[v] >= k) {
      return absl::InternalError(absl::StrCat("METIS assigned node ", v,
                                              " to part ", part[v], " of ", k));
    }
  }
  const int64_t empty = EmptyParts(part, k);
  if (empty > 0) {
    // A part without nodes serves nothing and trains nothing; the random
    // assignment fills every part (k <= n).
    return FallBackToRandom(
        std::move(result), dataset, options,
        absl::StrCat("METIS left ", empty, " of ", k, " parts empty (", n,
                     " nodes are too few for ", k,
                     " parts; fewer parts keep METIS's "
                     "locality",
                     metis_said.empty()
                         ? ""
                         : absl::StrCat("; METIS says: ", metis_said),
                     ")"));
  }
  result.part = std::move(part);
  return result;
}

}  // namespace shardgnn::partition_internal
