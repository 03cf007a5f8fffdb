#include "datasets/internal/csr_builder.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "common/file_util.h"
#include "common/npy.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"

namespace shardgnn::datasets_internal {
namespace {

struct RowStats {
  int64_t removed = 0;       // Duplicate entries removed, self-loops excluded.
  int64_t removed_self = 0;  // Duplicate self-loop entries removed.
};

// Sorts and dedupes rows [begin, end); new row lengths go to new_degree.
RowStats SortRows(const std::vector<int64_t>& indptr,
                  std::vector<NodeId>& indices, int64_t begin, int64_t end,
                  std::vector<int64_t>& new_degree) {
  RowStats stats;
  for (int64_t v = begin; v < end; ++v) {
    NodeId* first = indices.data() + indptr[v];
    NodeId* last = indices.data() + indptr[v + 1];
    std::sort(first, last);
    NodeId* out = first;
    for (NodeId* p = first; p != last; ++p) {
      if (out != first && *p == out[-1]) {
        if (*p == v) {
          ++stats.removed_self;
        } else {
          ++stats.removed;
        }
        continue;
      }
      *out++ = *p;
    }
    new_degree[v] = out - first;
  }
  return stats;
}

// SortRows keeping each entry's origin with it: rows sorted by (neighbor,
// origin), so the first input edge of duplicates is the one kept.
RowStats SortRowsWithOrigins(const std::vector<int64_t>& indptr,
                             std::vector<NodeId>& indices,
                             std::vector<int64_t>& origins, int64_t begin,
                             int64_t end, std::vector<int64_t>& new_degree) {
  RowStats stats;
  std::vector<std::pair<NodeId, int64_t>> row;
  for (int64_t v = begin; v < end; ++v) {
    const int64_t first = indptr[v], last = indptr[v + 1];
    row.clear();
    for (int64_t e = first; e < last; ++e)
      row.emplace_back(indices[e], origins[e]);
    std::sort(row.begin(), row.end());
    int64_t out = first;
    for (size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first) {
        if (row[k].first == v) {
          ++stats.removed_self;
        } else {
          ++stats.removed;
        }
        continue;
      }
      indices[out] = row[k].first;
      origins[out] = row[k].second;
      ++out;
    }
    new_degree[v] = out - first;
  }
  return stats;
}

// Counts, over rows [begin, end) of a sorted CSR, the entries u != v and
// those whose reverse entry (v in row u) exists.
void CountReciprocated(const std::vector<int64_t>& indptr,
                       const std::vector<NodeId>& indices, int64_t begin,
                       int64_t end, int64_t* non_loop, int64_t* reciprocated) {
  for (int64_t v = begin; v < end; ++v) {
    for (int64_t i = indptr[v]; i < indptr[v + 1]; ++i) {
      const NodeId u = indices[i];
      if (u == v) continue;
      ++*non_loop;
      *reciprocated += std::binary_search(indices.begin() + indptr[u],
                                          indices.begin() + indptr[u + 1], v);
    }
  }
}

}  // namespace

absl::StatusOr<CsrResult> WriteCsr(int64_t num_nodes, std::vector<NodeId> src,
                                   std::vector<NodeId> dst,
                                   const CsrOptions& options,
                                   const std::string& dir,
                                   std::vector<int64_t>* origins) {
  CsrResult result;
  const int64_t n = num_nodes;
  const size_t m = src.size();
  // Counting, filling and sorting are three passes over the edges.
  Progress progress(options.progress_task, static_cast<int64_t>(3 * m),
                    "edge passes");
  std::vector<int64_t> indptr(n + 1, 0);
  // A progress check per 64k edges costs nothing next to the pass.
  constexpr size_t kCheckEvery = size_t{1} << 16;
  for (size_t i = 0; i < m; ++i) {
    if (i % kCheckEvery == 0) progress.Update(static_cast<int64_t>(i));
    NodeId s = src[i], d = dst[i];
    if (s == d) {
      if (options.keep_self_loops) ++indptr[d + 1];
      continue;
    }
    ++indptr[d + 1];
    if (options.undirected) ++indptr[s + 1];
  }
  for (int64_t v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
  progress.Update(static_cast<int64_t>(m));
  std::vector<NodeId> indices(indptr[n]);
  std::vector<int64_t> origin;
  if (origins != nullptr) origin.resize(indices.size());
  {
    std::vector<int64_t> cursor(indptr.begin(), indptr.end() - 1);
    for (size_t i = 0; i < m; ++i) {
      if (i % kCheckEvery == 0) progress.Update(static_cast<int64_t>(m + i));
      NodeId s = src[i], d = dst[i];
      const auto edge = static_cast<int64_t>(i);
      if (s == d) {
        if (options.keep_self_loops) {
          if (origins != nullptr) origin[cursor[d]] = edge;
          indices[cursor[d]++] = s;
        } else {
          ++result.self_loops_dropped;
        }
        continue;
      }
      if (origins != nullptr) origin[cursor[d]] = edge;
      indices[cursor[d]++] = s;
      if (options.undirected) {
        if (origins != nullptr) origin[cursor[s]] = edge;
        indices[cursor[s]++] = d;
      }
    }
  }
  std::vector<NodeId>().swap(src);
  std::vector<NodeId>().swap(dst);
  progress.Update(static_cast<int64_t>(2 * m));

  // Sort and dedupe rows in `threads` contiguous ranges of about equal
  // entries; then compact in place.
  std::vector<int64_t> new_degree(n, 0);
  int threads = std::max(1, options.threads);
  std::vector<int64_t> bounds = {0};
  for (int t = 1; t < threads; ++t) {
    int64_t target = indptr[n] * t / threads;
    bounds.push_back(std::lower_bound(indptr.begin(), indptr.end(), target) -
                     indptr.begin());
    bounds.back() = std::min(bounds.back(), n);
  }
  bounds.push_back(n);
  std::vector<RowStats> stats(threads);
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      stats[t] =
          origins != nullptr
              ? SortRowsWithOrigins(indptr, indices, origin, bounds[t],
                                    bounds[t + 1], new_degree)
              : SortRows(indptr, indices, bounds[t], bounds[t + 1], new_degree);
    });
  }
  stats[0] = origins != nullptr
                 ? SortRowsWithOrigins(indptr, indices, origin, bounds[0],
                                       bounds[1], new_degree)
                 : SortRows(indptr, indices, bounds[0], bounds[1], new_degree);
  for (std::thread& w : workers) w.join();
  RowStats total;
  for (const RowStats& s : stats) {
    total.removed += s.removed;
    total.removed_self += s.removed_self;
  }
  // Compact: rows only shrink, so moving left never overwrites unread data.
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t begin = indptr[v];
    indptr[v] = out;
    if (out != begin) {
      std::copy(indices.begin() + begin,
                indices.begin() + begin + new_degree[v], indices.begin() + out);
      if (origins != nullptr) {
        std::copy(origin.begin() + begin,
                  origin.begin() + begin + new_degree[v], origin.begin() + out);
      }
    }
    out += new_degree[v];
    result.max_degree = std::max(result.max_degree, new_degree[v]);
  }
  indptr[n] = out;
  indices.resize(out);
  if (origins != nullptr) {
    origin.resize(out);
    *origins = std::move(origin);
  }
  result.num_edges = out;
  result.without_neighbors.assign(n, false);
  for (int64_t v = 0; v < n; ++v) {
    if (new_degree[v] == 0) {
      result.without_neighbors[v] = true;
      ++result.nodes_without_neighbors;
    }
  }
  if (options.undirected) {
    // Every edge was stored both ways: only self-loops lack a partner.
    int64_t loops = 0;
    for (int64_t v = 0; v < n; ++v) {
      loops += std::binary_search(indices.begin() + indptr[v],
                                  indices.begin() + indptr[v + 1], v);
    }
    result.non_loop_edges = out - loops;
    result.reciprocated_edges = result.non_loop_edges;
  } else {
    // A binary search per entry, in the same row ranges as the sort (the
    // compaction moved rows, so recompute the ranges on the final offsets).
    std::vector<int64_t> non_loop(threads, 0), reciprocated(threads, 0);
    std::vector<int64_t> row_bounds = {0};
    for (int t = 1; t < threads; ++t) {
      int64_t target = out * t / threads;
      row_bounds.push_back(std::min<int64_t>(
          n, std::lower_bound(indptr.begin(), indptr.end(), target) -
                 indptr.begin()));
    }
    row_bounds.push_back(n);
    std::vector<std::thread> counters;
    for (int t = 1; t < threads; ++t) {
      counters.emplace_back([&, t] {
        CountReciprocated(indptr, indices, row_bounds[t], row_bounds[t + 1],
                          &non_loop[t], &reciprocated[t]);
      });
    }
    CountReciprocated(indptr, indices, row_bounds[0], row_bounds[1],
                      &non_loop[0], &reciprocated[0]);
    for (std::thread& c : counters) c.join();
    for (int t = 0; t < threads; ++t) {
      result.non_loop_edges += non_loop[t];
      result.reciprocated_edges += reciprocated[t];
    }
  }
  result.duplicate_edges_dropped =
      (options.undirected ? total.removed / 2 : total.removed) +
      total.removed_self;
  progress.Update(static_cast<int64_t>(3 * m));

  RETURN_IF_ERROR(
      WriteNpy<int64_t>(JoinPath(dir, kIndptrFile), {n + 1}, indptr));
  RETURN_IF_ERROR(
      WriteNpy<NodeId>(JoinPath(dir, kIndicesFile), {out}, indices));
  progress.Done();
  return result;
}

}  // namespace shardgnn::datasets_internal
