// Fixtures for the distributed sampling tests: a small generated graph
// partitioned with the real partitioner, the relabelled graph it implies (the
// in-process reference), and real storage servers serving its shards in this
// process on loopback port 0.
#ifndef SHARDGNN_TESTS_SAMPLER_TEST_CLUSTER_H_
#define SHARDGNN_TESTS_SAMPLER_TEST_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "datasets/dataset.h"
#include "graphstore/server.h"
#include "partition/partition_book.h"
#include "partition/relabelled_graph.h"
#include "sampler/graph_source.h"
#include "sampler/remote_graph_source.h"

namespace shardgnn::testing {

// Generates an R-MAT dataset (skewed degrees, so there are hubs) of
// `num_nodes` nodes into `dir` and loads it.
absl::StatusOr<Dataset> MakeRmatDataset(const std::string& dir,
                                        int64_t num_nodes, double avg_degree,
                                        int64_t feature_dim, uint64_t seed);

// The graph in relabelled IDs (partition/relabelled_graph.h), with a view
// for an InMemoryGraphSource.
struct RelabelledGraph : shardgnn::RelabelledGraph {
  GraphArrays arrays() const;
  // Typed graphs: the schema of the partition's type ranges.
  std::shared_ptr<const GraphSchema> schema;
};

// Builds the relabelled graph of `dataset` from the partition directory's
// orig_ids.npy.
absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir);

// One GraphStoreServer per part of a partition directory, each over its own
// ShardStore (memory or disk mode), on a loopback port below the ephemeral
// range (common/ports.h), so a restarted server gets its address back.
class TestCluster {
 public:
  // With `embedding_dir`, server p keeps embedding snapshots in
  // embedding_dir/part-p.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(
      const std::string& partition_dir, bool in_memory,
      const std::string& embedding_dir = "");
  ~TestCluster();
  // Stops part p's server at once and starts a fresh one (no state but its
  // files) on the same address: a server restarted.
  absl::Status Restart(int part);

  int num_parts() const { return static_cast<int>(servers_.size()); }
  // Server addresses, indexed by part.
  std::vector<std::string> addresses() const;
  GraphStoreServer& server(int part) { return *servers_[part]; }
  const PartitionManifest& manifest() const { return manifest_; }

 private:
  TestCluster() = default;
  PartitionManifest manifest_;
  std::string partition_dir_, embedding_dir_;
  bool in_memory_ = true;
  std::vector<std::unique_ptr<GraphStoreServer>> servers_;
};

// A GraphStoreServer over part `part` of `partition_dir` (another server for
// the same part, or one for a part of another partition), bound to
// `listen_address` (a restarted replica binds its old one); by default a
// loopback port below the ephemeral range, which no outgoing connection can
// take while the server is down.
absl::StatusOr<std::unique_ptr<GraphStoreServer>> ServePart(
    const std::string& partition_dir, int part, bool in_memory,
    const std::string& listen_address = "",
    const std::string& embedding_dir = "");

// Where a remote source reads feature rows from; the failover and hedging
// tests run over each.
enum class FeaturePath { kSharedMemory, kFeaturePort, kGrpc };
// "SharedMemory", "FeaturePort" or "Grpc" (a test-name suffix).
std::string FeaturePathName(FeaturePath path);
// Sets `options` to read features by `path`.
void UseFeaturePath(FeaturePath path, RemoteGraphSourceOptions* options);

// An R-MAT graph of `num_nodes` nodes (8 features) in dir/rmat, partitioned
// into `parts` in dir/part, the relabelled graph it implies and the
// in-process source over it (the reference).
struct PartitionedRmat {
  Dataset dataset;
  RelabelledGraph graph;
  std::unique_ptr<InMemoryGraphSource> local;
};
absl::StatusOr<PartitionedRmat> MakePartitionedRmat(const std::string& dir,
                                                    int64_t num_nodes,
                                                    int parts, uint64_t seed);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_SAMPLER_TEST_CLUSTER_H_
