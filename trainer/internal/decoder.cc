#include "trainer/internal/decoder.h"

#include <memory>

namespace shardgnn::internal {

MlpDecoder::MlpDecoder(int64_t dim) {
  lins_ = register_module("lins", torch::nn::ModuleList());
  lins_->push_back(torch::nn::Linear(dim, dim));
  lins_->push_back(torch::nn::Linear(dim, 1));
}

torch::Tensor MlpDecoder::Forward(const torch::Tensor& x) {
  torch::Tensor h = torch::relu(lins_[0]->as<torch::nn::Linear>()->forward(x));
  return lins_[1]->as<torch::nn::Linear>()->forward(h).squeeze(1);
}

void AddPairDecoder(GnnModel* model, LinkDecoder kind, int64_t dim,
                    uint64_t seed) {
  if (kind != LinkDecoder::kMlp) return;
  auto mlp = std::make_shared<MlpDecoder>(dim);
  InitParameters(*mlp, seed);
  model->register_module("decoder", mlp);
}

torch::Tensor ScorePairs(GnnModel& model, LinkDecoder kind,
                         const torch::Tensor& hu, const torch::Tensor& hv) {
  if (kind == LinkDecoder::kMlp) {
    auto children = model.named_children();
    TORCH_CHECK(children.contains("decoder"), "the model has no MLP decoder");
    auto mlp = std::dynamic_pointer_cast<MlpDecoder>(children["decoder"]);
    TORCH_CHECK(mlp != nullptr, "the model's decoder is not an MLP decoder");
    return mlp->Forward(hu * hv);
  }
  return (hu * hv).sum(1);
}

}  // namespace shardgnn::internal
