// `shardgnn launch --cluster cluster.toml --partition DIR`: a training run on
// many hosts, reached with OpenSSH (the user's own keys and config).
//
// In order: reads the cluster file (cli/cluster_file.h) and checks that it
// fits the partition; on every host (at once) makes the remote work dir and
// copies partition.json and the parts it serves with rsync, skipping a part
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

// Output of a short remote command (or rsync).
struct Done {
  int code = 0;
  std::string output;
};

// Runs `commands` at once and waits for all of them; their lines are printed
// with their prefixes. CANCELLED on SIGINT/SIGTERM (all are stopped).
absl::StatusOr<std::vector<Done>> RunAll(
    std::vector<SubprocessOptions> commands,
    const std::vector<std::string>& prefixes) {
  std::vector<std::unique_ptr<Subprocess>> running;
  for (size_t i = 0; i < commands.size(); ++i) {
    commands[i].on_line = [prefix = prefixes[i]](const std::string& line) {
      PrintLine(prefix, line);
    };
    ASSIGN_OR_RETURN(auto p, Subprocess::Start(std::move(commands[i])));
    running.push_back(std::move(p));
  }
  std::vector<Done> done(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    std::optional<int> code;
    while (!(code = running[i]->Wait(milliseconds(100)))) {
      if (int signo = CaughtSignal()) {
        return absl::CancelledError(
            absl::StrCat("interrupted by signal ", signo));
      }
    }
    done[i] = {*code, running[i]->Tail(20)};
  }
  return done;
}

// What one host gets: its ssh and rsync command lines and its remote paths.
struct Host {
  const ClusterHost* spec;
  std::string rsync;             // Its path here.
  std::vector<std::string> ssh;  // ssh ... DESTINATION
  std::string rsync_shell;
  std::vector<int> copy;  // Parts whose copy there is missing or stale.
};

SubprocessOptions Remote(const Host& host, const std::string& script,
                         const std::string& name) {
  SubprocessOptions options;
  options.name = name;
  options.argv = host.ssh;
  options.argv.push_back(ShCommand(script));
  return options;
}

SubprocessOptions Rsync(const Host& host, std::vector<std::string> args,
                        const std::string& name) {
  SubprocessOptions options;
  options.name = name;
  options.argv = {host.rsync, "-a", "-e", host.rsync_shell};
  for (auto& a : args) options.argv.push_back(std::move(a));
  return options;
}

// The first failure among `done` (the commands for `hosts`, in order), naming
// the host and `what` was done.
absl::Status FirstFailure(const std::vector<Host>& hosts,
                          const std::vector<Done>& done,
                          const std::vector<size_t>& host_of,
                          const std::string& what) {
  for (size_t i = 0; i < done.size(); ++i) {
    if (done[i].code == 0) continue;
    const ClusterHost& h = *hosts[host_of[i]].spec;
    return absl::UnavailableError(absl::StrCat(
        what, " on host ", h.name, " (", h.where, ") failed with status ",
        done[i].code,
        done[i].code == 255 ? " (ssh could not reach the host)" : "",
        "; its last output:\n", done[i].output));
  }
  return absl::OkStatus();
}

// Stamp of a complete copy of part p: partition id and content checksum.
std::string Stamp(const PartitionManifest& manifest, int part) {
  return absl::StrCat(
      manifest.partition_id, " ",
      manifest.parts[static_cast<size_t>(part)].content_checksum);
}

absl::Status RunLaunch(const LaunchFlags& flags, const ClusterSpec& spec) {
  if (!(flags.timeout_seconds > 0) || !(flags.peer_timeout_seconds > 0) ||
      !(flags.server_wait_seconds >= 0)) {
    return absl::InvalidArgumentError(
        "--timeout and --peer-timeout must be positive, --server-wait 0 or "
        "more");
  }
  RETURN_IF_ERROR(ToTrainOptions(flags.training).status());
  if (flags.training.resume) {
    return absl::InvalidArgumentError(
        "launch starts a fresh run on the hosts; --resume is not supported");
  }
  ASSIGN_OR_RETURN(PartitionManifest manifest,
                   ReadPartitionManifest(flags.partition_dir));
  RETURN_IF_ERROR(CheckPartsServed(spec, manifest.num_parts));
  ASSIGN_OR_RETURN(const std::string out_dir,
                   CreateRunDirectory(flags.out_dir, flags.work_dir));
  RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir, "config.toml"),
                                  flags.effective_config));
  ASSIGN_OR_RETURN(auto token, GeneratedToken::Create(flags.work_dir));
  ASSIGN_OR_RETURN(std::string suffix, RandomBytes(3));
  // Remote paths, relative to each host's work dir.
  const std::string run_dir =
      JoinPath("runs", absl::StrCat(fs::path(out_dir).filename().string(), "-",
                                    absl::BytesToHexString(suffix)));
  const std::string part_dir = JoinPath("partitions", manifest.partition_id);
  const std::string pid_dir = JoinPath(run_dir, ".pids");
  const std::string token_file = JoinPath(run_dir, ".auth-token");
  InstallRunSignalHandlers();

  ASSIGN_OR_RETURN(const std::string ssh, FindProgram("ssh", "openssh-client"));
  ASSIGN_OR_RETURN(const std::string rsync, FindProgram("rsync", "rsync"));
  std::vector<Host> hosts;
  for (const ClusterHost& h : spec.hosts) {
    hosts.push_back({&h, rsync, SshArgv(spec, h), RsyncShell(spec, h), {}});
    hosts.back().ssh[0] = ssh;
  }
  // 1. Work dirs, the binary, and which parts need copying.
  std::vector<SubprocessOptions> commands;
  std::vector<std::string> prefixes;
  std::vector<size_t> host_of;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const ClusterHost& h = *hosts[i].spec;
    std::string script = absl::StrCat(
        "mkdir -p ", ShellQuote(h.work_dir), " && cd ", ShellQuote(h.work_dir),
        " && mkdir -p ", ShellQuote(part_dir), " ", ShellQuote(pid_dir),
        " && chmod 700 ", ShellQuote(run_dir), " || exit 1\n", "command -v ",
        ShellQuote(h.binary), " >/dev/null 2>&1 || { echo \"",
        "no shardgnn binary at ", h.binary,
        " (the cluster file's 'binary')\"; exit 1; }\n");
    for (int p : h.parts) {
      const std::string stamp =
          JoinPath(part_dir, absl::StrCat(PartDirName(p), ".copied"));
      absl::StrAppend(&script, "if [ \"$(cat ", ShellQuote(stamp),
                      " 2>/dev/null)\" != ", ShellQuote(Stamp(manifest, p)),
                      " ]; then rm -f ", ShellQuote(stamp), "; echo 'copy ", p,
                      "'; fi\n");
    }
    commands.push_back(Remote(hosts[i], script, h.name));
    prefixes.push_back(absl::StrCat(h.name, " setup"));
    host_of.push_back(i);
  }
  ASSIGN_OR_RETURN(std::vector<Done> done, RunAll(commands, prefixes));
  RETURN_IF_ERROR(FirstFailure(hosts, done, host_of, "preparing the work dir"));
  // 2. Copies: partition.json and stale parts, and the token.
  commands.clear();
  prefixes.clear();
  host_of.clear();
  for (size_t i = 0; i < hosts.size(); ++i) {
    Host& host = hosts[i];
    const ClusterHost& h = *host.spec;
    std::vector<std::string> args = {
        "--delete", JoinPath(flags.partition_dir, kPartitionManifestFile)};
    for (absl::string_view line : absl::StrSplit(done[i].output, '\n')) {
      int part = -1;
      if (absl::ConsumePrefix(&line, "copy ") &&
          absl::SimpleAtoi(line, &part)) {
        host.copy.push_back(part);
        args.push_back(JoinPath(flags.partition_dir, PartDirName(part)));
      }
    }
    for (int p : h.parts) {
      const bool copying =
          std::find(host.copy.begin(), host.copy.end(), p) != host.copy.end();
      PrintLine("", absl::StrCat("shardgnn launch: part ", p, " on ", h.name,
                                 copying ? ": copying"
                                         : ": already there (same content "
                                           "checksum), not copied"));
    }
    args.push_back(
        absl::StrCat(h.ssh, ":", JoinPath(h.work_dir, part_dir), "/"));
    commands.push_back(Rsync(host, args, h.name));
    prefixes.push_back(absl::StrCat(h.name, " copy"));
    host_of.push_back(i);
    commands.push_back(
        Rsync(host,
              {token->path(),
               absl::StrCat(h.ssh, ":", JoinPath(h.work_dir, token_file))},
              h.name));
    prefixes.push_back(absl::StrCat(h.name, " copy"));
    host_of.push_back(i);
  }
  ASSIGN_OR_RETURN(done, RunAll(commands, prefixes));
  RETURN_IF_ERROR(FirstFailure(hosts, done, host_of, "copying with rsync"));
  commands.clear();
  prefixes.clear();
  host_of.clear();
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].copy.empty()) continue;
    const ClusterHost& h = *hosts[i].spec;
    std::string script =
        absl::StrCat("cd ", ShellQuote(h.work_dir), " || exit 1\n");
    for (int p : hosts[i].copy) {
      absl::StrAppend(&script, "echo ", ShellQuote(Stamp(manifest, p)), " > ",
                      ShellQuote(JoinPath(
                          part_dir, absl::StrCat(PartDirName(p), ".copied"))),
                      " || exit 1\n");
    }
    commands.push_back(Remote(hosts[i], script, h.name));
    prefixes.push_back(absl::StrCat(h.name, " copy"));
    host_of.push_back(i);
  }
  ASSIGN_OR_RETURN(done, RunAll(commands, prefixes));
  RETURN_IF_ERROR(FirstFailure(hosts, done, host_of, "recording the copy"));

  // 3. Servers, then trainers, watched by the supervisor.
  Supervisor supervisor;
  std::vector<Subprocess*> remote;  // Every long-running ssh, to stop.
  auto start = [&](const Host& host, RemoteProcess process,
                   const std::string& name, const std::string& prefix)
      -> absl::StatusOr<std::unique_ptr<Subprocess>> {
    const ClusterHost& h = *host.spec;
    process.work_dir = h.work_dir;
    process.grace_seconds = kStopGraceSeconds;
    for (const auto& [k, v] : h.env) process.env.emplace(k, v);
    SubprocessOptions options =
        Remote(host, RemoteProcessScript(process), name);
    options.stdin_pipe = true;
    options.on_line = [prefix](const std::string& line) {
      PrintLine(prefix, line);
    };
    ASSIGN_OR_RETURN(auto p, Subprocess::Start(options));
    remote.push_back(p.get());
    return p;
  };
  absl::Status status;
  std::vector<std::string> addresses;
  for (const Host& host : hosts) {
    const ClusterHost& h = *host.spec;
    for (int p : h.parts) {
      RemoteProcess process;
      process.pid_file = JoinPath(pid_dir, absl::StrCat("server-", p, ".pid"));
      const std::string listen = h.address.find(':') == std::string::npos
                                     ? absl::StrCat(h.address, ":0")
                                     : absl::StrCat("[", h.address, "]:0");
      process.argv = {h.binary,   "serve",  "--partition",
                      part_dir,   "--part", std::to_string(p),
                      "--listen", listen,   "--auth-token-file",
                      token_file};
      if (!flags.disk) process.argv.push_back("--memory");
      auto server = start(host, process,
                          absl::StrCat("storage server ", p, " on ", h.name),
                          absl::StrCat(h.name, " server ", p));
      if (!server.ok()) {
        status = server.status();
        break;
      }
      supervisor.AddServer(std::move(server).value(), p, {});
    }
    if (!status.ok()) break;
  }
  for (size_t i = 0; status.ok() && i < supervisor.servers().size(); ++i) {
    auto line = WaitUntilReady(*supervisor.servers()[i]);
    if (!line.ok()) {
      status = line.status();
      break;
    }
    std::string rest = line->substr(line->find("ready on ") + 9);
    addresses.push_back(rest.substr(0, rest.find(' ')));
    supervisor.SetServerAddress(i, addresses.back());
  }
  supervisor.SetMaxServerRestarts(0);
  const int world = spec.TotalTrainers();
  std::string master_addr;
  int rank = 0, group = 0;
  size_t rank0_host = 0;
  for (size_t i = 0; status.ok() && i < hosts.size(); ++i) {
    const ClusterHost& h = *hosts[i].spec;
    if (h.trainers == 0) continue;
    if (master_addr.empty()) {
      master_addr = h.address;
      rank0_host = i;
    }
    for (int local = 0; local < h.trainers && status.ok(); ++local, ++rank) {
      RemoteProcess process;
      process.pid_file =
          JoinPath(pid_dir, absl::StrCat("trainer-", rank, ".pid"));
      process.gloo_address = h.address;
      process.env = {{"RANK", std::to_string(rank)},
                     {"WORLD_SIZE", std::to_string(world)},
                     {"LOCAL_RANK", std::to_string(local)},
                     {"LOCAL_WORLD_SIZE", std::to_string(h.trainers)},
                     {"GROUP_RANK", std::to_string(group)},
                     {"MASTER_ADDR", master_addr},
                     {"MASTER_PORT", std::to_string(spec.master_port)}};
      process.argv = {h.binary,
                      "train",
                      "--servers",
                      absl::StrJoin(addresses, ","),
                      "--partition",
                      part_dir,
                      "--out",
                      run_dir,
                      "--timeout",
                      absl::StrCat(flags.timeout_seconds),
                      "--peer-timeout",
                      absl::StrCat(flags.peer_timeout_seconds),
                      "--server-wait",
                      absl::StrCat(flags.server_wait_seconds),
                      "--hedge-after-ms",
                      flags.hedge_after_ms,
                      "--auth-token-file",
                      token_file};
      for (auto& a : TrainingArgs(flags.training)) process.argv.push_back(a);
      auto trainer = start(hosts[i], process,
                           absl::StrCat("trainer ", rank, " on ", h.name),
                           absl::StrCat(h.name, " trainer ", rank));
      if (!trainer.ok()) {
        status = trainer.status();
        break;
      }
      supervisor.AddTrainer(std::move(trainer).value());
    }
    ++group;
  }
  if (status.ok()) status = supervisor.WaitForTrainers();

  // 4. Stop every remote process: end ssh's stdin (the wrapper stops its
  // process and exits with its status), then whatever ssh is left, then a
  // sweep by pid files on every host.
  for (Subprocess* p : remote) p->CloseStdin();
  const auto stop_by =
      std::chrono::steady_clock::now() + seconds(kStopGraceSeconds + 5);
  for (Subprocess* p : remote) {
    const auto left = std::chrono::duration_cast<milliseconds>(
        stop_by - std::chrono::steady_clock::now());
    p->Wait(std::max(left, milliseconds(0)));
  }
  supervisor.StopAll();
  commands.clear();
  prefixes.clear();
  for (const Host& host : hosts) {
    const ClusterHost& h = *host.spec;
    commands.push_back(Remote(
        host, SweepScript(h.work_dir, pid_dir, token_file, kStopGraceSeconds),
        h.name));
    prefixes.push_back(absl::StrCat(h.name, " stop"));
  }
  InstallRunSignalHandlers();  // A second Ctrl-C must not skip the sweep.
  auto swept = RunAll(commands, prefixes);
  if (!status.ok()) {
    // ssh's own failure (255) reads as a lost host, not as a signal.
    return absl::Status(
        status.code(),
        absl::StrReplaceAll(status.message(),
                            {{"with status 255",
                              "with status 255 (ssh: the host could not be "
                              "reached or the connection was lost)"}}));
  }
  if (swept.ok()) {
    std::vector<size_t> every_host;
    for (size_t i = 0; i < hosts.size(); ++i) every_host.push_back(i);
    RETURN_IF_ERROR(FirstFailure(hosts, *swept, every_host,
                                 "stopping the remote processes"));
  }

  // 5. Rank 0's run directory, back here.
  const Host& first = hosts[rank0_host];
  ASSIGN_OR_RETURN(
      done,
      RunAll({Rsync(first,
                    {"--exclude=/.pids", "--exclude=/.auth-token",
                     "--exclude=/checkpoints", "--exclude=/.scratch-*",
                     "--exclude=/config.toml",
                     absl::StrCat(first.spec->ssh, ":",
                                  JoinPath(first.spec->work_dir, run_dir), "/"),
                     absl::StrCat(out_dir, "/")},
                    first.spec->name)},
             {absl::StrCat(first.spec->name, " copy")}));
  RETURN_IF_ERROR(FirstFailure(hosts, done, {rank0_host},
                               "copying the run directory back"));
  const std::string summary_path = JoinPath(out_dir, "summary.json");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(summary_path));
  nlohmann::json summary = nlohmann::json::parse(text, nullptr, false);
  if (summary.is_object()) {
    nlohmann::json hosts_json = nlohmann::json::array();
    for (const auto& h : spec.hosts) {
      hosts_json.push_back({{"name", h.name},
                            {"address", h.address},
                            {"parts", h.parts},
                            {"trainers", h.trainers}});
    }
    summary["launch"] = {{"cluster_file", spec.path},
                         {"remote_run_dir", run_dir},
                         {"hosts", hosts_json}};
    RETURN_IF_ERROR(WriteFileAtomic(summary_path, summary.dump(2) + "\n"));
  }
  absl::Status report = WriteRunReport(out_dir);
  if (!report.ok()) {
    std::printf("warning: no report.html: %s\n",
                std::string(report.message()).c_str());
  }
  std::printf(
      "shardgnn launch: done; metrics, summary and report.html in %s (the "
      "trainers' checkpoints stay in %s on each host)\n",
      out_dir.c_str(), run_dir.c_str());
  return absl::OkStatus();
}

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
    flags->effective_config = EffectiveConfig(*cmd);
    *result = RunLaunch(*flags, *spec);
  });
}

}  // namespace shardgnn::cli
