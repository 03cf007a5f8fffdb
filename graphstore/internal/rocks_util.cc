#include "graphstore/internal/rocks_util.h"

#include <cstdarg>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"
#include "rocksdb/cache.h"
#include "rocksdb/table.h"

namespace shardgnn::internal {
namespace fs = std::filesystem;

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(what, ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsIOError()) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

namespace {

class DiscardLogger : public rocksdb::Logger {
 public:
  DiscardLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::HEADER_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewDiscardLogger() {
  return std::make_shared<DiscardLogger>();
}

absl::StatusOr<std::unique_ptr<ShardDb>> ShardDb::Open(const std::string& path,
                                                       int64_t cache_bytes,
                                                       bool read_only) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat(path, ": shard directory does not exist"));
  }
  if (!fs::exists(JoinPath(path, "CURRENT"), ec)) {
    return absl::NotFoundError(absl::StrCat(
        path, ": not a shard (no RocksDB database: CURRENT is missing)"));
  }
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = false;
  db_options.info_log = NewDiscardLogger();  // No LOG file in the shard.
  db_options.max_open_files = -1;  // Keep table readers (index, filter) open.
  // Read SST files through mmap: no pread syscall per block on a cache miss.
  db_options.allow_mmap_reads = true;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(
      static_cast<size_t>(std::max<int64_t>(cache_bytes, 1 << 20)));
  rocksdb::ColumnFamilyOptions cf_options;
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  std::vector<std::string> names;
  rocksdb::Status ls =
      rocksdb::DB::ListColumnFamilies(db_options, path, &names);
  if (!ls.ok()) {
    return absl::DataLossError(absl::StrCat(
        path, ": cannot read the shard database: ", ls.ToString()));
  }
  const std::string wanted[] = {rocksdb::kDefaultColumnFamilyName,
                                kShardAdjacencyCf, kShardFeaturesCf,
                                kShardLabelsCf};
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& name : wanted) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::DataLossError(absl::StrCat(
          path, ": not a shard: column family '", name, "' is missing"));
    }
    cfs.emplace_back(name, cf_options);
  }
  // Typed shards have relations too (opened last: rel_cf()).
  if (std::find(names.begin(), names.end(), kShardRelationsCf) != names.end()) {
    cfs.emplace_back(kShardRelationsCf, cf_options);
  }
  auto shard = std::unique_ptr<ShardDb>(new ShardDb());
  shard->path_ = path;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      read_only
          ? rocksdb::DB::OpenForReadOnly(db_options, path, cfs,
                                         &shard->handles_, &raw)
          : rocksdb::DB::Open(db_options, path, cfs, &shard->handles_, &raw);
  if (!s.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": cannot open the shard database: ", s.ToString()));
  }
  shard->db_.reset(raw);
  return shard;
}

ShardDb::~ShardDb() {
  for (auto* h : handles_) {
    // Nothing useful can be done with a failure while closing a reader.
    db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  handles_.clear();
  db_.reset();
}

absl::StatusOr<ShardMeta> ShardDb::ReadMeta() const {
  std::string json;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), meta_cf(), kShardMetaKey, &json);
  if (s.IsNotFound()) {
    return absl::DataLossError(
        absl::StrCat(path_, ": not a shard: the 'meta' row is missing"));
  }
  RETURN_IF_ERROR(FromRocks(s, absl::StrCat(path_, ": reading meta")));
  absl::StatusOr<ShardMeta> meta = ShardMeta::FromJson(json);
  if (!meta.ok()) return Annotate(meta.status(), path_);
  if (meta->typed() && rel_cf() == nullptr) {
    return absl::DataLossError(
        absl::StrCat(path_, ": a typed shard without column family '",
                     kShardRelationsCf, "'"));
  }
  return meta;
}

}  // namespace shardgnn::internal
