// Tests for GenerateDataset (datasets/generators.cc).
#include "datasets/generators.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

GeneratorOptions Small(GraphKind kind) {
  GeneratorOptions o;
  o.kind = kind;
  o.num_nodes = 3000;
  o.avg_degree = 10;
  o.feature_dim = 16;
  o.num_classes = 5;
  o.seed = 42;
  return o;
}

double Homophily(const Dataset& d) {
  int64_t same = 0;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      same += d.labels[d.indices[i]] == d.labels[v];
    }
  }
  return static_cast<double>(same) / static_cast<double>(d.num_edges());
}

// Accuracy of nearest-class-mean classification of `x` (N x F), class means
// taken from the data itself: a stand-in for "how much can a model learn".
double NearestMeanAccuracy(const std::vector<double>& x, const Dataset& d) {
  const int64_t n = d.num_nodes(), f = d.feature_dim();
  const int64_t c = d.manifest.num_classes;
  std::vector<double> mean(c * f, 0.0);
  std::vector<int64_t> count(c, 0);
  for (int64_t v = 0; v < n; ++v) {
    ++count[d.labels[v]];
    for (int64_t k = 0; k < f; ++k) mean[d.labels[v] * f + k] += x[v * f + k];
  }
  for (int64_t k = 0; k < c * f; ++k) mean[k] /= count[k / f];
  int64_t correct = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t best = 0;
    double best_dist = 1e300;
    for (int64_t k = 0; k < c; ++k) {
      double dist = 0;
      for (int64_t j = 0; j < f; ++j) {
        double diff = x[v * f + j] - mean[k * f + j];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = k;
    }
    correct += best == d.labels[v];
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

// Accuracy on `eval` of the nearest class centroid of `x` (rows of `dim`
// values by node ID), the centroids taken from the `train` nodes.
double CentroidAccuracy(const std::vector<double>& x, int64_t dim,
                        const Dataset& d, const std::vector<NodeId>& train,
                        const std::vector<NodeId>& eval) {
  const int64_t c = d.manifest.num_classes;
  std::vector<double> mean(c * dim, 0.0);
  std::vector<int64_t> count(c, 0);
  for (NodeId v : train) {
    ++count[d.labels[v]];
    for (int64_t k = 0; k < dim; ++k) {
      mean[d.labels[v] * dim + k] += x[v * dim + k];
    }
  }
  for (int64_t k = 0; k < c * dim; ++k)
    mean[k] /= std::max<int64_t>(1, count[k / dim]);
  int64_t correct = 0;
  for (NodeId v : eval) {
    int64_t best = 0;
    double best_dist = 1e300;
    for (int64_t k = 0; k < c; ++k) {
      double dist = 0;
      for (int64_t j = 0; j < dim; ++j) {
        double diff = x[v * dim + j] - mean[k * dim + j];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = k;
    }
    correct += best == d.labels[v];
  }
  return static_cast<double>(correct) / static_cast<double>(eval.size());
}

// Rows of `dim` values for the first `rows` nodes: each the mean over the
// node's CSR entries of relations `relations` (all, if empty) of
// `value(entry, k)`.
template <typename Value>
std::vector<double> MeanOverEntries(const Dataset& d, int64_t rows, int64_t dim,
                                    const std::set<int32_t>& relations,
                                    const Value& value) {
  std::vector<double> out(rows * dim, 0.0);
  for (int64_t v = 0; v < rows; ++v) {
    int64_t count = 0;
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      if (!relations.empty() && relations.count(d.edge_types[i]) == 0) continue;
      ++count;
      for (int64_t k = 0; k < dim; ++k) out[v * dim + k] += value(i, k);
    }
    for (int64_t k = 0; k < dim; ++k)
      out[v * dim + k] /= std::max<int64_t>(1, count);
  }
  return out;
}

class GeneratorsTest : public ::testing::Test {
 protected:
  void SetUp() override { Progress::SetQuietByDefault(true); }
  testing::TempDir tmp_;
};

TEST_F(GeneratorsTest, SbmShapeAndInvariants) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       GenerateDataset(Small(GraphKind::kSbm), tmp_.Sub("g")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("g")));
  EXPECT_EQ(d.num_nodes(), 3000);
  EXPECT_EQ(s.input_edges, 15000);
  // About 10 stored edges per node; duplicates are rare at this density.
  EXPECT_NEAR(d.num_edges(), 30000, 300);
  EXPECT_EQ(d.num_edges(), 2 * (15000 - s.duplicate_edges_dropped));
  EXPECT_EQ(s.self_loops_dropped, 0);
  EXPECT_EQ(d.feature_dim(), 16);
  EXPECT_EQ(d.manifest.num_classes, 5);
  EXPECT_FALSE(d.manifest.directed);
  EXPECT_EQ(d.splits["train"].size(), 300u);
  EXPECT_EQ(d.splits["valid"].size(), 300u);
  EXPECT_EQ(d.splits["test"].size(), 2400u);
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      NodeId u = d.indices[i];
      ASSERT_NE(u, v) << "self-loop";
      // Symmetric: v appears in u's row.
      ASSERT_TRUE(std::binary_search(d.indices.begin() + d.indptr[u],
                                     d.indices.begin() + d.indptr[u + 1], v));
    }
  }
}

TEST_F(GeneratorsTest, SbmHomophilyNearTarget) {
  for (double h : {0.8, 0.3}) {
    GeneratorOptions o = Small(GraphKind::kSbm);
    o.homophily = h;
    std::string out = tmp_.Sub(absl::StrCat("h", h));
    ASSERT_OK(GenerateDataset(o, out));
    ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(out));
    EXPECT_NEAR(Homophily(d), h, 0.02);
  }
}

TEST_F(GeneratorsTest, SbmNeighborhoodsAreFarMoreInformativeThanNodes) {
  ASSERT_OK(GenerateDataset(Small(GraphKind::kSbm), tmp_.Sub("g")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("g")));
  const int64_t n = d.num_nodes(), f = d.feature_dim();
  std::vector<double> own(d.features.begin(), d.features.end());
  // One round of mean aggregation over the node and its neighbors, as a
  // GCN/GraphSAGE layer does.
  std::vector<double> agg(n * f, 0.0);
  for (int64_t v = 0; v < n; ++v) {
    int64_t deg = d.indptr[v + 1] - d.indptr[v];
    for (int64_t k = 0; k < f; ++k) agg[v * f + k] = own[v * f + k];
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      for (int64_t k = 0; k < f; ++k)
        agg[v * f + k] += own[d.indices[i] * f + k];
    }
    for (int64_t k = 0; k < f; ++k) agg[v * f + k] /= deg + 1;
  }
  double mlp = NearestMeanAccuracy(own, d);
  double gnn = NearestMeanAccuracy(agg, d);
  EXPECT_GT(mlp, 0.3);  // Better than chance (0.2): features carry signal...
  EXPECT_LT(mlp, 0.75);
  EXPECT_GT(gnn, mlp + 0.2);  // ...and neighborhoods carry much more.
}

TEST_F(GeneratorsTest, RmatIsSkewedAndLearnable) {
  GeneratorOptions o = Small(GraphKind::kRmat);
  o.num_nodes = 4096;
  o.avg_degree = 16;
  ASSERT_OK_AND_ASSIGN(BuildSummary s, GenerateDataset(o, tmp_.Sub("r")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("r")));
  EXPECT_EQ(d.num_nodes(), 4096);
  double avg = static_cast<double>(d.num_edges()) / 4096.0;
  EXPECT_GT(avg, 8.0);  // R-MAT repeats edges; most survive.
  EXPECT_GT(static_cast<double>(s.max_degree), 10 * avg);
  EXPECT_GT(s.duplicate_edges_dropped, 0);
  EXPECT_EQ(s.self_loops_dropped, 0);
  EXPECT_NEAR(Homophily(d), 0.8, 0.05);
}

TEST_F(GeneratorsTest, DeterministicForSeedAndThreadCount) {
  for (GraphKind kind : {GraphKind::kSbm, GraphKind::kRmat}) {
    GeneratorOptions a = Small(kind);
    GeneratorOptions b = Small(kind);
    b.threads = 1;
    GeneratorOptions c = Small(kind);
    c.seed = 43;
    std::string name = GraphKindName(kind);
    ASSERT_OK(GenerateDataset(a, tmp_.Sub(name + "a")));
    ASSERT_OK(GenerateDataset(b, tmp_.Sub(name + "b")));
    ASSERT_OK(GenerateDataset(c, tmp_.Sub(name + "c")));
    ASSERT_OK_AND_ASSIGN(DatasetManifest ma,
                         ReadDatasetManifest(tmp_.Sub(name + "a")));
    ASSERT_OK_AND_ASSIGN(DatasetManifest mb,
                         ReadDatasetManifest(tmp_.Sub(name + "b")));
    ASSERT_OK_AND_ASSIGN(DatasetManifest mc,
                         ReadDatasetManifest(tmp_.Sub(name + "c")));
    EXPECT_EQ(ma.files, mb.files) << name;  // Checksums of every file.
    EXPECT_NE(ma.files.at(kIndicesFile), mc.files.at(kIndicesFile)) << name;
    EXPECT_NE(ma.files.at(kFeaturesFile), mc.files.at(kFeaturesFile)) << name;
  }
}

GeneratorOptions SmallHetero() {
  GeneratorOptions o = Small(GraphKind::kHeteroSbm);
  o.num_nodes = 4000;
  return o;
}

TEST_F(GeneratorsTest, HeteroSbmTypesRelationsLabelsAndSplits) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       GenerateDataset(SmallHetero(), tmp_.Sub("h")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("h")));
  const DatasetManifest& m = d.manifest;
  EXPECT_EQ(m.name, "hetero-sbm");
  EXPECT_FALSE(m.directed);
  EXPECT_EQ(m.num_nodes, 4000);
  EXPECT_EQ(m.num_classes, 5);
  EXPECT_EQ(s.self_loops_dropped, 0);
  ASSERT_EQ(m.node_types.size(), 4u);
  std::vector<std::tuple<std::string, int64_t, int64_t>> types;
  for (const NodeType& t : m.node_types) {
    types.emplace_back(t.name, t.count, t.feature_dim);
  }
  EXPECT_THAT(types, ElementsAre(std::make_tuple("paper", 2000, 16),
                                 std::make_tuple("author", 1400, 8),
                                 std::make_tuple("venue", 200, 0),
                                 std::make_tuple("field", 400, 0)));
  std::vector<std::string> keys;
  for (const EdgeType& t : m.edge_types) {
    keys.push_back(EdgeTypeKey(t));
    EXPECT_EQ(t.feature_dim, 0) << EdgeTypeKey(t);
  }
  EXPECT_THAT(
      keys,
      ElementsAre("author/writes/paper", "paper/cites/paper",
                  "paper/published_in/venue", "paper/has_topic/field",
                  "paper/rev_writes/author", "paper/rev_cites/paper",
                  "venue/rev_published_in/paper", "field/rev_has_topic/paper"));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(m.edge_types[r].count, m.edge_types[r + 4].count) << keys[r];
  }
  // avg_degree 10: 20000 edges drawn, 2000 published_in and 4000 has_topic
  // (a few repeated topics dropped), the rest split between cites and writes.
  EXPECT_EQ(s.input_edges, 2 * 20000);
  EXPECT_EQ(m.edge_types[2].count, 2000);
  EXPECT_NEAR(m.edge_types[3].count, 4000, 400);
  EXPECT_NEAR(m.edge_types[0].count, 7000, 200);
  EXPECT_NEAR(m.edge_types[1].count, 7000, 200);
  EXPECT_EQ(m.target_types, std::vector<std::string>{"paper"});
  ASSERT_EQ(d.type_features.size(), 4u);
  EXPECT_EQ(d.type_features[0].size(), 2000u * 16);
  EXPECT_EQ(d.type_features[1].size(), 1400u * 8);
  EXPECT_THAT(d.type_features[2], IsEmpty());
  EXPECT_THAT(d.type_features[3], IsEmpty());
  EXPECT_TRUE(d.edge_features.empty());
  for (int64_t v = 0; v < 4000; ++v) {
    if (v < 2000) {
      ASSERT_GE(d.labels[v], 0);
      ASSERT_LT(d.labels[v], 5);
    } else {
      ASSERT_EQ(d.labels[v], -1) << v;
    }
  }
  // Every paper is in one venue; few nodes receive no messages (authors
  // drawn for no paper: their number of papers is about Poisson(5)).
  EXPECT_LT(s.nodes_without_neighbors, 40);
  for (int64_t v = 0; v < 2000; ++v) {
    int64_t venues = 0;
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      venues += d.edge_types[i] == 6;
    }
    ASSERT_EQ(venues, 1) << v;
  }
  EXPECT_EQ(d.splits["train"].size(), 200u);
  EXPECT_EQ(d.splits["valid"].size(), 200u);
  EXPECT_EQ(d.splits["test"].size(), 1600u);
  for (const auto& [name, nodes] : d.splits) {
    for (NodeId v : nodes) ASSERT_LT(v, 2000) << name;
  }
}

TEST_F(GeneratorsTest, HeteroSbmIsDeterministicForSeedAndThreadCount) {
  GeneratorOptions a = SmallHetero();
  a.edge_feature_dim = 4;
  GeneratorOptions b = a;
  b.threads = 1;
  GeneratorOptions c = a;
  c.seed = 43;
  ASSERT_OK(GenerateDataset(a, tmp_.Sub("a")));
  ASSERT_OK(GenerateDataset(b, tmp_.Sub("b")));
  ASSERT_OK(GenerateDataset(c, tmp_.Sub("c")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest ma, ReadDatasetManifest(tmp_.Sub("a")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest mb, ReadDatasetManifest(tmp_.Sub("b")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest mc, ReadDatasetManifest(tmp_.Sub("c")));
  EXPECT_EQ(ma.files, mb.files);
  for (const auto& [file, checksum] : ma.files) {
    if (file == "manifest.json") continue;
    EXPECT_NE(checksum, mc.files.at(file)) << file;
  }
}

// Labels show in the typed neighborhood as designed: a paper's venue and the
// papers it cites share its class at the homophily rate, and the mean over
// its citations beats its own features.
TEST_F(GeneratorsTest, HeteroSbmNeighborhoodsCarryTheClass) {
  ASSERT_OK(GenerateDataset(SmallHetero(), tmp_.Sub("h")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("h")));
  const int64_t papers = 2000, f = 16, c = 5;
  const int cites = d.manifest.FindEdgeType("paper", "cites", "paper");
  const int rev_cites = d.manifest.FindEdgeType("paper", "rev_cites", "paper");
  const int in_venue =
      d.manifest.FindEdgeType("venue", "rev_published_in", "paper");
  int64_t same = 0, total = 0;
  for (int64_t v = 0; v < papers; ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      if (d.edge_types[i] != cites) continue;
      ++total;
      same += d.labels[d.indices[i]] == d.labels[v];
    }
  }
  EXPECT_NEAR(static_cast<double>(same) / total, 0.8, 0.03);
  // A venue's class, hidden, is the most common class of its other papers.
  const int64_t venue0 = d.manifest.NodeTypeOffset(2);
  std::vector<int64_t> venue_of(papers), votes(200 * c, 0);
  for (int64_t v = 0; v < papers; ++v) {
    for (int64_t i = d.indptr[v]; i < d.indptr[v + 1]; ++i) {
      if (d.edge_types[i] == in_venue) venue_of[v] = d.indices[i] - venue0;
    }
    ++votes[venue_of[v] * c + d.labels[v]];
  }
  int64_t agree = 0;
  for (int64_t v = 0; v < papers; ++v) {
    int64_t* row = &votes[venue_of[v] * c];
    --row[d.labels[v]];
    agree += std::max_element(row, row + c) - row == d.labels[v];
    ++row[d.labels[v]];
  }
  EXPECT_NEAR(static_cast<double>(agree) / papers, 0.8, 0.05);

  const std::vector<double> own(d.type_features[0].begin(),
                                d.type_features[0].end());
  const std::vector<double> cited = MeanOverEntries(
      d, papers, f, {cites, rev_cites},
      [&](int64_t i, int64_t k) { return own[d.indices[i] * f + k]; });
  std::vector<double> agg(papers * f);
  for (int64_t k = 0; k < papers * f; ++k) agg[k] = (own[k] + cited[k]) / 2;
  const double mlp =
      CentroidAccuracy(own, f, d, d.splits["train"], d.splits["test"]);
  const double gnn =
      CentroidAccuracy(agg, f, d, d.splits["train"], d.splits["test"]);
  EXPECT_GT(mlp, 0.3);
  EXPECT_LT(mlp, 0.75);
  EXPECT_GT(gnn, mlp + 0.1);
}

TEST_F(GeneratorsTest, EdgeFeaturesHaveTheirShapeOnEveryKind) {
  for (GraphKind kind : {GraphKind::kSbm, GraphKind::kRmat}) {
    GeneratorOptions o = Small(kind);
    o.edge_feature_dim = 6;
    const std::string out = tmp_.Sub(GraphKindName(kind));
    ASSERT_OK(GenerateDataset(o, out));
    ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(out));
    EXPECT_EQ(d.manifest.edge_feature_dim, 6);
    EXPECT_EQ(d.manifest.files.count(kEdgeFeaturesFile), 1u);
    ASSERT_EQ(d.edge_features.size(), 1u);
    EXPECT_EQ(d.edge_features[0].size(),
              static_cast<size_t>(d.num_edges()) * 6);
  }
  // The default stays without.
  ASSERT_OK(GenerateDataset(Small(GraphKind::kSbm), tmp_.Sub("none")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest m,
                       ReadDatasetManifest(tmp_.Sub("none")));
  EXPECT_EQ(m.edge_feature_dim, 0);
  EXPECT_EQ(m.files.count(kEdgeFeaturesFile), 0u);
}

// With edge features only they tell a node's class: the mean over its
// incoming edges is far better than chance, its own features and its
// neighbors' are at chance, and so are the edges' classes.
TEST_F(GeneratorsTest, SbmEdgeFeaturesAloneRevealTheClass) {
  GeneratorOptions o = Small(GraphKind::kSbm);
  o.edge_feature_dim = 8;
  ASSERT_OK(GenerateDataset(o, tmp_.Sub("e")));
  GeneratorOptions one_thread = o;
  one_thread.threads = 1;
  ASSERT_OK(GenerateDataset(one_thread, tmp_.Sub("e1")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest m1, ReadDatasetManifest(tmp_.Sub("e1")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("e")));
  EXPECT_EQ(d.manifest.files, m1.files);
  EXPECT_NEAR(Homophily(d), 0.2, 0.03);  // Chance for 5 classes.
  const int64_t n = d.num_nodes(), f = 16, e = 8;
  const std::vector<double> own(d.features.begin(), d.features.end());
  const std::vector<double> neighbors = MeanOverEntries(
      d, n, f, {},
      [&](int64_t i, int64_t k) { return own[d.indices[i] * f + k]; });
  const std::vector<double> edges = MeanOverEntries(
      d, n, e, {},
      [&](int64_t i, int64_t k) { return d.edge_features[0][i * e + k]; });
  const std::vector<NodeId>& train = d.splits["train"];
  const std::vector<NodeId>& test = d.splits["test"];
  EXPECT_LT(CentroidAccuracy(own, f, d, train, test), 0.3);
  EXPECT_LT(CentroidAccuracy(neighbors, f, d, train, test), 0.3);
  EXPECT_GT(CentroidAccuracy(edges, e, d, train, test), 0.5);
}

TEST_F(GeneratorsTest, HeteroSbmEdgeFeaturesOnCitationsRevealTheClass) {
  GeneratorOptions o = SmallHetero();
  o.edge_feature_dim = 8;
  ASSERT_OK(GenerateDataset(o, tmp_.Sub("h")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("h")));
  const DatasetManifest& m = d.manifest;
  EXPECT_EQ(m.edge_feature_dim, 0);
  const int cites = m.FindEdgeType("paper", "cites", "paper");
  const int rev_cites = m.FindEdgeType("paper", "rev_cites", "paper");
  ASSERT_EQ(d.edge_features.size(), m.edge_types.size());
  for (size_t r = 0; r < m.edge_types.size(); ++r) {
    const bool with =
        static_cast<int>(r) == cites || static_cast<int>(r) == rev_cites;
    EXPECT_EQ(m.edge_types[r].feature_dim, with ? 8 : 0) << r;
    EXPECT_EQ(d.edge_features[r].size(),
              with ? static_cast<size_t>(m.edge_types[r].count) * 8 : 0u)
        << r;
  }
  // Row k of a relation's edge features is its k-th entry in CSR order.
  std::vector<int64_t> row_of(d.num_edges(), -1);
  std::vector<int64_t> seen(m.edge_types.size(), 0);
  for (int64_t i = 0; i < d.num_edges(); ++i)
    row_of[i] = seen[d.edge_types[i]]++;
  const int64_t papers = 2000, f = 16, e = 8;
  const std::vector<double> edges = MeanOverEntries(
      d, papers, e, {cites, rev_cites}, [&](int64_t i, int64_t k) {
        return d.edge_features[d.edge_types[i]][row_of[i] * e + k];
      });
  const std::vector<double> own(d.type_features[0].begin(),
                                d.type_features[0].end());
  const std::vector<NodeId>& train = d.splits["train"];
  const std::vector<NodeId>& test = d.splits["test"];
  EXPECT_LT(CentroidAccuracy(own, f, d, train, test), 0.3);
  EXPECT_GT(CentroidAccuracy(edges, e, d, train, test), 0.5);
}

TEST_F(GeneratorsTest, RejectsBadOptionsAndLeavesNothing) {
  GeneratorOptions o = Small(GraphKind::kSbm);
  o.num_nodes = 0;
  EXPECT_THAT(std::string(GenerateDataset(o, tmp_.Sub("x")).status().message()),
              HasSubstr("--nodes"));
  o = Small(GraphKind::kSbm);
  o.avg_degree = 5000;
  EXPECT_FALSE(GenerateDataset(o, tmp_.Sub("x")).ok());
  o = Small(GraphKind::kSbm);
  o.split = {0.5, 0.5, 0.5};
  EXPECT_THAT(std::string(GenerateDataset(o, tmp_.Sub("x")).status().message()),
              HasSubstr("--split"));
  o = Small(GraphKind::kSbm);
  o.edge_feature_dim = -1;
  EXPECT_THAT(std::string(GenerateDataset(o, tmp_.Sub("x")).status().message()),
              HasSubstr("--edge-features"));
  o = Small(GraphKind::kHeteroSbm);
  o.num_nodes = 30;  // 10 authors, 5 venues, 5 fields leave 10 papers.
  EXPECT_OK(GenerateDataset(o, tmp_.Sub("tiny")));
  std::filesystem::remove_all(tmp_.Sub("tiny"));
  o.num_nodes = 20;  // 7 authors, 5 venues, 5 fields leave 3 papers.
  EXPECT_THAT(std::string(GenerateDataset(o, tmp_.Sub("x")).status().message()),
              HasSubstr("hetero-sbm needs more --nodes"));
  EXPECT_THAT(testing::Entries(tmp_.path()), IsEmpty());
}

// A graph no machine holds is refused at once, naming what it needs.
TEST_F(GeneratorsTest, RefusesAGraphLargerThanTheMachineAtOnce) {
  GeneratorOptions o = Small(GraphKind::kSbm);
  o.num_nodes = int64_t{1} << 40;  // 88 TB of edge lists.
  absl::StatusOr<BuildSummary> s = GenerateDataset(o, tmp_.Sub("x"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("of memory for its edge lists; this machine has"));
  EXPECT_THAT(testing::Entries(tmp_.path()), IsEmpty());
}

TEST_F(GeneratorsTest, OutputExists) {
  std::filesystem::create_directory(tmp_.Sub("x"));
  for (GraphKind kind : {GraphKind::kSbm, GraphKind::kHeteroSbm}) {
    absl::StatusOr<BuildSummary> s =
        GenerateDataset(Small(kind), tmp_.Sub("x"));
    EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(testing::Entries(tmp_.Sub("x")), IsEmpty());
  }
}

TEST(GraphKindTest, Parses) {
  for (GraphKind kind :
       {GraphKind::kSbm, GraphKind::kRmat, GraphKind::kHeteroSbm}) {
    ASSERT_OK_AND_ASSIGN(GraphKind k, ParseGraphKind(GraphKindName(kind)));
    EXPECT_EQ(k, kind);
  }
  EXPECT_STREQ(GraphKindName(GraphKind::kHeteroSbm), "hetero-sbm");
  EXPECT_FALSE(ParseGraphKind("er").ok());
}

}  // namespace
}  // namespace shardgnn
