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

// A run ID every trainer shares (rank 0 draws it; the others learn it through
// an allreduce), so that a server holding a table of an earlier run replaces
// it rather than continue from its rows. A resumed run takes it back from
// the run directory's embedding_run.json (WriteEmbeddingRunFile): the
// servers' snapshots are filed under it.
absl::StatusOr<std::string> AgreeOnRunId(GradientSync* sync, bool leader,
                                         const std::string& out_dir,
                                         bool resume);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_TRAIN_EMBEDDINGS_H_
