// A small stochastic-block-model graph held in memory for trainer tests.
#ifndef SHARDGNN_TESTS_TRAINER_SBM_GRAPH_H_
#define SHARDGNN_TESTS_TRAINER_SBM_GRAPH_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sampler/graph_source.h"
#include "trainer/trainer.h"

namespace shardgnn::testing {

// A stochastic block model: `classes` communities, each node linked to ~intra
// nodes of its class and ~inter nodes of other classes (undirected); features
// are a weak one-hot class signal buried in noise, so a model that averages
// over neighbors beats one that looks at a node alone.
struct SbmGraph {
  std::vector<int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<float> features;
  std::vector<int64_t> labels;
  int64_t dim = 16;
  TrainSplits splits;

  SbmGraph(int64_t n, int classes, int intra, int inter, uint32_t seed) {
    std::mt19937_64 rng(seed);
    for (int64_t v = 0; v < n; ++v) labels.push_back(v % classes);
    std::vector<std::vector<NodeId>> adj(n);
    auto link = [&](NodeId a, NodeId b) {
      if (a == b) return;
      adj[a].push_back(b);
      adj[b].push_back(a);
    };
    const int64_t per_class = n / classes;
    for (int64_t v = 0; v < n; ++v) {
      for (int i = 0; i < intra / 2; ++i)
        link(v, (rng() % per_class) * classes + labels[v]);
      for (int i = 0; i < inter / 2; ++i) link(v, rng() % n);
    }
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int64_t v = 0; v < n; ++v) {
      std::sort(adj[v].begin(), adj[v].end());
      adj[v].erase(std::unique(adj[v].begin(), adj[v].end()), adj[v].end());
      indices.insert(indices.end(), adj[v].begin(), adj[v].end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
      for (int64_t j = 0; j < dim; ++j)
        features.push_back(noise(rng) + (j == labels[v] ? 0.7f : 0.0f));
      const int64_t bucket = static_cast<int64_t>(rng() % 10);
      (bucket < 3   ? splits.train
       : bucket < 5 ? splits.valid
                    : splits.test)
          .push_back(v);
    }
  }

  GraphArrays arrays() const {
    GraphArrays a;
    a.indptr = indptr;
    a.indices = indices;
    a.features = features;
    a.feature_dim = dim;
    a.labels = labels;
    return a;
  }
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TRAINER_SBM_GRAPH_H_
