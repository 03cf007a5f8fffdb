// A small random graph held in memory for sampler and trainer tests.
#ifndef SHARDGNN_TESTS_SAMPLER_TEST_GRAPH_H_
#define SHARDGNN_TESTS_SAMPLER_TEST_GRAPH_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sampler/graph_source.h"

namespace shardgnn::testing {

// Random directed graph with degrees in [0, max_degree], sorted distinct
// neighbors, features feature[v][j] = v * 1000 + j (so a row identifies its
// node) and labels v % 7.
struct TestGraph {
  std::vector<int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<float> features;
  std::vector<int64_t> labels;
  int64_t feature_dim = 3;

  TestGraph(int64_t num_nodes, int max_degree, uint32_t seed) {
    std::mt19937_64 rng(seed);
    for (int64_t v = 0; v < num_nodes; ++v) {
      int degree = static_cast<int>(rng() % (max_degree + 1));
      std::vector<NodeId> row;
      for (int i = 0; i < degree; ++i)
        row.push_back(static_cast<NodeId>(rng() % num_nodes));
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
      indices.insert(indices.end(), row.begin(), row.end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
      for (int64_t j = 0; j < feature_dim; ++j)
        features.push_back(static_cast<float>(v * 1000 + j));
      labels.push_back(v % 7);
    }
  }

  GraphArrays arrays() const {
    GraphArrays a;
    a.indptr = indptr;
    a.indices = indices;
    a.features = features;
    a.feature_dim = feature_dim;
    a.labels = labels;
    return a;
  }
  bool HasEdge(NodeId v, NodeId u) const {
    return std::binary_search(indices.begin() + indptr[v],
                              indices.begin() + indptr[v + 1], u);
  }
  int64_t Degree(NodeId v) const { return indptr[v + 1] - indptr[v]; }
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_SAMPLER_TEST_GRAPH_H_
