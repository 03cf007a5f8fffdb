// shardgnn: one binary, one subcommand per stage of the workflow.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
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

}  // namespace

int main(int argc, char** argv) {
  RaiseOpenFileLimit();
  QuietLibraryLogging();
  // Training processes (and the launcher, whose trainers inherit it) need the
  // threading libraries' idle policy set before those libraries load.
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // Global flags take no values.
    const std::string command = argv[i];
    if (command == "train" || command == "run")
      shardgnn::ReexecWithComputeEnvironment(argv);
    break;
  }
  CLI::App app{"shardgnn: distributed graph neural network training",
               "shardgnn"};
  app.require_subcommand(1);
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No progress lines");
  app.set_version_flag("--version", "shardgnn 0.1.0");

  absl::Status result;
  shardgnn::cli::AddDatasetCommand(app, &result);
  shardgnn::cli::AddPartitionCommand(app, &result);
  shardgnn::cli::AddInfoCommand(app, &result);
  shardgnn::cli::AddServeCommand(app, &result);
  shardgnn::cli::AddTrainCommand(app, &result);
  shardgnn::cli::AddRunCommand(app, &result);
  shardgnn::cli::AddInferCommand(app, &result);
  shardgnn::cli::AddReportCommand(app, &result);
  app.parse_complete_callback(
      [&] { shardgnn::Progress::SetQuietByDefault(quiet); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!result.ok()) {
    std::fprintf(stderr, "shardgnn: error: %s\n",
                 std::string(result.message()).c_str());
    return shardgnn::IsPeerFailure(result) ? shardgnn::cli::kPeerFailureExit
                                           : 1;
  }
  return 0;
}
