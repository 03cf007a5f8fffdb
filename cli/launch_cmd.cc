// `shardgnn launch --cluster cluster.toml --partition DIR`: a training run on
// many hosts, reached with OpenSSH (the user's own keys and config).
//
// In order: reads the cluster file (cli/cluster_file.h) and checks that it
// fits the partition; on every host (at once) makes the remote work dir and
// copies partition.json (and a link task's edges_*.npy) and the parts it
// serves with rsync (and --model-script's module to the trainers' hosts),
// skipping a part
// whose copy there is already of the same content (a stamp holding the part's
// content checksum from partition.json, written after a complete copy; the
// server checks the shard against the manifest when it starts); copies a
// fresh auth token to every host; starts `shardgnn serve` for each part on its
// host (listening on the host's address, port 0), waits for every ready line;
// starts the trainers (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// GROUP_RANK, MASTER_ADDR = rank 0's host, MASTER_PORT) and watches them as
// `run` does (cli/run_supervisor.h), every remote line printed with a "[host
// role]" prefix. At the end, on the first failure, or on Ctrl-C / SIGTERM
// every remote process is stopped (cli/ssh_remote.h: closing ssh's stdin
// stops it; a sweep by pid files kills what is left); on success rank 0's run
// directory is copied back to --out, with the report.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/cluster_file.h"
#include "cli/commands.h"
#include "cli/run_report.h"
#include "cli/run_supervisor.h"
#include "cli/run_work_dir.h"
#include "cli/ssh_remote.h"
#include "cli/training_flags.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "partition/partition_book.h"

namespace shardgnn::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct LaunchFlags {
  std::string cluster_file;
  std::string partition_dir;
  std::string out_dir;
  std::string work_dir = "out";
  bool disk = false;
  double timeout_seconds = 120;
  double peer_timeout_seconds = 30;
  double server_wait_seconds = 60;
  std::string hedge_after_ms = "0";
  TrainingFlags training;
  std::string effective_config;  // "[launch]" and every flag (config.toml).
};

// Seconds from SIGTERM to SIGKILL for a remote process being stopped.
constexpr int kStopGraceSeconds = 10;

// [train] keys that are not training flags but are passed to the trainers.
constexpr const char* kTrainerFlags[] = {"timeout", "peer-timeout",
                                         "server-wait", "hedge-after-ms"};

// Sets the launch flags the cluster file's [train] table names, unless given
// on the command line or in --config (which win), as if given there: so
// config.toml records them.
absl::Status ApplyTrainTable(const ClusterSpec& spec, CLI::App* cmd) {
  CLI::App scratch;
  TrainingFlags unused;
  AddTrainingFlags(&scratch, &unused);
  for (const auto& [key, value] : spec.train_flags) {
    const std::string flag =
        absl::StrCat("--", absl::StrReplaceAll(key, {{"_", "-"}}));
    bool known = scratch.get_option_no_throw(flag) != nullptr;
    for (const char* f : kTrainerFlags) known = known || flag.substr(2) == f;
    CLI::Option* option = cmd->get_option_no_throw(flag);
    if (!known || option == nullptr || flag == "--help") {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.train_where, ": [train] has '", key,
          "', which is not a flag of `shardgnn train` the trainers share"));
    }
    if (option->count() > 0) continue;
    try {
      option->add_result(value);
      option->run_callback();
    } catch (const CLI::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.train_where, ": [train] ", key, " = ", value, ": ", e.what()));
    }
  }
  return absl::OkStatus();
}

// `name` found on PATH (Subprocess runs a path, as execve does).
absl::StatusOr<std::string> FindProgram(const std::string& name,
                                        const std::string& package) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    const std::string candidate = JoinPath(dir, name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat("launch needs `", name,
                   "`, which is not on PATH (Debian: apt-get "
                   "install ",
                   package, ")"));
}

// What one host gets: its ssh and rsync command lines.
struct Host {
  const ClusterHost* spec;
  std::vector<std::string> ssh;  // ssh ... DESTINATION
  std::string rsync;             // rsync's path here.
  std::string rsync_shell;       // rsync -e.
  std::vector<int> copy;         // Parts whose copy there is missing or stale.
};

// Short commands (remote scripts, rsync) run at once, one or more per host.
class Batch {
 public:
  explicit Batch(const std::vector<Host>* hosts) : hosts_(hosts) {}

  void Script(size_t host, const std::string& script, const std::string& role) {
    Add(host, RemoteOptions((*hosts_)[host], script), role);
  }
  void Rsync(size_t host, const std::vector<std::string>& args,
             const std::string& role) {
    const Host& h = (*hosts_)[host];
    SubprocessOptions options;
    options.argv = {h.rsync, "-a", "-e", h.rsync_shell};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    Add(host, std::move(options), role);
  }

  // Runs them all and waits: their lines are printed as "[HOST ROLE] ...".
  // Each command's output (its last 1000 lines) in order; the first failure
  // is UNAVAILABLE naming its host and `what` was done, CANCELLED on
  // SIGINT/SIGTERM (all are stopped).
  absl::StatusOr<std::vector<std::string>> Run(const std::string& what) {
    std::vector<std::unique_ptr<Subprocess>> running;
    for (auto& options : commands_) {
      ASSIGN_OR_RETURN(auto p, Subprocess::Start(std::move(options)));
      running.push_back(std::move(p));
    }
    commands_.clear();
    std::vector<std::string> outputs;
    for (size_t i = 0; i < running.size(); ++i) {
      std::optional<int> code;
      while (!(code = running[i]->Wait(milliseconds(100)))) {
        if (int signo = CaughtSignal()) {
          return absl::CancelledError(
              absl::StrCat("interrupted by signal ", signo));
        }
      }
      outputs.push_back(running[i]->Tail(1000));
      if (*code == 0) continue;
      const ClusterHost& h = *(*hosts_)[host_of_[i]].spec;
      return absl::UnavailableError(absl::StrCat(
          what, " on host ", h.name, " (", h.where, ") failed with status ",
          *code, *code == 255 ? " (ssh could not reach the host)" : "",
          "; its last output:\n", running[i]->Tail(10)));
    }
    return outputs;
  }

 private:
  void Add(size_t host, SubprocessOptions options, const std::string& role) {
    options.name = (*hosts_)[host].spec->name;
    options.on_line = [prefix = absl::StrCat(options.name, " ", role)](
                          const std::string& line) { PrintLine(prefix, line); };
    commands_.push_back(std::move(options));
    host_of_.push_back(host);
  }

  static SubprocessOptions RemoteOptions(const Host& host,
                                         const std::string& script) {
    SubprocessOptions options;
    options.argv = host.ssh;
    options.argv.push_back(ShCommand(script));
    return options;
  }

  const std::vector<Host>* hosts_;
  std::vector<SubprocessOptions> commands_;
  std::vector<size_t> host_of_;
};

// One launch, phase by phase. Not thread-safe.
class Launcher {
 public:
  Launcher(const LaunchFlags& flags, const ClusterSpec& spec)
      : flags_(flags), spec_(spec) {}

  absl::Status Run() {
    RETURN_IF_ERROR(Check());
    RETURN_IF_ERROR(Prepare());
    RETURN_IF_ERROR(Copy());
    absl::Status status = StartServers();
    if (status.ok()) status = StartTrainers();
    if (status.ok()) status = supervisor_.WaitForTrainers();
    absl::Status stopped = Stop();
    if (!status.ok()) {
      // ssh's own failure (255) reads as a lost host.
      return absl::Status(
          status.code(),
          absl::StrReplaceAll(status.message(),
                              {{"with status 255",
                                "with status 255 (ssh: the host could not be "
                                "reached or the connection was lost)"}}));
    }
    RETURN_IF_ERROR(stopped);
    return FetchRunDirectory();
  }

 private:
  // The flags and the cluster against the partition; the run directory here
  // and the remote paths.
  absl::Status Check() {
    if (!(flags_.timeout_seconds > 0) || !(flags_.peer_timeout_seconds > 0) ||
        !(flags_.server_wait_seconds >= 0)) {
      return absl::InvalidArgumentError(
          "--timeout and --peer-timeout must be positive, --server-wait 0 or "
          "more");
    }
    ASSIGN_OR_RETURN(const TrainOptions options,
                     ToTrainOptions(flags_.training));
    if (!options.share_weights.empty() &&
        static_cast<int>(options.share_weights.size()) !=
            spec_.TotalTrainers()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shares '", flags_.training.shares, "' gives ",
                       options.share_weights.size(), " weights for the ",
                       spec_.TotalTrainers(), " trainers of ", spec_.path,
                       ": give one per trainer"));
    }
    if (!flags_.training.model_script.empty() &&
        !fs::is_regular_file(flags_.training.model_script)) {
      return absl::NotFoundError(absl::StrCat(
          "--model-script ", flags_.training.model_script, ": no such file"));
    }
    if (flags_.training.resume) {
      return absl::InvalidArgumentError(
          "launch starts a fresh run on the hosts; --resume is not supported");
    }
    ASSIGN_OR_RETURN(manifest_, ReadPartitionManifest(flags_.partition_dir));
    RETURN_IF_ERROR(CheckPartsServed(spec_, manifest_.num_parts));
    ASSIGN_OR_RETURN(const std::string ssh,
                     FindProgram("ssh", "openssh-client"));
    ASSIGN_OR_RETURN(const std::string rsync, FindProgram("rsync", "rsync"));
    for (const ClusterHost& h : spec_.hosts) {
      hosts_.push_back(
          {&h, SshArgv(spec_, h), rsync, RsyncShell(spec_, h), {}});
      hosts_.back().ssh[0] = ssh;
    }
    ASSIGN_OR_RETURN(out_dir_,
                     CreateRunDirectory(flags_.out_dir, flags_.work_dir,
                                        manifest_.dataset_name));
    RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir_, "config.toml"),
                                    flags_.effective_config));
    ASSIGN_OR_RETURN(token_, GeneratedToken::Create(flags_.work_dir));
    ASSIGN_OR_RETURN(std::string suffix, RandomBytes(3));
    run_dir_ =
        JoinPath("runs", absl::StrCat(fs::path(out_dir_).filename().string(),
                                      "-", absl::BytesToHexString(suffix)));
    part_dir_ = JoinPath("partitions", manifest_.partition_id);
    pid_dir_ = JoinPath(run_dir_, ".pids");
    token_file_ = JoinPath(run_dir_, ".auth-token");
    model_script_file_ = JoinPath(run_dir_, ".model-script.pt");
    InstallRunSignalHandlers();
    return absl::OkStatus();
  }

  // Stamp of a complete copy of part p: partition id and content checksum.
  std::string Stamp(int part) const {
    return absl::StrCat(
        manifest_.partition_id, " ",
        manifest_.parts[static_cast<size_t>(part)].content_checksum);
  }
  std::string StampFile(int part) const {
    return JoinPath(part_dir_, absl::StrCat(PartDirName(part), ".copied"));
  }

  // On every host: the work dir, the binary, and which parts need a copy.
  absl::Status Prepare() {
    Batch batch(&hosts_);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      const ClusterHost& h = *hosts_[i].spec;
      std::string script = absl::StrCat(
          "mkdir -p ", ShellQuote(h.work_dir), " && cd ",
          ShellQuote(h.work_dir), " && mkdir -p ", ShellQuote(part_dir_), " ",
          ShellQuote(pid_dir_), " && chmod 700 ", ShellQuote(run_dir_),
          " || exit 1\n", "command -v ", ShellQuote(h.binary),
          " >/dev/null 2>&1 || { echo \"no shardgnn binary at ", h.binary,
          " (the cluster file's 'binary')\"; exit 1; }\n");
      for (int p : h.parts) {
        absl::StrAppend(&script, "if [ \"$(cat ", ShellQuote(StampFile(p)),
                        " 2>/dev/null)\" != ", ShellQuote(Stamp(p)),
                        " ]; then rm -f ", ShellQuote(StampFile(p)),
                        "; echo 'copy ", p, "'; fi\n");
      }
      batch.Script(i, script, "setup");
    }
    ASSIGN_OR_RETURN(std::vector<std::string> outputs,
                     batch.Run("preparing the work dir"));
    for (size_t i = 0; i < hosts_.size(); ++i) {
      for (absl::string_view line : absl::StrSplit(outputs[i], '\n')) {
        int part = -1;
        if (absl::ConsumePrefix(&line, "copy ") &&
            absl::SimpleAtoi(line, &part)) {
          hosts_[i].copy.push_back(part);
        }
      }
      for (int p : hosts_[i].spec->parts) {
        const bool copying =
            std::find(hosts_[i].copy.begin(), hosts_[i].copy.end(), p) !=
            hosts_[i].copy.end();
        PrintLine("", absl::StrCat("shardgnn launch: part ", p, " on ",
                                   hosts_[i].spec->name,
                                   copying ? ": copying"
                                           : ": already there (same content "
                                             "checksum), not copied"));
      }
    }
    return absl::OkStatus();
  }

  // partition.json and the stale parts, and the token, with rsync; then the
  // stamps of the parts copied.
  absl::Status Copy() {
    Batch batch(&hosts_);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      const ClusterHost& h = *hosts_[i].spec;
      std::vector<std::string> args = {
          "--delete", JoinPath(flags_.partition_dir, kPartitionManifestFile)};
      for (int p : hosts_[i].copy) {
        args.push_back(JoinPath(flags_.partition_dir, PartDirName(p)));
      }
      // Link prediction's edge splits (small): every host's trainers read
      // them from the partition directory.
      for (const auto& [name, pairs] : manifest_.edge_splits) {
        args.push_back(JoinPath(flags_.partition_dir,
                                absl::StrCat("edges_", name, ".npy")));
      }
      args.push_back(
          absl::StrCat(h.ssh, ":", JoinPath(h.work_dir, part_dir_), "/"));
      batch.Rsync(i, args, "copy");
      batch.Rsync(i,
                  {token_->path(),
                   absl::StrCat(h.ssh, ":", JoinPath(h.work_dir, token_file_))},
                  "copy");
      // The user's module goes to the trainers' hosts with the run.
      if (h.trainers > 0 && !flags_.training.model_script.empty()) {
        batch.Rsync(i,
                    {flags_.training.model_script,
                     absl::StrCat(h.ssh, ":",
                                  JoinPath(h.work_dir, model_script_file_))},
                    "copy");
      }
    }
    RETURN_IF_ERROR(batch.Run("copying with rsync").status());
    for (size_t i = 0; i < hosts_.size(); ++i) {
      if (hosts_[i].copy.empty()) continue;
      std::string script = absl::StrCat(
          "cd ", ShellQuote(hosts_[i].spec->work_dir), " || exit 1\n");
      for (int p : hosts_[i].copy) {
        absl::StrAppend(&script, "echo ", ShellQuote(Stamp(p)), " > ",
                        ShellQuote(StampFile(p)), " || exit 1\n");
      }
      batch.Script(i, script, "copy");
    }
    return batch.Run("recording the copy").status();
  }

  // A long-running remote process under the wrapper (cli/ssh_remote.h).
  absl::StatusOr<std::unique_ptr<Subprocess>> StartRemote(
      const Host& host, RemoteProcess process, const std::string& name,
      const std::string& role) {
    const ClusterHost& h = *host.spec;
    process.work_dir = h.work_dir;
    process.grace_seconds = kStopGraceSeconds;
    for (const auto& [k, v] : h.env) process.env.emplace(k, v);
    SubprocessOptions options;
    options.name = name;
    options.argv = host.ssh;
    options.argv.push_back(ShCommand(RemoteProcessScript(process)));
    options.stdin_pipe = true;
    options.on_line = [prefix = absl::StrCat(h.name, " ", role)](
                          const std::string& line) { PrintLine(prefix, line); };
    ASSIGN_OR_RETURN(auto p, Subprocess::Start(options));
    remote_.push_back(p.get());
    return p;
  }

  // One server per part a host lists, on its address; waits for all.
  absl::Status StartServers() {
    supervisor_.SetMaxServerRestarts(0);
    for (const Host& host : hosts_) {
      const ClusterHost& h = *host.spec;
      for (int p : h.parts) {
        RemoteProcess process;
        process.pid_file =
            JoinPath(pid_dir_, absl::StrCat("server-", p, ".pid"));
        const std::string listen = h.address.find(':') == std::string::npos
                                       ? absl::StrCat(h.address, ":0")
                                       : absl::StrCat("[", h.address, "]:0");
        process.argv = {h.binary,   "serve",  "--partition",
                        part_dir_,  "--part", std::to_string(p),
                        "--listen", listen,   "--auth-token-file",
                        token_file_};
        if (!flags_.disk) process.argv.push_back("--memory");
        if (flags_.training.learn_embeddings > 0) {
          // The tables' snapshots, taken with the trainers' checkpoints.
          process.argv.push_back("--embedding-dir");
          process.argv.push_back(JoinPath(
              run_dir_, absl::StrCat("embedding_snapshots/server-", p)));
          if (flags_.disk) {
            process.argv.push_back("--embedding-table-dir");
            process.argv.push_back(JoinPath(
                run_dir_, absl::StrCat("embedding_tables/server-", p)));
          }
        }
        ASSIGN_OR_RETURN(
            auto server,
            StartRemote(host, process,
                        absl::StrCat("storage server ", p, " on ", h.name),
                        absl::StrCat("server ", p)));
        supervisor_.AddServer(std::move(server), p, {});
      }
    }
    for (size_t i = 0; i < supervisor_.servers().size(); ++i) {
      ASSIGN_OR_RETURN(std::string line,
                       WaitUntilReady(*supervisor_.servers()[i]));
      std::string rest = line.substr(line.find("ready on ") + 9);
      addresses_.push_back(rest.substr(0, rest.find(' ')));
      supervisor_.SetServerAddress(i, addresses_.back());
    }
    return absl::OkStatus();
  }

  // The trainers, ranks in host order; rank 0's host hosts the rendezvous.
  absl::Status StartTrainers() {
    const int world = spec_.TotalTrainers();
    std::string master_addr;
    int rank = 0, group = 0;
    for (size_t i = 0; i < hosts_.size(); ++i) {
      const ClusterHost& h = *hosts_[i].spec;
      if (h.trainers == 0) continue;
      if (master_addr.empty()) {
        master_addr = h.address;
        rank0_host_ = i;
      }
      for (int local = 0; local < h.trainers; ++local, ++rank) {
        RemoteProcess process;
        process.pid_file =
            JoinPath(pid_dir_, absl::StrCat("trainer-", rank, ".pid"));
        process.gloo_address = h.address;
        process.env = {{"RANK", std::to_string(rank)},
                       {"WORLD_SIZE", std::to_string(world)},
                       {"LOCAL_RANK", std::to_string(local)},
                       {"LOCAL_WORLD_SIZE", std::to_string(h.trainers)},
                       {"GROUP_RANK", std::to_string(group)},
                       {"MASTER_ADDR", master_addr},
                       {"MASTER_PORT", std::to_string(spec_.master_port)}};
        process.argv = {h.binary,
                        "train",
                        "--servers",
                        absl::StrJoin(addresses_, ","),
                        "--partition",
                        part_dir_,
                        "--out",
                        run_dir_,
                        "--timeout",
                        absl::StrCat(flags_.timeout_seconds),
                        "--peer-timeout",
                        absl::StrCat(flags_.peer_timeout_seconds),
                        "--server-wait",
                        absl::StrCat(flags_.server_wait_seconds),
                        "--hedge-after-ms",
                        flags_.hedge_after_ms,
                        "--auth-token-file",
                        token_file_};
        for (auto& a : TrainingArgs(flags_.training)) {
          // The module copied to the host, relative to its work dir.
          const bool script =
              !process.argv.empty() && process.argv.back() == "--model-script";
          process.argv.push_back(script ? model_script_file_ : a);
        }
        ASSIGN_OR_RETURN(
            auto trainer,
            StartRemote(hosts_[i], process,
                        absl::StrCat("trainer ", rank, " on ", h.name),
                        absl::StrCat("trainer ", rank)));
        supervisor_.AddTrainer(std::move(trainer));
      }
      ++group;
    }
    return absl::OkStatus();
  }

  // Ends every ssh's stdin (each wrapper stops its process and exits with
  // its status), kills the ssh left after the grace period, then sweeps
  // every host by its pid files.
  absl::Status Stop() {
    for (Subprocess* p : remote_) p->CloseStdin();
    const auto stop_by =
        std::chrono::steady_clock::now() + seconds(kStopGraceSeconds + 5);
    for (Subprocess* p : remote_) {
      const auto left = std::chrono::duration_cast<milliseconds>(
          stop_by - std::chrono::steady_clock::now());
      p->Wait(std::max(left, milliseconds(0)));
    }
    supervisor_.StopAll();
    Batch batch(&hosts_);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      batch.Script(i,
                   SweepScript(hosts_[i].spec->work_dir, pid_dir_, token_file_,
                               kStopGraceSeconds),
                   "stop");
    }
    InstallRunSignalHandlers();  // A second Ctrl-C must not skip the sweep.
    return batch.Run("stopping the remote processes").status();
  }

  // Rank 0's run directory, copied here, with the launch in summary.json
  // and the report.
  absl::Status FetchRunDirectory() {
    const ClusterHost& first = *hosts_[rank0_host_].spec;
    Batch batch(&hosts_);
    batch.Rsync(
        rank0_host_,
        {"--exclude=/.pids", "--exclude=/.auth-token", "--exclude=/checkpoints",
         "--exclude=/.scratch-*", "--exclude=/.model-script.pt",
         "--exclude=/config.toml",
         absl::StrCat(first.ssh, ":", JoinPath(first.work_dir, run_dir_), "/"),
         absl::StrCat(out_dir_, "/")},
        "copy");
    RETURN_IF_ERROR(batch.Run("copying the run directory back").status());
    const std::string summary_path = JoinPath(out_dir_, "summary.json");
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(summary_path));
    nlohmann::json summary = nlohmann::json::parse(text, nullptr, false);
    if (summary.is_object()) {
      nlohmann::json hosts = nlohmann::json::array();
      for (const auto& h : spec_.hosts) {
        hosts.push_back({{"name", h.name},
                         {"address", h.address},
                         {"parts", h.parts},
                         {"trainers", h.trainers}});
      }
      summary["launch"] = {{"cluster_file", spec_.path},
                           {"remote_run_dir", run_dir_},
                           {"hosts", hosts}};
      // The user's module, not the copy the trainers read.
      if (!flags_.training.model_script.empty() &&
          summary["model"].is_object()) {
        summary["model"]["script"] =
            fs::absolute(flags_.training.model_script).string();
      }
      RETURN_IF_ERROR(WriteFileAtomic(summary_path, summary.dump(2) + "\n"));
    }
    absl::Status report = WriteRunReport(out_dir_);
    if (!report.ok()) {
      std::printf("warning: no report.html: %s\n",
                  std::string(report.message()).c_str());
    }
    std::printf(
        "shardgnn launch: done; metrics, summary and report.html in %s (the "
        "trainers' checkpoints stay in %s on each host)\n",
        out_dir_.c_str(), run_dir_.c_str());
    return absl::OkStatus();
  }

  const LaunchFlags& flags_;
  const ClusterSpec& spec_;
  PartitionManifest manifest_;
  std::vector<Host> hosts_;
  std::string out_dir_;                    // Here.
  std::unique_ptr<GeneratedToken> token_;  // Here.
  // Remote, relative to each host's work dir.
  std::string run_dir_, part_dir_, pid_dir_, token_file_, model_script_file_;
  Supervisor supervisor_;
  std::vector<Subprocess*> remote_;  // Every long-running ssh, to stop.
  std::vector<std::string> addresses_;
  size_t rank0_host_ = 0;
};

}  // namespace

void AddLaunchCommand(CLI::App& app, absl::Status* result) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Run servers and trainers on the hosts of a cluster file, over ssh");
  cmd->add_option("--cluster", flags->cluster_file,
                  "Cluster file (TOML): hosts, the parts each serves, its "
                  "trainers (README: Launching on many hosts)")
      ->required();
  cmd->add_option("--partition", flags->partition_dir,
                  "Partition directory here; its parts are copied to the "
                  "hosts that serve them")
      ->required();
  cmd->add_option("--out", flags->out_dir,
                  "Run directory here, for rank 0's results (default "
                  "WORK_DIR/runs/<time>)");
  cmd->add_option("--work-dir", flags->work_dir,
                  "Where runs go here when --out is not given")
      ->capture_default_str();
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
  cmd->add_option("--server-wait", flags->server_wait_seconds,
                  "Seconds the trainers wait for a replica of a part to come "
                  "back when every replica of it is down (0: fail at once)")
      ->capture_default_str();
  cmd->add_option("--hedge-after-ms", flags->hedge_after_ms,
                  "The trainers' hedged requests (0: off; auto)")
      ->capture_default_str();
  AddTrainingFlags(cmd, &flags->training);
  cmd->callback([cmd, flags, result] {
    auto spec = ReadClusterFile(flags->cluster_file);
    if (!spec.ok()) {
      *result = spec.status();
      return;
    }
    *result = ApplyTrainTable(*spec, cmd);
    if (!result->ok()) return;
    flags->training.model_given = cmd->count("--model") > 0;
    flags->effective_config = EffectiveConfig(*cmd, &flags->training);
    *result = Launcher(*flags, *spec).Run();
  });
}

}  // namespace shardgnn::cli
