// GradientSync over a ProcessGroup (c10d Gloo): what real multi-trainer runs
// use.
//
// Gradients are flattened into buckets of at most `bucket_bytes` (as PyTorch's
// DDP does), each bucket is allreduced once and divided by the world size, then
// copied back. Parameters are broadcast from rank 0 the same way. Errors from
// the group (dead peer, timeout) are returned as they come. Not thread-safe;
// the ProcessGroup must outlive this object.
#ifndef SHARDGNN_TRAINER_C10D_GRADIENT_SYNC_H_
#define SHARDGNN_TRAINER_C10D_GRADIENT_SYNC_H_

#include <cstdint>
#include <vector>

#include "trainer/distributed.h"
#include "trainer/gradient_sync.h"

namespace shardgnn {

class C10dGradientSync : public GradientSync {
 public:
  explicit C10dGradientSync(ProcessGroup* group,
                            int64_t bucket_bytes = 25 << 20);

  absl::Status BroadcastParameters(
      const std::vector<at::Tensor>& parameters) override;
  absl::Status AllreduceGradients(
      const std::vector<at::Tensor>& parameters) override;
  absl::Status AllreduceSum(absl::Span<double> values) override;
  absl::Status AllreduceSum(absl::Span<float> values) override;

 private:
  // Runs `op` over contiguous float buckets holding `tensors` (copied in, and
  // back out afterwards).
  template <typename Op>
  absl::Status ForEachBucket(const std::vector<at::Tensor>& tensors, Op op);

  ProcessGroup* group_;
  int64_t bucket_floats_;
  std::vector<float> buffer_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_C10D_GRADIENT_SYNC_H_
