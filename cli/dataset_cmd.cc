// Placeholder until the command lands; replaced by its owner.
#include "CLI/CLI.hpp"
#include "cli/commands.h"

namespace shardgnn::cli {

void AddDatasetCommand(CLI::App& app, absl::Status* result) {
  app.add_subcommand("dataset", "(not built yet)")->callback([result] {
    *result = absl::UnimplementedError("'dataset' is not built yet");
  });
}

}  // namespace shardgnn::cli
