// The `shardgnn` subcommands. Each Add*Command registers one subcommand (and
// its flags) on `app`; when that subcommand is chosen, its callback runs the
// work and stores the outcome in *result, which main() prints as one line and
// turns into the exit code.
#ifndef SHARDGNN_CLI_COMMANDS_H_
#define SHARDGNN_CLI_COMMANDS_H_

#include "absl/status/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

// Exit status of `shardgnn train` when its error is a collective that failed
// because of another trainer (IsPeerFailure): the launcher then looks for the
// trainer that failed first. Any other error exits 1.
inline constexpr int kPeerFailureExit = 3;

// `shardgnn --version`, and summary.json's shardgnn_version (the CMake
// project's VERSION) and git_commit (`git describe --always --dirty` of the
// source tree at build time, "unknown" outside a checkout).
inline constexpr char kShardgnnVersion[] = SHARDGNN_VERSION;
extern const char kGitCommit[];

void AddDatasetCommand(CLI::App& app,
                       absl::Status* result);  // dataset import | generate
void AddPartitionCommand(CLI::App& app, absl::Status* result);  // partition
void AddInfoCommand(CLI::App& app, absl::Status* result);       // info PATH
void AddServeCommand(CLI::App& app, absl::Status* result);      // serve
void AddTrainCommand(CLI::App& app, absl::Status* result);      // train
void AddRunCommand(CLI::App& app, absl::Status* result);        // run
void AddInferCommand(CLI::App& app, absl::Status* result);      // infer
void AddReportCommand(CLI::App& app, absl::Status* result);     // report
void AddLaunchCommand(CLI::App& app, absl::Status* result);     // launch
// embeddings export RUN_DIR
void AddEmbeddingsCommand(CLI::App& app, absl::Status* result);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_COMMANDS_H_
