// Tests for WriteCsr (datasets/internal/csr_builder.cc).
#include "datasets/internal/csr_builder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/npy.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::datasets_internal {
namespace {

struct Csr {
  std::vector<int64_t> indptr;
  std::vector<NodeId> indices;
};

Csr Build(const testing::TempDir& tmp, const std::string& name, int64_t n,
          std::vector<NodeId> src, std::vector<NodeId> dst,
          const CsrOptions& options, CsrResult* result) {
  std::filesystem::create_directory(tmp.Sub(name));
  auto r = WriteCsr(n, std::move(src), std::move(dst), options, tmp.Sub(name));
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) *result = *r;
  Csr csr;
  csr.indptr = ReadNpy<int64_t>(tmp.Sub(name + "/indptr.npy"), 1)->data;
  csr.indices = ReadNpy<NodeId>(tmp.Sub(name + "/indices.npy"), 1)->data;
  return csr;
}

class CsrBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override { Progress::SetQuietByDefault(true); }
  testing::TempDir tmp_;
};

TEST_F(CsrBuilderTest, DirectedRowsListSources) {
  CsrOptions options;
  CsrResult r;
  // 0->2, 1->2, 1->2 (duplicate), 2->0, 2->2 (self-loop).
  Csr csr = Build(tmp_, "a", 3, {0, 1, 1, 2, 2}, {2, 2, 2, 0, 2}, options, &r);
  EXPECT_EQ(csr.indptr, (std::vector<int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(csr.indices, (std::vector<NodeId>{2, 0, 1}));
  EXPECT_EQ(r.num_edges, 3);
  EXPECT_EQ(r.duplicate_edges_dropped, 1);
  EXPECT_EQ(r.self_loops_dropped, 1);
  EXPECT_EQ(r.max_degree, 2);
}

TEST_F(CsrBuilderTest, UndirectedCountsReversedRepeatsOnce) {
  CsrOptions options;
  options.undirected = true;
  options.keep_self_loops = true;
  CsrResult r;
  // {0,1} three times in both orientations, self-loop {2,2} twice.
  Csr csr = Build(tmp_, "b", 3, {0, 1, 0, 2, 2}, {1, 0, 1, 2, 2}, options, &r);
  EXPECT_EQ(csr.indptr, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(csr.indices, (std::vector<NodeId>{1, 0, 2}));
  EXPECT_EQ(r.duplicate_edges_dropped, 3);  // 2 repeats of {0,1}, 1 of {2,2}.
  EXPECT_EQ(r.self_loops_dropped, 0);
}

TEST_F(CsrBuilderTest, ThreadCountDoesNotChangeOutput) {
  const int64_t n = 500;
  std::vector<NodeId> src, dst;
  uint64_t state = 1;
  for (int i = 0; i < 20000; ++i) {
    src.push_back(UniformBelow(&state, n));
    dst.push_back(UniformBelow(&state, n / 10));  // Skewed rows.
  }
  CsrOptions one, three;
  one.threads = 1;
  three.threads = 3;
  one.undirected = three.undirected = true;
  CsrResult r1, r3;
  Csr a = Build(tmp_, "one", n, src, dst, one, &r1);
  Csr b = Build(tmp_, "three", n, src, dst, three, &r3);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(r1.duplicate_edges_dropped, r3.duplicate_edges_dropped);
  EXPECT_EQ(r1.self_loops_dropped, r3.self_loops_dropped);
  EXPECT_EQ(a.indices.size() + 2 * r1.duplicate_edges_dropped +
                2 * r1.self_loops_dropped,
            2 * src.size());
}

}  // namespace
}  // namespace shardgnn::datasets_internal
