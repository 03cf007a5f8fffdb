// Operators for model scripts (docs/formats.md, "Model scripts"): shardgnn's
// fused neighbor aggregation, callable from TorchScript as
//   torch.ops.shardgnn.neighbor_mean(x, edge_index, num_dst)
//   torch.ops.shardgnn.neighbor_sum(x, edge_index, num_dst)
// for x float32 [num_src, F] and edge_index int64 [2, E] grouped by
// destination, ascending (as the trainer passes it): [num_dst, F], each
// destination's mean (0 without edges) or sum of x over its edges' sources.
// Differentiable in x; the built-in models' kernel (CsrAggregate), without
// the [E, F] gather that index_select + index_add_ make. And
//   torch.ops.shardgnn.dropout(x, p, training)
// inverted dropout as the built-in models' (FastDropout: a counter-based mask
// made in parallel; LibTorch's bernoulli_ draws every element serially from
// one generator), seeded by one draw from the default CPU generator, which
// the trainer seeds before every layer call in training.
//
// The shardgnn binary registers them (LoadScriptModel calls
// EnsureScriptOps); Python loads the same code from the shared library
// build/python/libshardgnn_ops.so (torch.ops.load_library), so scripts that
// call them can be made and tested there.
#ifndef SHARDGNN_TRAINER_INTERNAL_SCRIPT_OPS_H_
#define SHARDGNN_TRAINER_INTERNAL_SCRIPT_OPS_H_

namespace shardgnn::internal {

// Does nothing; calling it links the operators' registration in.
void EnsureScriptOps();

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_SCRIPT_OPS_H_
