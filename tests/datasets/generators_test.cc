// Tests for GenerateDataset (datasets/generators.cc).
#include "datasets/generators.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/file_util.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

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
  absl::StatusOr<BuildSummary> s =
      GenerateDataset(Small(GraphKind::kSbm), tmp_.Sub("x"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(testing::Entries(tmp_.Sub("x")), IsEmpty());
}

TEST(GraphKindTest, Parses) {
  ASSERT_OK_AND_ASSIGN(GraphKind k, ParseGraphKind("rmat"));
  EXPECT_EQ(k, GraphKind::kRmat);
  EXPECT_FALSE(ParseGraphKind("er").ok());
}

}  // namespace
}  // namespace shardgnn
