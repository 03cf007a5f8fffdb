// Placeholder until the command lands; replaced by its owner.
#include "CLI/CLI.hpp"
#include "cli/commands.h"

namespace shardgnn::cli {

void AddInfoCommand(CLI::App& app, absl::Status* result) {
  app.add_subcommand("info", "(not built yet)")->callback([result] {
    *result = absl::UnimplementedError("'info' is not built yet");
  });
}

}  // namespace shardgnn::cli
