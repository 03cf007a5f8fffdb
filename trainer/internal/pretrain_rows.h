// Self-supervised pre-training of learned input rows (issue 52): before the
// supervised task, the rows of a run's embedding table
// (sampler/embedding_rows.h) learn the graph's structure with a link
// objective over every node, so that a featureless graph's nodes (and the
// many nodes no label reaches) get rows that say where they sit in the graph
// rather than random values that the labelled nodes' rows overfit.
//
// The objective is DeepWalk's with negative sampling (Perozzi et al. 2014,
// Mikolov et al. 2013), over short walks: every node starts a walk of
// `walk_length` steps each epoch (uniform neighbor per step, the graph's
// sampling kernel with fanout 1), every pair of walk positions at most
// `window` apart is a positive pair (u, v), each with `negatives` uniform
// nodes w as negatives; a pair's loss is -log sigma(<e_u, e_v>) plus
// -log sigma(-<e_u, e_w>) for each of its negatives, the step's loss their
// mean over the step's pairs, and its gradient goes to the
// rows through the table's own sparse optimizer (a push per step, as in
// training). Walks that reach a node without neighbors stop there.
//
// Steps follow the table's step clock from `first_step` (pull at s, push s):
// with T trainers, trainer r starts the walks of its share of a seeded
// permutation of all nodes, and every trainer makes the same number of steps
// per epoch, ceil(N / (T * batch_size)), pushing an empty gradient when its
// share is done, so that the holders' clocks advance together.
// Deterministic for a seed, the rows' holder and the trainer count (in
// `sync` mode).
#ifndef SHARDGNN_TRAINER_INTERNAL_PRETRAIN_ROWS_H_
#define SHARDGNN_TRAINER_INTERNAL_PRETRAIN_ROWS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/embedding_rows.h"
#include "sampler/graph_source.h"

namespace shardgnn::internal {

struct PretrainRowsOptions {
  int epochs = 0;
  int64_t batch_size = 128;  // Walks started per step per trainer.
  int walk_length = 20;      // Steps of each walk (PyG's Node2Vec: 20).
  int window = 5;            // Positions apart in a positive pair, at most.
  int negatives = 5;         // Uniform negative nodes per positive pair.
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
};

struct PretrainEpoch {
  int epoch = 0;      // From 1.
  double loss = 0.0;  // Mean over this trainer's pairs of the epoch.
  int64_t pairs = 0;  // Positive pairs of this trainer.
  int64_t steps = 0;
  double seconds = 0.0;
};

// Steps per pre-training epoch (the same on every trainer).
int64_t PretrainStepsPerEpoch(int64_t num_nodes,
                              const PretrainRowsOptions& options);

// Runs options.epochs epochs on `rows` from step `first_step` (the table's
// next step); the rows' table has then applied steps up to first_step +
// epochs * PretrainStepsPerEpoch. `on_epoch` (may be empty) is called after
// each. Fails on GraphSource and table errors, on a non-finite loss, and on
// options out of range (INVALID_ARGUMENT naming the field).
absl::StatusOr<std::vector<PretrainEpoch>> PretrainRows(
    const GraphSource& source, LearnableRows* rows,
    const PretrainRowsOptions& options, int64_t first_step,
    const std::function<void(const PretrainEpoch&)>& on_epoch);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_PRETRAIN_ROWS_H_
