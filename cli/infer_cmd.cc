// `shardgnn infer RUN_DIR --out DIR`: every node's outputs from a trained run,
// exactly, layer by layer with full neighborhoods (trainer/inference.h). The
// model comes from RUN_DIR's model.json and model.pt. The graph comes from
// running storage servers (--servers/--cluster, with --partition for the
// original node IDs), shared among trainers started as `train`'s are
// (torchrun's variables or --rank/--world-size), or (--dataset) from a dataset
// directory in this one process. Rank 0 writes embeddings.npy, logits.npy,
// predictions.npy and infer.json (accuracies, timings) to --out.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/peak_rss.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "nlohmann/json.hpp"
#include "partition/partition_book.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/compute_env.h"
#include "trainer/distributed.h"
#include "trainer/inference.h"
#include "trainer/model_config.h"

namespace shardgnn::cli {
namespace {

struct InferFlags {
  std::string run_dir;
  std::string out_dir;
  std::string dataset_dir;
  std::string scratch_dir;
  std::string score_pairs;  // .npy of pairs to score (link models).
  int embedding_layer = 0;
  int64_t chunk_nodes = 4096;
  int threads = 0;
  bool no_shared_memory = false;
  bool no_feature_port = false;
  ClusterFlags cluster;
};

// "infer: layer 1/2  40% (40.0k/100k nodes)  9.1k nodes/s  ETA 12s", at
// most every two seconds and at the end of each layer.
std::function<void(const InferProgress&)> ProgressPrinter() {
  auto last = std::make_shared<double>(-10.0);
  return [last](const InferProgress& p) {
    const bool end = p.rows_done >= p.rows;
    if (!end && p.seconds - *last < 2.0) return;
    *last = p.seconds;
    const double rate =
        p.layer_seconds > 0 ? p.rows_done / p.layer_seconds : 0.0;
    // This layer's rest, and the next layers at this layer's rate.
    const double eta =
        rate > 0 ? (p.rows - p.rows_done) / rate +
                       static_cast<double>(p.layers - p.layer) * p.rows / rate
                 : 0.0;
    std::printf(
        "infer: layer %d/%d  %3.0f%% (%lld/%lld nodes)  %.0f nodes/s  ETA "
        "%.0fs\n",
        p.layer, p.layers, 100.0 * p.rows_done / std::max<int64_t>(1, p.rows),
        static_cast<long long>(p.rows_done), static_cast<long long>(p.rows),
        rate, eta);
    std::fflush(stdout);
  };
}

// A run's learned node embeddings (ModelConfig::learned_file), mapped
// read-only: the page cache holds the rows inference touches, however large
// the table.
class LearnedRowsFile {
 public:
  // Checks the file is float32 [num_nodes, dim] before mapping it.
  static absl::StatusOr<std::unique_ptr<LearnedRowsFile>> Open(
      const std::string& path, int64_t num_nodes, int64_t dim) {
    ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(path));
    if (header.dtype != NpyDtype::kFloat32 || header.shape.size() != 2 ||
        header.shape[0] != num_nodes || header.shape[1] != dim) {
      std::vector<std::string> shape;
      for (int64_t d : header.shape) shape.push_back(absl::StrCat(d));
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": shape [", absl::StrJoin(shape, ", "),
          "], expected float32 learned rows [", num_nodes, ", ", dim,
          "] (one per node of the graph, as wide as the model's)"));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(
          absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
    }
    const size_t bytes =
        header.data_offset + static_cast<size_t>(num_nodes * dim) * 4;
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": cannot map: ", std::strerror(errno)));
    }
    return std::unique_ptr<LearnedRowsFile>(
        new LearnedRowsFile(map, bytes, header.data_offset, num_nodes, dim));
  }
  ~LearnedRowsFile() { ::munmap(map_, bytes_); }
  LearnedRowsFile(const LearnedRowsFile&) = delete;
  LearnedRowsFile& operator=(const LearnedRowsFile&) = delete;

  // The rows of `nodes`, where node v's row is the file's row orig_ids[v]
  // (v with no orig_ids).
  absl::Status Rows(absl::Span<const NodeId> nodes,
                    const std::vector<NodeId>& orig_ids, float* out) const {
    const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
    for (size_t i = 0; i < nodes.size(); ++i) {
      NodeId v = nodes[i];
      if (v >= 0 && !orig_ids.empty() &&
          static_cast<size_t>(v) < orig_ids.size()) {
        v = orig_ids[static_cast<size_t>(v)];
      }
      if (v < 0 || v >= num_nodes_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node ", nodes[i], " has no learned row (", num_nodes_, " rows)"));
      }
      std::memcpy(out + i * static_cast<size_t>(dim_),
                  rows_ + static_cast<size_t>(v) * row_bytes, row_bytes);
    }
    return absl::OkStatus();
  }

 private:
  LearnedRowsFile(void* map, size_t bytes, size_t offset, int64_t num_nodes,
                  int64_t dim)
      : map_(map),
        bytes_(bytes),
        rows_(static_cast<const char*>(map) + offset),
        num_nodes_(num_nodes),
        dim_(dim) {}
  void* map_;
  size_t bytes_;
  const char* rows_;
  int64_t num_nodes_;
  int64_t dim_;
};

absl::Status RunInfer(const InferFlags& flags) {
  if (flags.threads < 0) {
    return absl::InvalidArgumentError(
        "--threads must be 0 or more (0: this machine's cores shared among "
        "its trainers)");
  }
  if (flags.chunk_nodes < 1) {
    return absl::InvalidArgumentError("--chunk-nodes must be positive");
  }
  std::error_code exists;
  if (std::filesystem::exists(flags.out_dir, exists) &&
      !std::filesystem::is_directory(flags.out_dir, exists)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--out ", flags.out_dir,
                     " is not a directory (infer writes "
                     "embeddings.npy, logits.npy, predictions.npy and "
                     "infer.json into one)"));
  }
  TuneAllocatorForTraining();
  ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(flags.run_dir));
  if (config.model.kind == ModelKind::kGine) {
    return absl::FailedPreconditionError(absl::StrCat(
        flags.run_dir,
        " holds a model that reads edge features (gine); infer does not "
        "read edge features yet"));
  }
  if (IsTypedModel(config.model.kind)) {
    return absl::FailedPreconditionError(absl::StrCat(
        flags.run_dir, " holds a model of a typed graph (",
        ModelKindName(config.model.kind),
        "); infer takes models of untyped graphs only, typed inference is "
        "not built yet"));
  }
  const std::string parameters = JoinPath(flags.run_dir, kModelParametersFile);
  if (!std::filesystem::exists(parameters)) {
    return absl::NotFoundError(
        absl::StrCat(flags.run_dir, " has model.json but no model.pt"));
  }
  InferOptions options;
  options.out_dir = flags.out_dir;
  options.embedding_layer = flags.embedding_layer;
  options.chunk_nodes = flags.chunk_nodes;
  options.torch_threads = flags.threads;
  const bool link = config.task == TaskKind::kLink;
  if (!flags.score_pairs.empty()) {
    if (!link) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--score-pairs: ", flags.run_dir,
          " holds a node classification model; only link models score pairs"));
    }
    absl::StatusOr<NpyArray<int64_t>> pairs =
        ReadNpy<int64_t>(flags.score_pairs, 2);
    if (!pairs.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--score-pairs: ", pairs.status().message(),
                       " (expected int64 node pairs [m, 2])"));
    }
    if (pairs->shape[1] != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--score-pairs ", flags.score_pairs, ": shape [", pairs->shape[0],
          ", ", pairs->shape[1], "], expected int64 node pairs [m, 2]"));
    }
    options.score_pairs = std::move(pairs->data);
  }
  const bool in_process = !flags.dataset_dir.empty();
  const ClusterFlags& cluster = flags.cluster;
  if (in_process &&
      (!cluster.servers.empty() || !cluster.cluster_file.empty() ||
       !cluster.partition_dir.empty())) {
    return absl::InvalidArgumentError(
        "--dataset runs in this process over the graph in memory; it cannot "
        "be combined with --servers, --cluster or --partition");
  }
  if (!in_process && cluster.partition_dir.empty()) {
    return absl::InvalidArgumentError(
        "inference against storage servers needs --partition DIR: its "
        "orig_ids.npy puts the output rows in original node ID order");
  }

  std::unique_ptr<Dataset> dataset;
  std::unique_ptr<InMemoryGraphSource> memory;
  std::unique_ptr<RemoteGraphSource> remote;
  std::unique_ptr<ProcessGroup> group;
  std::unique_ptr<C10dGradientSync> sync;
  std::map<std::string, std::vector<NodeId>> splits;
  const GraphSource* source = nullptr;
  std::vector<std::string> addresses;
  if (in_process) {
    ASSIGN_OR_RETURN(Dataset loaded, LoadDataset(flags.dataset_dir));
    dataset = std::make_unique<Dataset>(std::move(loaded));
    ASSIGN_OR_RETURN(memory, InMemoryGraphSource::FromDataset(*dataset));
    source = memory.get();
    for (const char* name : {"train", "valid", "test"}) {
      auto it = dataset->splits.find(name);
      if (!link && it != dataset->splits.end()) splits[name] = it->second;
    }
  } else {
    ASSIGN_OR_RETURN(DistributedOptions dist, DistributedOptionsFor(cluster));
    options.rank = dist.rank;
    options.world_size = dist.world_size;
    if (options.torch_threads <= 0)
      options.torch_threads = ComputeThreadsShare(dist.local_world_size);
    ASSIGN_OR_RETURN(remote,
                     ConnectToServers(cluster, !flags.no_shared_memory,
                                      !flags.no_feature_port, &addresses));
    source = remote.get();
    // (A link model has no node accuracy to measure.)
    for (const char* name : {"train", "valid", "test"}) {
      if (link) break;
      ASSIGN_OR_RETURN(splits[name], remote->FetchSplit(name));
    }
    ASSIGN_OR_RETURN(
        NpyArray<int64_t> orig,
        ReadNpy<int64_t>(JoinPath(cluster.partition_dir, kOrigIdsFile), 1));
    options.orig_ids = std::move(orig.data);
    ASSIGN_OR_RETURN(group, ProcessGroup::Connect(dist));
    sync = std::make_unique<C10dGradientSync>(group.get());
  }
  options.scratch_dir =
      flags.scratch_dir.empty()
          ? JoinPath(flags.out_dir,
                     absl::StrCat(".scratch-rank-", options.rank))
          : flags.scratch_dir;
  std::unique_ptr<LearnedRowsFile> learned;
  if (config.learned_dim > 0) {
    ASSIGN_OR_RETURN(learned, LearnedRowsFile::Open(
                                  JoinPath(flags.run_dir, config.learned_file),
                                  source->num_nodes(), config.learned_dim));
    options.learned_rows = [&learned, &options](absl::Span<const NodeId> nodes,
                                                float* out) {
      return learned->Rows(nodes, options.orig_ids, out);
    };
  }
  const bool leader = options.rank == 0;
  if (leader) {
    options.on_progress = ProgressPrinter();
    std::printf(
        "shardgnn infer: %s model (%d layers) from %s over %lld nodes, %d "
        "trainer(s), %s\n",
        ModelKindName(config.model.kind), config.model.num_layers,
        flags.run_dir.c_str(), static_cast<long long>(source->num_nodes()),
        options.world_size,
        in_process ? "in process"
                   : absl::StrCat(addresses.size(), " server(s)").c_str());
    std::fflush(stdout);
  }
  absl::StatusOr<InferResult> result =
      Infer(*source, config, parameters, splits, options, sync.get());
  std::error_code ec;
  if (flags.scratch_dir.empty())
    std::filesystem::remove(options.scratch_dir, ec);
  RETURN_IF_ERROR(result.status());
  if (leader) {
    nlohmann::ordered_json summary;
    summary["run"] = flags.run_dir;
    summary["model"] = ModelKindName(config.model.kind);
    summary["num_nodes"] = result->num_nodes;
    summary["embedding_layer"] = result->embedding_layer;
    summary["embedding_dim"] = result->embedding_dim;
    summary["task"] = TaskKindName(config.task);
    if (link) {
      summary["decoder"] = LinkDecoderName(config.decoder);
      summary["scored_pairs"] = result->scored_pairs;
    } else {
      summary["num_classes"] = result->num_classes;
    }
    for (const auto& [name, acc] : result->accuracy) {
      summary[name + "_acc"] = acc.acc;
      std::printf("%s accuracy %.4f (%lld labeled nodes)\n", name.c_str(),
                  acc.acc, static_cast<long long>(acc.labeled));
      if (acc.beyond_classes > 0) {
        summary[name + "_labels_beyond_classes"] = acc.beyond_classes;
        std::printf(
            "shardgnn infer: warning: %lld of the %s split's labels are %lld "
            "or more, beyond the model's %lld classes: the graph's labels are "
            "not the model's, and its accuracy counts them as wrong\n",
            static_cast<long long>(acc.beyond_classes), name.c_str(),
            static_cast<long long>(config.num_classes),
            static_cast<long long>(config.num_classes));
      }
    }
    summary["world_size"] = options.world_size;
    summary["mode"] = in_process ? "in-process" : "distributed";
    summary["seconds"] = result->seconds;
    summary["edges_read"] = result->edges;
    summary["scratch_bytes"] = result->scratch_bytes;
    summary["peak_rss_bytes"] = PeakRssBytes();
    std::printf(
        "shardgnn infer: %lld nodes in %.2f s; embeddings [%lld, %lld] (layer "
        "%d)%s in %s\n",
        static_cast<long long>(result->num_nodes), result->seconds,
        static_cast<long long>(result->num_nodes),
        static_cast<long long>(result->embedding_dim), result->embedding_layer,
        link ? (result->scored_pairs > 0
                    ? absl::StrCat(", scores of ", result->scored_pairs,
                                   " pairs")
                          .c_str()
                    : "")
             : ", logits, predictions",
        flags.out_dir.c_str());
    RETURN_IF_ERROR(WriteFileAtomic(JoinPath(flags.out_dir, "infer.json"),
                                    summary.dump(2) + "\n"));
  }
  return group ? group->Barrier() : absl::OkStatus();
}

}  // namespace

void AddInferCommand(CLI::App& app, absl::Status* result) {
  auto flags = std::make_shared<InferFlags>();
  CLI::App* cmd = app.add_subcommand(
      "infer",
      "Every node's embeddings, logits and predictions from a trained run, "
      "computed exactly layer by layer over full neighborhoods");
  cmd->add_option("RUN_DIR", flags->run_dir,
                  "Run directory of `train --out` / `run` (model.json, "
                  "model.pt)")
      ->required();
  cmd->add_option("--out", flags->out_dir,
                  "Directory for embeddings.npy, logits.npy, predictions.npy "
                  "and infer.json (rank 0)")
      ->required();
  cmd->add_option("--dataset", flags->dataset_dir,
                  "Run in this process over this dataset directory in memory "
                  "(no servers, no other trainers)");
  cmd->add_option("--score-pairs", flags->score_pairs,
                  "Link models: score these node pairs (int64 .npy [m, 2], "
                  "original IDs) into scores.npy (the decoder's logits; "
                  "sigmoid gives the edge probability)");
  cmd->add_option("--layer", flags->embedding_layer,
                  "Hidden layer whose outputs embeddings.npy holds (1..layers; "
                  "0: the last hidden layer, or a link model's last layer)")
      ->capture_default_str();
  cmd->add_option("--chunk-nodes", flags->chunk_nodes,
                  "Nodes per chunk: each chunk's full neighborhood is read "
                  "at once")
      ->capture_default_str();
  cmd->add_option("--scratch", flags->scratch_dir,
                  "Where this trainer keeps the layers' states while it runs "
                  "(local disk; default: a directory under --out, removed "
                  "afterwards)");
  cmd->add_option("--threads", flags->threads,
                  "Compute threads (0: this machine's cores shared among its "
                  "trainers)")
      ->capture_default_str();
  cmd->add_flag("--no-shared-memory", flags->no_shared_memory,
                "Never read features from a co-located server's shared memory");
  cmd->add_flag("--no-feature-port", flags->no_feature_port,
                "Fetch features over gRPC, not the servers' feature ports");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags, result] { *result = RunInfer(*flags); });
}

}  // namespace shardgnn::cli
