#include "partition/partition.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "partition/internal/assign.h"
#include "partition/internal/relabel.h"
#include "partition/internal/run.h"
#include "partition/internal/write_shards.h"

namespace shardgnn {

const char* PartitionMethodName(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::kMetis:
      return "metis";
    case PartitionMethod::kRandom:
      return "random";
    case PartitionMethod::kStream:
      return "stream";
    case PartitionMethod::kPtScotch:
      return "ptscotch";
  }
  return "unknown";
}

absl::StatusOr<PartitionMethod> ParsePartitionMethod(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "metis") return PartitionMethod::kMetis;
  if (lower == "random") return PartitionMethod::kRandom;
  if (lower == "stream") return PartitionMethod::kStream;
  if (lower == "ptscotch") return PartitionMethod::kPtScotch;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown partition method '", name,
                   "' (expected metis, stream or random)"));
}

std::string PartitionTiming::ToJson() const {
  nlohmann::ordered_json j;
  j["load_seconds"] = load_seconds;
  j["symmetrize_seconds"] = symmetrize_seconds;
  j["assign_seconds"] = assign_seconds;
  j["relabel_seconds"] = relabel_seconds;
  j["write_seconds"] = write_seconds;
  j["total_seconds"] = total_seconds;
  j["peak_rss_after_load"] = peak_rss_after_load;
  j["peak_rss_after_assign"] = peak_rss_after_assign;
  j["peak_rss_after_write"] = peak_rss_after_write;
  return j.dump(2) + "\n";
}

absl::StatusOr<PartitionManifest> PartitionInMemory(
    const Dataset& dataset, const std::string& out_dir,
    const PartitionOptions& options, PartitionTiming* timing) {
  PartitionTiming local;
  if (timing == nullptr) timing = &local;
  *timing = {};
  timing->peak_rss_after_load = partition_internal::PeakRssBytes();
  return partition_internal::RunPartition(dataset, out_dir, options,
                                          /*hooks=*/{}, timing);
}

namespace partition_internal {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

template <typename T>
void HashArray(Checksum* sum, absl::string_view name,
               const std::vector<T>& data) {
  uint64_t size = data.size();
  sum->Update(name);
  sum->Update(&size, sizeof(size));
  sum->Update(data.data(), data.size() * sizeof(T));
}

std::string DatasetChecksum(const Dataset& d) {
  Checksum sum;
  int64_t dims[2] = {d.feature_dim(), d.manifest.num_classes};
  sum.Update(dims, sizeof(dims));
  HashArray(&sum, "indptr", d.indptr);
  HashArray(&sum, "indices", d.indices);
  HashArray(&sum, "features", d.features);
  HashArray(&sum, "labels", d.labels);
  for (const auto& [name, ids] : d.splits) HashArray(&sum, name, ids);
  if (d.manifest.typed()) {  // Untyped datasets' checksums stay as they were.
    HashArray(&sum, "edge_types", d.edge_types);
    for (size_t t = 0; t < d.type_features.size(); ++t) {
      HashArray(&sum, d.manifest.node_types[t].name, d.type_features[t]);
    }
  }
  return sum.Hex();
}

std::string PartitionId(const PartitionManifest& m,
                        const std::vector<NodeId>& orig_ids) {
  Checksum sum;
  sum.Update(absl::StrCat(kPartitionFormat, "/", kPartitionFormatVersion, "/",
                          m.dataset_checksum, "/", m.method, "/",
                          m.requested_method, "/", m.seed, "/", m.num_parts));
  HashArray(&sum, "node_ranges", m.node_ranges);
  HashArray(&sum, "orig_ids", orig_ids);
  return sum.Hex();
}

// kPtScotch: the caller's assignment, checked against the dataset.
absl::StatusOr<Assignment> GivenAssignment(const Dataset& dataset,
                                           const PartitionOptions& options) {
  const PrecomputedAssignment* given = options.precomputed.get();
  if (given == nullptr) {
    return absl::InvalidArgumentError(
        "method ptscotch partitions on MPI ranks: run `mpirun -np R shardgnn "
        "partition --distributed ...`");
  }
  const int64_t n = dataset.num_nodes();
  const int k = options.num_parts;
  if (static_cast<int64_t>(given->part.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("the given assignment has ", given->part.size(),
                     " entries for ", n, " nodes"));
  }
  std::vector<int64_t> sizes(static_cast<size_t>(k), 0);
  for (int64_t v = 0; v < n; ++v) {
    const int32_t p = given->part[v];
    if (p < 0 || p >= k) {
      return absl::InternalError(
          absl::StrCat("node ", v, " was assigned to part ", p, " of ", k));
    }
    ++sizes[p];
  }
  const int64_t empty = std::count(sizes.begin(), sizes.end(), 0);
  if (empty > 0) {
    return absl::InternalError(absl::StrCat("the assignment leaves ", empty,
                                            " of ", k, " parts empty (", n,
                                            " nodes)"));
  }
  Assignment result;
  result.method = PartitionMethod::kPtScotch;
  result.part = given->part;
  result.warnings = given->warnings;
  result.symmetrize_seconds = given->symmetrize_seconds;
  result.assign_seconds = given->assign_seconds;
  return result;
}

}  // namespace

int64_t PeakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux.
}

absl::Status CheckDatasetShape(const Dataset& d) {
  const int64_t n = d.num_nodes();
  if (n <= 0) return absl::InvalidArgumentError("the graph has no nodes");
  if (d.indptr[0] != 0 || d.indptr[n] != d.num_edges()) {
    return absl::InvalidArgumentError(
        absl::StrCat("indptr must run from 0 to ", d.num_edges(), " (got ",
                     d.indptr[0], " .. ", d.indptr[n], ")"));
  }
  for (int64_t v = 0; v < n; ++v) {
    if (d.indptr[v + 1] < d.indptr[v]) {
      return absl::InvalidArgumentError(
          absl::StrCat("indptr decreases at node ", v));
    }
  }
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    if (d.indices[e] < 0 || d.indices[e] >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices[", e, "] = ", d.indices[e], " is outside [0, ", n, ")"));
    }
  }
  if (d.feature_dim() < 0) {
    return absl::InvalidArgumentError("negative feature_dim");
  }
  const int64_t label_columns =
      d.manifest.multilabel ? d.manifest.num_classes : 1;
  if (!d.labels.empty() &&
      static_cast<int64_t>(d.labels.size()) != n * label_columns) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels has ", d.labels.size(), " entries for ", n,
                     " nodes of ", label_columns, " columns"));
  }
  if (d.manifest.typed()) {
    // Types, relations, rows sorted by relation, per-type features.
    RETURN_IF_ERROR(ValidateDataset(d));
  }
  for (const auto& [name, ids] : d.splits) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= n || (i > 0 && ids[i] <= ids[i - 1])) {
        return absl::InvalidArgumentError(
            absl::StrCat("split '", name, "': entry ", i, " (", ids[i],
                         ") is out of range or not strictly ascending"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PartitionManifest> RunPartition(const Dataset& dataset,
                                               const std::string& out_dir,
                                               const PartitionOptions& options,
                                               const PipelineHooks& hooks,
                                               PartitionTiming* timing) {
  auto start = std::chrono::steady_clock::now();
  // The caller's load came before `start`; the reload below is in both
  // load_seconds and the time since `start`, so count it once.
  const double loaded_before = timing->load_seconds;
  const int k = options.num_parts;
  RETURN_IF_ERROR(CheckDatasetShape(dataset));
  const int64_t n = dataset.num_nodes();
  if (k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parts must be at least 1 (got ", k, ")"));
  }
  if (k > n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--parts ", k, " is larger than the graph's ", n, " nodes"));
  }
  // Create the output first: an existing output fails before any work.
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(out_dir));

  ASSIGN_OR_RETURN(partition_internal::Assignment assignment,
                   options.method == PartitionMethod::kPtScotch
                       ? GivenAssignment(dataset, options)
                       : AssignParts(dataset, options, hooks.release_topology));
  timing->symmetrize_seconds = assignment.symmetrize_seconds;
  timing->assign_seconds = assignment.assign_seconds;
  timing->peak_rss_after_assign = PeakRssBytes();
  if (hooks.load_rest) {
    auto reload = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(hooks.load_rest());
    timing->load_seconds += SecondsSince(reload);
  }
  if (dataset.num_edges() != dataset.indptr[n] ||
      static_cast<int64_t>(dataset.features.size()) !=
          n * dataset.feature_dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices has ", dataset.num_edges(), " entries (expected ",
        dataset.indptr[n], ") and features ", dataset.features.size(),
        " values (expected ", n, " x ", dataset.feature_dim(), ")"));
  }

  auto stage = std::chrono::steady_clock::now();
  PartitionManifest m;
  m.dataset_name = dataset.manifest.name;
  m.num_nodes = n;
  m.num_edges = dataset.num_edges();
  m.directed = dataset.manifest.directed;
  m.feature_dim = dataset.feature_dim();
  m.num_classes = dataset.manifest.num_classes;
  for (const auto& [name, ids] : dataset.splits) {
    m.splits[name] = static_cast<int64_t>(ids.size());
  }
  m.num_parts = k;
  m.method = PartitionMethodName(assignment.method);
  m.requested_method = PartitionMethodName(options.method);
  m.seed = options.seed;
  m.warnings = assignment.warnings;
  const bool edge_features =
      dataset.manifest.edge_feature_dim > 0 ||
      std::any_of(dataset.manifest.edge_types.begin(),
                  dataset.manifest.edge_types.end(),
                  [](const EdgeType& r) { return r.feature_dim > 0; });
  if (edge_features) {
    m.warnings.push_back(
        "the dataset's edge features are not partitioned: the shards hold no "
        "edge features (--model gine reads them in one process: shardgnn "
        "train --dataset DIR --model gine)");
  }
  Relabeling relabeling = Relabel(assignment.part, k);
  SetTypeStarts(dataset.manifest, &relabeling);
  m.node_types = dataset.manifest.node_types;
  m.edge_types = dataset.manifest.edge_types;
  m.multilabel = dataset.manifest.multilabel;
  PartStats stats = ComputeStats(dataset, assignment.part, k);
  assignment.part = {};
  assignment.part.shrink_to_fit();
  m.node_ranges = relabeling.node_ranges;
  m.parts = std::move(stats.parts);
  for (size_t p = 0; p < relabeling.type_starts.size(); ++p)
    m.parts[p].type_starts = relabeling.type_starts[p];
  m.edge_cut = stats.edge_cut;
  m.edge_cut_fraction =
      m.num_edges > 0 ? static_cast<double>(m.edge_cut) / m.num_edges : 0.0;
  m.balance = std::move(stats.balance);
  const std::string orig_path = JoinPath(staging->path(), kOrigIdsFile);
  RETURN_IF_ERROR(WriteNpy(orig_path, {n}, relabeling.orig_ids));
  ASSIGN_OR_RETURN(m.orig_ids_checksum, ChecksumFile(orig_path));
  std::map<std::string, std::vector<NodeId>> new_splits =
      RelabelSplits(dataset, relabeling.new_ids);
  // Link prediction's edge splits, relabelled, beside the manifest.
  for (const auto& [name, pairs] : dataset.edge_splits) {
    std::vector<NodeId> relabelled(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i] < 0 || pairs[i] >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("edge split '", name, "': pair ", i / 2,
                         " names node ", pairs[i], ", outside the graph"));
      }
      relabelled[i] = relabeling.new_ids[static_cast<size_t>(pairs[i])];
    }
    const std::string path =
        JoinPath(staging->path(), absl::StrCat("edges_", name, ".npy"));
    RETURN_IF_ERROR(WriteNpy(path, {static_cast<int64_t>(pairs.size() / 2), 2},
                             relabelled));
    m.edge_splits[name] = static_cast<int64_t>(pairs.size() / 2);
    ASSIGN_OR_RETURN(m.edge_split_checksums[name], ChecksumFile(path));
  }
  timing->relabel_seconds = SecondsSince(stage);

  stage = std::chrono::steady_clock::now();
  m.dataset_checksum = DatasetChecksum(dataset);
  m.partition_id = PartitionId(m, relabeling.orig_ids);
  ASSIGN_OR_RETURN(std::vector<ShardMeta> metas,
                   WriteShards(dataset, relabeling, new_splits, staging->path(),
                               m.partition_id, options.num_threads));
  for (int p = 0; p < k; ++p) {
    if (metas[p].num_edges != m.parts[p].edges) {
      return absl::InternalError(
          absl::StrCat("shard ", p, " holds ", metas[p].num_edges,
                       " edges, expected ", m.parts[p].edges));
    }
    m.parts[p].content_checksum = metas[p].content_checksum;
  }
  RETURN_IF_ERROR(WriteFileAtomic(
      JoinPath(staging->path(), kPartitionManifestFile), m.ToJson()));
  timing->write_seconds = SecondsSince(stage);
  timing->total_seconds = loaded_before + SecondsSince(start);
  timing->peak_rss_after_write = PeakRssBytes();
  RETURN_IF_ERROR(WriteFileAtomic(
      JoinPath(staging->path(), kPartitionTimingFile), timing->ToJson()));
  RETURN_IF_ERROR(staging->Commit());
  return m;
}

}  // namespace partition_internal
}  // namespace shardgnn
