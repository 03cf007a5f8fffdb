// What a training run prints and writes about itself (`shardgnn train`,
// rank 0): the settings line, one line and one metrics.jsonl row per epoch,
// progress lines within long epochs and the final test, the result line, and
// summary.json (docs/formats.md "Run directory").
#ifndef SHARDGNN_CLI_TRAIN_OUTPUT_H_
#define SHARDGNN_CLI_TRAIN_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/training_flags.h"
#include "nlohmann/json.hpp"
#include "trainer/trainer.h"

namespace shardgnn::cli {

// A run with learned embeddings: embedding_run.json in its directory, written
// by rank 0 when the run starts (docs/formats.md): the run ID the tables and
// their snapshots are filed under (a resumed run takes it back), the
// partition whose node IDs the snapshots use ("" for the original IDs) and
// the number of nodes. Read by `embeddings export`.
inline constexpr char kEmbeddingRunFile[] = "embedding_run.json";
struct EmbeddingRunFile {
  std::string run_id;
  std::string partition_dir;
  int64_t num_nodes = 0;
  // The snapshots use a partition's node IDs (trainers on servers); false:
  // the original IDs (a table in the training process).
  bool partition_ids = false;
};
absl::Status WriteEmbeddingRunFile(const std::string& run_dir,
                                   const EmbeddingRunFile& run);
// NOT_FOUND if the run directory has none; DATA_LOSS naming the file if it
// is malformed.
absl::StatusOr<EmbeddingRunFile> ReadEmbeddingRunFile(
    const std::string& run_dir);

// The run's secret (issue 51), beside embedding_run.json but not in it:
// embedding_run.secret, written by rank 0 with mode 0600 when a run with
// tables on the servers starts, read back by a resumed run. The servers
// answer a run's tables only to calls carrying it (graphstore/internal/
// embedding_service.h), while the run ID is public. One line of
// kEmbeddingRunSecretHexDigits lowercase hex digits (128 bits).
inline constexpr char kEmbeddingRunSecretFile[] = "embedding_run.secret";
inline constexpr size_t kEmbeddingRunSecretHexDigits = 32;
// Written through a temporary file of mode 0600 (WriteFileAtomic): never
// readable by others, not even for a moment.
absl::Status WriteEmbeddingRunSecret(const std::string& run_dir,
                                     const std::string& secret);
// NOT_FOUND if the run directory has none; PERMISSION_DENIED naming the
// file if group or others may access it (as ssh refuses a private key);
// DATA_LOSS naming it if it is not one line of 32 hex digits.
absl::StatusOr<std::string> ReadEmbeddingRunSecret(const std::string& run_dir);

// When this process started (the first call), as UTC ISO 8601
// ("2026-12-01T13:08:06Z").
std::string StartedAt();

// What every summary.json holds; callers add where the graph came from.
// `train_seeds` counts every trainer's seeds (link tasks: train edges) in one
// pass over the train split.
nlohmann::ordered_json SummaryJson(const TrainResult& result,
                                   const TrainingFlags& training,
                                   const TrainOptions& options, int world_size,
                                   int64_t train_seeds);

// Prints one line per epoch and appends it to `metrics` (may be null, must
// outlive the callback) as a metrics.jsonl row; warns once when the loss
// climbs.
std::function<void(const EpochStats&)> EpochReporter(int epochs,
                                                     std::ofstream* metrics);

// Progress lines within long epochs and the final test, every `seconds` (0:
// none), on stderr: sets options->on_step and on_test_progress.
void ReportSteps(double seconds, TrainOptions* options);

// The run's settings after defaults were resolved, and its result.
void PrintSettings(const TrainOptions& o, const std::string& features,
                   int64_t steps_per_epoch);
void PrintResult(const TrainResult& result, bool exact);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_TRAIN_OUTPUT_H_
