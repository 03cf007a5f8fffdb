// `shardgnn report RUN_DIR`: (re)writes the run's report.html; `shardgnn
// report RUN1 RUN2 ... --out F`: one page comparing them (run_report.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/run_report.h"
#include "common/file_util.h"

namespace shardgnn::cli {

void AddReportCommand(CLI::App& app, absl::Status* result) {
  struct Flags {
    std::vector<std::string> run_dirs;
    std::string out = "compare.html";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write RUN_DIR/report.html: one self-contained page with the run's "
      "loss, accuracy, time split, throughput, memory and configuration; "
      "with several run directories, one page comparing them (--out)");
  cmd->add_option("RUN_DIR", flags->run_dirs,
                  "Run directory (metrics.jsonl, summary.json); several: "
                  "their curves overlaid on one page")
      ->required();
  cmd->add_option("--out", flags->out,
                  "With several runs: the comparison page to write")
      ->capture_default_str();
  cmd->callback([flags, result, cmd] {
    if (flags->run_dirs.size() == 1) {
      if (cmd->count("--out") > 0) {
        *result = absl::InvalidArgumentError(
            "--out is for several runs (one run's page is "
            "RUN_DIR/report.html)");
        return;
      }
      *result = WriteRunReport(flags->run_dirs.front());
      if (result->ok()) {
        std::printf("shardgnn report: %s\n",
                    JoinPath(flags->run_dirs.front(), "report.html").c_str());
      }
      return;
    }
    *result = WriteComparisonReport(flags->run_dirs, flags->out);
    if (result->ok()) {
      std::printf("shardgnn report: %zu runs compared in %s\n",
                  flags->run_dirs.size(), flags->out.c_str());
    }
  });
}

}  // namespace shardgnn::cli
