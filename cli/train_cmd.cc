// `shardgnn train`: one data-parallel trainer. Reads the torchrun variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; flags override), connects to the
// storage servers, joins the other trainers through c10d, trains, and (rank 0)
// writes metrics.jsonl and summary.json. With --dataset it instead trains in
// this one process over the whole graph in memory (InMemoryGraphSource, no RPC,
// no process group): the same sampler, loader and model code, the physical
// limit a distributed run is measured against.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "cli/run_report.h"
#include "cli/security_flags.h"
#include "cli/server_usage.h"
#include "cli/train_embeddings.h"
#include "cli/train_output.h"
#include "cli/training_flags.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/ports.h"
#include "common/sampling.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "graphstore/client.h"
#include "graphstore/internal/metrics_endpoint.h"
#include "nlohmann/json.hpp"
#include "partition/partition_book.h"
#include "sampler/cached_graph_source.h"
#include "sampler/embedding_rows.h"
#include "sampler/remote_graph_source.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/compute_env.h"
#include "trainer/distributed.h"
#include "trainer/model_config.h"
#include "trainer/trainer.h"
#include "trainer/training_metrics.h"

namespace shardgnn::cli {
namespace {

struct TrainFlags {
  std::string effective_config;  // "[train]" and every flag (config.toml).
  ClusterFlags cluster;
  std::string dataset_dir;  // In-process mode: the whole graph in memory.
  std::string out_dir;
  TrainingFlags training;
};

}  // namespace

namespace {

// The r-th of `world` contiguous, near-equal chunks of `ids` (ShareOf).
std::vector<NodeId> Chunk(const std::vector<NodeId>& ids, int rank, int world) {
  const auto [begin, end] =
      ShareOf(static_cast<int64_t>(ids.size()), rank, world);
  return std::vector<NodeId>(ids.begin() + begin, ids.begin() + end);
}

// The link task's edge splits, each read by name with `read` (train, valid,
// valid_neg, test, test_neg: the dataset's or the partition's).
absl::Status ReadEdgeSplits(
    const std::function<absl::StatusOr<std::vector<NodeId>>(const char*)>& read,
    TrainSplits* splits) {
  ASSIGN_OR_RETURN(splits->train_edges, read("train"));
  ASSIGN_OR_RETURN(splits->valid_edges, read("valid"));
  ASSIGN_OR_RETURN(splits->valid_negatives, read("valid_neg"));
  ASSIGN_OR_RETURN(splits->test_edges, read("test"));
  ASSIGN_OR_RETURN(splits->test_negatives, read("test_neg"));
  return absl::OkStatus();
}

// The distinct nodes of flattened pairs, in first-appearance order.
std::vector<NodeId> Endpoints(const std::vector<NodeId>& pairs) {
  std::vector<NodeId> out;
  absl::flat_hash_set<NodeId> seen;
  for (NodeId v : pairs)
    if (seen.insert(v).second) out.push_back(v);
  return out;
}

// Points options at <out>/checkpoints/rank-R.ckpt (every rank checkpoints its
// own state: parameters agree across ranks, dropout and sampling streams do
// not, so a resumed run continues exactly where each rank stopped).
absl::Status ConfigureCheckpoints(const TrainFlags& flags, int rank,
                                  TrainOptions* options) {
  if (flags.out_dir.empty()) {
    if (flags.training.resume) {
      return absl::InvalidArgumentError(
          "--resume needs --out, the run directory holding the checkpoints");
    }
    return absl::OkStatus();
  }
  // A directory that holds a run is continued (--resume) or left alone: its
  // metrics would be appended to and its checkpoints overwritten. Checked by
  // every rank before the rendezvous, so before rank 0 writes anything. An
  // empty metrics.jsonl is a run that failed before its first epoch (a model
  // script that does not fit, a server that did not answer): nothing to keep.
  if (!flags.training.resume) {
    for (const char* record : {"summary.json", "metrics.jsonl"}) {
      const std::string path = JoinPath(flags.out_dir, record);
      std::error_code ec;
      const bool empty_metrics = std::string(record) == "metrics.jsonl" &&
                                 std::filesystem::file_size(path, ec) == 0 &&
                                 !ec;
      if (std::filesystem::exists(path) && !empty_metrics) {
        return absl::AlreadyExistsError(absl::StrCat(
            flags.out_dir, " already holds a run (", record,
            "); choose another --out, or --resume to continue it"));
      }
    }
  }
  // The run directory exists even when no checkpoints are written.
  std::string dir = flags.training.checkpoint_every == 0
                        ? flags.out_dir
                        : JoinPath(flags.out_dir, "checkpoints");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot create: ", ec.message()));
  }
  // The effective configuration, as a --config file takes it back; under
  // `run`, run's own (it wrote one first).
  const std::string config = JoinPath(flags.out_dir, "config.toml");
  if (rank == 0 && !std::filesystem::exists(config))
    RETURN_IF_ERROR(WriteFileAtomic(config, flags.effective_config));
  if (flags.training.checkpoint_every == 0) return absl::OkStatus();
  options->checkpoint_path =
      JoinPath(dir, absl::StrCat("rank-", rank, ".ckpt"));
  options->resume = flags.training.resume;
  options->allow_changed_settings = flags.training.allow_changed_settings;
  return absl::OkStatus();
}

// <out>/metrics.jsonl opened for appending; null without --out or off rank 0.
absl::StatusOr<std::unique_ptr<std::ofstream>> OpenMetrics(
    const std::string& out_dir, bool leader) {
  if (!leader || out_dir.empty()) return nullptr;
  auto metrics = std::make_unique<std::ofstream>(
      JoinPath(out_dir, "metrics.jsonl"), std::ios::app);
  if (!*metrics) {
    return absl::PermissionDeniedError(
        absl::StrCat(out_dir, "/metrics.jsonl: cannot open"));
  }
  return metrics;
}

// Training options from the flags, with the compute threads decided: --threads
// if given, else this machine's cores shared among the trainers on it:
// `local_world_size` if positive (the launch variables' count, torchrun's
// LOCAL_WORLD_SIZE or Slurm's tasks on this node), else LOCAL_WORLD_SIZE (1
// when unset). With --sampler-threads 0 the sampling threads are chosen
// from measurement, from one up to the same share.
absl::StatusOr<TrainOptions> TrainOptionsFor(const TrainFlags& flags,
                                             int local_world_size = 0) {
  ASSIGN_OR_RETURN(TrainOptions options, ToTrainOptions(flags.training));
  int local = 1;
  if (local_world_size > 0) {
    local = local_world_size;
  } else if (const char* value = std::getenv("LOCAL_WORLD_SIZE")) {
    if (!absl::SimpleAtoi(value, &local) || local < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LOCAL_WORLD_SIZE '", value, "' is not a positive integer"));
    }
  }
  if (options.torch_threads <= 0)
    options.torch_threads = ComputeThreadsShare(local);
  if (flags.training.sampler_threads == 0)
    options.max_sampler_threads = ComputeThreadsShare(local);
  return options;
}

// This trainer's metrics (--metrics-listen) while it runs: the endpoint
// serves them from the start (phase "starting"); Observe points the run's
// callbacks at them.
struct ServedMetrics {
  std::unique_ptr<TrainingMetrics> metrics;  // Null without --metrics-listen.
  std::unique_ptr<internal::MetricsEndpoint> endpoint;  // Reads metrics.

  void Observe(TrainOptions* options) const {
    if (metrics) metrics->Observe(options);
  }
  void Finish(bool ok) const {
    if (metrics) metrics->Finish(ok);
  }
};

// Binds --metrics-listen; with a fixed port, trainer k of its machine
// (LOCAL_RANK) takes PORT + k, so that trainers started with the same flags
// on one machine do not collide. Prints where the metrics are.
absl::StatusOr<ServedMetrics> ServeMetrics(const TrainFlags& flags, int rank,
                                           int world_size, int local_rank,
                                           int epochs) {
  ServedMetrics served;
  std::string address = flags.training.metrics_listen;
  if (address.empty()) return served;
  std::string host, port_text;
  int port = 0;
  if (SplitHostPort(address, &host, &port_text) &&
      absl::SimpleAtoi(port_text, &port) && port > 0 && local_rank > 0) {
    if (port + local_rank > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot serve metrics on ", address, " + local rank ", local_rank,
          ": port ", port + local_rank, " is beyond 65535"));
    }
    address = absl::StrCat(address.substr(0, address.rfind(':') + 1),
                           port + local_rank);
  }
  served.metrics = std::make_unique<TrainingMetrics>(rank, world_size, epochs);
  ASSIGN_OR_RETURN(served.endpoint, internal::MetricsEndpoint::Start(
                                        address, [m = served.metrics.get()] {
                                          return m->Render();
                                        }));
  std::printf("shardgnn train: metrics on http://%s:%d/metrics\n",
              address.substr(0, address.rfind(':')).c_str(),
              served.endpoint->port());
  std::fflush(stdout);
  return served;
}

// <out>/report.html; a report that cannot be written is a warning, not a
// failed run.
void WriteReport(const std::string& out_dir) {
  absl::Status s = WriteRunReport(out_dir);
  if (!s.ok()) {
    std::printf("warning: no report.html: %s\n",
                std::string(s.message()).c_str());
  }
}

// Points options->model_path at <out>/model.pt (the leader, with --out), and
// a model script's options->model_script_path at <out>/model_script.pt.
void ConfigureModelFile(const TrainFlags& flags, bool leader,
                        TrainOptions* options) {
  if (!leader || flags.out_dir.empty()) return;
  options->model_path = JoinPath(flags.out_dir, kModelParametersFile);
  if (options->model.kind == ModelKind::kScript)
    options->model_script_path = JoinPath(flags.out_dir, kModelScriptFile);
}

// <out>/model.json beside the model.pt Train wrote: what `shardgnn infer`
// and users outside shardgnn rebuild the model from.
absl::Status WriteModelConfig(const TrainFlags& flags,
                              const TrainOptions& options, int64_t in_dim) {
  if (options.model_path.empty()) return absl::OkStatus();
  ModelConfig config;
  config.model = options.model;
  config.in_dim = in_dim;
  if (options.embeddings != nullptr) {
    // The rows FinishEmbeddings wrote beside it.
    config.learned_dim = options.embeddings->dim();
    config.ignore_features = options.ignore_features;
    config.learned_file = kLearnedEmbeddingsFile;
    if (options.pretrain_epochs > 0) {  // Frozen rows, read scaled.
      config.learned_row_length =
          FrozenRowLength(!options.ignore_features && in_dim > 0);
    }
  }
  config.num_classes = options.num_classes;
  config.fanouts = options.fanouts;
  config.task = options.task;
  if (options.task == TaskKind::kLink) {
    config.decoder = options.link.decoder;
    config.num_classes = options.model.hidden;  // The embedding width.
  }
  return WriteFileAtomic(JoinPath(flags.out_dir, kModelConfigFile),
                         ModelConfigToJson(config));
}

// --dataset: one process, the whole graph in memory, no RPC and no process
// group.
absl::Status RunInProcess(const TrainFlags& flags) {
  const ClusterFlags& cluster = flags.cluster;
  if (!cluster.servers.empty() || !cluster.cluster_file.empty() ||
      !cluster.partition_dir.empty()) {
    return absl::InvalidArgumentError(
        "--dataset trains in this process over the graph in memory; it cannot "
        "be combined with --servers, --cluster or --partition");
  }
  if (cluster.world_size > 1 || cluster.rank > 0) {
    return absl::InvalidArgumentError(
        "--dataset trains in one process: --world-size and --rank do not "
        "apply");
  }
  if (flags.training.cache_mb > 0) {
    return absl::InvalidArgumentError(
        "--dataset holds every feature in memory: --cache-mb does not apply");
  }
  if (!cluster.security.auth_token_file.empty() || cluster.security.tls()) {
    return absl::InvalidArgumentError(
        "--dataset talks to no server: --auth-token-file and --tls-* do not "
        "apply");
  }
  // The flags are checked before the dataset is read. A typed dataset
  // trains R-GCN unless --model says otherwise.
  ASSIGN_OR_RETURN(TrainOptions options, TrainOptionsFor(flags));
  ASSIGN_OR_RETURN(const DatasetManifest header,
                   ReadDatasetManifest(flags.dataset_dir));
  if (header.typed() && !flags.training.model_given) {
    TrainFlags resolved = flags;
    resolved.training.model = "rgcn";
    ASSIGN_OR_RETURN(options, TrainOptionsFor(resolved));
  }
  ASSIGN_OR_RETURN(const ServedMetrics served,
                   ServeMetrics(flags, /*rank=*/0, /*world_size=*/1,
                                /*local_rank=*/0, options.epochs));
  ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(flags.dataset_dir));
  ASSIGN_OR_RETURN(std::unique_ptr<InMemoryGraphSource> source,
                   InMemoryGraphSource::FromDataset(dataset));
  options.num_classes = dataset.manifest.num_classes;
  TrainSplits splits;
  auto split = [&](const char* name) {
    auto it = dataset.splits.find(name);
    return it == dataset.splits.end() ? std::vector<NodeId>() : it->second;
  };
  splits.train = split("train");
  splits.valid = split("valid");
  splits.test = split("test");
  const bool link = options.task == TaskKind::kLink;
  if (link) {
    RETURN_IF_ERROR(ReadEdgeSplits(
        [&](const char* name) -> absl::StatusOr<std::vector<NodeId>> {
          auto it = dataset.edge_splits.find(name);
          return it == dataset.edge_splits.end() ? std::vector<NodeId>()
                                                 : it->second;
        },
        &splits));
    if (splits.train_edges.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flags.dataset_dir,
          ": no edge split for --task link; make one with `shardgnn dataset "
          "import ... --edge-split 0.85,0.05,0.10`"));
    }
  } else if (splits.train.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flags.dataset_dir, ": no train split (", SplitFileName("train"), ")"));
  }
  RETURN_IF_ERROR(ConfigureCheckpoints(flags, /*rank=*/0, &options));
  ASSIGN_OR_RETURN(std::unique_ptr<std::ofstream> metrics,
                   OpenMetrics(flags.out_dir, /*leader=*/true));
  ASSIGN_OR_RETURN(std::string features,
                   ChooseFeatures(flags.training, *source, &options));
  std::printf(
      "shardgnn train: in process, dataset '%s' in memory (%lld nodes, %lld "
      "edges), %zu train / %zu valid / %zu test %s\n",
      dataset.manifest.name.c_str(),
      static_cast<long long>(dataset.num_nodes()),
      static_cast<long long>(dataset.num_edges()),
      link ? splits.train_edges.size() / 2 : splits.train.size(),
      link ? splits.valid_edges.size() / 2 : splits.valid.size(),
      link ? splits.test_edges.size() / 2 : splits.test.size(),
      link ? "edges" : "nodes");
  const size_t train_items =
      link ? splits.train_edges.size() / 2 : splits.train.size();
  PrintSettings(
      options, features,
      options.steps_per_epoch > 0
          ? options.steps_per_epoch
          : StepsPerEpoch(static_cast<int64_t>(train_items), options.batch_size,
                          options.min_steps_per_epoch));
  options.on_epoch = EpochReporter(options.epochs, metrics.get());
  ReportSteps(flags.training.progress_seconds, &options);
  ConfigureModelFile(flags, /*leader=*/true, &options);
  std::unique_ptr<LearnableRows> embeddings;
  if (flags.training.learn_embeddings > 0) {
    int staleness = 0;
    ASSIGN_OR_RETURN(EmbeddingTableConfig config,
                     EmbeddingConfigFor(flags.training, /*num_trainers=*/1,
                                        "in-process", &staleness));
    ASSIGN_OR_RETURN(std::unique_ptr<EmbeddingTable> table,
                     EmbeddingTable::Create(config, 0, source->num_nodes()));
    // Snapshots with the checkpoints, in the run directory.
    embeddings = MakeLocalRows(
        std::move(table), /*trainer=*/0, staleness, absl::Seconds(120),
        flags.out_dir.empty() ? ""
                              : JoinPath(flags.out_dir, "embedding_snapshots"));
    if (!flags.out_dir.empty()) {
      RETURN_IF_ERROR(WriteEmbeddingRunFile(
          flags.out_dir,
          {config.run_id, "", source->num_nodes(), /*partition_ids=*/false}));
    }
    options.embeddings = embeddings.get();
    PrintEmbeddings(*embeddings, "in this process");
  }
  served.Observe(&options);
  absl::StatusOr<TrainResult> trained = Train(*source, splits, options);
  served.Finish(trained.ok());
  ASSIGN_OR_RETURN(TrainResult result, std::move(trained));
  PrintResult(result, options.exact_test);
  if (flags.out_dir.empty()) return absl::OkStatus();
  nlohmann::ordered_json learned;
  if (embeddings != nullptr) {
    ASSIGN_OR_RETURN(
        learned, FinishEmbeddings(*embeddings, result, source->num_nodes(), {},
                                  flags.out_dir, nullptr));
    learned["ignore_features"] = options.ignore_features;
  }
  RETURN_IF_ERROR(WriteModelConfig(flags, options, source->feature_dim()));
  nlohmann::ordered_json summary =
      SummaryJson(result, flags.training, options, /*world_size=*/1,
                  static_cast<int64_t>(train_items));
  summary["mode"] = "in-process";
  summary["dataset"] = flags.dataset_dir;
  summary["dataset_name"] = dataset.manifest.name;
  if (embeddings != nullptr) summary["embeddings"] = learned;
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(flags.out_dir, "summary.json"),
                                  summary.dump(2) + "\n"));
  WriteReport(flags.out_dir);
  return absl::OkStatus();
}

absl::Status RunTrain(const TrainFlags& flags) {
  TuneAllocatorForTraining();
  if (!flags.dataset_dir.empty()) return RunInProcess(flags);
  ASSIGN_OR_RETURN(DistributedOptions dist,
                   DistributedOptionsFor(flags.cluster));
  ASSIGN_OR_RETURN(TrainOptions options,
                   TrainOptionsFor(flags, dist.local_world_size));
  ASSIGN_OR_RETURN(const ServedMetrics served,
                   ServeMetrics(flags, dist.rank, dist.world_size,
                                dist.local_rank, options.epochs));
  // Before any server is contacted.
  if (options.task == TaskKind::kLink && flags.cluster.partition_dir.empty()) {
    return absl::InvalidArgumentError(
        "--task link needs --partition DIR: the trainers read the "
        "partition's edge splits (edges_*.npy) from it");
  }
  std::vector<std::string> addresses;
  ASSIGN_OR_RETURN(
      std::unique_ptr<RemoteGraphSource> remote,
      ConnectToServers(flags.cluster, !flags.training.no_shared_memory,
                       !flags.training.no_feature_port, &addresses));
  options.num_classes = remote->num_classes();
  if (remote->schema() != nullptr && !flags.training.model_given) {
    // A typed partition trains R-GCN unless --model says otherwise.
    TrainFlags resolved = flags;
    resolved.training.model = "rgcn";
    ASSIGN_OR_RETURN(options, TrainOptionsFor(resolved, dist.local_world_size));
    options.num_classes = remote->num_classes();
  }
  std::vector<std::string> shared_parts, port_parts;
  for (int p = 0; p < remote->book().num_parts(); ++p) {
    if (remote->schema() != nullptr) break;  // Typed rows: gRPC (below).
    if (remote->reads_shared_memory(p)) shared_parts.push_back(absl::StrCat(p));
    if (remote->uses_feature_port(p)) port_parts.push_back(absl::StrCat(p));
  }
  if (remote->schema() != nullptr) {
    std::printf(
        "shardgnn train: typed graph (%d node types, %d relations): features "
        "per node type fetched through gRPC calls\n",
        remote->schema()->num_node_types(), remote->schema()->num_relations());
  }
  if (!shared_parts.empty()) {
    std::printf(
        "shardgnn train: features of part(s) %s read from their servers' "
        "shared memory (same machine)\n",
        absl::StrJoin(shared_parts, ",").c_str());
  }
  if (!port_parts.empty()) {
    std::printf(
        "shardgnn train: features of part(s) %s fetched over their servers' "
        "feature ports\n",
        absl::StrJoin(port_parts, ",").c_str());
  }

  TrainSplits splits;
  std::vector<NodeId> train, valid, test;
  const bool link = options.task == TaskKind::kLink;
  if (link) {
    // Every rank reads the whole edge split from the partition directory;
    // the link task trains and evaluates its share.
    ASSIGN_OR_RETURN(PartitionManifest manifest,
                     ReadPartitionManifest(flags.cluster.partition_dir));
    RETURN_IF_ERROR(ReadEdgeSplits(
        [&](const char* name) -> absl::StatusOr<std::vector<NodeId>> {
          if (std::string(name) != "train" && !manifest.edge_splits.count(name))
            return std::vector<NodeId>();
          return ReadPartitionEdgeSplit(flags.cluster.partition_dir, manifest,
                                        name);
        },
        &splits));
    const auto edges = static_cast<int64_t>(splits.train_edges.size() / 2);
    if (options.steps_per_epoch == 0) {
      options.steps_per_epoch =
          StepsPerEpoch((edges + dist.world_size - 1) / dist.world_size,
                        options.batch_size, options.min_steps_per_epoch);
    }
  } else {
    ASSIGN_OR_RETURN(train, remote->FetchSplit("train"));
    ASSIGN_OR_RETURN(valid, remote->FetchSplit("valid"));
    ASSIGN_OR_RETURN(test, remote->FetchSplit("test"));
    // With shares every trainer cuts its part of each step from the whole
    // train split (TrainOptions::shares).
    options.world_size = dist.world_size;
    splits.train =
        options.shares() ? train : Chunk(train, dist.rank, dist.world_size);
    splits.valid = Chunk(valid, dist.rank, dist.world_size);
    splits.test = Chunk(test, dist.rank, dist.world_size);
    // Every rank runs the same number of steps: as many as the largest chunk
    // needs.
    size_t largest = (train.size() + static_cast<size_t>(dist.world_size) - 1) /
                     static_cast<size_t>(dist.world_size);
    if (options.steps_per_epoch == 0) {
      options.steps_per_epoch =
          StepsPerEpoch(static_cast<int64_t>(largest), options.batch_size,
                        options.min_steps_per_epoch);
    }
  }
  // Every rank samples the same nodes, so all choose the same transform.
  ASSIGN_OR_RETURN(std::string features,
                   ChooseFeatures(flags.training, *remote, &options));

  const GraphSource* source = remote.get();
  std::unique_ptr<FeatureCache> cache;
  std::unique_ptr<CachedGraphSource> cached;
  if (flags.training.cache_mb > 0 && remote->schema() != nullptr &&
      dist.rank == 0) {
    std::printf(
        "shardgnn train: --cache-mb: the feature cache holds rows of one "
        "width; a typed graph's rows (a width per node type) are fetched "
        "uncached\n");
  }
  if (flags.training.cache_mb > 0 && remote->schema() == nullptr) {
    ASSIGN_OR_RETURN(CachePolicy policy,
                     ParseCachePolicy(flags.training.cache_policy));
    ASSIGN_OR_RETURN(cache,
                     FeatureCache::Create({flags.training.cache_mb << 20,
                                           remote->feature_dim(), policy}));
    if (policy == CachePolicy::kStatic) {
      SamplerOptions presample;
      presample.fanouts = options.fanouts;
      presample.fetch_features = false;
      presample.fetch_labels = false;
      ASSIGN_OR_RETURN(auto sampler,
                       NeighborSampler::Create(remote.get(), presample));
      ASSIGN_OR_RETURN(
          std::vector<NodeId> hottest,
          HottestByPresampling(
              *sampler, link ? Endpoints(splits.train_edges) : splits.train,
              /*num_batches=*/8, options.batch_size,
              MixSeed(options.seed, 99)));
      RETURN_IF_ERROR(PrefillCache(*remote, hottest, cache.get()));
    }
    cached = std::make_unique<CachedGraphSource>(remote.get(), cache.get());
    source = cached.get();
  }

  RETURN_IF_ERROR(ConfigureCheckpoints(flags, dist.rank, &options));
  ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group,
                   ProcessGroup::Connect(dist));
  C10dGradientSync sync(group.get());

  const bool leader = dist.rank == 0;
  ASSIGN_OR_RETURN(std::unique_ptr<std::ofstream> metrics,
                   OpenMetrics(flags.out_dir, leader));
  // The leader's record of the servers' faults and CPU time in each epoch.
  auto server_usage =
      std::make_shared<std::vector<std::optional<ServersUsage>>>();
  if (leader) {
    std::printf(
        "shardgnn train: %d trainer(s), %zu servers, partition %s, %zu train / "
        "%zu valid / %zu test %s, "
        "%lld steps per epoch\n",
        dist.world_size, addresses.size(), remote->partition_id().c_str(),
        link ? splits.train_edges.size() / 2 : train.size(),
        link ? splits.valid_edges.size() / 2 : valid.size(),
        link ? splits.test_edges.size() / 2 : test.size(),
        link ? "edges" : "nodes",
        static_cast<long long>(options.steps_per_epoch));
    PrintSettings(options, features, options.steps_per_epoch);
    ASSIGN_OR_RETURN(
        options.on_epoch,
        WithServerUsage(flags.cluster, addresses,
                        EpochReporter(options.epochs, metrics.get()),
                        server_usage));
    ReportSteps(flags.training.progress_seconds, &options);
  }

  ConfigureModelFile(flags, leader, &options);
  options.rank = dist.rank;
  options.world_size = dist.world_size;
  if (!flags.out_dir.empty()) {
    options.scratch_dir =
        JoinPath(flags.out_dir, absl::StrCat(".scratch-rank-", dist.rank));
  }
  std::unique_ptr<LearnableRows> embeddings;
  if (flags.training.learn_embeddings > 0) {
    ASSIGN_OR_RETURN(const EmbeddingRun run,
                     AgreeOnEmbeddingRun(&sync, leader, flags.out_dir,
                                         flags.training.resume));
    if (leader && !flags.out_dir.empty()) {
      RETURN_IF_ERROR(WriteEmbeddingRunFile(
          flags.out_dir, {run.run_id, flags.cluster.partition_dir,
                          remote->num_nodes(), /*partition_ids=*/true}));
    }
    int staleness = 0;
    ASSIGN_OR_RETURN(EmbeddingTableConfig config,
                     EmbeddingConfigFor(flags.training, dist.world_size,
                                        run.run_id, &staleness));
    config.run_secret = run.secret;
    ASSIGN_OR_RETURN(
        embeddings, MakeRemoteRows(remote.get(), config, dist.rank, staleness));
    options.embeddings = embeddings.get();
    if (leader) PrintEmbeddings(*embeddings, "on the storage servers");
  }
  served.Observe(&options);
  absl::StatusOr<TrainResult> trained = Train(*source, splits, options, &sync);
  served.Finish(trained.ok());
  ASSIGN_OR_RETURN(TrainResult result, std::move(trained));
  for (EpochStats& e : result.epochs) {
    const auto at = static_cast<size_t>(e.epoch - 1);
    if (e.epoch >= 1 && at < server_usage->size() && (*server_usage)[at]) {
      e.server_minor_faults = (*server_usage)[at]->minor_faults;
      e.server_cpu_seconds = (*server_usage)[at]->cpu_seconds;
    }
  }
  if (leader) {
    PrintResult(result, options.exact_test);
    if (!flags.out_dir.empty()) {
      nlohmann::ordered_json learned;
      if (embeddings != nullptr) {
        std::vector<NodeId> orig_ids;
        if (!flags.cluster.partition_dir.empty()) {
          ASSIGN_OR_RETURN(
              NpyArray<int64_t> orig,
              ReadNpy<int64_t>(
                  JoinPath(flags.cluster.partition_dir, kOrigIdsFile), 1));
          orig_ids = std::move(orig.data);
        }
        ASSIGN_OR_RETURN(
            learned, FinishEmbeddings(*embeddings, result, remote->num_nodes(),
                                      orig_ids, flags.out_dir, remote.get()));
        learned["ignore_features"] = options.ignore_features;
      }
      RETURN_IF_ERROR(WriteModelConfig(flags, options, remote->feature_dim()));
      nlohmann::ordered_json summary =
          SummaryJson(result, flags.training, options, dist.world_size,
                      static_cast<int64_t>(link ? splits.train_edges.size() / 2
                                                : train.size()));
      summary["mode"] = "distributed";
      if (embeddings != nullptr) summary["embeddings"] = learned;
      summary["servers"] = addresses;
      summary["partition_id"] = remote->partition_id();
      if (!flags.cluster.partition_dir.empty()) {
        // The dataset's name, as the partition records it.
        absl::StatusOr<PartitionManifest> manifest =
            ReadPartitionManifest(flags.cluster.partition_dir);
        if (manifest.ok()) {
          summary["partition"] = flags.cluster.partition_dir;
          summary["dataset_name"] = manifest->dataset_name;
        }
      }
      if (cache) {
        auto cs = cache->stats();
        summary["cache"] = {{"hit_rate", cs.hit_rate()},
                            {"bytes_saved", cs.bytes_saved},
                            {"entries", cs.entries}};
      }
      auto rs = remote->stats();
      summary["remote"] = {{"requests", rs.requests},
                           {"feature_bytes", rs.feature_bytes},
                           {"shared_feature_bytes", rs.shared_feature_bytes},
                           {"feature_port_parts", port_parts.size()},
                           {"neighbor_bytes", rs.neighbor_bytes},
                           {"failovers", rs.failovers},
                           {"hedges_sent", rs.hedges_sent},
                           {"hedges_won", rs.hedges_won}};
      // Each part's replicas, as this trainer (rank 0) saw them.
      nlohmann::json parts = nlohmann::json::array();
      for (int p = 0; p < remote->book().num_parts(); ++p) {
        nlohmann::json replicas = nlohmann::json::array();
        for (const internal::ReplicaState& r : remote->replicas(p)) {
          replicas.push_back({{"address", r.address},
                              {"up", r.up},
                              {"calls", r.calls},
                              {"failures", r.failures},
                              {"rejoins", r.rejoins},
                              {"joined_late", r.joined_late}});
        }
        parts.push_back(replicas);
      }
      summary["remote"]["replicas"] = parts;
      // Servers that did not answer when rank 0 connected (left out), and
      // have not joined since.
      nlohmann::json unreached = nlohmann::json::array();
      for (const auto& [address, error] : remote->unreached()) {
        unreached.push_back({{"address", address}, {"error", error}});
      }
      summary["remote"]["unreached"] = unreached;
      RETURN_IF_ERROR(WriteFileAtomic(JoinPath(flags.out_dir, "summary.json"),
                                      summary.dump(2) + "\n"));
      WriteReport(flags.out_dir);
    }
  }
  return group->Barrier();
}

}  // namespace

void AddTrainCommand(CLI::App& app, absl::Status* result) {
  (void)StartedAt();  // The clock starts with the process.
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Run one data-parallel trainer against running storage servers, "
      "or (--dataset) train in one process with the graph in memory");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->add_option("--dataset", flags->dataset_dir,
                  "Train in this process over this dataset directory in "
                  "memory (no servers, no other trainers)");
  cmd->add_option("--out", flags->out_dir,
                  "Directory for metrics.jsonl and summary.json (rank 0)");
  AddTrainingFlags(cmd, &flags->training);
  cmd->callback([cmd, flags, result] {
    flags->training.model_given = cmd->count("--model") > 0;
    flags->effective_config = EffectiveConfig(*cmd, &flags->training);
    *result = RunTrain(*flags);
  });
}

}  // namespace shardgnn::cli
