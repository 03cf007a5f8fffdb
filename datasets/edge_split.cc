#include "datasets/edge_split.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/sampling.h"
#include "common/status.h"

namespace shardgnn {
namespace {

uint64_t PairKey(NodeId u, NodeId v, int64_t n) {
  return static_cast<uint64_t>(u) * static_cast<uint64_t>(n) +
         static_cast<uint64_t>(v);
}

// Appends `want` negatives for split `name` to *negatives: uniform pairs
// that are no edge (in either direction when undirected), no self loop, not
// in *drawn (which records them).
absl::Status DrawNegatives(const std::unordered_set<uint64_t>& edges, int64_t n,
                           bool undirected, int64_t want,
                           const std::string& name, uint64_t* state,
                           std::unordered_set<uint64_t>* drawn,
                           std::vector<NodeId>* negatives) {
  const int64_t max_draws = 100 * want + 1000;
  int64_t draws = 0;
  for (int64_t found = 0; found < want;) {
    if (++draws > max_draws) {
      return absl::FailedPreconditionError(
          absl::StrCat("the graph is too dense to draw ", want, " ", name,
                       " negative pairs (", draws - 1, " draws)"));
    }
    NodeId u = static_cast<NodeId>(UniformBelow(state, n));
    NodeId v = static_cast<NodeId>(UniformBelow(state, n));
    if (u == v) continue;
    if (undirected && u > v) std::swap(u, v);
    if (edges.count(PairKey(u, v, n)) ||
        (undirected && edges.count(PairKey(v, u, n))) ||
        !drawn->insert(PairKey(u, v, n)).second) {
      continue;
    }
    negatives->push_back(u);
    negatives->push_back(v);
    ++found;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EdgeSplitOptions> ParseEdgeSplit(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ',');
  EdgeSplitOptions options;
  double* fields[3] = {&options.train, &options.valid, &options.test};
  bool ok = parts.size() == 3;
  double sum = 0;
  for (size_t i = 0; ok && i < 3; ++i) {
    ok = absl::SimpleAtod(parts[i], fields[i]) && std::isfinite(*fields[i]) &&
         *fields[i] >= 0;
    sum += *fields[i];
  }
  if (!ok || std::fabs(sum - 1.0) > 1e-6 || !(options.train > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "edge split '", text,
        "' is not TRAIN,VALID,TEST: three fractions summing to 1, train "
        "above 0 (e.g. 0.85,0.05,0.10)"));
  }
  return options;
}

absl::StatusOr<EdgeSplitSummary> SplitEdges(const EdgeSplitOptions& options,
                                            Dataset* dataset) {
  if (!dataset->edge_splits.empty()) {
    return absl::FailedPreconditionError(
        "the dataset's edges are split already");
  }
  const int64_t n = dataset->num_nodes();
  const bool undirected = !dataset->manifest.directed;
  EdgeSplitSummary summary;
  // Candidates: (u, v) with u in row v (u's message reaches v); undirected:
  // each {u, v} once, as u < v.
  std::vector<std::pair<NodeId, NodeId>> candidates;
  std::vector<std::pair<NodeId, NodeId>> self_loops;
  std::unordered_set<uint64_t> edges;  // Every edge of the whole graph.
  for (NodeId v = 0; v < n; ++v) {
    for (int64_t e = dataset->indptr[v]; e < dataset->indptr[v + 1]; ++e) {
      const NodeId u = dataset->indices[e];
      edges.insert(PairKey(u, v, n));
      if (u == v) {
        self_loops.emplace_back(u, v);
      } else if (!undirected || u < v) {
        candidates.emplace_back(u, v);
      }
    }
  }
  summary.candidates = static_cast<int64_t>(candidates.size());
  summary.self_loops_kept = static_cast<int64_t>(self_loops.size());
  const auto m = static_cast<int64_t>(candidates.size());
  summary.valid = static_cast<int64_t>(std::floor(options.valid * m));
  summary.test = static_cast<int64_t>(std::floor(options.test * m));
  summary.train = m - summary.valid - summary.test;
  if (summary.train < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the edge split ", options.train, ",", options.valid, ",",
                     options.test, " of ", m, " edges leaves no train edge"));
  }
  // A seeded Fisher-Yates shuffle (the same on every platform).
  uint64_t state = MixSeed(options.seed, 0x5ed9e5);
  for (int64_t i = m - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(
        UniformBelow(&state, static_cast<uint64_t>(i + 1)));
    std::swap(candidates[static_cast<size_t>(i)],
              candidates[static_cast<size_t>(j)]);
  }
  auto flatten = [&](int64_t begin, int64_t end) {
    std::vector<NodeId> out;
    out.reserve(static_cast<size_t>(2 * (end - begin)));
    for (int64_t i = begin; i < end; ++i) {
      out.push_back(candidates[static_cast<size_t>(i)].first);
      out.push_back(candidates[static_cast<size_t>(i)].second);
    }
    return out;
  };
  std::map<std::string, std::vector<NodeId>> splits;
  splits["valid"] = flatten(0, summary.valid);
  splits["test"] = flatten(summary.valid, summary.valid + summary.test);
  splits["train"] = flatten(summary.valid + summary.test, m);
  std::unordered_set<uint64_t> drawn;
  for (const char* name : {"valid", "test"}) {
    RETURN_IF_ERROR(DrawNegatives(
        edges, n, undirected, static_cast<int64_t>(splits[name].size() / 2),
        name, &state, &drawn, &splits[absl::StrCat(name, "_neg")]));
  }
  // The graph messages pass over: train edges (both directions when
  // undirected) and the self loops.
  std::vector<std::vector<NodeId>> rows(static_cast<size_t>(n));
  for (int64_t i = summary.valid + summary.test; i < m; ++i) {
    const auto [u, v] = candidates[static_cast<size_t>(i)];
    rows[static_cast<size_t>(v)].push_back(u);
    if (undirected) rows[static_cast<size_t>(u)].push_back(v);
  }
  for (const auto& [u, v] : self_loops)
    rows[static_cast<size_t>(v)].push_back(u);
  std::vector<int64_t> indptr(static_cast<size_t>(n) + 1, 0);
  std::vector<NodeId> indices;
  indices.reserve(dataset->indices.size());
  for (int64_t v = 0; v < n; ++v) {
    std::vector<NodeId>& row = rows[static_cast<size_t>(v)];
    std::sort(row.begin(), row.end());
    indices.insert(indices.end(), row.begin(), row.end());
    summary.nodes_without_neighbors += row.empty();
    indptr[static_cast<size_t>(v) + 1] = static_cast<int64_t>(indices.size());
    std::vector<NodeId>().swap(row);
  }
  dataset->indptr = std::move(indptr);
  dataset->indices = std::move(indices);
  dataset->edge_splits = std::move(splits);
  absl::StrAppend(&dataset->manifest.source,
                  dataset->manifest.source.empty() ? "" : "; ", "edges split ",
                  options.train, "/", options.valid, "/", options.test,
                  " with seed ", options.seed,
                  " (valid and test edges removed from the graph)");
  return summary;
}

absl::StatusOr<EdgeSplitSummary> ApplyGivenEdgeSplit(
    const GivenEdgeSplit& given, uint64_t seed, Dataset* dataset) {
  if (!dataset->edge_splits.empty()) {
    return absl::FailedPreconditionError(
        "the dataset's edges are split already");
  }
  const int64_t n = dataset->num_nodes();
  const bool undirected = !dataset->manifest.directed;
  static const char* const kNames[] = {"train", "valid", "test", "valid_neg",
                                       "test_neg"};
  for (const auto& [name, pairs] : given.pairs) {
    if (std::find(std::begin(kNames), std::end(kNames), name) ==
        std::end(kNames)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown edge split '", name,
                       "' (train, valid, test, valid_neg, test_neg)"));
    }
    if (pairs.size() % 2 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " holds an odd number of node IDs"));
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i] < 0 || pairs[i] >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " pair ", i / 2, " names node ", pairs[i],
                         ", outside [0, ", n, ")"));
      }
    }
  }
  for (const char* name : {"train", "valid", "test"}) {
    if (!given.pairs.count(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the given edge split has no ", name, " split"));
    }
  }
  EdgeSplitSummary summary;
  summary.train = static_cast<int64_t>(given.pairs.at("train").size() / 2);
  summary.valid = static_cast<int64_t>(given.pairs.at("valid").size() / 2);
  summary.test = static_cast<int64_t>(given.pairs.at("test").size() / 2);
  summary.candidates = summary.train + summary.valid + summary.test;
  if (summary.train < 1) {
    return absl::InvalidArgumentError("the given edge split has no train edge");
  }
  // Every edge of the graph before the split, and the targets to remove
  // (u's message reaches v: u in row v).
  std::unordered_set<uint64_t> edges;
  for (NodeId v = 0; v < n; ++v) {
    for (int64_t e = dataset->indptr[v]; e < dataset->indptr[v + 1]; ++e) {
      edges.insert(PairKey(dataset->indices[e], v, n));
    }
  }
  std::unordered_set<uint64_t> removed;
  for (const char* name : {"valid", "test"}) {
    const std::vector<NodeId>& pairs = given.pairs.at(name);
    for (size_t i = 0; i < pairs.size(); i += 2) {
      const NodeId u = pairs[i], v = pairs[i + 1];
      bool was_edge = false;
      for (const auto& [a, b] : {std::pair{u, v}, std::pair{v, u}}) {
        if ((a == u || undirected) && edges.count(PairKey(a, b, n)) &&
            removed.insert(PairKey(a, b, n)).second) {
          was_edge = true;
        }
      }
      summary.removed_from_graph += was_edge;
    }
  }
  // The graph's edges plus the targets: negatives are none of them.
  std::unordered_set<uint64_t> positives = edges;
  for (const char* name : {"train", "valid", "test"}) {
    const std::vector<NodeId>& pairs = given.pairs.at(name);
    for (size_t i = 0; i < pairs.size(); i += 2) {
      positives.insert(PairKey(pairs[i], pairs[i + 1], n));
    }
  }
  std::map<std::string, std::vector<NodeId>> splits = given.pairs;
  uint64_t state = MixSeed(seed, 0x9e6a7e);
  std::unordered_set<uint64_t> drawn;
  for (const char* name : {"valid", "test"}) {
    const std::string neg = absl::StrCat(name, "_neg");
    if (splits.count(neg)) continue;
    RETURN_IF_ERROR(DrawNegatives(positives, n, undirected,
                                  static_cast<int64_t>(splits[name].size() / 2),
                                  name, &state, &drawn, &splits[neg]));
  }
  std::vector<int64_t> indptr(static_cast<size_t>(n) + 1, 0);
  std::vector<NodeId> indices;
  indices.reserve(dataset->indices.size());
  for (NodeId v = 0; v < n; ++v) {
    for (int64_t e = dataset->indptr[v]; e < dataset->indptr[v + 1]; ++e) {
      const NodeId u = dataset->indices[e];
      if (!removed.count(PairKey(u, v, n))) indices.push_back(u);
    }
    summary.nodes_without_neighbors +=
        static_cast<int64_t>(indices.size()) == indptr[static_cast<size_t>(v)];
    indptr[static_cast<size_t>(v) + 1] = static_cast<int64_t>(indices.size());
  }
  dataset->indptr = std::move(indptr);
  dataset->indices = std::move(indices);
  dataset->edge_splits = std::move(splits);
  absl::StrAppend(&dataset->manifest.source,
                  dataset->manifest.source.empty() ? "" : "; ",
                  "edge split given (", summary.removed_from_graph,
                  " valid and test edges removed from the graph)");
  return summary;
}

absl::StatusOr<EdgeSplitSummary> SplitDatasetEdges(
    const std::string& in_dir, const EdgeSplitOptions& options,
    const std::string& out_dir) {
  ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(in_dir));
  ASSIGN_OR_RETURN(EdgeSplitSummary summary, SplitEdges(options, &dataset));
  RETURN_IF_ERROR(WriteDataset(dataset, out_dir));
  return summary;
}

absl::StatusOr<BuildSummary> BuildWithEdgeSplit(
    const EdgeSplitOptions& options, const std::string& out_dir,
    const std::function<absl::StatusOr<BuildSummary>(const std::string&)>&
        build,
    EdgeSplitSummary* split) {
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(out_dir, " already exists"));
  }
  const std::string whole =
      absl::StrCat(out_dir, ".before-edge-split-", ::getpid());
  absl::StatusOr<BuildSummary> built = build(whole);
  absl::StatusOr<EdgeSplitSummary> made =
      built.ok() ? SplitDatasetEdges(whole, options, out_dir)
                 : absl::StatusOr<EdgeSplitSummary>(built.status());
  std::filesystem::remove_all(whole, ec);
  RETURN_IF_ERROR(made.status());
  if (split != nullptr) *split = *made;
  BuildSummary summary = *std::move(built);
  summary.out_dir = out_dir;
  // Of the graph that remains.
  summary.nodes_without_neighbors = made->nodes_without_neighbors;
  summary.split_nodes_without_neighbors.clear();
  ASSIGN_OR_RETURN(summary.manifest, ReadDatasetManifest(out_dir));
  return summary;
}

std::string DescribeEdgeSplit(const EdgeSplitSummary& split, uint64_t seed) {
  return absl::StrCat(
      "edge split (seed ", seed, "): ", split.train, " train / ", split.valid,
      " valid / ", split.test, " test of ", split.candidates,
      " edges, as many negative pairs for valid and test; valid and test "
      "edges removed from the graph");
}

}  // namespace shardgnn
