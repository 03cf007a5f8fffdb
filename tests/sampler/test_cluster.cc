#include "tests/sampler/test_cluster.h"

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/ports.h"
#include "common/status.h"
#include "datasets/generators.h"
#include "graphstore/shard_store.h"
#include "partition/partition.h"

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

GraphArrays RelabelledGraph::arrays() const {
  GraphArrays a;
  a.indptr = indptr;
  a.indices = indices;
  a.features = features;
  a.feature_dim = feature_dim;
  a.labels = labels;
  a.label_columns = label_columns;
  if (schema != nullptr) {
    a.schema = schema.get();
    a.edge_types = edge_types;
    for (const std::vector<float>& rows : type_features)
      a.type_features.push_back(rows);
  }
  return a;
}

absl::StatusOr<RelabelledGraph> RelabelForPartition(
    const Dataset& dataset, const std::string& partition_dir) {
  ASSIGN_OR_RETURN(shardgnn::RelabelledGraph g,
                   shardgnn::RelabelForPartition(dataset, partition_dir));
  RelabelledGraph out;
  static_cast<shardgnn::RelabelledGraph&>(out) = std::move(g);
  if (!out.node_types.empty()) {
    ASSIGN_OR_RETURN(
        GraphSchema schema,
        GraphSchema::FromParts(out.node_types, out.relations, out.type_starts));
    out.schema = std::make_shared<const GraphSchema>(std::move(schema));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<GraphStoreServer>> ServePart(
    const std::string& partition_dir, int part, bool in_memory,
    const std::string& listen_address, const std::string& embedding_dir) {
  ShardStoreOptions options;
  options.path = JoinPath(partition_dir, PartDirName(part));
  options.in_memory = in_memory;
  options.block_cache_bytes = 1 << 20;
  ASSIGN_OR_RETURN(std::unique_ptr<ShardStore> store,
                   ShardStore::Open(options));
  GraphStoreServerOptions server_options;
  server_options.num_threads = 2;
  if (listen_address.empty()) {
    ASSIGN_OR_RETURN(int port, PickFreeLoopbackPort());
    server_options.listen_address = absl::StrCat("127.0.0.1:", port);
  } else {
    server_options.listen_address = listen_address;
  }
  server_options.embedding_snapshot_dir = embedding_dir;
  return GraphStoreServer::Start(
      std::shared_ptr<const ShardStore>(std::move(store)), server_options);
}

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(
    const std::string& partition_dir, bool in_memory,
    const std::string& embedding_dir) {
  std::unique_ptr<TestCluster> cluster(new TestCluster());
  cluster->partition_dir_ = partition_dir;
  cluster->embedding_dir_ = embedding_dir;
  cluster->in_memory_ = in_memory;
  ASSIGN_OR_RETURN(cluster->manifest_, ReadPartitionManifest(partition_dir));
  for (int p = 0; p < cluster->manifest_.num_parts; ++p) {
    ASSIGN_OR_RETURN(
        auto server,
        ServePart(partition_dir, p, in_memory, "",
                  embedding_dir.empty()
                      ? ""
                      : JoinPath(embedding_dir, absl::StrCat("part-", p))));
    cluster->servers_.push_back(std::move(server));
  }
  return cluster;
}

absl::Status TestCluster::Restart(int part) {
  std::unique_ptr<GraphStoreServer>& server = servers_[part];
  const std::string address = server->address();
  server->Shutdown(absl::Now());
  server.reset();
  ASSIGN_OR_RETURN(
      server,
      ServePart(partition_dir_, part, in_memory_, address,
                embedding_dir_.empty()
                    ? ""
                    : JoinPath(embedding_dir_, absl::StrCat("part-", part))));
  return absl::OkStatus();
}

TestCluster::~TestCluster() {
  for (auto& server : servers_) server->Shutdown(absl::Now());
}

std::vector<std::string> TestCluster::addresses() const {
  std::vector<std::string> out;
  for (const auto& server : servers_) out.push_back(server->address());
  return out;
}

std::string FeaturePathName(FeaturePath path) {
  switch (path) {
    case FeaturePath::kSharedMemory:
      return "SharedMemory";
    case FeaturePath::kFeaturePort:
      return "FeaturePort";
    case FeaturePath::kGrpc:
      return "Grpc";
  }
  return "";
}

void UseFeaturePath(FeaturePath path, RemoteGraphSourceOptions* options) {
  options->use_shared_memory = path == FeaturePath::kSharedMemory;
  options->client.use_feature_port = path != FeaturePath::kGrpc;
}

absl::StatusOr<PartitionedRmat> MakePartitionedRmat(const std::string& dir,
                                                    int64_t num_nodes,
                                                    int parts, uint64_t seed) {
  PartitionedRmat out;
  ASSIGN_OR_RETURN(out.dataset, MakeRmatDataset(JoinPath(dir, "rmat"),
                                                num_nodes, 12, 8, seed));
  PartitionOptions options;
  options.num_parts = parts;
  const std::string partition_dir = JoinPath(dir, "part");
  RETURN_IF_ERROR(
      PartitionInMemory(out.dataset, partition_dir, options).status());
  ASSIGN_OR_RETURN(out.graph,
                   testing::RelabelForPartition(out.dataset, partition_dir));
  ASSIGN_OR_RETURN(out.local, InMemoryGraphSource::Create(out.graph.arrays()));
  return out;
}

}  // namespace shardgnn::testing
