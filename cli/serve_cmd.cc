// Placeholder until the command lands; replaced by its owner.
#include "CLI/CLI.hpp"
#include "cli/commands.h"

namespace shardgnn::cli {

void AddServeCommand(CLI::App& app, absl::Status* result) {
  app.add_subcommand("serve", "(not built yet)")->callback([result] {
    *result = absl::UnimplementedError("'serve' is not built yet");
  });
}

}  // namespace shardgnn::cli
