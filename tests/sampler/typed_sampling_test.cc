// Sampling a typed (heterogeneous) graph in memory (GraphSource::
// SampleTypedNeighbors, NeighborSampler with relation fanouts): every sampled
// edge is an edge of its relation, each (node, relation) keeps min(degree,
// fanout) neighbors, the input nodes' types and per-type features are the
// dataset's, and a seed fixes the batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "common/sampling.h"
#include "datasets/dataset.h"
#include "datasets/typed_graph.h"
#include "sampler/graph_source.h"
#include "sampler/neighbor_sampler.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

// paper (40, 3 features), author (30, 2 features), venue (5, none): papers
// cite papers, authors write papers, papers appear in venues; reverse
// relations added, so every type receives messages. Seeded.
Dataset MakeTypedDataset() {
  std::vector<NodeType> types = {
      {"paper", 40, 3}, {"author", 30, 2}, {"venue", 5, 0}};
  uint64_t state = 7;
  auto next = [&](int64_t n) {
    return static_cast<int64_t>(SplitMix64(&state) % static_cast<uint64_t>(n));
  };
  auto relation = [](const char* src, const char* name, const char* dst) {
    RelationEdges r;
    r.src_type = src;
    r.relation = name;
    r.dst_type = dst;
    return r;
  };
  RelationEdges cites = relation("paper", "cites", "paper");
  RelationEdges writes = relation("author", "writes", "paper");
  RelationEdges in = relation("paper", "in", "venue");
  for (int i = 0; i < 200; ++i) {
    cites.src.push_back(next(40));
    cites.dst.push_back(next(40));
  }
  for (int i = 0; i < 120; ++i) {
    writes.src.push_back(next(30));
    writes.dst.push_back(next(40));
  }
  for (int p = 0; p < 40; ++p) {
    in.src.push_back(p);
    in.dst.push_back(p % 5);
  }
  Dataset d;
  BuildSummary summary;
  TypedGraphOptions options;
  options.add_reverse = true;
  EXPECT_OK(BuildTypedGraph(types, {cites, writes, in}, options, &d, &summary));
  d.manifest.name = "typed";
  d.type_features.resize(3);
  for (int t = 0; t < 2; ++t) {
    const NodeType& type = d.manifest.node_types[t];
    for (int64_t i = 0; i < type.count * type.feature_dim; ++i)
      d.type_features[t].push_back(static_cast<float>(t * 1000 + i));
  }
  d.labels.assign(d.manifest.num_nodes, -1);
  for (int p = 0; p < 40; ++p) d.labels[p] = p % 3;
  d.manifest.num_classes = 3;
  d.manifest.target_types = {"paper"};
  EXPECT_OK(ValidateDataset(d));
  return d;
}

class TypedSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dataset_ = MakeTypedDataset();
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::FromDataset(dataset_));
    ASSERT_NE(source_->schema(), nullptr);
    for (int64_t v = 0; v < dataset_.num_nodes(); ++v) {
      for (int64_t e = dataset_.indptr[v]; e < dataset_.indptr[v + 1]; ++e) {
        edges_.insert({dataset_.indices[e], v, dataset_.edge_types[e]});
        ++degree_[{v, dataset_.edge_types[e]}];
      }
    }
  }

  Dataset dataset_;
  std::unique_ptr<InMemoryGraphSource> source_;
  std::set<std::tuple<NodeId, NodeId, int32_t>> edges_;  // (u, v, relation)
  std::map<std::pair<NodeId, int32_t>, int64_t> degree_;
};

TEST_F(TypedSamplingTest, BlocksHoldEdgesOfTheirRelationsUpToEachFanout) {
  const int relations = source_->schema()->num_relations();
  ASSERT_EQ(relations, 6);
  SamplerOptions options;
  options.fanouts = {3, 2};
  // Hop 0: 3 of every relation but rev_in (venue -> paper), which takes 1.
  const int rev_in = dataset_.manifest.FindEdgeType("venue", "rev_in", "paper");
  ASSERT_GE(rev_in, 0);
  options.relation_fanouts = {std::vector<int>(relations, 3),
                              std::vector<int>(relations, 2)};
  options.relation_fanouts[0][rev_in] = 1;
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source_.get(), options));
  const std::vector<NodeId> seeds = {0, 5, 9, 17, 33};
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample(seeds, 42));
  ASSERT_EQ(batch.blocks.size(), 2u);
  for (int l = 0; l < 2; ++l) {
    const Block& b = batch.blocks[l];
    const int hop = 1 - l;
    ASSERT_EQ(b.relations.size(), static_cast<size_t>(b.num_edges()));
    for (int64_t i = 0; i < b.num_dst; ++i) {
      const NodeId v = batch.input_nodes[i];
      std::map<int32_t, int64_t> per_relation;
      for (int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
        const NodeId u = batch.input_nodes[b.indices[e]];
        const int32_t r = b.relations[e];
        EXPECT_EQ(edges_.count({u, v, r}), 1u)
            << u << " -> " << v << " is no edge of relation " << r;
        ++per_relation[r];
      }
      for (int32_t r = 0; r < relations; ++r) {
        auto it = degree_.find({v, r});
        const int64_t degree = it == degree_.end() ? 0 : it->second;
        const int64_t fanout = options.relation_fanouts[hop][r];
        EXPECT_EQ(per_relation[r], std::min(degree, fanout))
            << "node " << v << ", relation " << r << ", hop " << hop;
      }
    }
  }
  // Types and features of the inputs.
  ASSERT_EQ(batch.input_types.size(), batch.input_nodes.size());
  ASSERT_EQ(batch.type_inputs.size(), 3u);
  ASSERT_EQ(batch.type_features.size(), 3u);
  const GraphSchema& schema = *source_->schema();
  size_t covered = 0;
  for (int t = 0; t < 3; ++t) {
    const int64_t dim = schema.node_types[t].feature_dim;
    const std::vector<int64_t>& inputs = batch.type_inputs[t];
    covered += inputs.size();
    ASSERT_EQ(batch.type_features[t].size(), inputs.size() * dim);
    for (size_t k = 0; k < inputs.size(); ++k) {
      const NodeId node = batch.input_nodes[inputs[k]];
      EXPECT_EQ(batch.input_types[inputs[k]], t);
      EXPECT_EQ(schema.TypeOf(node), t);
      const int64_t local = node - dataset_.manifest.NodeTypeOffset(t);
      for (int64_t c = 0; c < dim; ++c) {
        EXPECT_EQ(batch.type_features[t][k * dim + c],
                  dataset_.type_features[t][local * dim + c]);
      }
    }
  }
  EXPECT_EQ(covered, batch.input_nodes.size());
  EXPECT_GT(batch.type_inputs[1].size(), 0u) << "authors reached";
  EXPECT_GT(batch.type_inputs[2].size(), 0u) << "venues reached";
  EXPECT_TRUE(batch.features.empty());
  EXPECT_EQ(batch.labels, (std::vector<int64_t>{0, 2, 0, 2, 0}));

  // The same seed gives the same batch; another seed another.
  ASSERT_OK_AND_ASSIGN(MiniBatch again, sampler->Sample(seeds, 42));
  EXPECT_EQ(
      std::vector<int64_t>(again.input_nodes.begin(), again.input_nodes.end()),
      std::vector<int64_t>(batch.input_nodes.begin(), batch.input_nodes.end()));
  EXPECT_EQ(again.blocks[0].relations, batch.blocks[0].relations);
  ASSERT_OK_AND_ASSIGN(MiniBatch other, sampler->Sample(seeds, 43));
  EXPECT_NE(
      std::vector<int64_t>(other.input_nodes.begin(), other.input_nodes.end()),
      std::vector<int64_t>(batch.input_nodes.begin(), batch.input_nodes.end()));
}

TEST_F(TypedSamplingTest, OneRelationsSampleIsTheUntypedRulesOnItsSlice) {
  // Node v's neighbors of relation r are SampleNeighbors over r's run of v's
  // row with MixSeed(seed, r): what a storage server must reproduce.
  const int relations = source_->schema()->num_relations();
  std::vector<int> fanouts(relations, 2);
  const std::vector<NodeId> nodes = {3, 12, 40, 71};
  SampledNeighbors out;
  ASSERT_OK(source_->SampleTypedNeighbors(nodes, fanouts, false, 99, &out));
  size_t at = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    std::vector<NodeId> expected;
    std::vector<int32_t> expected_relations;
    for (int32_t r = 0; r < relations; ++r) {
      std::vector<NodeId> slice;
      for (int64_t e = dataset_.indptr[v]; e < dataset_.indptr[v + 1]; ++e) {
        if (dataset_.edge_types[e] == r) slice.push_back(dataset_.indices[e]);
      }
      Int64Buffer picked;
      SampleNeighbors(slice.data(), static_cast<int64_t>(slice.size()), 2,
                      false, MixSeed(99, static_cast<uint64_t>(r)), v, &picked);
      expected.insert(expected.end(), picked.begin(), picked.end());
      expected_relations.insert(expected_relations.end(), picked.size(), r);
    }
    ASSERT_EQ(out.counts[i], static_cast<int64_t>(expected.size())) << v;
    EXPECT_EQ(std::vector<NodeId>(out.neighbors.begin() + at,
                                  out.neighbors.begin() + at + expected.size()),
              expected);
    EXPECT_EQ(
        std::vector<int32_t>(out.relations.begin() + at,
                             out.relations.begin() + at + expected.size()),
        expected_relations);
    at += expected.size();
  }
}

// "--fanouts 'rev_in=1,cites=4,2;3'": named relations by name or key, a bare
// count for the rest, 0 when there is none; unknown or ambiguous names are
// refused, listing the relations.
TEST_F(TypedSamplingTest, RelationFanoutsAreParsedAgainstTheSchema) {
  const GraphSchema& schema = *source_->schema();
  const int rev_in = schema.FindRelation("rev_in");
  const int cites = schema.FindRelation("paper/cites/paper");
  ASSERT_GE(rev_in, 0);
  ASSERT_EQ(schema.FindRelation("cites"), cites);
  ASSERT_OK_AND_ASSIGN(
      auto layers,
      ParseRelationFanouts("rev_in=1, cites=-1,2;writes=3", schema));
  ASSERT_EQ(layers.size(), 2u);
  for (int r = 0; r < schema.num_relations(); ++r) {
    EXPECT_EQ(layers[0][r], r == rev_in ? 1 : (r == cites ? -1 : 2)) << r;
    EXPECT_EQ(layers[1][r], r == schema.FindRelation("writes") ? 3 : 0) << r;
  }
  EXPECT_THAT(ParseRelationFanouts("cited=2", schema).status(),
              testing::StatusIs(
                  absl::StatusCode::kInvalidArgument,
                  ::testing::AllOf(::testing::HasSubstr("no relation 'cited'"),
                                   ::testing::HasSubstr("paper/cites/paper"))));
  EXPECT_THAT(ParseRelationFanouts("cites=x", schema).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("'cites=x'")));
  EXPECT_THAT(ParseRelationFanouts("2,3", schema).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("two bare fanouts")));
  // A sampler with them samples only what they name in the second hop.
  SamplerOptions options;
  options.fanouts = {1, 1};
  options.relation_fanouts = layers;
  ASSERT_OK_AND_ASSIGN(auto sampler,
                       NeighborSampler::Create(source_.get(), options));
  ASSERT_OK_AND_ASSIGN(MiniBatch batch, sampler->Sample({1, 2, 3}, 8));
  for (int32_t r : batch.blocks[0].relations) {
    EXPECT_EQ(r, schema.FindRelation("writes"));
  }
}

TEST_F(TypedSamplingTest, BadRelationFanoutsAreRefused) {
  SamplerOptions options;
  options.fanouts = {3, 2};
  options.relation_fanouts = {{1, 2}};
  EXPECT_THAT(NeighborSampler::Create(source_.get(), options).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("relation fanouts for 1 "
                                                     "hops")));
  options.relation_fanouts = {std::vector<int>(5, 1), std::vector<int>(5, 1)};
  EXPECT_THAT(NeighborSampler::Create(source_.get(), options).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::HasSubstr("5 relation fanouts for "
                                                     "6 relations")));
}

}  // namespace
}  // namespace shardgnn
