// RocksDB plumbing shared by the disk and memory modes of ShardStore (and
// the ShardWriter's info log): opening a shard database with its column
// families and reading its metadata.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_ROCKS_UTIL_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_ROCKS_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graphstore/shard_format.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"

namespace shardgnn::internal {

// Maps a RocksDB status to an absl::Status prefixed with `what`.
absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what);

// A RocksDB info log that writes nothing, for every database the project
// opens (DBOptions::info_log). The log would be a LOG file in the shard that
// nobody reads, and Debian's RocksDB (built with assertions) aborts when a
// write to it follows one that failed, as on a full disk: logging nowhere
// keeps a full disk a status like any other. Errors still come back as
// statuses.
std::shared_ptr<rocksdb::Logger> NewDiscardLogger();

// An open shard database. Destroys its column family handles before the
// database. Thread-safe for reads, like rocksdb::DB.
class ShardDb {
 public:
  // Opens `path`: NOT_FOUND if it is not a directory holding a RocksDB
  // database, DATA_LOSS if a column family is missing or the database cannot
  // be opened.
  static absl::StatusOr<std::unique_ptr<ShardDb>> Open(const std::string& path,
                                                       int64_t cache_bytes,
                                                       bool read_only);
  ~ShardDb();
  ShardDb(const ShardDb&) = delete;
  ShardDb& operator=(const ShardDb&) = delete;

  rocksdb::DB* db() const { return db_.get(); }
  rocksdb::ColumnFamilyHandle* meta_cf() const { return handles_[0]; }
  rocksdb::ColumnFamilyHandle* adj_cf() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* feat_cf() const { return handles_[2]; }
  rocksdb::ColumnFamilyHandle* label_cf() const { return handles_[3]; }
  // Typed shards' "rel" family; null if the database has none.
  rocksdb::ColumnFamilyHandle* rel_cf() const {
    return handles_.size() > 4 ? handles_[4] : nullptr;
  }
  const std::string& path() const { return path_; }

  // Reads and parses the "meta" row; DATA_LOSS if a typed shard has no
  // "rel" family.
  absl::StatusOr<ShardMeta> ReadMeta() const;

 private:
  ShardDb() = default;
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_ROCKS_UTIL_H_
