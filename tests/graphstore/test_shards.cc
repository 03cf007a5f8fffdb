#include "tests/graphstore/test_shards.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "common/status.h"
#include "graphstore/shard_writer.h"

namespace shardgnn::testing {

TestGraph MakeTestGraph(int64_t num_nodes, int64_t feature_dim, uint64_t seed) {
  TestGraph g;
  g.num_nodes = num_nodes;
  g.feature_dim = feature_dim;
  g.num_classes = 7;
  uint64_t state = seed;
  g.offsets.push_back(0);
  for (NodeId v = 0; v < num_nodes; ++v) {
    int64_t degree = v == 0   ? 0
                     : v == 1 ? num_nodes / 2
                              : static_cast<int64_t>(UniformBelow(&state, 41));
    std::vector<NodeId> adj;
    for (int64_t j = 0; j < degree; ++j) {
      adj.push_back(static_cast<NodeId>(
          UniformBelow(&state, static_cast<uint64_t>(num_nodes))));
    }
    std::sort(adj.begin(), adj.end());
    adj.erase(std::unique(adj.begin(), adj.end()), adj.end());
    g.neighbors.insert(g.neighbors.end(), adj.begin(), adj.end());
    g.offsets.push_back(static_cast<int64_t>(g.neighbors.size()));
    for (int64_t d = 0; d < feature_dim; ++d) {
      g.features.push_back(
          static_cast<float>(SplitMix64(&state) >> 40) / (1 << 20) - 3.0f);
    }
    g.labels.push_back(v % 11 == 5 ? -1 : v % g.num_classes);
    if (v % 3 == 0) g.train.push_back(v);
    if (v % 5 == 1) g.valid.push_back(v);
  }
  return g;
}

absl::StatusOr<std::vector<ShardMeta>> WriteTestShards(const TestGraph& graph,
                                                       int num_parts,
                                                       const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<ShardMeta> metas;
  for (int p = 0; p < num_parts; ++p) {
    ShardMeta meta;
    meta.part_id = p;
    meta.num_parts = num_parts;
    meta.node_start = graph.num_nodes * p / num_parts;
    meta.node_end = graph.num_nodes * (p + 1) / num_parts;
    meta.num_nodes_total = graph.num_nodes;
    meta.feature_dim = graph.feature_dim;
    meta.num_classes = graph.num_classes;
    meta.partition_id = "test-partition";
    ASSIGN_OR_RETURN(auto writer,
                     ShardWriter::Create(absl::StrCat(dir, "/part-", p), meta));
    for (NodeId v = meta.node_start; v < meta.node_end; ++v) {
      auto adj = graph.Neighbors(v);
      RETURN_IF_ERROR(writer->AddNode(v, adj.data(), adj.size(), graph.Row(v),
                                      graph.labels[v]));
    }
    for (const auto& [name, all] :
         {std::pair{"train", &graph.train}, std::pair{"valid", &graph.valid}}) {
      std::vector<NodeId> owned;
      for (NodeId v : *all) {
        if (v >= meta.node_start && v < meta.node_end) owned.push_back(v);
      }
      RETURN_IF_ERROR(writer->AddSplit(name, owned));
    }
    ASSIGN_OR_RETURN(ShardMeta done, writer->Finish());
    metas.push_back(done);
  }
  return metas;
}

}  // namespace shardgnn::testing
