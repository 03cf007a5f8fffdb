// A small clustered graph built in memory for the partition tests.
#ifndef SHARDGNN_TESTS_PARTITION_GRAPH_FIXTURE_H_
#define SHARDGNN_TESTS_PARTITION_GRAPH_FIXTURE_H_

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "common/sampling.h"
#include "datasets/dataset.h"

namespace shardgnn::testing {

// `clusters` dense clusters of `per_cluster` nodes each (cluster of v is
// v % clusters, so clusters are interleaved in ID order), undirected, about
// `degree` edges per node of which 1 in 10 crosses clusters. Feature rows are
// seeded noise, labels the cluster mod 5, and 30% / 20% / 50% of the nodes
// (by a hash) are train / valid / test.
inline Dataset ClusteredGraph(int clusters, int per_cluster, int degree,
                              bool with_train = true, uint64_t seed = 7) {
  const int64_t n = int64_t{clusters} * per_cluster;
  std::vector<std::set<NodeId>> adj(n);
  uint64_t state = seed;
  for (NodeId u = 0; u < n; ++u) {
    for (int i = 0; i < degree / 2; ++i) {
      NodeId v;
      if (UniformBelow(&state, 10) == 0) {
        v = static_cast<NodeId>(UniformBelow(&state, n));
      } else {
        v = static_cast<NodeId>(UniformBelow(&state, per_cluster)) * clusters +
            u % clusters;
      }
      if (v == u) continue;
      adj[u].insert(v);
      adj[v].insert(u);
    }
  }
  Dataset d;
  d.manifest.name = "clustered";
  d.manifest.feature_dim = 4;
  d.manifest.num_classes = 5;
  d.manifest.num_nodes = n;
  d.indptr.push_back(0);
  for (NodeId u = 0; u < n; ++u) {
    d.indices.insert(d.indices.end(), adj[u].begin(), adj[u].end());
    d.indptr.push_back(static_cast<int64_t>(d.indices.size()));
  }
  d.manifest.num_edges = d.num_edges();
  for (int64_t i = 0; i < n * 4; ++i) {
    d.features.push_back(static_cast<float>(SplitMix64(&state) >> 40) / 7.0f);
  }
  for (NodeId u = 0; u < n; ++u) {
    d.labels.push_back(u % 7 == 6 ? -1 : (u % clusters) % 5);
    uint64_t h = MixSeed(seed, static_cast<uint64_t>(u)) % 10;
    const char* split = h < 3 ? "train" : h < 5 ? "valid" : "test";
    if (!with_train && h < 3) continue;
    d.splits[split].push_back(u);
  }
  for (const auto& [name, ids] : d.splits) {
    d.manifest.splits[name] = static_cast<int64_t>(ids.size());
  }
  return d;
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_PARTITION_GRAPH_FIXTURE_H_
