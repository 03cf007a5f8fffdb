// EmbeddingTable::Save and Load: a table's snapshot file.
//
// Layout (little-endian, as the machines we run on):
//   "SGNNEMB1"                 8 bytes
//   version                    uint32 (1)
//   header length H            uint32 (<= 64 KiB)
//   header                     H bytes of JSON: the table's config, node
//                              range, step and the bytes of one row record
//   row records, by node ID    node (int64), the row (dim float32), then the
//                              optimizer state: Adagrad dim float32 sums of
//                              squares; Adam dim float32 m, dim float32 v and
//                              the row's update count (int64)
//   row count                  uint64
//   checksum                   uint64, XXH64 of every byte before it
// Only rows created so far are written; the others are their initial values.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/checksum.h"
#include "common/status.h"
#include "embedding/embedding_table.h"
#include "embedding/internal/embedding_table_impl.h"
#include "nlohmann/json.hpp"

namespace shardgnn {
namespace {

constexpr char kMagic[8] = {'S', 'G', 'N', 'N', 'E', 'M', 'B', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxHeaderBytes = 1 << 16;
constexpr int64_t kTrailerBytes = 16;

// Floats of optimizer state per row element, and whether a row keeps an
// update count.
int StateFloats(EmbeddingOptimizer optimizer) {
  switch (optimizer) {
    case EmbeddingOptimizer::kSgd:
      return 0;
    case EmbeddingOptimizer::kAdagrad:
      return 1;
    case EmbeddingOptimizer::kAdam:
      return 2;
  }
  return 0;
}

int64_t RecordBytes(const EmbeddingTableConfig& config) {
  return 8 + config.dim * 4 * (1 + StateFloats(config.optimizer)) +
         (config.optimizer == EmbeddingOptimizer::kAdam ? 8 : 0);
}

std::string ErrnoText() { return std::strerror(errno); }

// Writes through a FILE, checksumming; the first failure sticks.
class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  void Write(const void* data, size_t n) {
    if (!ok_ || n == 0) return;
    if (std::fwrite(data, 1, n, f_) != n) {
      ok_ = false;
      error_ = ErrnoText();
      return;
    }
    sum_.Update(data, n);
  }
  template <typename T>
  void Put(T value) {
    Write(&value, sizeof(value));
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  uint64_t checksum() const { return sum_.Value(); }

 private:
  std::FILE* f_;
  Checksum sum_;
  bool ok_ = true;
  std::string error_;
};

// Reads through a FILE, checksumming; false once the file ends early.
class Reader {
 public:
  explicit Reader(std::FILE* f) : f_(f) {}
  bool Read(void* data, size_t n) {
    if (n == 0) return true;
    if (std::fread(data, 1, n, f_) != n) return false;
    sum_.Update(data, n);
    return true;
  }
  template <typename T>
  bool Get(T* value) {
    return Read(value, sizeof(*value));
  }
  uint64_t checksum() const { return sum_.Value(); }

 private:
  std::FILE* f_;
  Checksum sum_;
};

// A snapshot file open for reading, and its size; closed when it goes.
struct OpenFile {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
  int64_t size = 0;
};

// NOT_FOUND if there is no such file, UNAVAILABLE if it cannot be read.
absl::StatusOr<OpenFile> OpenSnapshot(const std::string& path) {
  OpenFile out;
  out.file.reset(std::fopen(path.c_str(), "rb"));
  if (out.file == nullptr) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no embedding snapshot ", path));
    }
    return absl::UnavailableError(absl::StrCat(
        "cannot open embedding snapshot ", path, ": ", ErrnoText()));
  }
  struct stat st;
  if (::fstat(::fileno(out.file.get()), &st) != 0) {
    return absl::UnavailableError(
        absl::StrCat("embedding snapshot ", path, ": ", ErrnoText()));
  }
  out.size = st.st_size;
  return out;
}

nlohmann::ordered_json HeaderOf(const EmbeddingTableConfig& config,
                                NodeId node_start, NodeId node_end,
                                int64_t step) {
  return {{"name", config.name},
          {"dim", config.dim},
          {"optimizer", EmbeddingOptimizerName(config.optimizer)},
          {"lr", config.lr},
          {"beta1", config.beta1},
          {"beta2", config.beta2},
          {"eps", config.eps},
          {"init_std", config.init_std},
          {"seed", config.seed},
          {"num_trainers", config.num_trainers},
          {"run_id", config.run_id},
          {"ordered", config.ordered},
          {"node_start", node_start},
          {"node_end", node_end},
          {"step", step},
          {"record_bytes", RecordBytes(config)}};
}

// The header's fields, checked for type; INVALID_ARGUMENT naming the first
// missing or mistyped one.
absl::Status ParseHeader(const nlohmann::json& h, EmbeddingTableConfig* config,
                         NodeId* node_start, NodeId* node_end, int64_t* step,
                         int64_t* record_bytes) {
  if (!h.is_object()) return absl::InvalidArgumentError("not a JSON object");
  auto field =
      [&h](const char* key,
           bool (nlohmann::json::*is)()
               const noexcept) -> absl::StatusOr<const nlohmann::json*> {
    auto it = h.find(key);
    if (it == h.end() || !((*it).*is)()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field \"", key, "\" is missing or of the wrong type"));
    }
    return &*it;
  };
  using J = nlohmann::json;
  ASSIGN_OR_RETURN(const J* name, field("name", &J::is_string));
  ASSIGN_OR_RETURN(const J* dim, field("dim", &J::is_number_integer));
  ASSIGN_OR_RETURN(const J* optimizer, field("optimizer", &J::is_string));
  ASSIGN_OR_RETURN(const J* lr, field("lr", &J::is_number));
  ASSIGN_OR_RETURN(const J* beta1, field("beta1", &J::is_number));
  ASSIGN_OR_RETURN(const J* beta2, field("beta2", &J::is_number));
  ASSIGN_OR_RETURN(const J* eps, field("eps", &J::is_number));
  ASSIGN_OR_RETURN(const J* init_std, field("init_std", &J::is_number));
  ASSIGN_OR_RETURN(const J* seed, field("seed", &J::is_number_unsigned));
  ASSIGN_OR_RETURN(const J* trainers,
                   field("num_trainers", &J::is_number_integer));
  ASSIGN_OR_RETURN(const J* run_id, field("run_id", &J::is_string));
  ASSIGN_OR_RETURN(const J* ordered, field("ordered", &J::is_boolean));
  ASSIGN_OR_RETURN(const J* start, field("node_start", &J::is_number_integer));
  ASSIGN_OR_RETURN(const J* end, field("node_end", &J::is_number_integer));
  ASSIGN_OR_RETURN(const J* at, field("step", &J::is_number_integer));
  ASSIGN_OR_RETURN(const J* record,
                   field("record_bytes", &J::is_number_integer));
  ASSIGN_OR_RETURN(config->optimizer,
                   ParseEmbeddingOptimizer(optimizer->get<std::string>()));
  config->name = name->get<std::string>();
  config->dim = dim->get<int64_t>();
  config->lr = lr->get<double>();
  config->beta1 = beta1->get<double>();
  config->beta2 = beta2->get<double>();
  config->eps = eps->get<double>();
  config->init_std = init_std->get<double>();
  config->seed = seed->get<uint64_t>();
  config->num_trainers = trainers->get<int>();
  config->run_id = run_id->get<std::string>();
  config->ordered = ordered->get<bool>();
  *node_start = start->get<NodeId>();
  *node_end = end->get<NodeId>();
  *step = at->get<int64_t>();
  *record_bytes = record->get<int64_t>();
  return absl::OkStatus();
}

// The epoch of a snapshot file name ("epoch-E.emb"), or -1.
int EpochOfFile(const std::string& file) {
  absl::string_view name(file);
  int epoch = -1;
  if (!absl::ConsumePrefix(&name, "epoch-") ||
      !absl::ConsumeSuffix(&name, ".emb") || name.empty() ||
      !std::all_of(name.begin(), name.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(name, &epoch)) {
    return -1;
  }
  return epoch;
}

// Reads and checks the magic, version and header (the reader then stands at
// the first record): DATA_LOSS naming `path` for anything malformed.
absl::Status ReadPrefix(Reader& in, const std::string& path, int64_t size,
                        EmbeddingSnapshotHeader* header, int64_t* header_bytes,
                        int64_t* record_bytes) {
  auto damaged = [&path](const std::string& what) {
    return absl::DataLossError(
        absl::StrCat("embedding snapshot ", path, " is damaged: ", what));
  };
  char magic[sizeof(kMagic)];
  uint32_t version = 0, length = 0;
  if (!in.Read(magic, sizeof(magic)) ||
      std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return damaged("it does not start with SGNNEMB1");
  }
  if (!in.Get(&version) || version != kVersion) {
    return damaged(absl::StrCat("version ", version, " (this build reads ",
                                kVersion, ")"));
  }
  const int64_t prefix = static_cast<int64_t>(sizeof(kMagic)) + 8;
  if (!in.Get(&length) || length > kMaxHeaderBytes ||
      prefix + length + kTrailerBytes > size) {
    return damaged(absl::StrCat("a header of ", length, " bytes in a file of ",
                                size, " bytes"));
  }
  std::string text(length, '\0');
  if (!in.Read(text.data(), text.size())) return damaged("cut short");
  const nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
  if (h.is_discarded()) return damaged("its header is not JSON");
  if (absl::Status s =
          ParseHeader(h, &header->config, &header->node_start,
                      &header->node_end, &header->step, record_bytes);
      !s.ok()) {
    return damaged(absl::StrCat("header ", s.message()));
  }
  if (absl::Status s = ValidateEmbeddingConfig(header->config); !s.ok()) {
    return damaged(std::string(s.message()));
  }
  if (header->node_start < 0 || header->node_start > header->node_end ||
      header->step < 0) {
    return damaged(absl::StrCat("nodes [", header->node_start, ", ",
                                header->node_end, ") at step ", header->step));
  }
  *header_bytes = length;
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbeddingTable::Impl::Save(int64_t step, const std::string& path) {
  // Every trainer's push lock, in order: no push changes a row meanwhile.
  std::vector<std::unique_lock<std::mutex>> push_locks;
  push_locks.reserve(static_cast<size_t>(config_.num_trainers));
  for (int t = 0; t < config_.num_trainers; ++t) {
    push_locks.emplace_back(push_mu_[t]);
  }
  const std::string where =
      absl::StrCat("embedding table ", config_.name, ": snapshot of step ",
                   step, " to ", path, ": ");
  {
    std::lock_guard<std::mutex> held_lock(held_mu_);
    if (!held_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, "step ", held_.begin()->first,
                       " has pushes held (not every trainer has pushed it)"));
    }
    std::lock_guard<std::mutex> clock_lock(clock_mu_);
    for (int t = 0; t < config_.num_trainers; ++t) {
      if (next_step_[t] != step) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, "trainer ", t, " has pushed ", next_step_[t],
            " steps (a snapshot is taken when every trainer is at its step)"));
      }
    }
  }

  const std::string tmp = absl::StrCat(path, ".tmp-", ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(where, "cannot create ", tmp, ": ", ErrnoText()));
  }
  bool closed = false;
  bool renamed = false;
  absl::Cleanup cleanup = [&] {
    if (!closed) std::fclose(f);
    if (!renamed) std::remove(tmp.c_str());
  };
  Writer out(f);
  out.Write(kMagic, sizeof(kMagic));
  out.Put<uint32_t>(kVersion);
  const std::string header =
      HeaderOf(config_, node_start_, node_end_, step).dump();
  out.Put<uint32_t>(static_cast<uint32_t>(header.size()));
  out.Write(header.data(), header.size());
  uint64_t count = 0;
  const int64_t rows = node_end_ - node_start_;
  for (int64_t r = 0; r < rows && out.ok(); ++r) {
    std::lock_guard<std::mutex> lock(StripeOf(r));
    if (!created_[r]) continue;
    ++count;
    out.Put<int64_t>(node_start_ + r);
    const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
    out.Write(values_.get() + r * dim_, row_bytes);
    if (sum_sq_ != nullptr) out.Write(sum_sq_.get() + r * dim_, row_bytes);
    if (m_ != nullptr) {
      out.Write(m_.get() + r * dim_, row_bytes);
      out.Write(v_.get() + r * dim_, row_bytes);
      out.Put<int64_t>(adam_steps_[r]);
    }
  }
  out.Put<uint64_t>(count);
  const uint64_t checksum = out.checksum();
  out.Put<uint64_t>(checksum);
  if (!out.ok() || std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    const std::string error = out.ok() ? ErrnoText() : out.error();
    return absl::UnavailableError(
        absl::StrCat(where, "writing ", tmp, " failed: ", error));
  }
  closed = true;
  if (std::fclose(f) != 0) {
    return absl::UnavailableError(
        absl::StrCat(where, "closing ", tmp, " failed: ", ErrnoText()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrCat(where, "renaming ", tmp, " failed: ", ErrnoText()));
  }
  renamed = true;
  // The rename itself survives a crash once the directory is synced.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

absl::Status EmbeddingTable::Impl::Load(const std::string& path, int64_t step) {
  ASSIGN_OR_RETURN(OpenFile snapshot, OpenSnapshot(path));
  std::FILE* f = snapshot.file.get();
  const int64_t size = snapshot.size;
  auto damaged = [&path](const std::string& what) {
    return absl::DataLossError(
        absl::StrCat("embedding snapshot ", path, " is damaged: ", what));
  };
  Reader in(f);
  EmbeddingSnapshotHeader header;
  int64_t header_bytes = 0, record_bytes = 0;
  RETURN_IF_ERROR(
      ReadPrefix(in, path, size, &header, &header_bytes, &record_bytes));
  const EmbeddingTableConfig& saved = header.config;
  const NodeId saved_start = header.node_start, saved_end = header.node_end;
  const int64_t saved_step = header.step;
  const int64_t prefix = static_cast<int64_t>(sizeof(kMagic)) + 8;
  const std::string differences = EmbeddingConfigDifferences(config_, saved);
  if (!differences.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "embedding snapshot ", path,
        " holds another table (wanted != saved: ", differences, ")"));
  }
  if (saved_start != node_start_ || saved_end != node_end_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "embedding snapshot ", path, " holds nodes [", saved_start, ", ",
        saved_end, "), not [", node_start_, ", ", node_end_, ")"));
  }
  if (saved_step != step) {
    return absl::FailedPreconditionError(
        absl::StrCat("embedding snapshot ", path, " is of step ", saved_step,
                     ", not ", step));
  }
  const int64_t record = RecordBytes(config_);
  if (record_bytes != record) {
    return damaged(absl::StrCat("records of ", record_bytes,
                                " bytes (expected ", record, ")"));
  }
  const int64_t body = size - prefix - header_bytes - kTrailerBytes;
  const int64_t rows = node_end_ - node_start_;
  if (body % record != 0 || body / record > rows) {
    return damaged(absl::StrCat(body,
                                " bytes of rows are not a whole number "
                                "of at most ",
                                rows, " records of ", record, " bytes"));
  }
  const int64_t count = body / record;
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  const int state_floats = StateFloats(config_.optimizer);
  NodeId previous = node_start_ - 1;
  for (int64_t i = 0; i < count; ++i) {
    NodeId node = 0;
    if (!in.Get(&node)) return damaged("cut short");
    if (node <= previous || node >= node_end_) {
      return damaged(absl::StrCat("record ", i, " is of node ", node,
                                  node <= previous
                                      ? " (not after the record before it)"
                                      : " (outside the table's nodes)"));
    }
    previous = node;
    const int64_t r = node - node_start_;
    float* row = values_.get() + r * dim_;
    if (!in.Read(row, row_bytes)) return damaged("cut short");
    if (state_floats >= 1 &&
        !in.Read((sum_sq_ != nullptr ? sum_sq_ : m_).get() + r * dim_,
                 row_bytes)) {
      return damaged("cut short");
    }
    if (state_floats == 2) {
      if (!in.Read(v_.get() + r * dim_, row_bytes) ||
          !in.Get(&adam_steps_[r])) {
        return damaged("cut short");
      }
      if (adam_steps_[r] < 0) {
        return damaged(absl::StrCat("node ", node, " has ", adam_steps_[r],
                                    " Adam updates"));
      }
    }
    for (int k = 0; k <= state_floats; ++k) {
      const float* a = k == 0               ? row
                       : sum_sq_ != nullptr ? sum_sq_.get() + r * dim_
                       : k == 1             ? m_.get() + r * dim_
                                            : v_.get() + r * dim_;
      for (int64_t c = 0; c < dim_; ++c) {
        if (!std::isfinite(a[c])) {
          return damaged(
              absl::StrCat("node ", node, " column ", c, " is not finite"));
        }
      }
    }
    created_[r] = 1;
  }
  uint64_t saved_count = 0, saved_checksum = 0;
  if (!in.Get(&saved_count)) return damaged("cut short");
  const uint64_t checksum = in.checksum();
  if (std::fread(&saved_checksum, sizeof(saved_checksum), 1, f) != 1) {
    return damaged("cut short");
  }
  if (saved_count != static_cast<uint64_t>(count)) {
    return damaged(
        absl::StrCat("it says ", saved_count, " rows but holds ", count));
  }
  if (saved_checksum != checksum) return damaged("checksum mismatch");
  rows_touched_.store(count, std::memory_order_relaxed);
  std::lock_guard<std::mutex> held_lock(held_mu_);
  std::lock_guard<std::mutex> clock_lock(clock_mu_);
  next_step_.assign(static_cast<size_t>(config_.num_trainers), step);
  if (config_.ordered && config_.num_trainers > 1) {
    next_held_ = next_step_;
    pushed_next_ = next_step_;
  }
  applied_.store(step, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<EmbeddingSnapshotHeader> ReadEmbeddingSnapshotHeader(
    const std::string& path) {
  ASSIGN_OR_RETURN(OpenFile snapshot, OpenSnapshot(path));
  std::FILE* f = snapshot.file.get();
  Reader in(f);
  EmbeddingSnapshotHeader header;
  int64_t header_bytes = 0, record_bytes = 0;
  RETURN_IF_ERROR(ReadPrefix(in, path, snapshot.size, &header, &header_bytes,
                             &record_bytes));
  return header;
}

std::string EmbeddingSnapshotPath(const std::string& dir, int epoch) {
  return (std::filesystem::path(dir) / absl::StrCat("epoch-", epoch, ".emb"))
      .string();
}

void PruneEmbeddingSnapshots(const std::string& dir, int epoch) {
  std::error_code ec;
  std::vector<int> epochs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const int e = EpochOfFile(entry.path().filename().string());
    if (e >= 0) epochs.push_back(e);
  }
  int previous = -1;
  for (int e : epochs) {
    if (e < epoch) previous = std::max(previous, e);
  }
  for (int e : epochs) {
    if (e != epoch && e != previous) {
      std::filesystem::remove(EmbeddingSnapshotPath(dir, e), ec);
    }
  }
}

absl::StatusOr<EmbeddingSnapshotStats> SaveEmbeddingSnapshot(
    const EmbeddingTable& table, const std::string& dir, int epoch,
    int64_t step) {
  const absl::Time start = absl::Now();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "embedding table ", table.config().name,
        ": cannot create the snapshot directory ", dir, ": ", ec.message()));
  }
  const std::string path = EmbeddingSnapshotPath(dir, epoch);
  RETURN_IF_ERROR(table.Save(step, path));
  PruneEmbeddingSnapshots(dir, epoch);
  EmbeddingSnapshotStats out;
  out.rows = table.stats().rows_touched;
  const auto bytes = std::filesystem::file_size(path, ec);
  out.bytes = ec ? 0 : static_cast<int64_t>(bytes);
  out.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return out;
}

absl::Status EmbeddingTable::Save(int64_t step, const std::string& path) const {
  return impl_->Save(step, path);
}

absl::StatusOr<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Load(
    const std::string& path, const EmbeddingTableConfig& config,
    NodeId node_start, NodeId node_end, int64_t step,
    const std::string& backing_dir) {
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding snapshot ", path, ": step ", step, " < 0"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<EmbeddingTable> table,
                   Create(config, node_start, node_end, backing_dir));
  RETURN_IF_ERROR(table->impl_->Load(path, step));
  return table;
}

absl::Status EmbeddingTable::Swap(EmbeddingTable& other) {
  const std::string differences =
      EmbeddingConfigDifferences(config_, other.config_);
  if (!differences.empty() || node_start_ != other.node_start_ ||
      node_end_ != other.node_end_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding table ", config_.name, ": cannot swap with another table (",
        differences, " nodes [", node_start_, ", ", node_end_, ") vs [",
        other.node_start_, ", ", other.node_end_, "))"));
  }
  std::swap(impl_, other.impl_);
  return absl::OkStatus();
}

}  // namespace shardgnn
