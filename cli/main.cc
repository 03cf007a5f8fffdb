// shardgnn: one binary, one subcommand per stage of the workflow.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/config_file.h"
#include "cli/suggestions.h"
#include "common/progress.h"
#include "glog/logging.h"
#include "trainer/compute_env.h"
#include "trainer/distributed.h"

namespace {

// The default soft limit on open files (often 1024) is within reach of a
// client opening idle connections to a server; every subcommand takes the
// hard limit instead (the servers keep their connection caps well below
// it, graphstore/server.h).
void RaiseOpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    // Keeping the soft limit is safe: the caps follow the limit in force.
  }
}

// LibTorch (c10d, Gloo) logs through glog, and a failed rendezvous printed
// glog's lines ("WARNING: Logging before InitGoogleLogging() ...", then c10d's
// "E... socket.cpp:...] The client socket has timed out ...") before the one
// error line that says the same. What matters reaches the user as a Status,
// so glog shows only FATAL, unless the user sets GLOG_minloglevel (glog's
// own variable: GLOG_minloglevel=0 shows everything).
void QuietLibraryLogging() {
  if (std::getenv("GLOG_minloglevel") != nullptr) return;
  FLAGS_minloglevel = google::GLOG_FATAL;
}

// `shardgnn SUBCOMMAND ... --config F ...` as `shardgnn --config F SUBCOMMAND
// ...`: CLI11 reads a config file on the main command, one [SUBCOMMAND]
// section per subcommand, and the file is easier to give after the
// subcommand, as every other flag. Returns the rewritten arguments.
std::vector<std::string> ConfigFlagFirst(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::vector<std::string> flag;
    if (args[i] == "--config" && i + 1 < args.size()) {
      flag = {args[i], args[i + 1]};
    } else if (args[i].rfind("--config=", 0) == 0) {
      flag = {args[i]};
    } else {
      continue;
    }
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + flag.size()));
    args.insert(args.begin() + 1, flag.begin(), flag.end());
    break;
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  RaiseOpenFileLimit();
  QuietLibraryLogging();
  // Training processes (and the launcher, whose trainers inherit it) need the
  // threading libraries' idle policy set before those libraries load.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--config") {  // The one global flag with a
      ++i;                                     // value.
      continue;
    }
    if (argv[i][0] == '-') continue;
    const std::string command = argv[i];
    if (command == "train" || command == "run")
      shardgnn::ReexecWithComputeEnvironment(argv);
    break;
  }
  CLI::App app{"shardgnn: distributed graph neural network training",
               "shardgnn"};
  app.require_subcommand(1);
  // Options a subcommand does not know go to the main command, so that the
  // global -q/--quiet may come after the subcommand too (subcommands made
  // below inherit it).
  app.fallthrough();
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No progress lines");
  app.set_version_flag("--version", std::string("shardgnn ") +
                                        shardgnn::cli::kShardgnnVersion + " (" +
                                        shardgnn::cli::kGitCommit + ")");
  // Flags from a TOML file, a [SUBCOMMAND] table each ([dataset.import] for
  // a nested one), read by toml++ (cli/config_file.h); flags on the command
  // line win; a key that names no flag is an error. Set before the
  // subcommands are added: each takes its parent's reader.
  app.config_formatter(std::make_shared<shardgnn::cli::TomlConfig>(&app));
  app.set_config("--config", "",
                 "TOML file of flags: a [train], [run], [serve], ... table "
                 "per subcommand, keys named as the flags (epochs = 30, "
                 "fanouts = [10, 5]); the command line wins");

  absl::Status result;
  shardgnn::cli::AddDatasetCommand(app, &result);
  shardgnn::cli::AddPartitionCommand(app, &result);
  shardgnn::cli::AddInfoCommand(app, &result);
  shardgnn::cli::AddServeCommand(app, &result);
  shardgnn::cli::AddTrainCommand(app, &result);
  shardgnn::cli::AddRunCommand(app, &result);
  shardgnn::cli::AddInferCommand(app, &result);
  shardgnn::cli::AddReportCommand(app, &result);
  shardgnn::cli::AddLaunchCommand(app, &result);
  shardgnn::cli::AddEmbeddingsCommand(app, &result);
  app.parse_complete_callback(
      [&] { shardgnn::Progress::SetQuietByDefault(quiet); });

  std::vector<std::string> args = ConfigFlagFirst(argc, argv);
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  try {
    app.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::ConfigError& e) {
    // TomlConfig's "FILE:LINE:COLUMN: what".
    std::fprintf(stderr, "shardgnn: error: --config %s\n", e.what());
    return 1;
  } catch (const CLI::FileError& e) {
    // The one file CLI11 opens is --config's.
    std::fprintf(stderr,
                 "shardgnn: error: --config %s: cannot read it "
                 "(missing?)\n",
                 app.get_config_ptr()->as<std::string>().c_str());
    return 1;
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a refused flag or value is one
    // line, as every other error. An argument no command took (a typo,
    // mostly) comes first: a flag it left missing is its consequence.
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::string unknown = shardgnn::cli::UnknownArgumentMessage(app);
    if (!unknown.empty()) {
      std::fprintf(stderr, "shardgnn: error: %s\n", unknown.c_str());
    } else {
      std::fprintf(stderr, "shardgnn: error: %s (--help lists the flags)\n",
                   e.what());
    }
    return 1;
  }
  if (!result.ok()) {
    std::fprintf(stderr, "shardgnn: error: %s\n",
                 std::string(result.message()).c_str());
    return shardgnn::IsPeerFailure(result) ? shardgnn::cli::kPeerFailureExit
                                           : 1;
  }
  return 0;
}
