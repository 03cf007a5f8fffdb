// Typed (heterogeneous) graphs across storage servers (issue 50): the
// partitioner keeps every relation's edges, once each, with each part's nodes
// grouped by type; servers sample per relation and serve per-type features
// and multi-label rows; and a distributed typed minibatch equals the
// in-process one over the same relabelled graph, for a fixed seed, with the
// shards in memory and on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/npy.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/generators.h"
#include "graphstore/shard_store.h"
#include "partition/partition.h"
#include "sampler/graph_schema.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using testing::TempDir;
using testing::TestCluster;

// A hetero-sbm graph (paper, author, venue, field; reverse relations): its
// partition into `parts`, and the relabelled in-process reference.
struct TypedSetup {
  Dataset dataset;
  PartitionManifest manifest;
  testing::RelabelledGraph graph;
  std::unique_ptr<InMemoryGraphSource> local;
};

void MakeTypedSetup(const TempDir& tmp, int parts, TypedSetup* out) {
  Progress::SetQuietByDefault(true);
  GeneratorOptions g;
  g.kind = GraphKind::kHeteroSbm;
  g.num_nodes = 1200;
  g.avg_degree = 8;
  g.feature_dim = 6;
  g.num_classes = 4;
  g.seed = 3;
  ASSERT_OK(GenerateDataset(g, tmp.Sub("hsbm")).status());
  ASSERT_OK_AND_ASSIGN(out->dataset, LoadDataset(tmp.Sub("hsbm")));
  ASSERT_TRUE(out->dataset.manifest.typed());
  PartitionOptions options;
  options.num_parts = parts;
  ASSERT_OK_AND_ASSIGN(
      out->manifest, PartitionInMemory(out->dataset, tmp.Sub("part"), options));
  ASSERT_OK_AND_ASSIGN(
      out->graph, testing::RelabelForPartition(out->dataset, tmp.Sub("part")));
  ASSERT_OK_AND_ASSIGN(out->local,
                       InMemoryGraphSource::Create(out->graph.arrays()));
}

TEST(TypedPartitionTest,
     EveryRelationsEdgesAreInTheShardsOnceAndTypesAreGrouped) {
  TempDir tmp;
  TypedSetup s;
  ASSERT_NO_FATAL_FAILURE(MakeTypedSetup(tmp, 3, &s));
  const Dataset& d = s.dataset;
  const PartitionManifest& m = s.manifest;
  ASSERT_TRUE(m.typed());
  ASSERT_EQ(m.node_types.size(), d.manifest.node_types.size());
  // The partition book round trip: partition.json read back names the
  // same types and ranges.
  ASSERT_OK_AND_ASSIGN(PartitionManifest read,
                       ReadPartitionManifest(tmp.Sub("part")));
  ASSERT_EQ(read.ToJson(), m.ToJson());
  std::vector<std::vector<NodeId>> starts;
  for (const PartInfo& part : m.parts) starts.push_back(part.type_starts);
  ASSERT_OK_AND_ASSIGN(
      GraphSchema schema,
      GraphSchema::FromParts(m.node_types, m.edge_types, starts));
  // Each new ID's type is its original node's, and local indices enumerate
  // each type's nodes once.
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> orig,
                       ReadNpy<int64_t>(tmp.Sub("part") + "/orig_ids.npy", 1));
  for (NodeId v = 0; v < d.num_nodes(); ++v) {
    EXPECT_EQ(schema.TypeOf(v), d.manifest.NodeTypeOf(orig.data[v])) << v;
  }
  std::vector<std::vector<bool>> seen_local(m.node_types.size());
  for (size_t t = 0; t < m.node_types.size(); ++t)
    seen_local[t].assign(static_cast<size_t>(m.node_types[t].count), false);
  for (NodeId v = 0; v < d.num_nodes(); ++v) {
    const int t = schema.TypeOf(v);
    ASSERT_GE(t, 0);
    const int64_t local = schema.LocalIndex(v);
    ASSERT_GE(local, 0);
    ASSERT_LT(local, m.node_types[t].count);
    EXPECT_FALSE(seen_local[t][local]) << "node " << v;
    seen_local[t][local] = true;
  }
  // Each part's nodes: grouped by type, within the part's range.
  for (int p = 0; p < m.num_parts; ++p) {
    EXPECT_EQ(m.parts[p].type_starts.front(), m.node_ranges[p]);
    EXPECT_EQ(m.parts[p].type_starts.back(), m.node_ranges[p + 1]);
  }
  // Every CSR entry of every relation, in original IDs, from the shards:
  // all neighbors of every owned node (fanout -1 for every relation).
  std::map<std::tuple<int32_t, NodeId, NodeId>, int> from_shards;
  int64_t total = 0;
  const std::vector<int> all(m.edge_types.size(), -1);
  for (int p = 0; p < m.num_parts; ++p) {
    ShardStoreOptions options;
    options.path = tmp.Sub("part") + "/" + PartDirName(p);
    ASSERT_OK_AND_ASSIGN(auto store, ShardStore::Open(options));
    ASSERT_TRUE(store->Meta().typed());
    EXPECT_EQ(store->Meta().type_starts, m.parts[p].type_starts);
    std::vector<NodeId> ids;
    for (NodeId v = m.node_ranges[p]; v < m.node_ranges[p + 1]; ++v)
      ids.push_back(v);
    SampledNeighbors got;
    ASSERT_OK(store->SampleTypedNeighbors(ids, all, false, 1, int64_t{1} << 30,
                                          &got));
    size_t at = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t k = 0; k < got.counts[i]; ++k, ++at) {
        const int32_t r = got.relations[at];
        // Source and destination of the relation's types.
        EXPECT_EQ(schema.TypeOf(got.neighbors[at]), schema.src_type[r]);
        EXPECT_EQ(schema.TypeOf(ids[i]), schema.dst_type[r]);
        ++from_shards[{r, ids[i], got.neighbors[at]}];
        ++total;
      }
    }
  }
  EXPECT_EQ(total, d.num_edges());
  // The in-process relabelled graph lists the same entries: compare both ways
  // through it (its rows are the dataset's, relabelled by orig_ids.npy).
  const testing::RelabelledGraph& g = s.graph;
  int64_t matched = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
      auto it = from_shards.find({g.edge_types[e], v, g.indices[e]});
      ASSERT_NE(it, from_shards.end()) << "entry " << e << " of node " << v;
      EXPECT_EQ(it->second, 1);
      ++matched;
    }
  }
  EXPECT_EQ(matched, total);
  // Per-relation counts agree with the dataset's.
  std::vector<int64_t> per_relation(m.edge_types.size(), 0);
  for (const auto& [key, count] : from_shards)
    per_relation[std::get<0>(key)] += count;
  for (size_t r = 0; r < m.edge_types.size(); ++r)
    EXPECT_EQ(per_relation[r], d.manifest.edge_types[r].count) << r;
  // Balance of each node type is reported; `info` shows each type's nodes
  // per part and every relation's edges.
  const std::string described = DescribePartition(m);
  for (const NodeType& t : m.node_types) {
    EXPECT_EQ(m.balance.count("nodes_" + t.name), 1u) << t.name;
    EXPECT_THAT(described, ::testing::ContainsRegex(
                               absl::StrCat(t.name, " +", t.count, " ")))
        << described;
  }
  for (const EdgeType& r : m.edge_types) {
    EXPECT_THAT(described,
                ::testing::ContainsRegex(absl::StrCat(
                    "relation ", EdgeTypeKey(r), " +", r.count, " edges")))
        << described;
  }
}

class TypedDistributedTest : public ::testing::TestWithParam<bool> {};

TEST_P(TypedDistributedTest, MinibatchesEqualTheInProcessOnes) {
  TempDir tmp;
  TypedSetup s;
  ASSERT_NO_FATAL_FAILURE(MakeTypedSetup(tmp, 2, &s));
  ASSERT_OK_AND_ASSIGN(auto cluster,
                       TestCluster::Start(tmp.Sub("part"), GetParam()));
  RemoteGraphSourceOptions remote_options;
  remote_options.connect_timeout = absl::Seconds(10);
  ASSERT_OK_AND_ASSIGN(auto remote, RemoteGraphSource::Connect(
                                        cluster->addresses(), remote_options));
  const GraphSchema* schema = remote->schema();
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->range_starts, s.graph.schema->range_starts);
  EXPECT_EQ(schema->range_locals, s.graph.schema->range_locals);
  EXPECT_EQ(remote->label_columns(), 1);

  SamplerOptions options;
  options.fanouts = {5, 3};
  // Per relation: a different fanout for each, one of them left out.
  for (int h = 0; h < 2; ++h) {
    std::vector<int> fanouts;
    for (int r = 0; r < schema->num_relations(); ++r)
      fanouts.push_back(r == 1 ? 0 : 2 + (r + h) % 4);
    options.relation_fanouts.push_back(fanouts);
  }
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> orig,
                       ReadNpy<int64_t>(tmp.Sub("part") + "/orig_ids.npy", 1));
  ASSERT_OK_AND_ASSIGN(auto near,
                       NeighborSampler::Create(s.local.get(), options));
  ASSERT_OK_AND_ASSIGN(auto far,
                       NeighborSampler::Create(remote.get(), options));
  ASSERT_OK_AND_ASSIGN(std::vector<NodeId> train, remote->FetchSplit("train"));
  ASSERT_GE(train.size(), 48u);
  int64_t relation_edges = 0;
  for (int b = 0; b < 4; ++b) {
    std::vector<NodeId> seeds(train.begin() + b * 12,
                              train.begin() + b * 12 + 12);
    ASSERT_OK_AND_ASSIGN(MiniBatch want, near->Sample(seeds, 100 + b));
    ASSERT_OK_AND_ASSIGN(MiniBatch got, far->Sample(seeds, 100 + b));
    EXPECT_EQ(got.seeds, want.seeds);
    EXPECT_TRUE(std::equal(got.input_nodes.begin(), got.input_nodes.end(),
                           want.input_nodes.begin(), want.input_nodes.end()));
    ASSERT_EQ(got.blocks.size(), want.blocks.size());
    for (size_t l = 0; l < got.blocks.size(); ++l) {
      const Block& x = got.blocks[l];
      const Block& y = want.blocks[l];
      EXPECT_EQ(x.num_src, y.num_src);
      EXPECT_EQ(x.num_dst, y.num_dst);
      EXPECT_TRUE(std::equal(x.indptr.begin(), x.indptr.end(), y.indptr.begin(),
                             y.indptr.end()));
      EXPECT_TRUE(std::equal(x.indices.begin(), x.indices.end(),
                             y.indices.begin(), y.indices.end()));
      EXPECT_EQ(x.relations, y.relations);
      for (int32_t r : x.relations) EXPECT_NE(r, 1);
      relation_edges += x.num_edges();
    }
    EXPECT_EQ(got.input_types, want.input_types);
    EXPECT_EQ(got.type_inputs, want.type_inputs);
    EXPECT_EQ(got.type_features, want.type_features);
    EXPECT_EQ(got.labels, want.labels);
    // The rows are the dataset's rows of the original nodes.
    for (size_t t = 0; t < got.type_inputs.size(); ++t) {
      const int64_t width = schema->node_types[t].feature_dim;
      for (size_t k = 0; k < got.type_inputs[t].size(); ++k) {
        const NodeId o = orig.data[got.input_nodes[got.type_inputs[t][k]]];
        const int64_t local =
            o - s.dataset.manifest.NodeTypeOffset(static_cast<int>(t));
        for (int64_t c = 0; c < width; ++c) {
          ASSERT_EQ(got.type_features[t][k * width + c],
                    s.dataset.type_features[t][local * width + c]);
        }
      }
    }
  }
  EXPECT_GT(relation_edges, 0);
}

INSTANTIATE_TEST_SUITE_P(MemoryAndDisk, TypedDistributedTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "InMemory" : "OnDisk";
                         });

}  // namespace
}  // namespace shardgnn
