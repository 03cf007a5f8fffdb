// GNN models over message-flow blocks (GraphSAGE, GCN, GAT) and the conversion
// of a MiniBatch to tensors.
#ifndef SHARDGNN_TRAINER_INTERNAL_MODELS_H_
#define SHARDGNN_TRAINER_INTERNAL_MODELS_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "sampler/graph_schema.h"
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
  // Typed blocks (Block::relations): the edges grouped by relation, relation
  // r's at [relation_ptr[r], relation_ptr[r + 1]): their sources and
  // destinations (local indices) and 1 / (the destination's sampled
  // neighbors of that relation), R-GCN's normalisation. Empty otherwise.
  std::vector<int64_t> relation_ptr;
  torch::Tensor rel_src, rel_dst;  // int64 [E]
  torch::Tensor rel_norm;          // float [E, 1]
  // Models reading edge features (ModelNeeds::edge_features): each edge's
  // features (Block::edge_features) and its destination's local index.
  torch::Tensor edge_attr;  // float [E, D]
  torch::Tensor edge_dst;   // int64 [E]
};

// A typed batch's inputs (MiniBatch::input_types ...): per node type, the
// local indices of its input nodes, their feature rows (undefined for a type
// without features) and their type-local IDs (what a type without features
// looks its learned rows up by).
struct TypedInputs {
  int64_t num_inputs = 0;
  std::vector<torch::Tensor> index;      // int64 [n_t]
  std::vector<torch::Tensor> features;   // float [n_t, F_t]
  std::vector<torch::Tensor> local_ids;  // int64 [n_t]
};

// Converts `batch`'s blocks (copies the index arrays; only the parts `kind`
// needs are filled; kScript gets edge_attr and edge_dst whenever the blocks
// have edge features). REQUIRES for kGcn: batch.degrees holds every input
// node's graph degree.
std::vector<BlockTensors> ToBlockTensors(const MiniBatch& batch,
                                         ModelKind kind);

// The input feature scaling as tensors (kStandardize's shift and scale).
struct InputTransform {
  FeatureNorm norm = FeatureNorm::kNone;
  torch::Tensor shift, scale;  // [1, F]
};
InputTransform MakeInputTransform(const FeatureTransform& f);
// Scales the rows of `x` [n, F] in place.
void ApplyInputTransform(const InputTransform& transform, torch::Tensor& x);
// The L2 length of each row of `x` [n, F] as [n, 1], at least 1e-12 (so that
// dividing by it leaves rows of zeros zero).
torch::Tensor RowLengths(const torch::Tensor& x);
// The rows of `x` scaled to L2 length `length`: frozen learned rows
// (FrozenRowLength); FeatureNorm::kRowL2 is length 1, in place.
torch::Tensor RowsOfLength(const torch::Tensor& x, double length);

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

// The model interface every encoder implements: a stack of layers mapping
// input features [num_src of blocks.front(), F] to outputs [num_seeds, C].
// Layer l reads the states of its block's sources and writes those of its
// destinations, so a model runs on sampled minibatches (Forward) and layer by
// layer over full neighborhoods (ForwardLayer, as exact inference does).
// Parameters are named modules: "layers.<l>.<name>" (layers.0.lin_self.weight
// for GraphSAGE; see docs/formats.md), the names checkpoints and exports use.
class GnnModel : public torch::nn::Module {
 public:
  virtual int num_layers() const = 0;
  // Output width of layer l (the last one: the number of classes).
  virtual int64_t layer_width(int l) const = 0;
  // Layer l on `h` (the states of b's sources): input dropout when training,
  // the layer, and its activation unless it is the last layer.
  virtual torch::Tensor ForwardLayer(int l, const BlockTensors& b,
                                     const torch::Tensor& h) = 0;
  // Every layer in turn: blocks[l] feeds layer l.
  torch::Tensor Forward(const std::vector<BlockTensors>& blocks,
                        torch::Tensor x);
  // Typed models: the first layer's input [num_inputs, width] from a typed
  // batch's per-type inputs (a projection per type with features, a learned
  // row per node of a type without). Others throw.
  virtual torch::Tensor EncodeInputs(const TypedInputs& inputs);
  // The model's dropout seeds.
  virtual SeedStream& seed_stream() = 0;
};

// What a model needs of its blocks and batches (ToBlockTensors, the sampler).
struct ModelNeeds {
  bool loop_csr = false;       // BlockTensors' self-loop CSR (loop_*).
  bool degrees = false;        // Graph degrees of the input nodes (gcn_weight).
  bool edge_features = false;  // Each edge's features (edge_attr).
};
ModelNeeds NeedsOf(ModelKind kind);

// Builds the model `options` describe with parameters drawn from a private
// generator seeded with `seed` (Glorot uniform weights, zero biases) and
// dropout masks derived from `seed` too: no global RNG is used, so the model is
// a pure function of its seed even with several models in one process.
// REQUIRES: options.num_layers >= 1.
std::shared_ptr<GnnModel> MakeModel(const ModelOptions& options, int64_t in_dim,
                                    int64_t num_classes, uint64_t seed);

// A model for a typed graph (options.kind kRgcn): an input module ("input.<t>"
// per node type t: Linear(F_t, hidden), or an Embedding(count_t, hidden) for
// a type without features) and R-GCN layers over `schema`'s relations.
std::shared_ptr<GnnModel> MakeTypedModel(const ModelOptions& options,
                                         const GraphSchema& schema,
                                         int64_t num_classes, uint64_t seed);

// A lower bound of the parameters MakeModel(options, in_dim, num_classes, .)
// has, without building it (0 for kScript, whose layers are its own): every
// layer holds a weight of at least its input width times its output width
// (in_dim into the first, `hidden` between, the last out to num_classes).
// Saturates at INT64_MAX. Inference checks a model.json against its model.pt
// with it, so that a description that does not belong to its parameters is
// refused rather than allocated.
int64_t MinParameterCount(const ModelOptions& options, int64_t in_dim,
                          int64_t num_classes);

// linear(x) for x [n, in]. With no gradient recorded (evaluation, inference)
// the product runs over row parts of at most 8 MB of x each, written into one
// output: OpenBLAS packs all of a call's rows of x into its own work buffer,
// whose pages stay mapped once touched, so a call on more rows than training
// ever made (the test pass's larger fanouts, inference's chunks) would fault in
// fresh pages, up to the size of x itself; in parts the buffer stays within
// what training touched. Rows are independent and the parts of equal size
// (OpenBLAS rounds a product of a few rows differently), so the result is
// bitwise linear(x)'s with Debian's OpenBLAS (tested). Layers of user models
// should project with it too.
torch::Tensor Project(torch::nn::Linear& linear, const torch::Tensor& x);

// Glorot uniform for every weight of `module` (bound sqrt(6 / (fan_in +
// fan_out)) over the last two dimensions), zeros for biases, from a private
// generator seeded with `seed`.
void InitParameters(torch::nn::Module& module, uint64_t seed);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_MODELS_H_
