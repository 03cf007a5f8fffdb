// Test-only checks of a written partition against its source dataset.
#ifndef SHARDGNN_TESTS_PARTITION_PARTITION_CHECKS_H_
#define SHARDGNN_TESTS_PARTITION_PARTITION_CHECKS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/npy.h"
#include "datasets/dataset.h"
#include "partition/partition_book.h"
#include "tests/partition/shard_reader.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn::testing {

// Entries of `dir` (a directory that should hold only what the test made).
inline std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Checks every invariant of a written partition against its source graph.
inline void CheckPartition(const Dataset& d, const std::string& dir,
                           const PartitionManifest& returned) {
  const int64_t n = d.num_nodes();
  ASSERT_OK_AND_ASSIGN(PartitionManifest m, ReadPartitionManifest(dir));
  EXPECT_EQ(m.ToJson(), returned.ToJson());
  ASSERT_OK_AND_ASSIGN(PartitionBook book, PartitionBook::FromManifest(m));
  ASSERT_EQ(book.num_nodes(), n);
  ASSERT_OK_AND_ASSIGN(NpyArray<int64_t> orig,
                       ReadNpy<int64_t>(JoinPath(dir, kOrigIdsFile), 1));
  ASSERT_EQ(orig.shape[0], n);
  // orig_ids is a permutation, ascending within each part.
  std::vector<NodeId> new_of(n, -1);
  for (NodeId id = 0; id < n; ++id) {
    ASSERT_GE(orig.data[id], 0);
    ASSERT_LT(orig.data[id], n);
    ASSERT_EQ(new_of[orig.data[id]], -1) << "original node owned twice";
    new_of[orig.data[id]] = id;
    int p = book.Owner(id);
    if (id > book.Range(p).start) {
      EXPECT_LT(orig.data[id - 1], orig.data[id]);
    }
  }
  int64_t edges = 0;
  std::map<std::string, std::vector<NodeId>> splits_seen;
  for (int p = 0; p < m.num_parts; ++p) {
    ASSERT_OK_AND_ASSIGN(ShardContents shard,
                         ReadShard(JoinPath(dir, m.parts[p].dir)));
    NodeRange range = book.Range(p);
    EXPECT_EQ(shard.meta.part_id, p);
    EXPECT_EQ(shard.meta.node_start, range.start);
    EXPECT_EQ(shard.meta.node_end, range.end);
    EXPECT_EQ(shard.meta.partition_id, m.partition_id);
    EXPECT_EQ(shard.meta.content_checksum, m.parts[p].content_checksum);
    ASSERT_EQ(static_cast<int64_t>(shard.adj.size()), range.size());
    ASSERT_EQ(static_cast<int64_t>(shard.feat.size()), range.size());
    ASSERT_EQ(static_cast<int64_t>(shard.label.size()), range.size());
    for (NodeId id = range.start; id < range.end; ++id) {
      const NodeId u = orig.data[id];
      std::vector<NodeId> expected;
      for (int64_t e = d.indptr[u]; e < d.indptr[u + 1]; ++e) {
        expected.push_back(new_of[d.indices[e]]);
      }
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(shard.adj.at(id), expected) << "node " << id;
      edges += static_cast<int64_t>(expected.size());
      const std::vector<float>& row = shard.feat.at(id);
      ASSERT_EQ(static_cast<int64_t>(row.size()), d.feature_dim());
      EXPECT_EQ(std::memcmp(row.data(), &d.features[u * d.feature_dim()],
                            row.size() * sizeof(float)),
                0);
      EXPECT_EQ(shard.label.at(id), d.labels[u]);
    }
    for (const auto& [name, ids] : shard.splits) {
      EXPECT_EQ(static_cast<int64_t>(ids.size()),
                m.parts[p].split_counts.at(name));
      for (NodeId id : ids) {
        EXPECT_EQ(book.Owner(id), p);
        splits_seen[name].push_back(orig.data[id]);
      }
    }
  }
  EXPECT_EQ(edges, d.num_edges());
  for (auto& [name, ids] : splits_seen) std::sort(ids.begin(), ids.end());
  EXPECT_EQ(splits_seen, d.splits);
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_PARTITION_PARTITION_CHECKS_H_
