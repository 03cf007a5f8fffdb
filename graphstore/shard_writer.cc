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
  std::unique_ptr<rocksdb::SstFileWriter> adj, feat, label, rel, misc;
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
  absl::Status types = CheckShardMetaTypes(meta);
  if (!types.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": shard metadata: ", types.message()));
  }
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
  if (meta.typed()) {
    absl::Status s = open(kShardRelationsCf, &impl->rel);
    if (!s.ok()) return s;
  }
  return std::unique_ptr<ShardWriter>(new ShardWriter(std::move(impl)));
}

ShardWriter::ShardWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardWriter::~ShardWriter() = default;

absl::Status ShardWriter::AddNode(NodeId id, const NodeId* neighbors,
                                  size_t num_neighbors, const float* features,
                                  int64_t label) {
  return AddNodeRow(id, neighbors, num_neighbors, /*relations=*/nullptr,
                    features, &label);
}

absl::Status ShardWriter::AddNodeRow(NodeId id, const NodeId* neighbors,
                                     size_t num_neighbors,
                                     const int32_t* relations,
                                     const float* features,
                                     const int64_t* labels) {
  Impl& m = *impl_;
  if (id != m.next_id || id >= m.meta.node_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", m.meta.part_id, ": node ", id,
                     " added out of order (expected ", m.next_id, ")"));
  }
  auto invalid = [&](auto&&... what) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", m.meta.part_id, ": node ", id, ": ", what...));
  };
  const bool typed = m.meta.typed();
  if (!typed && relations != nullptr) {
    return invalid("relations given for an untyped shard");
  }
  if (typed && relations == nullptr && num_neighbors > 0) {
    return invalid("a typed shard's row needs each neighbor's relation");
  }
  if (typed) {
    const int64_t num_relations =
        static_cast<int64_t>(m.meta.edge_types.size());
    for (size_t k = 0; k < num_neighbors; ++k) {
      const int32_t r = relations[k];
      if (r < 0 || r >= num_relations) {
        return invalid("entry ", k, " has relation ", r, ", outside [0, ",
                       num_relations, ")");
      }
      if (k > 0 &&
          (r < relations[k - 1] ||
           (r == relations[k - 1] && neighbors[k] < neighbors[k - 1]))) {
        return invalid("entry ", k, " (relation ", r, ", neighbor ",
                       neighbors[k],
                       ") breaks the row's (relation, neighbor) order");
      }
    }
  }
  const int64_t width =
      typed ? m.meta.node_types[static_cast<size_t>(m.meta.TypeOf(id))]
                  .feature_dim
            : m.meta.feature_dim;
  if (width > 0 && features == nullptr) {
    return invalid("no features given (", width, " expected)");
  }
  if (labels == nullptr) return invalid("no labels given");
  static const char kEmpty[1] = {0};
  char key_bytes[8];
  EncodeNodeKey(id, key_bytes);
  rocksdb::Slice key(key_bytes, 8);
  rocksdb::Slice adj(
      num_neighbors > 0 ? reinterpret_cast<const char*>(neighbors) : kEmpty,
      num_neighbors * sizeof(NodeId));
  rocksdb::Slice feat(
      width > 0 ? reinterpret_cast<const char*>(features) : kEmpty,
      static_cast<size_t>(width) * sizeof(float));
  rocksdb::Slice lab(
      reinterpret_cast<const char*>(labels),
      static_cast<size_t>(m.meta.label_columns) * sizeof(int64_t));
  rocksdb::Slice rel(num_neighbors > 0 && typed
                         ? reinterpret_cast<const char*>(relations)
                         : kEmpty,
                     typed ? num_neighbors * sizeof(int32_t) : 0);
  auto view = [](const rocksdb::Slice& s) {
    return absl::string_view(s.data(), s.size());
  };
  m.Hash('a', view(key), view(adj));
  m.Hash('f', view(key), view(feat));
  m.Hash('l', view(key), view(lab));
  if (typed) m.Hash('r', view(key), view(rel));
  absl::Status s = FromRocks(m.adj->Put(key, adj), m.sst_dir);
  if (s.ok()) s = FromRocks(m.feat->Put(key, feat), m.sst_dir);
  if (s.ok()) s = FromRocks(m.label->Put(key, lab), m.sst_dir);
  if (s.ok() && typed) s = FromRocks(m.rel->Put(key, rel), m.sst_dir);
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
  std::vector<std::pair<std::string, std::unique_ptr<rocksdb::SstFileWriter>*>>
      writers = {{kShardAdjacencyCf, &m.adj},
                 {kShardFeaturesCf, &m.feat},
                 {kShardLabelsCf, &m.label},
                 {"default", &misc}};
  if (m.meta.typed()) writers.emplace_back(kShardRelationsCf, &m.rel);
  for (auto& [cf, writer] : writers) {
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
  m.rel.reset();
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
