// A GraphSource that fails like a storage server that went away: it passes
// calls through to `inner` until `ok_calls` SampleNeighbors calls have
// succeeded, then answers UNAVAILABLE naming an address. For tests of error
// propagation through the sampler, the loader and the trainer.
#ifndef SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_
#define SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_

#include <atomic>

#include "sampler/graph_source.h"

namespace shardgnn::testing {

class FailingSource : public GraphSource {
 public:
  FailingSource(const GraphSource* inner, int ok_calls)
      : inner_(inner), ok_calls_(ok_calls) {}
  int64_t num_nodes() const override { return inner_->num_nodes(); }
  int64_t feature_dim() const override { return inner_->feature_dim(); }
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
    if (calls_++ >= ok_calls_) {
      return absl::UnavailableError(
          "127.0.0.1:9: UNAVAILABLE: server went away");
    }
    return inner_->SampleNeighbors(nodes, fanout, replace, seed, out);
  }
  absl::Status FetchFeatures(absl::Span<const NodeId> nodes,
                             float* out) const override {
    return inner_->FetchFeatures(nodes, out);
  }
  absl::Status FetchLabels(absl::Span<const NodeId> nodes,
                           int64_t* out) const override {
    return inner_->FetchLabels(nodes, out);
  }
  absl::Status FetchDegrees(absl::Span<const NodeId> nodes,
                            int64_t* out) const override {
    return inner_->FetchDegrees(nodes, out);
  }

 private:
  const GraphSource* inner_;
  int ok_calls_;
  mutable std::atomic<int> calls_{0};
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_
