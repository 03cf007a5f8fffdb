// Learned embeddings in `shardgnn train` (issue 15): the run's first line
// about them, the run ID every trainer shares, and what the leader writes
// after the run.
#ifndef SHARDGNN_CLI_TRAIN_EMBEDDINGS_H_
#define SHARDGNN_CLI_TRAIN_EMBEDDINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "nlohmann/json.hpp"
#include "sampler/embedding_rows.h"
#include "sampler/remote_graph_source.h"
#include "trainer/gradient_sync.h"
#include "trainer/trainer.h"

namespace shardgnn::cli {

// The run's first lines say what the learned embeddings are.
void PrintEmbeddings(const LearnableRows& rows, const char* where);

// After the run, on the leader: the learned table written to
// <out>/learned_embeddings.npy (original node order with `orig_ids`, see
// WriteLearnedEmbeddings) and the figures for summary.json["embeddings"],
// with each server's (`remote`, if any).
absl::StatusOr<nlohmann::ordered_json> FinishEmbeddings(
    LearnableRows& rows, const TrainResult& result, int64_t num_nodes,
    const std::vector<NodeId>& orig_ids, const std::string& out_dir,
    const RemoteGraphSource* remote);

// What every trainer of a run with tables on the servers shares.
struct EmbeddingRun {
  // Public (embedding_run.json): a server holding a table of an earlier run
  // replaces it rather than continue from its rows, and files the run's
  // snapshots under it.
  std::string run_id;
  // The run's alone (issue 51): the servers answer the run's tables only to
  // calls carrying it (EmbeddingTableConfig::run_secret).
  // kEmbeddingRunSecretHexDigits lowercase hex digits.
  std::string secret;
};

// Rank 0 draws the run ID, and the secret from the kernel's CSPRNG (128
// bits); a resumed run takes them back from its run directory
// (embedding_run.json, and embedding_run.secret: ReadEmbeddingRunSecret).
// The other trainers learn both through one allreduce: sums of doubles, each
// holding 26 bits of the ID or 24 bits of the secret (exact in a double;
// the others add zeros), so the secret is in no file but rank 0's mode-0600
// one and on no command line or environment. It crosses the trainers' Gloo
// connections, as their gradients do (docs/architecture.md, "Security": they
// belong on a private network). A failure on rank 0 is carried by the same
// allreduce, so every trainer fails at once rather than wait for it.
//
// The leader with a run directory writes the secret file (mode 0600) before
// the allreduce, unless it read it back. A resumed run whose directory has a
// run ID but no secret file (a run started before run secrets, or the file
// removed) continues under a new secret, saying so: servers that hold the
// run's tables or snapshots under another secret then refuse it
// (PERMISSION_DENIED).
absl::StatusOr<EmbeddingRun> AgreeOnEmbeddingRun(GradientSync* sync,
                                                 bool leader,
                                                 const std::string& out_dir,
                                                 bool resume);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_TRAIN_EMBEDDINGS_H_
