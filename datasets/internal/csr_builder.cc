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

}  // namespace

absl::StatusOr<CsrResult> WriteCsr(int64_t num_nodes, std::vector<NodeId> src,
                                   std::vector<NodeId> dst,
                                   const CsrOptions& options,
                                   const std::string& dir) {
  CsrResult result;
  const int64_t n = num_nodes;
  const size_t m = src.size();
  // Counting, filling and sorting are three passes over the edges.
  Progress progress(options.progress_task, static_cast<int64_t>(3 * m),
                    "edge passes");
  std::vector<int64_t> indptr(n + 1, 0);
  for (size_t i = 0; i < m; ++i) {
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
  {
    std::vector<int64_t> cursor(indptr.begin(), indptr.end() - 1);
    for (size_t i = 0; i < m; ++i) {
      NodeId s = src[i], d = dst[i];
      if (s == d) {
        if (options.keep_self_loops) {
          indices[cursor[d]++] = s;
        } else {
          ++result.self_loops_dropped;
        }
        continue;
      }
      indices[cursor[d]++] = s;
      if (options.undirected) indices[cursor[s]++] = d;
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
          SortRows(indptr, indices, bounds[t], bounds[t + 1], new_degree);
    });
  }
  stats[0] = SortRows(indptr, indices, bounds[0], bounds[1], new_degree);
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
    }
    out += new_degree[v];
    result.max_degree = std::max(result.max_degree, new_degree[v]);
  }
  indptr[n] = out;
  indices.resize(out);
  result.num_edges = out;
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
