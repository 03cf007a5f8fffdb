// GNN models over message-flow blocks (GraphSAGE, GCN, GAT) and the conversion
// of a MiniBatch to tensors.
#ifndef SHARDGNN_TRAINER_INTERNAL_MODELS_H_
#define SHARDGNN_TRAINER_INTERNAL_MODELS_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "sampler/minibatch.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

// One block as tensors. The plain CSR is what was sampled; the "loop" CSR puts
// a self loop first in every destination's row (GCN and GAT aggregate over the
// neighborhood and the node itself).
struct BlockTensors {
  int64_t num_src = 0;
  int64_t num_dst = 0;
  torch::Tensor indptr, indices;  // int64 [num_dst + 1], [E]
  torch::Tensor loop_indptr,
      loop_indices;  // int64 [num_dst + 1], [E + num_dst]
  torch::Tensor
      loop_dst;  // int64 [E + num_dst]: the destination of each loop-CSR edge
  // float [E + num_dst, 1], GCN only: the self loop's 1 / (d_i + 1), and
  // (d_i / k_i) / sqrt((d_i + 1) (d_j + 1)) for each of the k_i sampled of
  // destination i's d_i neighbors, with d the degrees in the whole graph
  // (MiniBatch::degrees): the symmetric normalisation of the full graph, and
  // the neighbor sum estimated without bias from the sample, so a model does
  // not score differently with the batch it is evaluated in.
  torch::Tensor gcn_weight;
};

// Converts `batch`'s blocks (copies the index arrays; only the parts `kind`
// needs are filled). REQUIRES for kGcn: batch.degrees holds every input
// node's graph degree.
std::vector<BlockTensors> ToBlockTensors(const MiniBatch& batch,
                                         ModelKind kind);

// Seeds for successive dropout masks: MixSeed(seed, 0), MixSeed(seed, 1), ...
class SeedStream {
 public:
  explicit SeedStream(uint64_t seed) : seed_(seed) {}
  uint64_t Next();
  // How many seeds were drawn (saved in checkpoints, restored on resume).
  uint64_t count() const { return count_; }
  void set_count(uint64_t count) { count_ = count; }

 private:
  uint64_t seed_;
  uint64_t count_ = 0;
};

// A stack of GNN layers mapping input features [num_src of blocks.front(), F]
// to logits [num_seeds, classes].
class GnnModel : public torch::nn::Module {
 public:
  virtual torch::Tensor Forward(const std::vector<BlockTensors>& blocks,
                                torch::Tensor x) = 0;
  // The model's dropout seeds.
  virtual SeedStream& seed_stream() = 0;
};

// Builds the model `options` describe with parameters drawn from a private
// generator seeded with `seed` (Glorot uniform weights, zero biases) and
// dropout masks derived from `seed` too: no global RNG is used, so the model is
// a pure function of its seed even with several models in one process.
// REQUIRES: options.num_layers >= 1.
std::shared_ptr<GnnModel> MakeModel(const ModelOptions& options, int64_t in_dim,
                                    int64_t num_classes, uint64_t seed);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_MODELS_H_
