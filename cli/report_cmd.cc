// `shardgnn report RUN_DIR`: (re)writes the run's report.html (run_report.h).
#include <cstdio>
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/run_report.h"
#include "common/file_util.h"

namespace shardgnn::cli {

void AddReportCommand(CLI::App& app, absl::Status* result) {
  auto run_dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write RUN_DIR/report.html: one self-contained page with the run's "
      "loss, accuracy, time split, throughput, memory and configuration");
  cmd->add_option("RUN_DIR", *run_dir,
                  "Run directory (metrics.jsonl, summary.json)")
      ->required();
  cmd->callback([run_dir, result] {
    *result = WriteRunReport(*run_dir);
    if (result->ok()) {
      std::printf("shardgnn report: %s\n",
                  JoinPath(*run_dir, "report.html").c_str());
    }
  });
}

}  // namespace shardgnn::cli
