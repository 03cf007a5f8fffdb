// `shardgnn run`: the whole pipeline on one machine, or a training run against
// storage servers already up.
//
// With no arguments: import the bundled Cora (reused if done), partition it
// into 2 (reused if done), start 2 storage servers and 2 trainers as child
// processes on 127.0.0.1 with free ports, train GraphSAGE, print a line per
// epoch and the final test accuracy, and stop every child. With --servers (or
// --cluster) only the trainers are started, against the servers named, which
// must serve the run's partition; they are left running. Ctrl-C, SIGTERM, or
// any child dying stops every child (the failed one is named); no orphans are
// left, also when the launcher itself is killed (children die with it, see
// common/subprocess.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"
#include "cli/run_report.h"
#include "cli/run_supervisor.h"
#include "cli/run_work_dir.h"
#include "cli/security_flags.h"
#include "cli/training_flags.h"
#include "common/file_util.h"
#include "common/ports.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "datasets/edge_split.h"
#include "datasets/importers.h"
#include "nlohmann/json.hpp"
#include "partition/partition.h"
#include "partition/partition_book.h"
#include "sampler/remote_graph_source.h"
#include "trainer/trainer.h"

namespace shardgnn::cli {
namespace {
namespace fs = std::filesystem;

struct RunFlags {
  std::string dataset;  // A canonical dataset dir, or raw input to import with
                        // --format.
  std::string format = "ogb";
  std::string name;
  std::string split_name;
  std::string edge_split;  // --task link on raw input; empty: kGaeEdgeSplit.
  int parts = 2;
  int trainers = 2;
  std::string method = "metis";
  std::string work_dir = "out";
  std::string out_dir;
  std::string effective_config;  // "[run]" and every flag (config.toml).
  std::string servers;
  std::string cluster_file;
  std::string partition_dir;
  bool disk = false;
  double timeout_seconds = 120;
  double peer_timeout_seconds = 30;
  int replicas = 1;
  double server_wait_seconds = 60;
  std::string hedge_after_ms = "0";  // Passed to the trainers.
  int max_restarts = 3;
  int max_server_restarts = 3;
  TrainingFlags training;
  SecurityFlags security;
  // Whether a flag was given on the command line (defaults are not).
  std::function<bool(const std::string&)> given = [](const std::string&) {
    return false;
  };
};

std::string SelfPath() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("shardgnn") : p.string();
}

// The bundled Cora in the source tree the binary was built from
// (SHARDGNN_DATA_DIR overrides).
std::string DefaultDataset() {
  if (const char* dir = std::getenv("SHARDGNN_DATA_DIR");
      dir != nullptr && *dir != '\0') {
    return JoinPath(dir, "cora/ogb-planetoid");
  }
  return JoinPath(SHARDGNN_DATA_DIR, "cora/ogb-planetoid");
}

// Flags that choose the data to import and partition, and who serves it: a
// run given a partition, or running servers, must not be given them (they
// would be ignored).
absl::Status CheckFlagConflicts(const RunFlags& flags) {
  auto conflicts = [&](const char* owner,
                       const std::vector<const char*>& others,
                       const char* why) -> absl::Status {
    if (!flags.given(owner)) return absl::OkStatus();
    std::vector<std::string> named;
    for (const char* flag : others) {
      if (flags.given(flag)) named.push_back(flag);
    }
    if (named.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(owner, " cannot be combined with ",
                     absl::StrJoin(named, ", "), ": ", why));
  };
  RETURN_IF_ERROR(conflicts(
      "--partition",
      {"--dataset", "--name", "--format", "--split-name", "--edge-split",
       "--parts", "--method"},
      "a partition directory already fixes its dataset, parts and method"));
  for (const char* owner : {"--servers", "--cluster"}) {
    RETURN_IF_ERROR(conflicts(
        owner,
        {"--dataset", "--name", "--format", "--split-name", "--edge-split",
         "--parts", "--method", "--disk", "--replicas",
         "--max-server-restarts"},
        "running servers already serve their partition, from memory or disk; "
        "this run starts only trainers"));
  }
  return absl::OkStatus();
}

// Imports (or reuses) the dataset and partitions it (or reuses the
// partition), keyed by content (cli/run_work_dir.h), with the edge split a
// link task trains on. Returns the partition dir.
absl::StatusOr<std::string> PreparePartition(const RunFlags& flags,
                                             TaskKind task) {
  RunDataOptions options;
  options.work_dir = flags.work_dir;
  options.input = flags.dataset.empty() ? DefaultDataset() : flags.dataset;
  options.name = flags.name;
  if (options.name.empty() && flags.dataset.empty()) options.name = "cora";
  options.split_name = flags.split_name;
  options.num_parts = flags.parts;
  options.method = flags.method;
  options.seed = flags.training.seed;
  const bool link = task == TaskKind::kLink;
  if (flags.given("--edge-split") && !link) {
    return absl::InvalidArgumentError(
        "--edge-split is for --task link (it splits a raw input's edges into "
        "train, valid and test at import)");
  }
  if (IsDatasetDir(options.input)) {
    std::vector<std::string> import_flags;
    for (const char* flag :
         {"--name", "--format", "--split-name", "--edge-split"}) {
      if (flags.given(flag)) import_flags.push_back(flag);
    }
    if (!import_flags.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(absl::StrJoin(import_flags, ", "),
                       " apply to raw input that run imports; ", options.input,
                       " is a dataset directory already"));
    }
  } else if (flags.format != "ogb") {
    return absl::InvalidArgumentError(
        "shardgnn run imports only --format ogb; import other formats with "
        "`shardgnn dataset import` and pass the dataset directory");
  } else if (link) {
    // A link run splits the edges itself unless the input's split holds
    // edges already (an OGB link split, imported as given).
    OgbImportOptions ogb;
    ogb.input_dir = options.input;
    ogb.split = options.split_name;
    ASSIGN_OR_RETURN(bool given, OgbSplitHoldsEdges(ogb));
    if (given && flags.given("--edge-split")) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.input,
          ": its split holds edges already (a given link prediction split); "
          "drop --edge-split"));
    }
    if (!given) {
      options.edge_split =
          flags.edge_split.empty() ? kGaeEdgeSplit : flags.edge_split;
    }
  }
  return cli::PreparePartition(options);
}

absl::Status RunPipeline(const RunFlags& flags) {
  RETURN_IF_ERROR(CheckFlagConflicts(flags));
  if (absl::AsciiStrToLower(flags.training.model) == "gine") {
    return absl::InvalidArgumentError(
        "--model gine reads edge features, which partitions do not hold yet: "
        "train it in one process (shardgnn train --dataset DIR --model gine)");
  }
  if (flags.trainers < 1)
    return absl::InvalidArgumentError("--trainers must be at least 1");
  if (flags.parts < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("--parts must be at least 1 (got ", flags.parts, ")"));
  if (!(flags.timeout_seconds > 0) || !(flags.peer_timeout_seconds > 0)) {
    return absl::InvalidArgumentError(
        "--timeout and --peer-timeout must be positive");
  }
  if (flags.replicas < 1 || flags.replicas > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--replicas must be between 1 and 16 (got ", flags.replicas, ")"));
  }
  if (!(flags.server_wait_seconds >= 0)) {
    return absl::InvalidArgumentError("--server-wait must be 0 or more");
  }
  if (flags.max_restarts < 0 || flags.max_server_restarts < 0) {
    return absl::InvalidArgumentError(
        "--max-restarts and --max-server-restarts must be 0 or more");
  }
  RETURN_IF_ERROR(ParsePartitionMethod(flags.method).status());
  if (flags.training.resume && flags.out_dir.empty())
    return absl::InvalidArgumentError(
        "--resume needs --out, the directory of the run to continue");
  ASSIGN_OR_RETURN(const TrainOptions train_options,
                   ToTrainOptions(flags.training));
  if (!train_options.share_weights.empty() &&
      static_cast<int>(train_options.share_weights.size()) != flags.trainers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shares '", flags.training.shares, "' gives ",
                     train_options.share_weights.size(), " weights for ",
                     flags.trainers, " trainers: give one per trainer"));
  }

  const std::string self = SelfPath();
  Supervisor supervisor;
  std::vector<std::string> addresses;
  std::string partition_dir = flags.partition_dir;
  bool own_servers = flags.servers.empty() && flags.cluster_file.empty();
  std::string out_dir;  // The run directory, made once the data is ready.
  // What the trainers (and the check of running servers) present; read here
  // so that a bad file is one error line before anything starts.
  SecurityFlags security = flags.security;
  if (own_servers && security.tls()) {
    return absl::InvalidArgumentError(
        "--tls-cert, --tls-key and --tls-ca are for --servers or --cluster "
        "(servers running under TLS); the servers run starts listen on "
        "127.0.0.1 only, with a generated auth token");
  }
  GraphStoreClientOptions client_security;
  RETURN_IF_ERROR(ApplySecurityFlags(security, &client_security));
  std::unique_ptr<GeneratedToken> generated;
  if (own_servers) {
    if (partition_dir.empty()) {
      ASSIGN_OR_RETURN(partition_dir,
                       PreparePartition(flags, train_options.task));
    }
    ASSIGN_OR_RETURN(PartitionManifest manifest,
                     ReadPartitionManifest(partition_dir));
    if (train_options.task == TaskKind::kLink &&
        !manifest.edge_splits.count("train")) {
      return absl::FailedPreconditionError(absl::StrCat(
          partition_dir,
          " has no edge split for --task link: give run the raw input (it "
          "splits the edges at import), or partition a dataset made with "
          "`shardgnn dataset import|generate --edge-split 0.85,0.05,0.10`"));
    }
    // Made once the data is ready, so a refused run leaves no work dir.
    if (security.auth_token_file.empty()) {
      ASSIGN_OR_RETURN(generated, GeneratedToken::Create(flags.work_dir));
      security.auth_token_file = generated->path();
    }
    // The servers keep the learned tables' snapshots in the run directory.
    ASSIGN_OR_RETURN(out_dir, CreateRunDirectory(flags.out_dir, flags.work_dir,
                                                 manifest.dataset_name));
    // Until now Ctrl-C simply ends the launcher (imports and partitions are
    // staged); from here on it stops the children first.
    InstallRunSignalHandlers();
    // Replicas of a part on this machine share its directory (servers open
    // their shard read-only).
    for (int i = 0; i < manifest.num_parts * flags.replicas; ++i) {
      const int p = i / flags.replicas;
      const int replica = i % flags.replicas;
      SubprocessOptions options;
      options.name = flags.replicas == 1 ? absl::StrCat("storage server ", p)
                                         : absl::StrCat("storage server ", p,
                                                        " replica ", replica);
      // A port below the ephemeral range, not port 0: if the server dies,
      // no outgoing connection can take its port before it is restarted on
      // the same address (RestartServer).
      ASSIGN_OR_RETURN(int port, PickFreeLoopbackPort());
      options.argv = {self,          "serve",
                      "--partition", partition_dir,
                      "--part",      std::to_string(p),
                      "--listen",    absl::StrCat("127.0.0.1:", port)};
      if (!flags.disk) options.argv.push_back("--memory");
      if (flags.training.learn_embeddings > 0) {
        options.argv.push_back("--embedding-dir");
        options.argv.push_back(
            JoinPath(out_dir, absl::StrCat("embedding_snapshots/server-", i)));
        if (flags.disk) {
          // Disk mode: the tables too.
          options.argv.push_back("--embedding-table-dir");
          options.argv.push_back(
              JoinPath(out_dir, absl::StrCat("embedding_tables/server-", i)));
        }
      }
      options.argv.push_back("--auth-token-file");
      options.argv.push_back(security.auth_token_file);
      std::string prefix = flags.replicas == 1
                               ? absl::StrCat("server ", p)
                               : absl::StrCat("server ", p, ".", replica);
      options.on_line = [prefix](const std::string& line) {
        if (line.find("ready on") == std::string::npos) PrintLine(prefix, line);
      };
      ASSIGN_OR_RETURN(auto server, Subprocess::Start(options));
      supervisor.AddServer(std::move(server), p, options);
    }
    for (size_t i = 0; i < supervisor.servers().size(); ++i) {
      absl::StatusOr<std::string> ready =
          WaitUntilReady(*supervisor.servers()[i]);
      // Another process can bind the picked port before the server does
      // (the port is free when picked, then released): start the server
      // again on another, a few times.
      for (int attempt = 0;
           attempt < 3 && !ready.ok() &&
           absl::StrContains(ready.status().message(), "already in use");
           ++attempt) {
        SubprocessOptions options = supervisor.server_options(i);
        ASSIGN_OR_RETURN(int port, PickFreeLoopbackPort());
        SetListenAddress(absl::StrCat("127.0.0.1:", port), &options);
        PrintLine("", absl::StrCat("shardgnn run: ", options.name,
                                   "'s port was taken; starting it on ", port));
        ASSIGN_OR_RETURN(auto server, Subprocess::Start(options));
        supervisor.ReplaceServer(i, std::move(server), std::move(options));
        ready = WaitUntilReady(*supervisor.servers()[i]);
      }
      RETURN_IF_ERROR(ready.status());
      const std::string& line = *ready;
      std::string rest = line.substr(line.find("ready on ") + 9);
      addresses.push_back(rest.substr(0, rest.find(' ')));
      supervisor.SetServerAddress(i, addresses.back());
      PrintLine("", line);
    }
    supervisor.SetMaxServerRestarts(flags.max_server_restarts);
  } else {
    ASSIGN_OR_RETURN(addresses,
                     ServerAddresses(flags.servers, flags.cluster_file));
    if (!partition_dir.empty()) {
      // Check once, before starting any trainer, that the running servers
      // serve the partition this run names.
      ASSIGN_OR_RETURN(PartitionManifest manifest,
                       ReadPartitionManifest(partition_dir));
      RemoteGraphSourceOptions check;
      check.expected_partition_id = manifest.partition_id;
      check.client = client_security;
      auto servers = RemoteGraphSource::Connect(addresses, check);
      if (!servers.ok()) {
        return absl::Status(
            servers.status().code(),
            absl::StrCat("checking --servers against --partition ",
                         partition_dir, ": ", servers.status().message()));
      }
    }
    InstallRunSignalHandlers();
  }

  if (out_dir.empty()) {
    // The dataset's name, when a partition directory says it.
    std::string dataset;
    if (!partition_dir.empty()) {
      absl::StatusOr<PartitionManifest> manifest =
          ReadPartitionManifest(partition_dir);
      if (manifest.ok()) dataset = manifest->dataset_name;
    }
    ASSIGN_OR_RETURN(
        out_dir, CreateRunDirectory(flags.out_dir, flags.work_dir, dataset));
  }
  std::error_code ec;
  // The effective configuration, every flag with its value, as a --config
  // file takes it back.
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir, "config.toml"),
                                  flags.effective_config));

  // The trainers meet through a file (no store socket listens; their Gloo
  // pairs bind 127.0.0.1). A stale one from a killed run would break it.
  const std::string store_file = JoinPath(out_dir, ".rendezvous");
  std::filesystem::remove(store_file, ec);
  // Starts the trainers; `resume`: from their checkpoints (a restart).
  auto start_trainers = [&](bool resume) -> absl::Status {
    std::filesystem::remove(store_file, ec);  // Left by failed trainers.
    for (int r = 0; r < flags.trainers; ++r) {
      SubprocessOptions options;
      options.name = absl::StrCat("trainer ", r);
      options.argv = {self,
                      "train",
                      "--servers",
                      absl::StrJoin(addresses, ","),
                      "--out",
                      out_dir,
                      "--timeout",
                      absl::StrCat(flags.timeout_seconds),
                      "--peer-timeout",
                      absl::StrCat(flags.peer_timeout_seconds),
                      "--server-wait",
                      absl::StrCat(flags.server_wait_seconds),
                      "--hedge-after-ms",
                      flags.hedge_after_ms,
                      "--store-file",
                      store_file};
      if (!partition_dir.empty()) {
        options.argv.push_back("--partition");
        options.argv.push_back(partition_dir);
      }
      for (auto& a : TrainingArgs(flags.training)) options.argv.push_back(a);
      if (resume && !flags.training.resume &&
          flags.training.checkpoint_every > 0) {
        options.argv.push_back("--resume");
      }
      for (auto& a : SecurityArgs(security)) options.argv.push_back(a);
      options.env = {{"RANK", std::to_string(r)},
                     {"WORLD_SIZE", std::to_string(flags.trainers)},
                     {"LOCAL_RANK", std::to_string(r)},
                     // All on this machine: each trainer takes its share of the
                     // cores for compute unless --threads says otherwise.
                     {"LOCAL_WORLD_SIZE", std::to_string(flags.trainers)},
                     {"MASTER_ADDR", "127.0.0.1"}};
      std::string prefix = r == 0 ? "" : absl::StrCat("trainer ", r);
      options.on_line = [prefix](const std::string& line) {
        PrintLine(prefix, line);
      };
      ASSIGN_OR_RETURN(auto trainer, Subprocess::Start(options));
      supervisor.AddTrainer(std::move(trainer));
    }
    return absl::OkStatus();
  };
  // A trainer's death restarts the group (as torchrun's elastic agent does):
  // every trainer stops and starts again from the last epoch all of them
  // checkpointed (trainer/trainer.cc), so the run ends as it would have.
  nlohmann::json restarts = nlohmann::json::array();
  absl::Status status = start_trainers(false);
  while (status.ok()) {
    status = supervisor.WaitForTrainers();
    if (status.ok() || !supervisor.RestartMayHelp()) break;
    const std::string cause(absl::StripSuffix(
        status.message().substr(0, status.message().find('\n')),
        "; its last output:"));
    if (static_cast<int>(restarts.size()) >= flags.max_restarts) {
      status = absl::AbortedError(
          absl::StrCat(status.message(), "\n(after ", restarts.size(),
                       " restart(s) of the trainers: --max-restarts ",
                       flags.max_restarts, ")"));
      break;
    }
    restarts.push_back({{"cause", cause}});
    PrintLine("", absl::StrCat("shardgnn run: ", cause, "; restarting the ",
                               flags.trainers, " trainer(s) ",
                               flags.training.checkpoint_every > 0
                                   ? "from their last checkpoint"
                                   : "from the start (no checkpoints)",
                               " (restart ", restarts.size(), " of at most ",
                               flags.max_restarts, ")"));
    supervisor.StopTrainers();
    if (flags.training.checkpoint_every == 0 && !flags.training.resume) {
      // From the start: a fresh record (train refuses a run directory that
      // holds one).
      std::filesystem::remove(JoinPath(out_dir, "metrics.jsonl"), ec);
    }
    status = start_trainers(true);
  }
  supervisor.StopAll();
  if (status.ok()) {
    // The summary rank 0 wrote, with the restarts.
    const std::string path = JoinPath(out_dir, "summary.json");
    auto text = ReadFileToString(path);
    nlohmann::json summary = text.ok()
                                 ? nlohmann::json::parse(*text, nullptr, false)
                                 : nlohmann::json();
    if (summary.is_object()) {
      summary["restarts"] = restarts.size();
      summary["restart_causes"] = restarts;
      summary["server_restarts"] = supervisor.server_restarts();
      status = WriteFileAtomic(path, summary.dump(2) + "\n");
    }
    // Again, with the restarts (rank 0 wrote one already).
    absl::Status report = WriteRunReport(out_dir);
    if (!report.ok()) {
      std::printf("warning: no report.html: %s\n",
                  std::string(report.message()).c_str());
    }
  }
  std::filesystem::remove(store_file, ec);  // Left by trainers that failed.
  if (!status.ok()) return status;
  std::printf("shardgnn run: done; metrics, summary and report.html in %s\n",
              out_dir.c_str());
  return absl::OkStatus();
}

}  // namespace

void AddRunCommand(CLI::App& app, absl::Status* result) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd =
      app.add_subcommand("run",
                         "Run the pipeline locally (default: bundled Cora, 2 "
                         "storage servers, 2 trainers on 127.0.0.1)");
  cmd->add_option("--dataset", flags->dataset,
                  "Dataset directory, or raw OGB-layout input to import "
                  "(default: the bundled Cora)");
  cmd->add_option("--name", flags->name,
                  "Dataset name when importing (default: the input's folder "
                  "name)");
  cmd->add_option("--split-name", flags->split_name,
                  "Which split/<name>/ of a raw OGB input to import (default: "
                  "the only one)");
  cmd->add_option("--edge-split", flags->edge_split,
                  "With --task link, the fractions of a raw input's edges "
                  "for train, valid and test (split at import, seeded by "
                  "--seed; GAE's protocol: valid and test edges leave the "
                  "graph; default 0.85,0.05,0.10). Not used when the input's "
                  "split holds edges");
  cmd->add_option("--format", flags->format,
                  "Format of a raw --dataset to import (only ogb)")
      ->capture_default_str();
  cmd->add_option("--parts", flags->parts, "Partitions (= storage servers)")
      ->capture_default_str();
  cmd->add_option("--trainers", flags->trainers, "Trainer processes")
      ->capture_default_str();
  cmd->add_option("--replicas", flags->replicas,
                  "Storage servers per part (replicas: a request fails over "
                  "to another when one dies or falls silent)")
      ->capture_default_str();
  cmd->add_option("--max-restarts", flags->max_restarts,
                  "Times the trainers are restarted from their checkpoints "
                  "after a trainer dies, before the run fails")
      ->capture_default_str();
  cmd->add_option("--max-server-restarts", flags->max_server_restarts,
                  "Times a storage server this run started is started again "
                  "on its address after it exits, in all (the trainers wait "
                  "for it, --server-wait, or use its part's other replicas)")
      ->capture_default_str();
  cmd->add_option("--server-wait", flags->server_wait_seconds,
                  "Seconds the trainers wait for a replica of a part to come "
                  "back when every replica of it is down (0: fail at once)")
      ->capture_default_str();
  cmd->add_option("--hedge-after-ms", flags->hedge_after_ms,
                  "The trainers' hedged requests: milliseconds before a slow "
                  "call also goes to another replica (0: off; auto: the "
                  "part's p95 call latency, at least 5 ms)")
      ->capture_default_str();
  cmd->add_option("--method", flags->method, "Partitioning: metis or random")
      ->capture_default_str();
  cmd->add_option("--work-dir", flags->work_dir,
                  "Where imported datasets, partitions and runs are kept")
      ->capture_default_str();
  cmd->add_option("--out", flags->out_dir,
                  "Run directory (default WORK_DIR/runs/<time>)");
  cmd->add_option("--servers", flags->servers,
                  "Train against running servers HOST:PORT,... (start none)");
  cmd->add_option("--cluster", flags->cluster_file,
                  "File naming running servers, one HOST:PORT per line");
  cmd->add_option("--partition", flags->partition_dir,
                  "Partition directory to serve, or (with --servers) the one "
                  "the servers must serve");
  cmd->add_flag(
      "--disk", flags->disk,
      "Servers read RocksDB per request instead of loading shards into memory");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Seconds before a trainer collective gives up")
      ->capture_default_str();
  cmd->add_option("--peer-timeout", flags->peer_timeout_seconds,
                  "Seconds without a heartbeat from a trainer (stopped, "
                  "frozen) before the others fail naming it")
      ->capture_default_str();
  AddTrainingFlags(cmd, &flags->training);
  AddSecurityFlags(cmd, &flags->security, SecurityRole::kLauncher);
  flags->given = [cmd](const std::string& flag) {
    return cmd->count(flag) > 0;
  };
  cmd->callback([cmd, flags, result] {
    flags->training.model_given = cmd->count("--model") > 0;
    flags->effective_config = EffectiveConfig(*cmd, &flags->training);
    *result = RunPipeline(*flags);
  });
}

}  // namespace shardgnn::cli
