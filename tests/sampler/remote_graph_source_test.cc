#include "sampler/remote_graph_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include "common/progress.h"
#include "common/sampling.h"
#include "partition/partition.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::RelabelledGraph;
using testing::TempDir;
using testing::TestCluster;

constexpr int64_t kNodes = 1500;
constexpr int64_t kDim = 8;

// A generated R-MAT graph partitioned into `parts` parts (METIS) and served by
// one in-process server per part.
class Partitioned {
 public:
  void Build(int parts, bool in_memory, uint64_t partition_seed = 0) {
    Progress::SetQuietByDefault(true);
    ASSERT_OK_AND_ASSIGN(dataset_, testing::MakeRmatDataset(
                                       tmp_.Sub("rmat"), kNodes, 12, kDim, 5));
    ASSERT_OK(Partition(parts, partition_seed, "part"));
    ASSERT_OK_AND_ASSIGN(
        graph_, testing::RelabelForPartition(dataset_, tmp_.Sub("part")));
    ASSERT_OK_AND_ASSIGN(cluster_,
                         TestCluster::Start(tmp_.Sub("part"), in_memory));
  }
  absl::Status Partition(int parts, uint64_t seed, const std::string& name) {
    PartitionOptions options;
    options.num_parts = parts;
    options.seed = seed;
    return PartitionInMemory(dataset_, tmp_.Sub(name), options).status();
  }
  // The cluster's addresses, last part first (not part order).
  std::vector<std::string> Shuffled() const {
    std::vector<std::string> a = cluster_->addresses();
    std::reverse(a.begin(), a.end());
    if (a.size() > 2) std::swap(a[0], a[1]);
    return a;
  }

  TempDir tmp_;
  Dataset dataset_;
  RelabelledGraph graph_;
  std::unique_ptr<TestCluster> cluster_;
};

RemoteGraphSourceOptions FastOptions() {
  RemoteGraphSourceOptions options;
  options.connect_timeout = absl::Seconds(10);
  options.client.call_timeout = absl::Seconds(5);
  return options;
}

// --- Connect: discovery and refusals (4 parts) ------------------------------

class ConnectTest : public ::testing::Test, public Partitioned {
 protected:
  void SetUp() override { Build(4, /*in_memory=*/true); }
};

TEST_F(ConnectTest, DiscoversPartsFromAnyAddressOrder) {
  ASSERT_OK_AND_ASSIGN(auto remote,
                       RemoteGraphSource::Connect(Shuffled(), FastOptions()));
  EXPECT_EQ(remote->num_nodes(), kNodes);
  EXPECT_EQ(remote->feature_dim(), kDim);
  EXPECT_EQ(remote->partition_id(), cluster_->manifest().partition_id);
  EXPECT_EQ(remote->book().node_ranges(), cluster_->manifest().node_ranges);
  for (int p = 0; p < 4; ++p)
    EXPECT_EQ(remote->address(p), cluster_->server(p).address());
}

TEST_F(ConnectTest, RejectsAMissingPart) {
  std::vector<std::string> a = cluster_->addresses();
  a.erase(a.begin() + 2);
  auto remote = RemoteGraphSource::Connect(a, FastOptions());
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(remote.status().message()),
              HasSubstr("no server for part 2"));
}

// A second server of a part is a replica of it (sampler/internal/
// replica_set.h); the same address given twice is not.
TEST_F(ConnectTest, TakesASecondServerOfAPartAsItsReplica) {
  ASSERT_OK_AND_ASSIGN(auto twin,
                       testing::ServePart(tmp_.Sub("part"), 1, false));
  std::vector<std::string> a = cluster_->addresses();
  a.push_back(twin->address());
  ASSERT_OK_AND_ASSIGN(auto remote,
                       RemoteGraphSource::Connect(a, FastOptions()));
  std::vector<internal::ReplicaState> replicas = remote->replicas(1);
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(replicas[0].address, cluster_->server(1).address());
  EXPECT_EQ(replicas[1].address, twin->address());
  EXPECT_EQ(remote->replicas(0).size(), 1u);
  EXPECT_THAT(remote->address(1), HasSubstr(twin->address()));

  a = cluster_->addresses();
  a.push_back(a[0]);
  auto twice = RemoteGraphSource::Connect(a, FastOptions());
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()),
              AllOf(HasSubstr(a[0]), HasSubstr("given twice")));
}

TEST_F(ConnectTest, RejectsAServerOfAnotherPartition) {
  ASSERT_OK(Partition(4, /*seed=*/77, "other"));
  ASSERT_OK_AND_ASSIGN(auto stranger,
                       testing::ServePart(tmp_.Sub("other"), 3, true));
  std::vector<std::string> a = cluster_->addresses();
  a[3] = stranger->address();
  auto mixed = RemoteGraphSource::Connect(a, FastOptions());
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(mixed.status().message()),
              AllOf(HasSubstr(stranger->address()), HasSubstr("partition")));

  // A complete, consistent set that is not the run's partition.
  RemoteGraphSourceOptions options = FastOptions();
  options.expected_partition_id = "not-this-one";
  auto wrong = RemoteGraphSource::Connect(cluster_->addresses(), options);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(std::string(wrong.status().message()),
              AllOf(HasSubstr(cluster_->server(0).address()),
                    HasSubstr("not the run's partition not-this-one")));
  options.expected_partition_id = cluster_->manifest().partition_id;
  EXPECT_OK(RemoteGraphSource::Connect(cluster_->addresses(), options));
}

TEST_F(ConnectTest, NamesAnUnreachableServer) {
  ASSERT_OK_AND_ASSIGN(auto gone,
                       testing::ServePart(tmp_.Sub("part"), 0, true));
  const std::string address = gone->address();
  gone->Shutdown(absl::Now());
  gone.reset();
  RemoteGraphSourceOptions options = FastOptions();
  options.connect_timeout = absl::Milliseconds(500);
  std::vector<std::string> a = cluster_->addresses();
  a[0] = address;
  const absl::Time start = absl::Now();
  auto remote = RemoteGraphSource::Connect(a, options);
  ASSERT_FALSE(remote.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_THAT(std::string(remote.status().message()), HasSubstr(address));
}

// Servers that do not answer: the wait is said while it lasts, naming each
// address and why (nothing listens there), and the error at its end names
// every one and what to check.
TEST_F(ConnectTest, DeadServersAreNamedWhileWaitedForAndAtTheEnd) {
  std::vector<std::string> dead;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto gone,
                         testing::ServePart(tmp_.Sub("part"), i, true));
    dead.push_back(gone->address());
    gone->Shutdown(absl::Now());
  }
  RemoteGraphSourceOptions options = FastOptions();
  options.connect_timeout = absl::Seconds(4);
  ::testing::internal::CaptureStderr();
  auto remote = RemoteGraphSource::Connect(dead, options);
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(remote.ok());
  const std::string error(remote.status().message());
  for (const std::string& address : dead) {
    EXPECT_THAT(said, HasSubstr(address)) << said;
    EXPECT_THAT(error, HasSubstr(address)) << error;
  }
  EXPECT_THAT(said, HasSubstr("waiting")) << said;
  EXPECT_THAT(said, HasSubstr("connection refused")) << said;
  EXPECT_THAT(error, HasSubstr("connection refused")) << error;
  EXPECT_THAT(error, HasSubstr("shardgnn serve")) << error;
}

// --- Data path over 1, 2 and 4 servers, memory and disk mode ----------------

class RemoteSourceTest : public ::testing::TestWithParam<std::tuple<int, bool>>,
                         public Partitioned {
 protected:
  void SetUp() override {
    Build(std::get<0>(GetParam()), std::get<1>(GetParam()));
    ASSERT_OK_AND_ASSIGN(remote_,
                         RemoteGraphSource::Connect(Shuffled(), FastOptions()));
    ASSERT_OK_AND_ASSIGN(local_, InMemoryGraphSource::Create(graph_.arrays()));
  }
  // Every node twice, in a scrambled order (so requests mix all parts).
  std::vector<NodeId> AllNodesScrambled() const {
    std::vector<NodeId> ids;
    for (NodeId v = 0; v < kNodes; ++v) ids.push_back((v * 7919) % kNodes);
    for (NodeId v = kNodes - 1; v >= 0; --v) ids.push_back(v);
    return ids;
  }

  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<InMemoryGraphSource> local_;
};

TEST_P(RemoteSourceTest, SamplesTrueNeighborsExactlyAsInProcess) {
  const std::vector<NodeId> ids = AllNodesScrambled();
  for (int fanout : {1, 5, -1}) {
    for (bool replace : {false, true}) {
      if (fanout < 0 && replace) continue;
      const uint64_t seed = 1000 + fanout;
      SampledNeighbors got, want;
      ASSERT_OK(remote_->SampleNeighbors(ids, fanout, replace, seed, &got));
      ASSERT_OK(local_->SampleNeighbors(ids, fanout, replace, seed, &want));
      EXPECT_EQ(got.counts, want.counts);
      EXPECT_EQ(got.neighbors, want.neighbors);
      ASSERT_EQ(got.counts.size(), ids.size());
      size_t pos = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const NodeId v = ids[i];
        EXPECT_EQ(got.counts[i],
                  SampledCount(graph_.Degree(v), fanout, replace))
            << "node " << v;
        std::set<NodeId> seen;
        for (int64_t j = 0; j < got.counts[i]; ++j, ++pos) {
          const NodeId u = got.neighbors[pos];
          ASSERT_TRUE(graph_.HasEdge(v, u)) << v << " -> " << u;
          if (!replace) {
            EXPECT_TRUE(seen.insert(u).second) << "duplicate " << u;
          }
        }
      }
      EXPECT_EQ(pos, got.neighbors.size());
    }
  }
}

// Memory-mode servers in this process share their feature matrices, so the
// default source maps them; the same rows must come through calls with
// shared memory off, and from disk-mode servers (which share nothing).
TEST_P(RemoteSourceTest, FeaturesAndLabelsAreBitIdentical) {
  const bool in_memory = std::get<1>(GetParam());
  RemoteGraphSourceOptions no_shm = FastOptions();
  no_shm.use_shared_memory = false;
  ASSERT_OK_AND_ASSIGN(auto through_calls,
                       RemoteGraphSource::Connect(Shuffled(), no_shm));
  const std::vector<NodeId> ids = AllNodesScrambled();
  const int64_t bytes = static_cast<int64_t>(ids.size() * kDim * sizeof(float));
  for (RemoteGraphSource* source : {remote_.get(), through_calls.get()}) {
    const bool shared = source == remote_.get() && in_memory;
    for (int p = 0; p < source->book().num_parts(); ++p) {
      EXPECT_EQ(source->reads_shared_memory(p), shared) << "part " << p;
    }
    std::vector<float> rows(ids.size() * kDim, -1.0f);
    ASSERT_OK(source->FetchFeatures(ids, rows.data()));
    std::vector<int64_t> labels(ids.size(), -2);
    ASSERT_OK(source->FetchLabels(ids, labels.data()));
    // Degrees (GCN's normalisation) are the graph's, from the owners.
    std::vector<int64_t> degrees(ids.size(), -2);
    ASSERT_OK(source->FetchDegrees(ids, degrees.data()));
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_EQ(degrees[i], graph_.indptr[ids[i] + 1] - graph_.indptr[ids[i]])
          << "node " << ids[i];
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_EQ(std::memcmp(&rows[i * kDim], &graph_.features[ids[i] * kDim],
                            kDim * sizeof(float)),
                0)
          << "node " << ids[i] << (shared ? " (shared memory)" : " (calls)");
      ASSERT_EQ(labels[i], graph_.labels[ids[i]]) << "node " << ids[i];
    }
    EXPECT_EQ(source->stats().feature_bytes, shared ? 0 : bytes);
    EXPECT_EQ(source->stats().shared_feature_bytes, shared ? bytes : 0);

    // FetchFeaturesInto: node i's row lands at row `at[i]` of a larger
    // matrix (a permutation with gaps); rows not named stay untouched.
    const size_t n = ids.size();
    std::vector<size_t> at(n);
    for (size_t i = 0; i < n; ++i) at[i] = 2 * ((i * 7919) % n) + 1;
    std::vector<float> matrix(2 * n * kDim, -7.0f);
    ASSERT_OK(source->FetchFeaturesInto(ids, at, matrix.data()));
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(
          std::memcmp(&matrix[at[i] * kDim], &graph_.features[ids[i] * kDim],
                      kDim * sizeof(float)),
          0)
          << "node " << ids[i];
      ASSERT_EQ(matrix[2 * ((i * 7919) % n) * kDim], -7.0f);
    }
    EXPECT_FALSE(source->FetchFeaturesInto(ids, {1, 2}, matrix.data()).ok());
  }
}

TEST_P(RemoteSourceTest, RejectsAnIdOutsideTheGraph) {
  std::vector<float> row(kDim);
  SampledNeighbors out;
  absl::Status s = remote_->SampleNeighbors({kNodes}, 3, false, 1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 1500"));
  EXPECT_FALSE(remote_->FetchFeatures({-1}, row.data()).ok());
}

INSTANTIATE_TEST_SUITE_P(Servers, RemoteSourceTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) +
                                  "Servers" +
                                  (std::get<1>(info.param) ? "Memory" : "Disk");
                         });

// --- Uniformity through the remote path --------------------------------------

// Upper tail of chi-square with k degrees of freedom at about p = 1e-4
// (Wilson-Hilferty).
double ChiSquareCritical(double k) {
  const double z = 3.719;
  const double t = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * t * t * t;
}

class UniformityTest : public ::testing::Test, public Partitioned {
 protected:
  void SetUp() override { Build(2, /*in_memory=*/false); }
};

TEST_F(UniformityTest, HubNeighborsAreSampledUniformly) {
  ASSERT_OK_AND_ASSIGN(auto remote,
                       RemoteGraphSource::Connect(Shuffled(), FastOptions()));
  NodeId hub = 0;
  for (NodeId v = 1; v < kNodes; ++v)
    if (graph_.Degree(v) > graph_.Degree(hub)) hub = v;
  const int64_t degree = graph_.Degree(hub);
  ASSERT_GE(degree, 60) << "the R-MAT fixture should have a hub";
  for (bool replace : {false, true}) {
    const int fanout = 10;
    const int trials = static_cast<int>(degree * 20 / fanout) + 1;
    std::vector<int64_t> counts(static_cast<size_t>(degree), 0);
    // One call per seed: a node's sample depends only on (seed, node).
    SampledNeighbors out;
    for (int t = 0; t < trials; ++t) {
      ASSERT_OK(remote->SampleNeighbors({hub}, fanout, replace,
                                        MixSeed(replace, t), &out));
      ASSERT_EQ(out.counts[0], fanout);
      for (NodeId u : out.neighbors) {
        auto it = std::lower_bound(
            graph_.indices.begin() + graph_.indptr[hub],
            graph_.indices.begin() + graph_.indptr[hub + 1], u);
        ++counts[static_cast<size_t>(it - graph_.indices.begin() -
                                     graph_.indptr[hub])];
      }
    }
    const double expected = static_cast<double>(trials) * fanout / degree;
    double chi2 = 0;
    for (int64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
    EXPECT_LT(chi2, ChiSquareCritical(static_cast<double>(degree - 1)))
        << "replace=" << replace << " degree " << degree << " trials "
        << trials;
  }
}

}  // namespace
}  // namespace shardgnn
