#include "sampler/graph_source.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/sampler/test_graph.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

TEST(GraphSourceTest, RejectsInconsistentArrays) {
  std::vector<int64_t> indptr = {0, 2, 1};
  std::vector<NodeId> indices = {1, 0};
  GraphArrays arrays;
  arrays.indptr = indptr;
  arrays.indices = indices;
  EXPECT_FALSE(InMemoryGraphSource::Create(arrays).ok());
  std::vector<int64_t> good_indptr = {0, 1, 2};
  arrays.indptr = good_indptr;
  ASSERT_OK(InMemoryGraphSource::Create(arrays));
  std::vector<float> features(5);
  arrays.features = features;
  arrays.feature_dim = 2;
  EXPECT_FALSE(InMemoryGraphSource::Create(arrays).ok());
}

TEST(GraphSourceTest, FetchesRowsAndLabelsAndNamesBadIds) {
  testing::TestGraph graph(50, 5, 3);
  ASSERT_OK_AND_ASSIGN(auto source,
                       InMemoryGraphSource::Create(graph.arrays()));
  std::vector<NodeId> nodes = {7, 0, 49, 7};
  std::vector<float> rows(nodes.size() * graph.feature_dim);
  ASSERT_OK(source->FetchFeatures(nodes, rows.data()));
  for (size_t i = 0; i < nodes.size(); ++i)
    EXPECT_EQ(rows[i * graph.feature_dim + 2], nodes[i] * 1000 + 2);
  std::vector<int64_t> labels(nodes.size());
  ASSERT_OK(source->FetchLabels(nodes, labels.data()));
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 0, 0, 0}));
  SampledNeighbors sampled;
  ASSERT_OK(source->SampleNeighbors(nodes, -1, false, 1, &sampled));
  ASSERT_EQ(sampled.counts.size(), nodes.size());
  EXPECT_EQ(sampled.counts[0], graph.Degree(7));
  std::vector<NodeId> bad = {3, 50};
  absl::Status status = source->SampleNeighbors(bad, 2, false, 1, &sampled);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("50"), std::string::npos);
  EXPECT_FALSE(source->FetchFeatures(bad, rows.data()).ok());
}

}  // namespace
}  // namespace shardgnn
