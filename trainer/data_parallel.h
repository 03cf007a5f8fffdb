// Synchronous data parallelism over c10d: TCPStore rendezvous, ProcessGroupGloo
// collectives.
//
// Each trainer process (rank) connects once, then hands the GlooDataParallel to
// Train() as its GradientSync: rank 0's initial parameters are broadcast to
// every rank, and after every backward pass the gradients are flattened into
// buckets of about `bucket_bytes`, allreduced (all buckets in flight at once)
// and divided by the world size. Every collective has the configured timeout; a
// rank that died or stalls turns into an error naming the operation and the
// rank, never a hang. Launch variables follow torchrun (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), so existing launchers can start trainers.
#ifndef SHARDGNN_TRAINER_DATA_PARALLEL_H_
#define SHARDGNN_TRAINER_DATA_PARALLEL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/gradient_sync.h"

namespace c10d {
class ProcessGroupGloo;
class Store;
}  // namespace c10d

namespace shardgnn {

struct DataParallelOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";  // Where rank 0's TCPStore listens.
  int master_port =
      29500;  // 0 (rank 0 only): any free port, reported through on_listening.
  // Address Gloo binds to on this host; empty: master_addr if this is rank 0 or
  // master_addr is loopback, else the address this host's name resolves to.
  std::string local_addr;
  std::chrono::milliseconds timeout{60000};  // Rendezvous and every collective.
  int64_t bucket_bytes = int64_t{25} << 20;
  // Rank 0 calls this with the store's port once it listens (before waiting for
  // the other ranks).
  std::function<void(int port)> on_listening;
};

// Overrides rank, world_size, master_addr and master_port from RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT where set. Fails, naming the
// variable, on a malformed or inconsistent value.
absl::Status ReadTorchrunEnvironment(DataParallelOptions* options);

// One rank's membership in a process group. Thread-compatible: use it from the
// training thread only.
class GlooDataParallel : public GradientSync {
 public:
  // Rendezvous: blocks until all world_size ranks have connected or the timeout
  // passes (an error saying how many ranks were expected and where).
  static absl::StatusOr<std::unique_ptr<GlooDataParallel>> Connect(
      const DataParallelOptions& options);
  ~GlooDataParallel() override;
  GlooDataParallel(const GlooDataParallel&) = delete;
  GlooDataParallel& operator=(const GlooDataParallel&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }

  absl::Status BroadcastParameters(
      const std::vector<torch::Tensor>& parameters) override;
  absl::Status AllreduceGradients(
      const std::vector<torch::Tensor>& parameters) override;
  absl::Status AllreduceSum(absl::Span<double> values) override;
  // Waits until every rank has reached the barrier.
  absl::Status Barrier();

 private:
  GlooDataParallel(DataParallelOptions options,
                   c10::intrusive_ptr<c10d::Store> store,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> group);
  // Groups consecutive tensors into buckets of about bucket_bytes: returns the
  // start index of each bucket.
  std::vector<size_t> Buckets(const std::vector<torch::Tensor>& tensors) const;
  absl::Status Error(const std::string& what, const std::exception& e) const;

  DataParallelOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_DATA_PARALLEL_H_
