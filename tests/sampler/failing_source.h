// GraphSources for tests that stand in for storage servers that misbehave:
// one that goes away (FailingSource), one that is a network round trip away
// (SlowSource). Both pass every call through to `inner` otherwise
// (PassThroughSource). For tests of error propagation and of the pipeline
// through the sampler, the loader and the trainer.
#ifndef SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_
#define SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_

#include <atomic>
#include <chrono>
#include <thread>

#include "sampler/graph_source.h"

namespace shardgnn::testing {

// Every call answered by `inner`.
class PassThroughSource : public GraphSource {
 public:
  explicit PassThroughSource(const GraphSource* inner) : inner_(inner) {}
  int64_t num_nodes() const override { return inner_->num_nodes(); }
  int64_t feature_dim() const override { return inner_->feature_dim(); }
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
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
};

// Fails like a storage server that went away: once `ok_calls`
// SampleNeighbors calls have succeeded, answers UNAVAILABLE naming an
// address.
class FailingSource : public PassThroughSource {
 public:
  FailingSource(const GraphSource* inner, int ok_calls)
      : PassThroughSource(inner), ok_calls_(ok_calls) {}
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
    if (calls_++ >= ok_calls_) {
      return absl::UnavailableError(
          "127.0.0.1:9: UNAVAILABLE: server went away");
    }
    return PassThroughSource::SampleNeighbors(nodes, fanout, replace, seed,
                                              out);
  }

 private:
  int ok_calls_;
  mutable std::atomic<int> calls_{0};
};

// Neighbor sampling that takes a network round trip (`delay` a call), as a
// storage server on another host would.
class SlowSource : public PassThroughSource {
 public:
  SlowSource(const GraphSource* inner, std::chrono::milliseconds delay)
      : PassThroughSource(inner), delay_(delay) {}
  absl::Status SampleNeighbors(absl::Span<const NodeId> nodes, int fanout,
                               bool replace, uint64_t seed,
                               SampledNeighbors* out) const override {
    std::this_thread::sleep_for(delay_);
    return PassThroughSource::SampleNeighbors(nodes, fanout, replace, seed,
                                              out);
  }

 private:
  std::chrono::milliseconds delay_;
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_SAMPLER_FAILING_SOURCE_H_
