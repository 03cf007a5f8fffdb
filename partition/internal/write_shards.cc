#include "partition/internal/write_shards.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "common/status.h"
#include "graphstore/shard_writer.h"

namespace shardgnn::partition_internal {
namespace {

// Shared by the writer threads: progress, and the first error (which stops
// the others at their next check).
class SharedState {
 public:
  explicit SharedState(int64_t total_nodes)
      : progress_("write shards", total_nodes, "nodes") {}

  void AddDone(int64_t nodes) {
    absl::MutexLock lock(&mu_);
    done_ += nodes;
    progress_.Update(done_);
  }
  void Fail(absl::Status status) {
    absl::MutexLock lock(&mu_);
    if (first_error_.ok()) first_error_ = std::move(status);
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }
  absl::Status Finish() {
    absl::MutexLock lock(&mu_);
    if (first_error_.ok()) progress_.Done();
    return first_error_;
  }

 private:
  absl::Mutex mu_;
  Progress progress_ ABSL_GUARDED_BY(mu_);
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

absl::StatusOr<ShardMeta> WriteOne(
    const Dataset& dataset, const Relabeling& r,
    const std::map<std::string, std::vector<NodeId>>& new_splits,
    const std::string& dir, const std::string& partition_id, int part,
    SharedState* shared) {
  const int num_parts = static_cast<int>(r.node_ranges.size()) - 1;
  ShardMeta meta;
  meta.part_id = part;
  meta.num_parts = num_parts;
  meta.node_start = r.node_ranges[part];
  meta.node_end = r.node_ranges[part + 1];
  meta.num_nodes_total = dataset.num_nodes();
  meta.feature_dim = dataset.feature_dim();
  meta.num_classes = dataset.manifest.num_classes;
  meta.partition_id = partition_id;
  const DatasetManifest& m = dataset.manifest;
  const bool typed = m.typed();
  if (typed) {
    meta.node_types = m.node_types;
    meta.edge_types = m.edge_types;
    meta.type_starts = r.type_starts[part];
  }
  if (m.multilabel) meta.label_columns = m.num_classes;
  ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer,
                   ShardWriter::Create(JoinPath(dir, PartDirName(part)), meta));
  const int64_t f = dataset.feature_dim();
  const int64_t label_columns = meta.label_columns;
  std::vector<NodeId> neighbors;
  std::vector<std::pair<int32_t, NodeId>> typed_row;
  std::vector<int32_t> relations;
  const std::vector<int64_t> unlabeled(static_cast<size_t>(label_columns), -1);
  int64_t pending = 0;
  size_t type = 0;  // Typed: the type of `id`'s original node.
  for (NodeId id = meta.node_start; id < meta.node_end; ++id) {
    const NodeId orig = r.orig_ids[id];
    const int64_t begin = dataset.indptr[orig], end = dataset.indptr[orig + 1];
    const int64_t* labels = dataset.labels.empty()
                                ? unlabeled.data()
                                : dataset.labels.data() + orig * label_columns;
    if (!typed) {
      neighbors.clear();
      for (int64_t e = begin; e < end; ++e)
        neighbors.push_back(r.new_ids[dataset.indices[e]]);
      std::sort(neighbors.begin(), neighbors.end());
      const float* features =
          f > 0 ? dataset.features.data() + orig * f : nullptr;
      if (label_columns == 1) {
        const int64_t label =
            dataset.labels.empty() ? -1 : dataset.labels[orig];
        RETURN_IF_ERROR(writer->AddNode(id, neighbors.data(), neighbors.size(),
                                        features, label));
      } else {
        RETURN_IF_ERROR(
            writer->AddNodeRow(id, neighbors.data(), neighbors.size(),
                               /*relations=*/nullptr, features, labels));
      }
    } else {
      // The row sorted by (relation, neighbor) in new IDs.
      typed_row.clear();
      for (int64_t e = begin; e < end; ++e) {
        typed_row.emplace_back(dataset.edge_types[e],
                               r.new_ids[dataset.indices[e]]);
      }
      std::sort(typed_row.begin(), typed_row.end());
      neighbors.clear();
      relations.clear();
      for (const auto& [relation, u] : typed_row) {
        relations.push_back(relation);
        neighbors.push_back(u);
      }
      while (id >= meta.type_starts[type + 1]) ++type;
      const int64_t width = m.node_types[type].feature_dim;
      const float* features =
          width > 0
              ? dataset.type_features[type].data() +
                    (orig - m.NodeTypeOffset(static_cast<int>(type))) * width
              : nullptr;
      RETURN_IF_ERROR(writer->AddNodeRow(id, neighbors.data(), neighbors.size(),
                                         relations.data(), features, labels));
    }
    if (++pending == 16384) {
      if (shared->failed()) return absl::CancelledError("another shard failed");
      shared->AddDone(pending);
      pending = 0;
    }
  }
  shared->AddDone(pending);
  for (const auto& [name, ids] : new_splits) {
    auto first = std::lower_bound(ids.begin(), ids.end(), meta.node_start);
    auto last = std::lower_bound(first, ids.end(), meta.node_end);
    RETURN_IF_ERROR(writer->AddSplit(name, std::vector<NodeId>(first, last)));
  }
  return writer->Finish();
}

}  // namespace

absl::StatusOr<std::vector<ShardMeta>> WriteShards(
    const Dataset& dataset, const Relabeling& relabeling,
    const std::map<std::string, std::vector<NodeId>>& new_splits,
    const std::string& dir, const std::string& partition_id, int num_threads) {
  const int num_parts = static_cast<int>(relabeling.node_ranges.size()) - 1;
  std::vector<ShardMeta> metas(num_parts);
  SharedState shared(dataset.num_nodes());
  std::atomic<int> next_part{0};
  auto work = [&] {
    for (int p = next_part++; p < num_parts && !shared.failed();
         p = next_part++) {
      absl::StatusOr<ShardMeta> meta = WriteOne(dataset, relabeling, new_splits,
                                                dir, partition_id, p, &shared);
      if (!meta.ok()) {
        shared.Fail(Annotate(meta.status(), absl::StrCat("writing shard ", p)));
        return;
      }
      metas[p] = *std::move(meta);
    }
  };
  const int threads = std::max(1, std::min(num_threads, num_parts));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  RETURN_IF_ERROR(shared.Finish());
  return metas;
}

}  // namespace shardgnn::partition_internal
