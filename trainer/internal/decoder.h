// Link prediction's pair decoders (LinkDecoder): how a pair's score (a logit:
// sigmoid of it is the probability of an edge) comes from its endpoints'
// embeddings. The dot decoder has no parameters; the MLP decoder is a
// submodule "decoder" of the model (parameters decoder.lins.0.weight, ...), so
// checkpoints, gradient sync and model.pt carry it with the encoder.
#ifndef SHARDGNN_TRAINER_INTERNAL_DECODER_H_
#define SHARDGNN_TRAINER_INTERNAL_DECODER_H_

#include <torch/torch.h>

#include <cstdint>

#include "trainer/internal/models.h"
#include "trainer/trainer.h"

namespace shardgnn::internal {

// OGB's LinkPredictor: Linear(d, d), ReLU, Linear(d, 1) on h_u * h_v.
class MlpDecoder : public torch::nn::Module {
 public:
  explicit MlpDecoder(int64_t dim);
  torch::Tensor Forward(const torch::Tensor& x);

 private:
  torch::nn::ModuleList lins_;
};

// Adds `kind`'s parameters (if any) to `model` as its "decoder" submodule,
// initialised from `seed` (InitParameters).
void AddPairDecoder(GnnModel* model, LinkDecoder kind, int64_t dim,
                    uint64_t seed);

// The scores of pairs whose endpoints' embeddings are the rows of `hu` and
// `hv` [m, d]: [m]. REQUIRES: AddPairDecoder(model, kind, ...) was called.
torch::Tensor ScorePairs(GnnModel& model, LinkDecoder kind,
                         const torch::Tensor& hu, const torch::Tensor& hv);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_DECODER_H_
