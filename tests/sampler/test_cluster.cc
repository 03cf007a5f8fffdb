#include "tests/sampler/test_cluster.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/status.h"
#include "datasets/generators.h"
#include "graphstore/shard_store.h"

namespace shardgnn::testing {

absl::StatusOr<Dataset> MakeRmatDataset(const std::string& dir,
                                        int64_t num_nodes, double avg_degree,
                                        int64_t feature_dim, uint64_t seed) {
  GeneratorOptions options;
  options.kind = GraphKind::kRmat;
  options.num_nodes = num_nodes;
  options.avg_degree = avg_degree;
  options.feature_dim = feature_dim;
  options.num_classes = 4;
  options.split = {0.5, 0.2, 0.3};
  options.seed = seed;
  RETURN_IF_ERROR(GenerateDataset(options, dir).status());
  return LoadDataset(dir);
}

bool RelabelledGraph::HasEdge(NodeId v, NodeId u) const {
  return std::binary_search(indices.begin() + indptr[v],
                            indices.begin() + indptr[v + 1], u);
}

GraphArrays RelabelledGraph::arrays() const {
  GraphArrays a;
  a.indptr = indptr;
  a.indices = indices;
  a.features = features;
  a.feature_dim = feature_dim;
  a.labels = labels;
  return a;
}

absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir) {
  const std::string path = JoinPath(partition_dir, kOrigIdsFile);
  ASSIGN_OR_RETURN(NpyArray<int64_t> orig, ReadNpy<int64_t>(path, 1));
  const int64_t n = dataset.num_nodes();
  if (static_cast<int64_t>(orig.data.size()) != n) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", orig.data.size(), " IDs for ", n, " nodes"));
  }
  std::vector<NodeId> new_id(static_cast<size_t>(n), -1);
  for (NodeId v = 0; v < n; ++v) new_id[orig.data[v]] = v;
  RelabelledGraph g;
  g.feature_dim = dataset.feature_dim();
  g.indptr.push_back(0);
  const auto dim = static_cast<size_t>(g.feature_dim);
  for (NodeId v = 0; v < n; ++v) {
    const NodeId o = orig.data[v];
    std::vector<NodeId> row;
    for (int64_t e = dataset.indptr[o]; e < dataset.indptr[o + 1]; ++e)
      row.push_back(new_id[dataset.indices[e]]);
    std::sort(row.begin(), row.end());
    g.indices.insert(g.indices.end(), row.begin(), row.end());
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
    g.features.insert(g.features.end(), dataset.features.begin() + o * dim,
                      dataset.features.begin() + (o + 1) * dim);
    g.labels.push_back(dataset.labels[o]);
  }
  return g;
}

absl::StatusOr<std::unique_ptr<GraphStoreServer>> ServePart(
    const std::string& partition_dir, int part, bool in_memory) {
  ShardStoreOptions options;
  options.path = JoinPath(partition_dir, PartDirName(part));
  options.in_memory = in_memory;
  options.block_cache_bytes = 1 << 20;
  ASSIGN_OR_RETURN(std::unique_ptr<ShardStore> store,
                   ShardStore::Open(options));
  GraphStoreServerOptions server_options;
  server_options.num_threads = 2;
  return GraphStoreServer::Start(
      std::shared_ptr<const ShardStore>(std::move(store)), server_options);
}

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(
    const std::string& partition_dir, bool in_memory) {
  std::unique_ptr<TestCluster> cluster(new TestCluster());
  ASSIGN_OR_RETURN(cluster->manifest_, ReadPartitionManifest(partition_dir));
  for (int p = 0; p < cluster->manifest_.num_parts; ++p) {
    ASSIGN_OR_RETURN(auto server, ServePart(partition_dir, p, in_memory));
    cluster->servers_.push_back(std::move(server));
  }
  return cluster;
}

TestCluster::~TestCluster() {
  for (auto& server : servers_) server->Shutdown(absl::Now());
}

std::vector<std::string> TestCluster::addresses() const {
  std::vector<std::string> out;
  for (const auto& server : servers_) out.push_back(server->address());
  return out;
}

}  // namespace shardgnn::testing
