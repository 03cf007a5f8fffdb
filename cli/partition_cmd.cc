// Placeholder until the command lands; replaced by its owner.
#include "CLI/CLI.hpp"
#include "cli/commands.h"

namespace shardgnn::cli {

void AddPartitionCommand(CLI::App& app, absl::Status* result) {
  app.add_subcommand("partition", "(not built yet)")->callback([result] {
    *result = absl::UnimplementedError("'partition' is not built yet");
  });
}

}  // namespace shardgnn::cli
