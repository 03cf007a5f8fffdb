// `shardgnn embeddings export RUN_DIR --out FILE.npy`: a run's learned node
// embeddings (issue 15), read from the snapshots taken with its checkpoints,
// in original node ID order: of a finished run, and of one stopped or killed
// (the last epoch whose snapshots cover every node). No server is needed: the
// snapshots of `run`'s servers and of an in-process `train` are files in the
// run directory (RUN_DIR/embedding_snapshots); those of servers started by
// hand are in their --embedding-dir (--snapshots DIR, repeated).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/train_output.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "embedding/embedding_table.h"
#include "partition/partition_book.h"
#include "sampler/embedding_rows.h"

namespace shardgnn::cli {
namespace {

struct ExportFlags {
  std::string run_dir;
  std::string out;
  std::vector<std::string> snapshot_dirs;
  std::string partition_dir;
  std::string table;
  int epoch = -1;
};

// One snapshot file found, and its header.
struct Found {
  std::string path;
  int epoch = 0;
  EmbeddingSnapshotHeader header;
};

// The directory a snapshot file is in: one holder's (a server's, or the
// in-process table's).
std::string HolderOf(const Found& f) {
  return std::filesystem::path(f.path).parent_path().string();
}

// Rows of the tables a run's snapshots restore, each over its node range,
// read as one table (for WriteLearnedEmbeddings). Pull only.
class SnapshotRows final : public LearnableRows {
 public:
  explicit SnapshotRows(std::vector<std::unique_ptr<EmbeddingTable>> tables)
      : tables_(std::move(tables)) {}

  const EmbeddingTableConfig& config() const override {
    return tables_.front()->config();
  }
  int staleness() const override { return -1; }

  absl::Status Pull(absl::Span<const NodeId> nodes, int64_t step,
                    float* out) override {
    const size_t dim = static_cast<size_t>(config().dim);
    std::vector<std::vector<NodeId>> ids(tables_.size());
    std::vector<std::vector<size_t>> positions(tables_.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      // The table whose range holds the node (ranges sorted, contiguous).
      auto it = std::upper_bound(
          tables_.begin(), tables_.end(), nodes[i],
          [](NodeId v, const std::unique_ptr<EmbeddingTable>& t) {
            return v < t->node_start();
          });
      if (it == tables_.begin() || nodes[i] >= (*(it - 1))->node_end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", nodes[i], " is in no snapshot"));
      }
      const size_t t = static_cast<size_t>(it - tables_.begin() - 1);
      ids[t].push_back(nodes[i]);
      positions[t].push_back(i);
    }
    std::vector<float> rows;
    for (size_t t = 0; t < tables_.size(); ++t) {
      if (ids[t].empty()) continue;
      rows.resize(ids[t].size() * dim);
      RETURN_IF_ERROR(tables_[t]->Pull(ids[t], step, /*staleness=*/-1,
                                       absl::InfinitePast(), rows.data()));
      for (size_t k = 0; k < ids[t].size(); ++k) {
        std::copy_n(rows.data() + k * dim, dim, out + positions[t][k] * dim);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Push(int64_t, absl::Span<const NodeId>,
                    absl::Span<const float>) override {
    return absl::FailedPreconditionError("exported snapshots are read-only");
  }
  absl::Status Flush() override { return absl::OkStatus(); }
  LearnableRowsStats stats() const override { return {}; }
  absl::StatusOr<EmbeddingSnapshotStats> Snapshot(int, int64_t) override {
    return absl::FailedPreconditionError("exported snapshots are read-only");
  }
  absl::Status Restore(int, int64_t) override {
    return absl::FailedPreconditionError("exported snapshots are read-only");
  }

 private:
  std::vector<std::unique_ptr<EmbeddingTable>> tables_;
};

// Every epoch-E.emb under `roots`, with its header. A malformed header is an
// error naming the file.
absl::StatusOr<std::vector<Found>> FindSnapshots(
    const std::vector<std::string>& roots) {
  std::vector<Found> found;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      return absl::NotFoundError(
          absl::StrCat(root,
                       " is not a directory of embedding snapshots (a run with "
                       "learned embeddings and checkpoints keeps them in "
                       "RUN_DIR/embedding_snapshots)"));
    }
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         !ec && it != std::filesystem::recursive_directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      int epoch = -1;
      if (!it->is_regular_file() || name.rfind("epoch-", 0) != 0 ||
          name.size() < 11 || name.substr(name.size() - 4) != ".emb" ||
          !absl::SimpleAtoi(name.substr(6, name.size() - 10), &epoch)) {
        continue;
      }
      ASSIGN_OR_RETURN(EmbeddingSnapshotHeader header,
                       ReadEmbeddingSnapshotHeader(it->path().string()));
      found.push_back({it->path().string(), epoch, std::move(header)});
    }
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("reading ", root, ": ", ec.message()));
    }
  }
  return found;
}

absl::Status Export(const ExportFlags& flags) {
  if (std::filesystem::exists(flags.out)) {
    return absl::AlreadyExistsError(
        absl::StrCat(flags.out, " exists; choose another --out"));
  }
  absl::StatusOr<EmbeddingRunFile> run = ReadEmbeddingRunFile(flags.run_dir);
  if (!run.ok() && !absl::IsNotFound(run.status())) return run.status();
  if (!run.ok() && flags.snapshot_dirs.empty()) {
    return absl::NotFoundError(
        absl::StrCat(flags.run_dir,
                     " is not the directory of a run with learned embeddings ",
                     "(it has no ", kEmbeddingRunFile, ")"));
  }
  std::vector<std::string> roots = flags.snapshot_dirs;
  if (roots.empty()) {
    roots.push_back(JoinPath(flags.run_dir, "embedding_snapshots"));
  }
  ASSIGN_OR_RETURN(std::vector<Found> found, FindSnapshots(roots));

  // The run's snapshots of one table.
  std::set<std::string> runs, tables;
  std::vector<Found> mine;
  for (Found& f : found) {
    if (run.ok() && f.header.config.run_id != run->run_id) continue;
    if (!flags.table.empty() && f.header.config.name != flags.table) continue;
    runs.insert(f.header.config.run_id);
    tables.insert(f.header.config.name);
    mine.push_back(std::move(f));
  }
  const std::string where = absl::StrJoin(roots, ", ");
  if (mine.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no embedding snapshots", run.ok() ? " of run " + run->run_id : "",
        flags.table.empty() ? "" : " of table " + flags.table, " in ", where,
        " (snapshots are taken with checkpoints: --checkpoint-every)"));
  }
  if (runs.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, " holds snapshots of several runs (", absl::StrJoin(runs, ", "),
        "); give the run directory, whose ", kEmbeddingRunFile,
        " names its run"));
  }
  if (tables.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the run has several tables (", absl::StrJoin(tables, ", "),
        "); choose one with --table"));
  }

  // Holders (one directory of snapshots each) and their epochs.
  std::map<std::string, std::set<int>> epochs_of;
  NodeId total = 0;  // The end of the highest node range of any snapshot.
  for (const Found& f : mine) {
    epochs_of[HolderOf(f)].insert(f.epoch);
    total = std::max(total, f.header.node_end);
  }
  // The snapshots of `e`, one per node range, or why they do not cover the
  // nodes. Replicas of a part hold copies of the same rows: of those, the
  // holder that snapshotted latest is read (a copy the run dropped when its
  // replica failed stopped taking snapshots then).
  auto files_of = [&](int e, std::vector<const Found*>* files) -> absl::Status {
    files->clear();
    for (const Found& f : mine) {
      if (f.epoch == e) files->push_back(&f);
    }
    if (files->empty()) {
      return absl::NotFoundError(
          absl::StrCat("epoch ", e, " is not snapshotted in ", where));
    }
    auto latest = [&](const Found* f) {
      return *epochs_of[HolderOf(*f)].rbegin();
    };
    std::sort(files->begin(), files->end(),
              [&](const Found* a, const Found* b) {
                if (a->header.node_start != b->header.node_start) {
                  return a->header.node_start < b->header.node_start;
                }
                return latest(a) > latest(b);
              });
    files->erase(std::unique(files->begin(), files->end(),
                             [](const Found* a, const Found* b) {
                               return a->header.node_start ==
                                          b->header.node_start &&
                                      a->header.node_end == b->header.node_end;
                             }),
                 files->end());
    // Together they must hold every node once, at one step.
    NodeId next = 0;
    for (const Found* f : *files) {
      if (f->header.node_start != next) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the snapshots of epoch ", e, " do not cover the nodes: ", f->path,
            " starts at node ", f->header.node_start, ", expected ", next));
      }
      if (f->header.step != files->front()->header.step) {
        return absl::FailedPreconditionError(absl::StrCat(
            f->path, " is of step ", f->header.step, ", ", files->front()->path,
            " of step ", files->front()->header.step));
      }
      next = f->header.node_end;
    }
    if (next != total) {
      return absl::NotFoundError(
          absl::StrCat("the snapshots of epoch ", e, " end at node ", next,
                       ", others hold nodes up to ", total));
    }
    return absl::OkStatus();
  };
  int epoch = flags.epoch;
  std::vector<const Found*> chosen;
  if (epoch >= 0) {
    RETURN_IF_ERROR(files_of(epoch, &chosen));
  } else {
    // The latest epoch whose snapshots cover every node.
    std::set<int> all;
    for (const auto& [dir, epochs] : epochs_of) {
      all.insert(epochs.begin(), epochs.end());
    }
    for (auto it = all.rbegin(); it != all.rend() && epoch < 0; ++it) {
      if (files_of(*it, &chosen).ok()) epoch = *it;
    }
    if (epoch < 0) {
      std::vector<std::string> held;
      for (const auto& [dir, epochs] : epochs_of) {
        held.push_back(absl::StrCat(dir, ": ", absl::StrJoin(epochs, ", ")));
      }
      return absl::NotFoundError(
          absl::StrCat("no epoch's snapshots cover every node (epochs held: ",
                       absl::StrJoin(held, "; "), ")"));
    }
  }
  const int64_t num_nodes = total;
  if (run.ok() && run->num_nodes != num_nodes) {
    return absl::FailedPreconditionError(
        absl::StrCat("the snapshots hold ", num_nodes,
                     " nodes, the run's graph has ", run->num_nodes));
  }
  std::string partition = !flags.partition_dir.empty()
                              ? flags.partition_dir
                              : (run.ok() ? run->partition_dir : "");
  // Snapshots in a partition's IDs are mapped back through its orig_ids.npy
  // (without one they stay in partition order, as the run's own export).
  const bool partition_ids =
      !flags.partition_dir.empty() || (run.ok() ? run->partition_ids : true);
  std::vector<NodeId> orig_ids;
  if (partition_ids && !partition.empty()) {
    ASSIGN_OR_RETURN(NpyArray<int64_t> orig,
                     ReadNpy<int64_t>(JoinPath(partition, kOrigIdsFile), 1));
    orig_ids = std::move(orig.data);
  }
  std::vector<std::unique_ptr<EmbeddingTable>> loaded;
  for (const Found* f : chosen) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<EmbeddingTable> table,
        EmbeddingTable::Load(f->path, f->header.config, f->header.node_start,
                             f->header.node_end, f->header.step));
    loaded.push_back(std::move(table));
  }
  SnapshotRows rows(std::move(loaded));
  const int64_t dim = rows.dim();
  RETURN_IF_ERROR(WriteLearnedEmbeddings(
      rows, num_nodes, chosen.front()->header.step, orig_ids, flags.out));
  std::printf(
      "shardgnn embeddings export: table %s of run %s, epoch %d (step %lld): "
      "%lld x %lld rows from %zu snapshot file(s) written to %s (%s node ID "
      "order)\n",
      rows.config().name.c_str(), rows.config().run_id.c_str(), epoch,
      static_cast<long long>(chosen.front()->header.step),
      static_cast<long long>(num_nodes), static_cast<long long>(dim),
      chosen.size(), flags.out.c_str(),
      orig_ids.empty() && partition_ids ? "partition" : "original");
  return absl::OkStatus();
}

}  // namespace

void AddEmbeddingsCommand(CLI::App& app, absl::Status* result) {
  CLI::App* embeddings = app.add_subcommand(
      "embeddings", "Learned node embeddings of a run (--learn-embeddings)");
  embeddings->require_subcommand(1);
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd = embeddings->add_subcommand(
      "export",
      "Write a run's learned embeddings, from the snapshots taken with its "
      "checkpoints, as .npy in original node ID order (a finished, stopped "
      "or killed run)");
  cmd->add_option("run_dir", flags->run_dir, "The run's directory (--out)")
      ->required();
  cmd->add_option("--out", flags->out,
                  "The .npy file to write (float32 "
                  "[nodes, dim])")
      ->required();
  cmd->add_option("--snapshots", flags->snapshot_dirs,
                  "Where the snapshots are, if not RUN_DIR/embedding_snapshots "
                  "(servers started by hand: their --embedding-dir); "
                  "repeatable");
  cmd->add_option("--partition", flags->partition_dir,
                  "The partition the run trained on (its orig_ids.npy maps "
                  "the snapshots' node IDs back); default: the run's");
  cmd->add_option("--table", flags->table, "The table, if the run has several");
  cmd->add_option("--epoch", flags->epoch,
                  "The epoch's snapshot (default: the latest whose "
                  "snapshots cover every node)");
  cmd->callback([flags, result] { *result = Export(*flags); });
}

}  // namespace shardgnn::cli
