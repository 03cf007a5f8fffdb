// Tests for ExternalCsrBuilder (datasets/internal/external_csr.cc): the same
// files and counts as WriteCsr on graphs forced through many runs and merge
// passes.
#include "datasets/internal/external_csr.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/progress.h"
#include "datasets/internal/csr_builder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::datasets_internal {
namespace {

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// A graph with repeats in both orientations, self-loops (some repeated),
// reciprocated pairs and nodes without edges: most edges join nodes 0-40,
// 1 endpoint in 50 is any node.
struct Edges {
  std::vector<NodeId> src, dst;
};
Edges RandomEdges(int64_t n, int64_t m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<NodeId> dense(0, 40);
  std::uniform_int_distribution<NodeId> any(0, n - 1);
  Edges e;
  for (int64_t i = 0; i < m; ++i) {
    NodeId s = rng() % 50 == 0 ? any(rng) : dense(rng);
    NodeId d = rng() % 50 == 0 ? any(rng) : dense(rng);
    if (rng() % 20 == 0) d = s;
    e.src.push_back(s);
    e.dst.push_back(d);
    if (rng() % 8 == 0) {  // The reverse edge too.
      e.src.push_back(d);
      e.dst.push_back(s);
    }
  }
  return e;
}

class ExternalCsrTest
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void SetUp() override { Progress::SetQuietByDefault(true); }

  // Builds in memory into "mem" and out of core into "ext"; checks both
  // files are equal byte for byte and the results field by field.
  void ExpectSame(int64_t n, const Edges& edges, int64_t run_entries,
                  int64_t read_buffer, ExternalCsrStats* stats) {
    CsrOptions csr;
    csr.undirected = std::get<0>(GetParam());
    csr.keep_self_loops = std::get<1>(GetParam());
    std::filesystem::create_directory(tmp_.Sub("mem"));
    std::filesystem::create_directory(tmp_.Sub("ext"));
    ASSERT_OK_AND_ASSIGN(
        CsrResult mem, WriteCsr(n, edges.src, edges.dst, csr, tmp_.Sub("mem")));
    ExternalCsrOptions options;
    options.csr = csr;
    options.run_entries = run_entries;
    options.read_buffer_entries = read_buffer;
    options.temp_dir = tmp_.Sub("ext/.runs");
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ExternalCsrBuilder> builder,
                         ExternalCsrBuilder::Create(n, options));
    for (size_t i = 0; i < edges.src.size(); ++i) {
      ASSERT_OK(builder->Add(edges.src[i], edges.dst[i]));
    }
    EXPECT_EQ(builder->edges_added(), static_cast<int64_t>(edges.src.size()));
    ASSERT_OK_AND_ASSIGN(CsrResult ext, builder->Finish(tmp_.Sub("ext")));
    *stats = builder->stats();
    for (const char* file : {"indptr.npy", "indices.npy"}) {
      EXPECT_EQ(FileBytes(tmp_.Sub(std::string("mem/") + file)),
                FileBytes(tmp_.Sub(std::string("ext/") + file)))
          << file;
    }
    EXPECT_EQ(ext.num_edges, mem.num_edges);
    EXPECT_EQ(ext.duplicate_edges_dropped, mem.duplicate_edges_dropped);
    EXPECT_EQ(ext.self_loops_dropped, mem.self_loops_dropped);
    EXPECT_EQ(ext.max_degree, mem.max_degree);
    EXPECT_EQ(ext.without_neighbors, mem.without_neighbors);
    EXPECT_EQ(ext.nodes_without_neighbors, mem.nodes_without_neighbors);
    EXPECT_EQ(ext.non_loop_edges, mem.non_loop_edges);
    EXPECT_EQ(ext.reciprocated_edges, mem.reciprocated_edges);
    // The temporary directory is gone once Finish succeeded.
    EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("ext/.runs")));
    // The graph exercised what it should: some of every kind of edge.
    EXPECT_GT(mem.duplicate_edges_dropped, 0);
    EXPECT_GT(mem.nodes_without_neighbors, 0);
    EXPECT_GT(mem.reciprocated_edges, 0);
  }

  testing::TempDir tmp_;
};

TEST_P(ExternalCsrTest, ManyRunsAndMergePassesEqualTheInMemoryBuild) {
  Edges edges = RandomEdges(200, 3000, 7);
  ExternalCsrStats stats;
  // Runs of 64 entries read 4 at a time: a fan-in of 8, so 50-100 runs take
  // two intermediate passes before the last.
  ExpectSame(200, edges, 64, 4, &stats);
  EXPECT_GT(stats.runs, 40);
  EXPECT_GE(stats.merge_passes, 3);
  EXPECT_GT(stats.peak_temp_bytes, 0);
}

TEST_P(ExternalCsrTest, OneRunEqualsTheInMemoryBuild) {
  Edges edges = RandomEdges(100, 500, 11);
  ExternalCsrStats stats;
  ExpectSame(100, edges, 1 << 20, 1 << 10, &stats);
  EXPECT_EQ(stats.runs, 1);
  EXPECT_EQ(stats.merge_passes, 1);
}

// Buffers of 2^16 entries and more are sorted in two slices, each its own
// run.
TEST_P(ExternalCsrTest, BuffersSortedInParallelSlicesEqualTheInMemoryBuild) {
  Edges edges = RandomEdges(4000000, 1500000, 13);
  ExternalCsrStats stats;
  ExpectSame(4000000, edges, 1 << 20, 1 << 12, &stats);
  EXPECT_GE(stats.runs, 4);  // Two buffers, each two slices.
}

INSTANTIATE_TEST_SUITE_P(
    DirectionsAndSelfLoops, ExternalCsrTest,
    ::testing::Combine(::testing::Bool(), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& info) {
      return std::string(std::get<0>(info.param) ? "Undirected" : "Directed") +
             (std::get<1>(info.param) ? "KeepSelfLoops" : "DropSelfLoops");
    });

TEST(ExternalCsrBuilderTest, TooLittleMemoryIsRefused) {
  testing::TempDir tmp;
  ExternalCsrOptions options;
  options.memory_bytes = 1000;
  options.temp_dir = tmp.Sub("runs");
  auto builder = ExternalCsrBuilder::Create(10, options);
  ASSERT_FALSE(builder.ok());
  EXPECT_NE(builder.status().message().find("too little"), std::string::npos)
      << builder.status();
}

TEST(ExternalCsrBuilderTest, MoreThanTwoToThe32NodesAreRefused) {
  testing::TempDir tmp;
  ExternalCsrOptions options;
  options.run_entries = 8;
  options.temp_dir = tmp.Sub("runs");
  EXPECT_OK(ExternalCsrBuilder::Create(int64_t{1} << 32, options).status());
  auto builder = ExternalCsrBuilder::Create((int64_t{1} << 32) + 1, options);
  ASSERT_FALSE(builder.ok());
  EXPECT_NE(builder.status().message().find("up to 2^32 nodes"),
            std::string::npos)
      << builder.status();
}

TEST(ExternalCsrBuilderTest, DestroyedUnfinishedLeavesNoTemporaryFiles) {
  Progress::SetQuietByDefault(true);
  testing::TempDir tmp;
  ExternalCsrOptions options;
  options.run_entries = 8;
  options.temp_dir = tmp.Sub("runs");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ExternalCsrBuilder> builder,
                         ExternalCsrBuilder::Create(10, options));
    for (NodeId v = 0; v < 9; ++v) ASSERT_OK(builder->Add(v, v + 1));
    EXPECT_FALSE(std::filesystem::is_empty(tmp.Sub("runs")));
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("runs")));
}

}  // namespace
}  // namespace shardgnn::datasets_internal
