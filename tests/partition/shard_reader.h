// Test-only: reads a whole shard back with RocksDB directly, independent of
// graphstore's ShardStore, so the partition tests check the on-disk format.
#ifndef SHARDGNN_TESTS_PARTITION_SHARD_READER_H_
#define SHARDGNN_TESTS_PARTITION_SHARD_READER_H_

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graphstore/shard_format.h"
#include "rocksdb/db.h"

namespace shardgnn::testing {

struct ShardContents {
  ShardMeta meta;
  std::map<NodeId, std::vector<NodeId>> adj;
  std::map<NodeId, std::vector<float>> feat;
  std::map<NodeId, int64_t> label;
  std::map<std::string, std::vector<NodeId>> splits;
};

inline absl::StatusOr<ShardContents> ReadShard(const std::string& dir) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, {}},
      {kShardAdjacencyCf, {}},
      {kShardFeaturesCf, {}},
      {kShardLabelsCf, {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly({}, dir, cfs, &handles, &raw);
  if (!s.ok()) return absl::InternalError(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  ShardContents out;
  absl::Status status;
  for (size_t i = 0; i < handles.size() && status.ok(); ++i) {
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), handles[i]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string key = it->key().ToString();
      std::string value = it->value().ToString();
      if (i == 0) {
        if (key == kShardMetaKey) {
          auto meta = ShardMeta::FromJson(value);
          if (!meta.ok()) return meta.status();
          out.meta = *meta;
        } else {
          std::vector<NodeId> ids(value.size() / 8);
          std::memcpy(ids.data(), value.data(), value.size());
          out.splits[key.substr(std::strlen(kShardSplitKeyPrefix))] = ids;
        }
        continue;
      }
      auto id = DecodeNodeKey(key);
      if (!id.ok()) return id.status();
      if (i == 1) {
        std::vector<NodeId> ids(value.size() / 8);
        std::memcpy(ids.data(), value.data(), value.size());
        out.adj[*id] = ids;
      } else if (i == 2) {
        std::vector<float> row(value.size() / 4);
        std::memcpy(row.data(), value.data(), value.size());
        out.feat[*id] = row;
      } else {
        int64_t label = 0;
        if (value.size() != 8) return absl::DataLossError("label size");
        std::memcpy(&label, value.data(), 8);
        out.label[*id] = label;
      }
    }
    if (!it->status().ok())
      status = absl::InternalError(it->status().ToString());
  }
  for (auto* h : handles)
    db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  if (!status.ok()) return status;
  return out;
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_PARTITION_SHARD_READER_H_
