// `shardgnn train`: one data-parallel trainer. Reads the torchrun variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; flags override), connects to the
// storage servers, joins the other trainers through c10d, trains, and (rank 0)
// writes metrics.jsonl and summary.json.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"
#include "cli/training_flags.h"
#include "common/file_util.h"
#include "common/sampling.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "partition/partition_book.h"
#include "sampler/cached_graph_source.h"
#include "sampler/remote_graph_source.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/distributed.h"
#include "trainer/trainer.h"

namespace shardgnn::cli {
namespace {

struct TrainFlags {
  std::string servers;
  std::string cluster_file;
  std::string partition_dir;
  std::string out_dir;
  int rank = -1;
  int world_size = -1;
  std::string master_addr;
  int master_port = -1;
  double timeout_seconds = 120;
  TrainingFlags training;
};

}  // namespace

// "a:1,b:2" and/or a file with one HOST:PORT per line ('#' starts a comment).
absl::StatusOr<std::vector<std::string>> ServerAddresses(
    const std::string& list, const std::string& file) {
  std::vector<std::string> addresses;
  for (absl::string_view a :
       absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    addresses.emplace_back(absl::StripAsciiWhitespace(a));
  }
  if (!file.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
      if (!line.empty()) addresses.emplace_back(line);
    }
  }
  if (addresses.empty())
    return absl::InvalidArgumentError(
        "no storage servers: give --servers or --cluster");
  for (const auto& a : addresses) {
    if (a.find(':') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("server address '", a, "' is not HOST:PORT"));
    }
  }
  return addresses;
}

namespace {

// The r-th of `world` contiguous, near-equal chunks of `ids`.
std::vector<NodeId> Chunk(const std::vector<NodeId>& ids, int rank, int world) {
  size_t n = ids.size();
  size_t begin = n * static_cast<size_t>(rank) / static_cast<size_t>(world);
  size_t end = n * static_cast<size_t>(rank + 1) / static_cast<size_t>(world);
  return std::vector<NodeId>(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                             ids.begin() + static_cast<std::ptrdiff_t>(end));
}

nlohmann::ordered_json EpochJson(const EpochStats& s) {
  nlohmann::ordered_json j;
  j["epoch"] = s.epoch;
  j["steps"] = s.steps;
  j["loss"] = s.loss;
  j["train_acc"] = s.train_acc;
  j["val_acc"] = s.val_acc;
  j["epoch_seconds"] = s.epoch_seconds;
  j["wait_seconds"] = s.sample_seconds;
  j["sample_busy_seconds"] = s.sample_busy_seconds;
  j["fetch_seconds"] = s.fetch_seconds;
  j["compute_seconds"] = s.compute_seconds;
  j["allreduce_seconds"] = s.sync_seconds;
  j["eval_seconds"] = s.eval_seconds;
  j["sampled_edges"] = s.sampled_edges;
  return j;
}

absl::Status RunTrain(const TrainFlags& flags) {
  DistributedOptions defaults;
  ASSIGN_OR_RETURN(DistributedOptions dist,
                   DistributedOptionsFromEnv(defaults));
  if (flags.rank >= 0) dist.rank = flags.rank;
  if (flags.world_size >= 0) dist.world_size = flags.world_size;
  if (!flags.master_addr.empty()) dist.master_addr = flags.master_addr;
  if (flags.master_port >= 0) dist.master_port = flags.master_port;
  dist.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.timeout_seconds * 1000));
  RETURN_IF_ERROR(ValidateDistributedOptions(dist));
  ASSIGN_OR_RETURN(TrainOptions options, ToTrainOptions(flags.training));
  ASSIGN_OR_RETURN(std::vector<std::string> addresses,
                   ServerAddresses(flags.servers, flags.cluster_file));

  RemoteGraphSourceOptions source_options;
  if (!flags.partition_dir.empty()) {
    ASSIGN_OR_RETURN(PartitionManifest manifest,
                     ReadPartitionManifest(flags.partition_dir));
    source_options.expected_partition_id = manifest.partition_id;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RemoteGraphSource> remote,
                   RemoteGraphSource::Connect(addresses, source_options));
  options.num_classes = remote->num_classes();

  TrainSplits splits;
  ASSIGN_OR_RETURN(std::vector<NodeId> train, remote->FetchSplit("train"));
  ASSIGN_OR_RETURN(std::vector<NodeId> valid, remote->FetchSplit("valid"));
  ASSIGN_OR_RETURN(std::vector<NodeId> test, remote->FetchSplit("test"));
  splits.train = Chunk(train, dist.rank, dist.world_size);
  splits.valid = Chunk(valid, dist.rank, dist.world_size);
  splits.test = Chunk(test, dist.rank, dist.world_size);
  // Every rank runs the same number of steps: as many as the largest chunk
  // needs.
  size_t largest = (train.size() + static_cast<size_t>(dist.world_size) - 1) /
                   static_cast<size_t>(dist.world_size);
  options.steps_per_epoch = static_cast<int64_t>(
      (largest + static_cast<size_t>(options.batch_size) - 1) /
      static_cast<size_t>(options.batch_size));

  const GraphSource* source = remote.get();
  std::unique_ptr<FeatureCache> cache;
  std::unique_ptr<CachedGraphSource> cached;
  if (flags.training.cache_mb > 0) {
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
          HottestByPresampling(*sampler, splits.train, /*num_batches=*/8,
                               options.batch_size, MixSeed(options.seed, 99)));
      RETURN_IF_ERROR(PrefillCache(*remote, hottest, cache.get()));
    }
    cached = std::make_unique<CachedGraphSource>(remote.get(), cache.get());
    source = cached.get();
  }

  if (!flags.out_dir.empty()) {
    // Every rank checkpoints its own state (parameters agree across ranks;
    // dropout and sampling streams do not), so a resumed run continues exactly
    // where each rank stopped.
    std::string dir = JoinPath(flags.out_dir, "checkpoints");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(dir, ": cannot create: ", ec.message()));
    }
    options.checkpoint_path =
        JoinPath(dir, absl::StrCat("rank-", dist.rank, ".ckpt"));
    options.resume = flags.training.resume;
  } else if (flags.training.resume) {
    return absl::InvalidArgumentError(
        "--resume needs --out, the run directory holding the checkpoints");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group,
                   ProcessGroup::Connect(dist));
  C10dGradientSync sync(group.get());

  const bool leader = dist.rank == 0;
  std::unique_ptr<std::ofstream> metrics;
  if (leader && !flags.out_dir.empty()) {
    metrics = std::make_unique<std::ofstream>(
        JoinPath(flags.out_dir, "metrics.jsonl"), std::ios::app);
    if (!*metrics)
      return absl::PermissionDeniedError(
          absl::StrCat(flags.out_dir, "/metrics.jsonl: cannot open"));
  }
  if (leader) {
    std::printf(
        "shardgnn train: %d trainer(s), %zu servers, partition %s, %zu train / "
        "%zu valid / %zu test nodes, "
        "%lld steps per epoch\n",
        dist.world_size, addresses.size(), remote->partition_id().c_str(),
        train.size(), valid.size(), test.size(),
        static_cast<long long>(options.steps_per_epoch));
    std::fflush(stdout);
  }
  options.on_epoch = [&](const EpochStats& s) {
    if (!leader) return;
    std::printf(
        "epoch %3d/%d  loss %.4f  train %.3f  val %.3f  %.2fs (sampling %.2f, "
        "fetch %.2f, compute %.2f, allreduce %.2f, waiting %.2f, eval %.2f)\n",
        s.epoch, options.epochs, s.loss, s.train_acc, s.val_acc,
        s.epoch_seconds, s.sample_busy_seconds - s.fetch_seconds,
        s.fetch_seconds, s.compute_seconds - s.sync_seconds, s.sync_seconds,
        s.sample_seconds, s.eval_seconds);
    std::fflush(stdout);
    if (metrics) *metrics << EpochJson(s).dump() << "\n" << std::flush;
  };

  ASSIGN_OR_RETURN(TrainResult result, Train(*source, splits, options, &sync));
  if (leader) {
    std::printf("test accuracy %.4f (best validation %.4f at epoch %d)\n",
                result.test_acc, result.best_val_acc, result.best_epoch);
    std::fflush(stdout);
    if (!flags.out_dir.empty()) {
      nlohmann::ordered_json summary;
      summary["test_acc"] = result.test_acc;
      summary["best_val_acc"] = result.best_val_acc;
      summary["best_epoch"] = result.best_epoch;
      summary["num_parameters"] = result.num_parameters;
      summary["world_size"] = dist.world_size;
      summary["servers"] = addresses;
      summary["partition_id"] = remote->partition_id();
      double total = 0;
      for (const auto& e : result.epochs) total += e.epoch_seconds;
      summary["train_seconds"] = total;
      summary["config"] = nlohmann::json::parse(
          nlohmann::json(TrainingArgs(flags.training)).dump());
      if (cache) {
        auto cs = cache->stats();
        summary["cache"] = {{"hit_rate", cs.hit_rate()},
                            {"bytes_saved", cs.bytes_saved},
                            {"entries", cs.entries}};
      }
      auto rs = remote->stats();
      summary["remote"] = {{"requests", rs.requests},
                           {"feature_bytes", rs.feature_bytes},
                           {"neighbor_bytes", rs.neighbor_bytes}};
      RETURN_IF_ERROR(WriteFileAtomic(JoinPath(flags.out_dir, "summary.json"),
                                      summary.dump(2) + "\n"));
    }
  }
  return group->Barrier();
}

}  // namespace

void AddTrainCommand(CLI::App& app, absl::Status* result) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Run one data-parallel trainer against running storage servers");
  cmd->add_option("--servers", flags->servers,
                  "Storage servers, HOST:PORT,... (any order)");
  cmd->add_option("--cluster", flags->cluster_file,
                  "File naming the storage servers, one HOST:PORT per line");
  cmd->add_option("--partition", flags->partition_dir,
                  "Partition directory: the servers must serve this partition "
                  "(checked by its id)");
  cmd->add_option("--out", flags->out_dir,
                  "Directory for metrics.jsonl and summary.json (rank 0)");
  cmd->add_option("--rank", flags->rank, "Overrides RANK");
  cmd->add_option("--world-size", flags->world_size, "Overrides WORLD_SIZE");
  cmd->add_option("--master-addr", flags->master_addr, "Overrides MASTER_ADDR");
  cmd->add_option("--master-port", flags->master_port, "Overrides MASTER_PORT");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Seconds before a rendezvous or collective gives up")
      ->capture_default_str();
  AddTrainingFlags(cmd, &flags->training);
  cmd->callback([flags, result] { *result = RunTrain(*flags); });
}

}  // namespace shardgnn::cli
