#include "graphstore/shard_writer.h"

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "graphstore/internal/rocks_util.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"

namespace shardgnn {
namespace fs = std::filesystem;

namespace {

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNoSpace())
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", s.ToString()));
  return absl::InternalError(absl::StrCat(what, ": ", s.ToString()));
}

// Options shared by the writer and the database that ingests its files.
rocksdb::Options CfOptions(const std::string& cf) {
  rocksdb::Options options;
  // Feature rows are float noise to a compressor; adjacency lists of sorted IDs
  // compress well.
  options.compression = cf == kShardFeaturesCf ? rocksdb::kNoCompression
                                               : rocksdb::kLZ4Compression;
  return options;
}

}  // namespace

struct ShardWriter::Impl {
  std::string dir;
  std::string sst_dir;
  ShardMeta meta;
  NodeId next_id = 0;
  int64_t num_edges = 0;
  Checksum checksum;
  std::unique_ptr<rocksdb::SstFileWriter> adj, feat, label, misc;
  std::map<std::string, std::string>
      split_values;  // key -> value, written in key order at Finish.
  std::string scratch;

  void Hash(char cf, absl::string_view key, absl::string_view value) {
    uint64_t len = value.size();
    checksum.Update(&cf, 1);
    checksum.Update(key);
    checksum.Update(&len, sizeof(len));
    checksum.Update(value);
  }
};

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(
    const std::string& dir, const ShardMeta& meta) {
  std::error_code ec;
  if (fs::exists(dir, ec))
    return absl::AlreadyExistsError(
        absl::StrCat(dir, ": shard directory already exists"));
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->sst_dir = JoinPath(dir, ".sst");
  impl->meta = meta;
  impl->next_id = meta.node_start;
  if (!fs::create_directories(impl->sst_dir, ec)) {
    return absl::PermissionDeniedError(
        absl::StrCat(impl->sst_dir, ": cannot create: ", ec.message()));
  }
  auto open =
      [&](const std::string& cf,
          std::unique_ptr<rocksdb::SstFileWriter>* writer) -> absl::Status {
    *writer = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(),
                                                       CfOptions(cf));
    return FromRocks((*writer)->Open(JoinPath(impl->sst_dir, cf + ".sst")),
                     impl->sst_dir);
  };
  for (auto [cf, writer] : {std::pair{kShardAdjacencyCf, &impl->adj},
                            std::pair{kShardFeaturesCf, &impl->feat},
                            std::pair{kShardLabelsCf, &impl->label}}) {
    absl::Status s = open(cf, writer);
    if (!s.ok()) return s;
  }
  return std::unique_ptr<ShardWriter>(new ShardWriter(std::move(impl)));
}

ShardWriter::ShardWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardWriter::~ShardWriter() = default;

absl::Status ShardWriter::AddNode(NodeId id, const NodeId* neighbors,
                                  size_t num_neighbors, const float* features,
                                  int64_t label) {
  Impl& m = *impl_;
  if (id != m.next_id || id >= m.meta.node_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", m.meta.part_id, ": node ", id,
                     " added out of order (expected ", m.next_id, ")"));
  }
  char key_bytes[8];
  EncodeNodeKey(id, key_bytes);
  rocksdb::Slice key(key_bytes, 8);
  rocksdb::Slice adj(reinterpret_cast<const char*>(neighbors),
                     num_neighbors * sizeof(NodeId));
  rocksdb::Slice feat(reinterpret_cast<const char*>(features),
                      static_cast<size_t>(m.meta.feature_dim) * 4);
  rocksdb::Slice lab(reinterpret_cast<const char*>(&label), sizeof(label));
  m.Hash('a', absl::string_view(key.data(), key.size()),
         absl::string_view(adj.data(), adj.size()));
  m.Hash('f', absl::string_view(key.data(), key.size()),
         absl::string_view(feat.data(), feat.size()));
  m.Hash('l', absl::string_view(key.data(), key.size()),
         absl::string_view(lab.data(), lab.size()));
  absl::Status s = FromRocks(m.adj->Put(key, adj), m.sst_dir);
  if (s.ok()) s = FromRocks(m.feat->Put(key, feat), m.sst_dir);
  if (s.ok()) s = FromRocks(m.label->Put(key, lab), m.sst_dir);
  if (!s.ok()) return s;
  m.num_edges += static_cast<int64_t>(num_neighbors);
  ++m.next_id;
  return absl::OkStatus();
}

absl::Status ShardWriter::AddSplit(const std::string& name,
                                   const std::vector<NodeId>& ids) {
  Impl& m = *impl_;
  std::string key = absl::StrCat(kShardSplitKeyPrefix, name);
  if (m.split_values.count(key))
    return absl::InvalidArgumentError(
        absl::StrCat("split '", name, "' added twice"));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < m.meta.node_start || ids[i] >= m.meta.node_end ||
        (i > 0 && ids[i] <= ids[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split '", name, "': node ", ids[i], " is not owned by shard ",
          m.meta.part_id, " or unsorted"));
    }
  }
  m.split_values[key] = std::string(reinterpret_cast<const char*>(ids.data()),
                                    ids.size() * sizeof(NodeId));
  m.meta.split_counts[name] = static_cast<int64_t>(ids.size());
  return absl::OkStatus();
}

absl::StatusOr<ShardMeta> ShardWriter::Finish() {
  Impl& m = *impl_;
  if (m.next_id != m.meta.node_end) {
    return absl::FailedPreconditionError(
        absl::StrCat("shard ", m.meta.part_id, ": only nodes up to ", m.next_id,
                     " were added, range ends at ", m.meta.node_end));
  }
  for (const auto& [key, value] : m.split_values) m.Hash('s', key, value);
  m.meta.num_edges = m.num_edges;
  m.meta.content_checksum = m.checksum.Hex();

  // Metadata: "meta" sorts before "split/...", as SstFileWriter requires.
  auto misc = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(),
                                                       CfOptions("default"));
  absl::Status s =
      FromRocks(misc->Open(JoinPath(m.sst_dir, "default.sst")), m.sst_dir);
  if (s.ok())
    s = FromRocks(misc->Put(kShardMetaKey, m.meta.ToJson()), m.sst_dir);
  for (const auto& [key, value] : m.split_values) {
    if (s.ok()) s = FromRocks(misc->Put(key, value), m.sst_dir);
  }
  if (!s.ok()) return s;

  // Finish every SST file. An empty shard (no owned nodes) has no rows in the
  // data families: skip those files.
  struct Pending {
    std::string cf;
    std::string path;
    bool has_rows;
  };
  std::vector<Pending> files;
  bool has_nodes = m.meta.node_end > m.meta.node_start;
  for (auto& [cf, writer] : {std::pair{std::string(kShardAdjacencyCf), &m.adj},
                             std::pair{std::string(kShardFeaturesCf), &m.feat},
                             std::pair{std::string(kShardLabelsCf), &m.label},
                             std::pair{std::string("default"), &misc}}) {
    bool rows = cf == "default" || has_nodes;
    if (rows) {
      s = FromRocks((*writer)->Finish(),
                    absl::StrCat(m.sst_dir, "/", cf, ".sst"));
      if (!s.ok()) return s;
    }
    files.push_back({cf, JoinPath(m.sst_dir, cf + ".sst"), rows});
  }
  m.adj.reset();
  m.feat.reset();
  m.label.reset();
  misc.reset();

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  // Logs nowhere: a full disk is a status, never a RocksDB assertion.
  db_options.info_log = internal::NewDiscardLogger();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& f : files)
    cfs.emplace_back(f.cf, rocksdb::ColumnFamilyOptions(CfOptions(f.cf)));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw_db = nullptr;
  s = FromRocks(rocksdb::DB::Open(db_options, m.dir, cfs, &handles, &raw_db),
                m.dir);
  if (!s.ok()) return s;
  std::unique_ptr<rocksdb::DB> db(raw_db);
  for (size_t i = 0; i < files.size() && s.ok(); ++i) {
    if (!files[i].has_rows) continue;
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    s = FromRocks(db->IngestExternalFile(handles[i], {files[i].path}, ingest),
                  absl::StrCat(m.dir, ": ingesting ", files[i].cf));
  }
  for (auto* h : handles) {
    rocksdb::Status cs = db->DestroyColumnFamilyHandle(h);
    if (s.ok()) s = FromRocks(cs, m.dir);
  }
  if (s.ok()) s = FromRocks(db->Close(), m.dir);
  db.reset();
  if (!s.ok()) return s;
  std::error_code ec;
  fs::remove_all(m.sst_dir, ec);
  return m.meta;
}

}  // namespace shardgnn
