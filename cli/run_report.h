// The run report: <run dir>/report.html, one self-contained page (inline SVG,
// no script, nothing fetched) a person reads to see what a run did: loss and
// accuracy per epoch, where each epoch's time went, throughput, memory, remote
// traffic and cache, restarts, the model, the configuration and the
// environment. Built from the run directory's metrics.jsonl and summary.json
// (docs/formats.md), so it can be made again at any time (`shardgnn report`);
// `train` and `run` write it at the end.
#ifndef SHARDGNN_CLI_RUN_REPORT_H_
#define SHARDGNN_CLI_RUN_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn::cli {

// Writes run_dir/report.html (temporary name, then rename). Fails naming the
// file when metrics.jsonl is missing, or it, summary.json or the config.toml
// read in its place is malformed (a line of metrics.jsonl that is not an
// epoch record is named by its line number, a place in config.toml by its
// line and column). A run without summary.json (still running, or stopped
// before its end) gets a page of the epochs recorded so far, its configuration
// and model from config.toml (with the values unset flags resolved to: cli
// EffectiveConfig), and says so; an unfinished last line of metrics.jsonl
// (being written, or cut short) is left out.
absl::Status WriteRunReport(const std::string& run_dir);

// The page for these file contents (`run_dir` is only shown). An empty
// `summary_json`: the run has none yet (above); `config_toml` is shown then.
absl::StatusOr<std::string> RunReportHtml(const std::string& run_dir,
                                          const std::string& metrics_jsonl,
                                          const std::string& summary_json,
                                          const std::string& config_toml = "");

// Several runs on one page (`shardgnn report RUN1 RUN2 ...`): their
// validation score, training loss and epoch time overlaid per epoch (a
// color per run), a row of results per run (dataset, model, test and best
// validation score, epochs, time per epoch, throughput, parameters'
// checksum) and the training flags whose values differ between them. Each
// run read as WriteRunReport reads it (one without summary.json: its epochs
// so far, "unfinished"). Written to `out_path` (temporary name, then
// rename); fails naming the first file that cannot be read.
absl::Status WriteComparisonReport(const std::vector<std::string>& run_dirs,
                                   const std::string& out_path);
absl::StatusOr<std::string> ComparisonReportHtml(
    const std::vector<std::string>& run_dirs);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_RUN_REPORT_H_
