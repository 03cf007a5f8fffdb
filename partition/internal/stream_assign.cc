#include "partition/internal/stream_assign.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/progress.h"

namespace shardgnn::partition_internal {
namespace {

constexpr int64_t kPrefetchRows = 16;

// Each node's weight in each balance constraint: one node constraint (or
// one per non-empty node type), then train nodes and adjacency entries when
// the graph has any.
class Constraints {
 public:
  explicit Constraints(const Dataset& d) : indptr_(d.indptr) {
    const int64_t n = d.num_nodes();
    if (d.manifest.typed()) {
      int64_t end = 0;
      for (const NodeType& t : d.manifest.node_types) {
        end += t.count;
        type_end_.push_back(end);
        type_slot_.push_back(t.count > 0 ? count_++ : -1);
      }
    } else {
      count_ = 1;
    }
    auto it = d.splits.find("train");
    if (it != d.splits.end() && !it->second.empty()) {
      is_train_.assign(static_cast<size_t>(n), 0);
      for (NodeId v : it->second) is_train_[static_cast<size_t>(v)] = 1;
      train_slot_ = count_++;
    }
    if (d.indptr[static_cast<size_t>(n)] > 0) degree_slot_ = count_++;
    totals_.assign(static_cast<size_t>(count_), 0);
    for (int64_t v = 0; v < n; ++v) {
      Weights(v, [&](int c, int64_t w) { totals_[c] += w; });
    }
  }

  int count() const { return count_; }
  const std::vector<int64_t>& totals() const { return totals_; }

  // Calls f(constraint, weight) for each nonzero weight of node v, in
  // increasing constraint order.
  template <typename F>
  void Weights(int64_t v, F&& f) const {
    if (type_end_.empty()) {
      f(0, 1);
    } else {
      const size_t type =
          std::upper_bound(type_end_.begin(), type_end_.end(), v) -
          type_end_.begin();
      f(type_slot_[type], 1);
    }
    if (train_slot_ >= 0 && is_train_[static_cast<size_t>(v)]) {
      f(train_slot_, 1);
    }
    const int64_t degree = indptr_[v + 1] - indptr_[v];
    if (degree_slot_ >= 0 && degree > 0) f(degree_slot_, degree);
  }

 private:
  const std::vector<int64_t>& indptr_;
  std::vector<int64_t> type_end_;
  std::vector<int> type_slot_;
  std::vector<char> is_train_;
  int train_slot_ = -1;
  int degree_slot_ = -1;
  int count_ = 0;
  std::vector<int64_t> totals_;
};

// Breadth-first order over the rows, each search starting from the lowest
// node not yet reached.
std::vector<NodeId> BreadthFirstOrder(const Dataset& d) {
  const int64_t n = d.num_nodes();
  std::vector<NodeId> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<char> reached(static_cast<size_t>(n), 0);
  for (NodeId root = 0; root < n; ++root) {
    if (reached[root]) continue;
    reached[root] = 1;
    size_t head = order.size();
    order.push_back(root);
    while (head < order.size()) {
      const NodeId v = order[head++];
      for (int64_t e = d.indptr[v]; e < d.indptr[v + 1]; ++e) {
        const NodeId u = d.indices[e];
        if (!reached[u]) {
          reached[u] = 1;
          order.push_back(u);
        }
      }
    }
  }
  return order;
}

int64_t EdgeCut(const Dataset& d, const std::vector<int32_t>& part) {
  int64_t cut = 0;
  const int64_t n = d.num_nodes();
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t e = d.indptr[v]; e < d.indptr[v + 1]; ++e) {
      cut += part[static_cast<size_t>(d.indices[e])] != part[v] ? 1 : 0;
    }
  }
  return cut;
}

// Moves nodes out of parts over a cap while that lowers the total overload
// (the sum over parts and constraints of load past the cap, as a fraction of
// the cap): a node of an overloaded part that weighs on a constraint over
// its cap goes to the part with most of its neighbors among those where the
// move lowers the total. So a part over its node cap can hand light nodes to
// one over its edge cap, which hands back heavy ones, where no single move
// fits under every cap. The first sweep takes only moves that cut no more
// edges than they save; later sweeps take any. Returns the nodes moved.
int64_t RepairBalance(const Dataset& d, const Constraints& constraints,
                      const std::vector<double>& cap, int k,
                      std::vector<int32_t>* part) {
  const int64_t n = d.num_nodes();
  const int nc = constraints.count();
  std::vector<int64_t> load(static_cast<size_t>(k) * nc, 0);
  for (int64_t v = 0; v < n; ++v) {
    constraints.Weights(v, [&](int c, int64_t w) {
      load[static_cast<size_t>((*part)[v]) * nc + c] += w;
    });
  }
  auto overload = [&](int c, int64_t l) {
    return std::max(0.0, static_cast<double>(l) - cap[c]) / cap[c];
  };
  std::vector<int64_t> neighbors(k, 0);
  std::vector<std::pair<int, int64_t>> weights;
  int64_t moved = 0;
  for (int sweep = 0; sweep < 4; ++sweep) {
    int64_t moved_now = 0;
    for (int64_t v = 0; v < n; ++v) {
      const int p = (*part)[v];
      const int64_t* lp = load.data() + static_cast<size_t>(p) * nc;
      weights.clear();
      double relief = 0;  // What leaving p takes off the total.
      constraints.Weights(v, [&](int c, int64_t w) {
        weights.emplace_back(c, w);
        relief += overload(c, lp[c]) - overload(c, lp[c] - w);
      });
      if (relief <= 0) continue;
      std::fill(neighbors.begin(), neighbors.end(), 0);
      for (int64_t e = d.indptr[v]; e < d.indptr[v + 1]; ++e) {
        ++neighbors[(*part)[d.indices[e]]];
      }
      int best = -1;
      for (int q = 0; q < k; ++q) {
        if (q == p) continue;
        const int64_t* lq = load.data() + static_cast<size_t>(q) * nc;
        double added = 0;
        for (const auto& [c, w] : weights) {
          added += overload(c, lq[c] + w) - overload(c, lq[c]);
        }
        if (added >= relief * (1 - 1e-9)) continue;
        if (best < 0 || neighbors[q] > neighbors[best]) best = q;
      }
      if (best < 0 || (sweep == 0 && neighbors[best] < neighbors[p])) {
        continue;
      }
      for (const auto& [c, w] : weights) {
        load[static_cast<size_t>(p) * nc + c] -= w;
        load[static_cast<size_t>(best) * nc + c] += w;
      }
      (*part)[v] = best;
      ++moved_now;
    }
    moved += moved_now;
    if (moved_now == 0 && sweep > 0) break;
  }
  return moved;
}

}  // namespace

std::vector<int32_t> StreamAssignment(const Dataset& dataset,
                                      const StreamAssignOptions& options,
                                      StreamAssignStats* stats) {
  const int64_t n = dataset.num_nodes();
  const int k = options.num_parts;
  std::vector<int32_t> part(static_cast<size_t>(n), -1);
  if (k == 1) {
    std::fill(part.begin(), part.end(), 0);
    return part;
  }
  const Constraints constraints(dataset);
  const int nc = constraints.count();
  const std::vector<int64_t>& totals = constraints.totals();
  // Per constraint: one part's cap, and the factor that turns a load into
  // nodes (n / total), so that x_p is in nodes.
  std::vector<double> cap(nc), to_nodes(nc);
  for (int c = 0; c < nc; ++c) {
    cap[c] = options.tolerance * static_cast<double>(totals[c]) / k;
    to_nodes[c] = totals[c] > 0 ? static_cast<double>(n) / totals[c] : 0;
  }
  const double m = static_cast<double>(dataset.indptr[n]) / 2;
  const double gamma = 1.5;
  const double alpha = std::sqrt(static_cast<double>(k)) * m /
                       std::pow(static_cast<double>(n), gamma);
  // Times x^(gamma - 1) = sqrt(x).
  const double penalty = kStreamPenaltyScale * alpha * gamma;

  const std::vector<NodeId> order = BreadthFirstOrder(dataset);
  std::vector<int32_t> best_part;
  int64_t best_cut = std::numeric_limits<int64_t>::max();
  int passes_without_gain = 0;
  std::vector<int64_t> load(static_cast<size_t>(k) * nc);
  std::vector<double> size(k);  // x_p, in nodes.
  std::vector<int64_t> neighbors(k, 0);
  std::vector<int32_t> touched;
  std::vector<std::pair<int, int64_t>> weights;
  for (int pass = 0; pass < options.passes; ++pass) {
    std::fill(load.begin(), load.end(), 0);
    std::fill(size.begin(), size.end(), 0.0);
    Progress progress(
        absl::StrCat("stream pass ", pass + 1, "/", options.passes,
                     pass == 0
                         ? ""
                         : absl::StrFormat(
                               " (cut %.2f%% of the edges)",
                               100.0 * best_cut /
                                   std::max<int64_t>(1, dataset.num_edges()))),
        n, "nodes");
    for (int64_t i = 0; i < n; ++i) {
      const NodeId v = order[static_cast<size_t>(i)];
      // The rows come in breadth-first order, not in memory order: ask for
      // the ones a few nodes ahead now.
      if (i + kPrefetchRows < n) {
        const NodeId ahead = order[static_cast<size_t>(i + kPrefetchRows)];
        __builtin_prefetch(&dataset.indptr[ahead]);
        if (i + kPrefetchRows / 2 < n) {
          const NodeId next = order[static_cast<size_t>(i + kPrefetchRows / 2)];
          __builtin_prefetch(&dataset.indices[dataset.indptr[next]]);
        }
      }
      for (int64_t e = dataset.indptr[v]; e < dataset.indptr[v + 1]; ++e) {
        const NodeId u = dataset.indices[e];
        if (u == v) continue;
        const int32_t p = part[static_cast<size_t>(u)];
        if (p < 0) continue;
        if (neighbors[p]++ == 0) touched.push_back(p);
      }
      weights.clear();
      constraints.Weights(
          v, [&](int c, int64_t w) { weights.emplace_back(c, w); });
      int best = -1;
      double best_score = -std::numeric_limits<double>::infinity();
      for (int p = 0; p < k; ++p) {
        const int64_t* l = load.data() + static_cast<size_t>(p) * nc;
        bool fits = true;
        for (const auto& [c, w] : weights) {
          if (static_cast<double>(l[c] + w) > cap[c]) fits = false;
        }
        if (!fits) continue;
        const double score = neighbors[p] - penalty * std::sqrt(size[p]);
        if (score > best_score) {
          best_score = score;
          best = p;
        }
      }
      if (best < 0) {
        // Nowhere under the caps: the part whose fullest constraint would be
        // the least full.
        double least = std::numeric_limits<double>::infinity();
        for (int p = 0; p < k; ++p) {
          const int64_t* l = load.data() + static_cast<size_t>(p) * nc;
          double fullest = 0;
          for (const auto& [c, w] : weights) {
            fullest = std::max(fullest, (l[c] + w) / cap[c]);
          }
          if (fullest < least) {
            least = fullest;
            best = p;
          }
        }
      }
      part[static_cast<size_t>(v)] = best;
      int64_t* l = load.data() + static_cast<size_t>(best) * nc;
      for (const auto& [c, w] : weights) l[c] += w;
      for (int c = 0; c < nc; ++c) {
        size[best] = std::max(size[best], l[c] * to_nodes[c]);
      }
      for (int32_t p : touched) neighbors[p] = 0;
      touched.clear();
      if ((i & 0xffff) == 0) progress.Update(i);
    }
    progress.Update(n);
    progress.Done();
    const int64_t cut = EdgeCut(dataset, part);
    if (stats != nullptr) stats->cut_after_pass.push_back(cut);
    // A pass gains when it cuts at least 0.1% fewer edges than the best so
    // far; two passes in a row without gain end the refinement.
    const bool gain = cut < best_cut - best_cut / 1000;
    if (cut < best_cut) {
      best_cut = cut;
      best_part = part;
      if (stats != nullptr) stats->best_pass = pass;
    }
    passes_without_gain = gain ? 0 : passes_without_gain + 1;
    if (passes_without_gain == 2) break;
  }
  const int64_t moved = RepairBalance(dataset, constraints, cap, k, &best_part);
  if (stats != nullptr) {
    stats->balance_moves = moved;
    stats->cut_after_repair =
        moved > 0 ? EdgeCut(dataset, best_part) : best_cut;
  }
  return best_part;
}

}  // namespace shardgnn::partition_internal
