// Exact layer-wise inference: every node's outputs from full neighborhoods.
//
// As DistDGL's layer-wise inference: layer 1 is computed for every node (in
// chunks of destination nodes, each chunk's full one-hop neighborhood read
// from the GraphSource), then layer 2 from those states, and so on. No
// sampling, so the outputs are those of a full-graph forward pass (within
// float tolerance), and memory stays bounded by a chunk's neighborhood: the
// states of a layer for all nodes live in a file in the scratch directory
// (memory-mapped, so the page cache holds what fits), not in a tensor.
//
// Distributed over `world_size` ranks: rank r computes the nodes
// [N r / W, N (r + 1) / W); after each round of chunks the ranks exchange the
// rows they computed (a sum-allreduce of a buffer where each fills its own
// slot), so every rank holds the whole layer on its local disk before the
// next layer starts. Rank 0 writes the outputs, in original node ID order:
//   embeddings.npy   float32 [N, D]  the states after options.embedding_layer
//   logits.npy       float32 [N, C]  the last layer's outputs
//   predictions.npy  int64 [N]       argmax of the logits
// A link model (ModelConfig::task) writes embeddings.npy only: the last
// layer's outputs, the embeddings its decoder scores pairs from; and with
// options.score_pairs, scores.npy (float32 [m], the decoder's logit of each
// pair, in the order given).
// each written under a temporary name and renamed when complete. Scratch files
// are removed on return, also on errors. Torch-free interface.
#ifndef SHARDGNN_TRAINER_INFERENCE_H_
#define SHARDGNN_TRAINER_INFERENCE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "sampler/graph_source.h"
#include "trainer/model_config.h"

namespace shardgnn {

class GradientSync;

struct InferProgress {
  int layer = 0;  // From 1.
  int layers = 0;
  int64_t rows_done = 0;       // This layer, over all ranks.
  int64_t rows = 0;            // Nodes in the graph.
  double seconds = 0.0;        // Since inference started.
  double layer_seconds = 0.0;  // Since this layer started.
};

struct InferOptions {
  int rank = 0;
  int world_size = 1;
  // Destination nodes per chunk (and per rank per round).
  int64_t chunk_nodes = 4096;
  // Whose states embeddings.npy holds: 1 .. layers - 1 (the outputs of that
  // hidden layer, after its activation); 0 (the default) picks the last hidden
  // layer, or the logits for a one-layer model.
  int embedding_layer = 0;
  // Where this rank keeps the layers' states while it runs; created if
  // missing; the files are removed afterwards. On this machine's disk.
  std::string scratch_dir;
  // Rank 0 writes the outputs here (created if missing); empty: none are
  // written (only the accuracies are computed).
  std::string out_dir;
  // orig_ids[v] is the original (dataset) ID of node v (a partition's
  // orig_ids.npy); empty: the source's IDs are the original ones.
  std::vector<NodeId> orig_ids;
  // LibTorch and OpenBLAS threads (trainer/compute_env.h); 0: every core.
  int torch_threads = 0;
  // Link models: pairs to score (flattened u0, v0, u1, v1, ... in original
  // node IDs); rank 0 writes scores.npy.
  std::vector<NodeId> score_pairs;
  // Link models: if set, every rank fills it with the scores of score_pairs
  // (in order), as scores.npy would hold them.
  std::vector<float>* pair_scores = nullptr;
  // Models over learned node embeddings (ModelConfig::learned_dim > 0):
  // writes the learned rows of `nodes` (the source's IDs) to
  // out + i * learned_dim. Required for such models.
  std::function<absl::Status(absl::Span<const NodeId> nodes, float* out)>
      learned_rows;
  // Rank 0 only, after every round of chunks; may be empty.
  std::function<void(const InferProgress&)> on_progress;
};

struct SplitAccuracy {
  int64_t nodes = 0;
  int64_t labeled = 0;
  int64_t correct = 0;  // Labeled nodes predicted right.
  double acc = -1.0;    // correct / labeled; -1 without labeled nodes.
  // Labeled nodes whose label is no class of the model (>= its classes): the
  // graph's labels are another set than the model's (counted as wrong).
  int64_t beyond_classes = 0;
};

struct InferResult {
  int64_t num_nodes = 0;
  int embedding_layer = 0;
  int64_t embedding_dim = 0;
  int64_t num_classes = 0;
  int64_t scored_pairs = 0;  // Link models: pairs in scores.npy.
  // Per split (as given), from every node's logits (all ranks agree).
  std::map<std::string, SplitAccuracy> accuracy;
  int64_t edges = 0;          // Messages read (this rank).
  int64_t scratch_bytes = 0;  // Largest scratch footprint (this rank).
  double seconds = 0.0;
};

// Runs `config`'s model with the parameters in `parameters_path` (model.pt)
// over every node of `source` (and, for a model over learned embeddings,
// options.learned_rows; a model script's module is model_script.pt beside
// model.pt, kModelScriptFile). `sync` joins the ranks (null: world_size must be 1);
// every rank calls Infer with the same arguments but its rank. Fails on a
// model that does not match the graph (input width), unreadable
// parameters, pairs to score naming nodes outside the graph (or a node
// model given pairs), GraphSource errors, a full disk (naming the file), and
// collective errors.
absl::StatusOr<InferResult> Infer(
    const GraphSource& source, const ModelConfig& config,
    const std::string& parameters_path,
    const std::map<std::string, std::vector<NodeId>>& splits,
    const InferOptions& options, GradientSync* sync = nullptr);

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_INFERENCE_H_
