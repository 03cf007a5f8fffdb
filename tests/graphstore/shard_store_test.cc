#include "graphstore/shard_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "common/sampling.h"
#include "graphstore/shard_format.h"
#include "rocksdb/db.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 600;
constexpr int64_t kDim = 12;
constexpr int kParts = 3;

class ShardStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK_AND_ASSIGN(metas_, WriteTestShards(graph_, kParts, dir_.path()));
  }
  absl::StatusOr<std::unique_ptr<ShardStore>> Open(int part) {
    ShardStoreOptions options;
    options.path = dir_.Sub("part-" + std::to_string(part));
    options.in_memory = GetParam();
    options.block_cache_bytes = 1 << 20;
    return ShardStore::Open(options);
  }
  std::vector<NodeId> Owned(const ShardMeta& m) {
    std::vector<NodeId> ids;
    for (NodeId v = m.node_start; v < m.node_end; ++v) ids.push_back(v);
    return ids;
  }

  TempDir dir_;
  TestGraph graph_;
  std::vector<ShardMeta> metas_;
};

TEST_P(ShardStoreTest, MetaMatchesWriter) {
  for (int p = 0; p < kParts; ++p) {
    ASSERT_OK_AND_ASSIGN(auto store, Open(p));
    EXPECT_EQ(store->in_memory(), GetParam());
    EXPECT_EQ(store->Meta().part_id, p);
    EXPECT_EQ(store->Meta().node_start, metas_[p].node_start);
    EXPECT_EQ(store->Meta().node_end, metas_[p].node_end);
    EXPECT_EQ(store->Meta().content_checksum, metas_[p].content_checksum);
    EXPECT_EQ(store->Meta().feature_dim, kDim);
  }
}

TEST_P(ShardStoreTest, FeaturesLabelsDegreesMatchSource) {
  for (int p = 0; p < kParts; ++p) {
    ASSERT_OK_AND_ASSIGN(auto store, Open(p));
    std::vector<NodeId> ids = Owned(metas_[p]);
    std::reverse(ids.begin(), ids.end());  // Any order, with repeats.
    ids.push_back(ids[3]);
    std::vector<float> feats(ids.size() * kDim);
    std::vector<int64_t> labels(ids.size()), degrees(ids.size());
    ASSERT_OK(store->GetFeatures(ids, feats.data()));
    ASSERT_OK(store->GetLabels(ids, labels.data()));
    ASSERT_OK(store->GetDegrees(ids, degrees.data()));
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_EQ(std::memcmp(&feats[i * kDim], graph_.Row(ids[i]), kDim * 4), 0)
          << "node " << ids[i];
      EXPECT_EQ(labels[i], graph_.labels[ids[i]]);
      EXPECT_EQ(degrees[i],
                static_cast<int64_t>(graph_.Neighbors(ids[i]).size()));
    }
  }
}

TEST_P(ShardStoreTest, SamplesAreTrueNeighborsAndReproducible) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(0));
  std::vector<NodeId> ids = Owned(metas_[0]);
  for (int fanout : {-1, 0, 1, 5, 25, 100}) {
    for (bool replace : {false, true}) {
      SampledNeighbors a, b;
      ASSERT_OK(store->SampleNeighbors(ids, fanout, replace, 42, 1 << 30, &a));
      ASSERT_OK(store->SampleNeighbors(ids, fanout, replace, 42, 1 << 30, &b));
      EXPECT_EQ(a.counts, b.counts);
      EXPECT_EQ(a.neighbors, b.neighbors);
      ASSERT_EQ(a.counts.size(), ids.size());
      size_t pos = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        auto adj = graph_.Neighbors(ids[i]);
        int64_t degree = static_cast<int64_t>(adj.size());
        ASSERT_EQ(a.counts[i], SampledCount(degree, fanout, replace))
            << "node " << ids[i] << " fanout " << fanout;
        std::vector<NodeId> got(a.neighbors.begin() + pos,
                                a.neighbors.begin() + pos + a.counts[i]);
        pos += a.counts[i];
        for (NodeId n : got) {
          ASSERT_TRUE(std::binary_search(adj.begin(), adj.end(), n))
              << n << " is not a neighbor of " << ids[i];
        }
        if (!replace) {
          EXPECT_EQ(std::set<NodeId>(got.begin(), got.end()).size(),
                    got.size());
        }
        if (fanout < 0) {
          EXPECT_EQ(got, std::vector<NodeId>(adj.begin(), adj.end()));
        }
        // Exactly the shared kernel's answer for (seed, node).
        Int64Buffer want;
        shardgnn::SampleNeighbors(adj.data(), degree, fanout, replace, 42,
                                  ids[i], &want);
        ASSERT_EQ(got, std::vector<NodeId>(want.begin(), want.end()));
      }
      EXPECT_EQ(pos, a.neighbors.size());
    }
  }
  SampledNeighbors other;
  ASSERT_OK(store->SampleNeighbors({1}, 10, false, 43, 1 << 30, &other));
  SampledNeighbors first;
  ASSERT_OK(store->SampleNeighbors({1}, 10, false, 42, 1 << 30, &first));
  EXPECT_NE(other.neighbors, first.neighbors) << "seed is ignored";
}

TEST_P(ShardStoreTest, SplitsAreOwnedSubsets) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(1));
  ASSERT_OK_AND_ASSIGN(std::vector<NodeId> train, store->GetSplit("train"));
  std::vector<NodeId> want;
  for (NodeId v : graph_.train) {
    if (store->Owns(v)) want.push_back(v);
  }
  EXPECT_EQ(train, want);
  EXPECT_FALSE(train.empty());
  auto missing = store->GetSplit("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST_P(ShardStoreTest, UnownedIdIsInvalidArgumentNamingIt) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(1));
  NodeId bad = metas_[2].node_start + 3;
  std::vector<NodeId> ids = {metas_[1].node_start, bad, -1};
  std::vector<float> feats(ids.size() * kDim);
  absl::Status s = store->GetFeatures(ids, feats.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("node " + std::to_string(bad) + " (position 1)"));
  SampledNeighbors out;
  EXPECT_EQ(store->SampleNeighbors(ids, 5, false, 1, 1 << 30, &out).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<int64_t> labels(ids.size());
  EXPECT_EQ(store->GetLabels(ids, labels.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->GetDegrees(ids, labels.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(ShardStoreTest, OversizedSampleIsResourceExhausted) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(0));
  SampledNeighbors out;
  absl::Status s = store->SampleNeighbors({1, 1, 1}, -1, false, 1, 100, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardStoreTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

TEST(ShardStoreOpenTest, MemoryAndDiskAgree) {
  TempDir dir;
  TestGraph graph = MakeTestGraph(300, 5, 7);
  ASSERT_OK(WriteTestShards(graph, 1, dir.path()));
  ShardStoreOptions options;
  options.path = dir.Sub("part-0");
  ASSERT_OK_AND_ASSIGN(auto disk, ShardStore::Open(options));
  options.in_memory = true;
  ASSERT_OK_AND_ASSIGN(auto mem, ShardStore::Open(options));
  std::vector<NodeId> ids;
  for (NodeId v = 0; v < 300; v += 2) ids.push_back(v);
  SampledNeighbors a, b;
  ASSERT_OK(disk->SampleNeighbors(ids, 7, false, 99, 1 << 30, &a));
  ASSERT_OK(mem->SampleNeighbors(ids, 7, false, 99, 1 << 30, &b));
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.neighbors, b.neighbors);
  std::vector<float> fa(ids.size() * 5), fb(ids.size() * 5);
  ASSERT_OK(disk->GetFeatures(ids, fa.data()));
  ASSERT_OK(mem->GetFeatures(ids, fb.data()));
  EXPECT_EQ(std::memcmp(fa.data(), fb.data(), fa.size() * 4), 0);
}

TEST(ShardStoreOpenTest, MissingDirectoryIsNotFound) {
  TempDir dir;
  ShardStoreOptions options;
  options.path = dir.Sub("part-9");
  auto store = ShardStore::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("part-9"));
}

TEST(ShardStoreOpenTest, DirectoryWithoutDatabaseIsRejected) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("junk"));
  ASSERT_OK(WriteFileAtomic(dir.Sub("junk/hello.txt"), "not a shard"));
  ShardStoreOptions options;
  options.path = dir.Sub("junk");
  auto store = ShardStore::Open(options);
  EXPECT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("not a shard"));
}

TEST(ShardStoreOpenTest, DamagedRowFailsChecksumInMemoryMode) {
  TempDir dir;
  TestGraph graph = MakeTestGraph(100, 4, 3);
  ASSERT_OK(WriteTestShards(graph, 1, dir.path()));
  {  // Overwrite one feature row behind the writer's back.
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}},
        {kShardAdjacencyCf, {}},
        {kShardFeaturesCf, {}},
        {kShardLabelsCf, {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir.Sub("part-0"), cfs,
                                  &handles, &db)
                    .ok());
    float row[4] = {1, 2, 3, 4};
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), handles[2], EncodeNodeKey(17),
                        rocksdb::Slice(reinterpret_cast<char*>(row), 16))
                    .ok());
    for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    delete db;
  }
  ShardStoreOptions options;
  options.path = dir.Sub("part-0");
  options.in_memory = true;
  auto store = ShardStore::Open(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("checksum"));
}

}  // namespace
}  // namespace shardgnn
