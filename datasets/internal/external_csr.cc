#include "datasets/internal/external_csr.h"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/peak_rss.h"
#include "common/progress.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/internal/run_files.h"

namespace shardgnn::datasets_internal {
namespace {

namespace fs = std::filesystem;
// An entry: row << 32 | column, so that its order is (row, column).
using Entry = uint64_t;
constexpr int64_t kEntryBytes = sizeof(Entry);
constexpr int64_t kMaxNodes = int64_t{1} << 32;

Entry Pack(NodeId row, NodeId col) {
  return static_cast<uint64_t>(row) << 32 | static_cast<uint64_t>(col);
}
NodeId Row(Entry e) { return static_cast<NodeId>(e >> 32); }
NodeId Col(Entry e) { return static_cast<NodeId>(e & 0xffffffffu); }

// A merge reads each run through a buffer of this many entries (1 MiB)
// unless the options say otherwise.
constexpr int64_t kReadBufferEntries = int64_t{1} << 17;
// Runs open at once in a merge (file descriptors).
constexpr int64_t kMaxFanIn = 256;
// A run buffer of at least this many entries is sorted in csr.threads
// slices.
constexpr size_t kParallelSortEntries = size_t{1} << 16;
constexpr int64_t kProgressEvery = int64_t{1} << 16;

// Buffered writes of int64 values to an NpyWriter.
class BufferedNpy {
 public:
  explicit BufferedNpy(NpyWriter* writer) : writer_(writer) {
    buffer_.reserve(kBufferValues);
  }
  absl::Status Append(int64_t value) {
    buffer_.push_back(value);
    if (buffer_.size() == kBufferValues) return Flush();
    return absl::OkStatus();
  }
  absl::Status Flush() {
    RETURN_IF_ERROR(writer_->Append(buffer_.data(), buffer_.size()));
    buffer_.clear();
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kBufferValues = size_t{1} << 16;
  NpyWriter* writer_;
  std::vector<int64_t> buffer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExternalCsrBuilder>> ExternalCsrBuilder::Create(
    int64_t num_nodes, const ExternalCsrOptions& options) {
  if (num_nodes > kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out-of-core CSR build: ", num_nodes,
        " nodes; it takes graphs of up to 2^32 nodes (import without "
        "--memory-limit)"));
  }
  int64_t run_entries = options.run_entries;
  if (run_entries <= 0) {
    if (options.memory_bytes < (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "out-of-core CSR build: ", HumanBytes(options.memory_bytes),
          " for sorting edges is too little (at least 1 MiB)"));
    }
    run_entries = options.memory_bytes / kEntryBytes;
  }
  run_entries = std::max<int64_t>(run_entries, 4);  // An edge's two entries.
  int64_t read_buffer = options.read_buffer_entries > 0
                            ? options.read_buffer_entries
                            : kReadBufferEntries;
  // The merge's read buffers share half the budget (the other half holds the
  // transposed entries of a directed graph); at least two runs per pass.
  read_buffer = std::max<int64_t>(1, std::min(read_buffer, run_entries / 4));
  std::error_code ec;
  fs::create_directories(options.temp_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(options.temp_dir, ": cannot create: ", ec.message()));
  }
  return std::unique_ptr<ExternalCsrBuilder>(
      new ExternalCsrBuilder(num_nodes, options, run_entries, read_buffer));
}

ExternalCsrBuilder::ExternalCsrBuilder(int64_t num_nodes,
                                       const ExternalCsrOptions& options,
                                       int64_t run_entries,
                                       int64_t read_buffer_entries)
    : num_nodes_(num_nodes),
      options_(options),
      run_entries_(run_entries),
      read_buffer_entries_(read_buffer_entries),
      // Half the budget reads runs; the other half buffers a directed
      // graph's transposed entries.
      fan_in_(std::clamp<int64_t>(run_entries / 2 / read_buffer_entries, 2,
                                  kMaxFanIn)),
      reserve_entries_(options.max_entries > 0
                           ? std::min(run_entries, options.max_entries + 2)
                           : run_entries) {
  stats_.entries_per_run = run_entries;
}

ExternalCsrBuilder::~ExternalCsrBuilder() {
  std::error_code ec;
  fs::remove_all(options_.temp_dir, ec);
}

std::string ExternalCsrBuilder::NewTempPath(const char* what) {
  return JoinPath(options_.temp_dir,
                  absl::StrFormat("%s-%06d.bin", what, next_temp_++));
}

void ExternalCsrBuilder::NoteTempBytes() {
  int64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.temp_dir, ec)) {
    total += static_cast<int64_t>(e.file_size(ec));
  }
  stats_.peak_temp_bytes = std::max(stats_.peak_temp_bytes, total);
}

absl::Status ExternalCsrBuilder::Add(NodeId src, NodeId dst) {
  ++edges_added_;
  // Reserved once, to the budget, so growth never doubles past it (pages are
  // touched only as entries arrive).
  if (buffer_.capacity() == 0) buffer_.reserve(reserve_entries_);
  if (src == dst) {
    if (!options_.csr.keep_self_loops) {
      ++self_loops_dropped_;
      return absl::OkStatus();
    }
    buffer_.push_back(Pack(dst, src));
  } else {
    buffer_.push_back(Pack(dst, src));
    if (options_.csr.undirected) buffer_.push_back(Pack(src, dst));
  }
  // An undirected edge adds two entries: flush one early rather than grow.
  if (static_cast<int64_t>(buffer_.size()) + 2 > run_entries_) {
    RETURN_IF_ERROR(FlushRun(&buffer_, &runs_));
  }
  return absl::OkStatus();
}

absl::Status ExternalCsrBuilder::FlushRun(std::vector<uint64_t>* buffer,
                                          std::vector<std::string>* runs) {
  if (buffer->empty()) return absl::OkStatus();
  // Slices sorted in parallel become runs of their own: the merge joins
  // them anyway, and no slice-merging buffer is needed.
  const size_t slices =
      buffer->size() >= kParallelSortEntries
          ? static_cast<size_t>(std::max(1, options_.csr.threads))
          : 1;
  std::vector<size_t> bounds;
  for (size_t k = 0; k <= slices; ++k) {
    bounds.push_back(buffer->size() * k / slices);
  }
  std::vector<std::thread> sorters;
  for (size_t k = 1; k < slices; ++k) {
    sorters.emplace_back([&, k] {
      std::sort(buffer->begin() + bounds[k], buffer->begin() + bounds[k + 1]);
    });
  }
  std::sort(buffer->begin(), buffer->begin() + bounds[1]);
  for (std::thread& t : sorters) t.join();
  for (size_t k = 0; k < slices; ++k) {
    // Dedupe within the slice, counted as WriteCsr counts its row
    // duplicates.
    const auto first = buffer->begin() + bounds[k];
    const auto last = buffer->begin() + bounds[k + 1];
    auto out = first;
    for (auto p = first; p != last; ++p) {
      if (out != first && *p == out[-1]) {
        if (Row(*p) == Col(*p)) {
          ++removed_self_;
        } else {
          ++removed_;
        }
        continue;
      }
      *out++ = *p;
    }
    const std::string path = NewTempPath("run");
    ASSIGN_OR_RETURN(std::unique_ptr<TempWriter> w, TempWriter::Open(path));
    RETURN_IF_ERROR(
        w->Write(&*first, static_cast<size_t>(out - first) * sizeof(Entry)));
    RETURN_IF_ERROR(w->Close());
    runs->push_back(path);
  }
  buffer->clear();
  NoteTempBytes();
  return absl::OkStatus();
}

absl::Status ExternalCsrBuilder::MergeDown(std::vector<std::string>* runs,
                                           int64_t fan_in) {
  while (static_cast<int64_t>(runs->size()) > fan_in) {
    ++stats_.merge_passes;
    std::vector<std::string> next;
    Progress progress(absl::StrCat("merging ", runs->size(), " sorted runs"),
                      static_cast<int64_t>(runs->size()), "runs");
    for (size_t begin = 0; begin < runs->size();
         begin += static_cast<size_t>(fan_in)) {
      const size_t end =
          std::min(runs->size(), begin + static_cast<size_t>(fan_in));
      std::vector<std::string> group(runs->begin() + begin,
                                     runs->begin() + end);
      if (group.size() == 1) {
        next.push_back(group[0]);
        continue;
      }
      const std::string path = NewTempPath("run");
      {
        ASSIGN_OR_RETURN(std::unique_ptr<RunMerger> merger,
                         RunMerger::Open(group, read_buffer_entries_));
        ASSIGN_OR_RETURN(std::unique_ptr<TempWriter> w, TempWriter::Open(path));
        Entry e;
        bool any = false;
        Entry last = 0;
        while (merger->Next(&e)) {
          if (any && e == last) {
            if (Row(e) == Col(e)) {
              ++removed_self_;
            } else {
              ++removed_;
            }
            continue;
          }
          RETURN_IF_ERROR(w->Write(&e, sizeof(e)));
          last = e;
          any = true;
        }
        RETURN_IF_ERROR(merger->status());
        RETURN_IF_ERROR(w->Close());
      }
      NoteTempBytes();
      std::error_code ec;
      for (const std::string& run : group) fs::remove(run, ec);
      next.push_back(path);
      progress.Update(static_cast<int64_t>(end));
    }
    progress.Done();
    runs->swap(next);
  }
  return absl::OkStatus();
}

absl::StatusOr<CsrResult> ExternalCsrBuilder::Finish(const std::string& dir) {
  RETURN_IF_ERROR(FlushRun(&buffer_, &runs_));
  std::vector<Entry>().swap(buffer_);
  stats_.runs = static_cast<int64_t>(runs_.size());
  const int64_t n = num_nodes_;
  RETURN_IF_ERROR(MergeDown(&runs_, fan_in_));

  CsrResult result;
  result.self_loops_dropped = self_loops_dropped_;
  result.without_neighbors.assign(n, false);
  const bool directed = !options_.csr.undirected;
  std::vector<Entry> transposed;
  if (directed) {
    transposed.reserve(
        std::max<int64_t>(1, std::min(run_entries_ / 2, reserve_entries_)));
  }
  std::vector<std::string> transposed_runs;
  const std::string raw_path = NewTempPath("indices");
  int64_t loops = 0;
  {
    ++stats_.merge_passes;
    int64_t total = 0;
    std::error_code ec;
    for (const std::string& run : runs_) {
      total += static_cast<int64_t>(fs::file_size(run, ec)) / kEntryBytes;
    }
    Progress progress(options_.csr.progress_task, total, "entries");
    ASSIGN_OR_RETURN(std::unique_ptr<RunMerger> merger,
                     RunMerger::Open(runs_, read_buffer_entries_));
    ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> indptr_file,
                     NpyWriter::Create(JoinPath(dir, kIndptrFile),
                                       NpyDtype::kInt64, {n + 1}));
    BufferedNpy indptr(indptr_file.get());
    ASSIGN_OR_RETURN(std::unique_ptr<TempWriter> raw,
                     TempWriter::Open(raw_path));
    RETURN_IF_ERROR(indptr.Append(0));
    int64_t row = 0, degree = 0, out = 0, seen = 0;
    auto close_row = [&]() -> absl::Status {
      out += degree;
      result.max_degree = std::max(result.max_degree, degree);
      if (degree == 0) {
        result.without_neighbors[row] = true;
        ++result.nodes_without_neighbors;
      }
      degree = 0;
      ++row;
      return indptr.Append(out);
    };
    Entry e;
    bool any = false;
    Entry last = 0;
    while (merger->Next(&e)) {
      if (++seen % kProgressEvery == 0) progress.Update(seen);
      const NodeId v = Row(e), u = Col(e);
      if (any && e == last) {
        if (u == v) {
          ++removed_self_;
        } else {
          ++removed_;
        }
        continue;
      }
      last = e;
      any = true;
      while (row < v) RETURN_IF_ERROR(close_row());
      RETURN_IF_ERROR(raw->Write(&u, sizeof(u)));
      ++degree;
      if (u == v) {
        ++loops;
      } else if (directed) {
        transposed.push_back(Pack(u, v));
        if (static_cast<int64_t>(transposed.size()) >= run_entries_ / 2) {
          RETURN_IF_ERROR(FlushRun(&transposed, &transposed_runs));
        }
      }
    }
    RETURN_IF_ERROR(merger->status());
    while (row < n) RETURN_IF_ERROR(close_row());
    RETURN_IF_ERROR(indptr.Flush());
    RETURN_IF_ERROR(indptr_file->Close());
    RETURN_IF_ERROR(raw->Close());
    result.num_edges = out;
    progress.Update(seen);
    progress.Done();
  }
  NoteTempBytes();
  {
    std::error_code ec;
    for (const std::string& run : runs_) fs::remove(run, ec);
    runs_.clear();
  }
  if (directed) {
    RETURN_IF_ERROR(FlushRun(&transposed, &transposed_runs));
    std::vector<Entry>().swap(transposed);
    RETURN_IF_ERROR(MergeDown(&transposed_runs, fan_in_));
  }

  // Copy the raw indices into indices.npy; for a directed graph, join each
  // entry (v, u) with the transposed entries to count those whose reverse is
  // stored.
  {
    Progress progress(directed ? "counting reverse edges" : "writing indices",
                      result.num_edges, "entries");
    ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> indices_file,
                     NpyWriter::Create(JoinPath(dir, kIndicesFile),
                                       NpyDtype::kInt64, {result.num_edges}));
    BufferedNpy indices(indices_file.get());
    ASSIGN_OR_RETURN(auto raw,
                     TempReader<int64_t>::Open(raw_path, kReadBufferEntries));
    if (directed) {
      const std::string indptr_path = JoinPath(dir, kIndptrFile);
      ASSIGN_OR_RETURN(NpyHeader header, ReadNpyHeader(indptr_path));
      ASSIGN_OR_RETURN(
          auto indptr,
          TempReader<int64_t>::Open(indptr_path, kReadBufferEntries,
                                    static_cast<int64_t>(header.data_offset)));
      ASSIGN_OR_RETURN(std::unique_ptr<RunMerger> reverse,
                       RunMerger::Open(transposed_runs, read_buffer_entries_));
      Entry t;
      bool has_t = reverse->Next(&t);
      int64_t begin = 0, end = 0, done = 0;
      if (!indptr->Next(&begin)) return indptr->status();
      for (NodeId v = 0; v < n; ++v) {
        if (!indptr->Next(&end)) {
          RETURN_IF_ERROR(indptr->status());
          return absl::DataLossError(
              absl::StrCat(indptr_path, ": shorter than written"));
        }
        for (int64_t i = begin; i < end; ++i) {
          NodeId u;
          if (!raw->Next(&u)) {
            RETURN_IF_ERROR(raw->status());
            return absl::DataLossError(
                absl::StrCat(raw_path, ": shorter than written"));
          }
          RETURN_IF_ERROR(indices.Append(u));
          if (++done % kProgressEvery == 0) progress.Update(done);
          if (u == v) continue;
          ++result.non_loop_edges;
          const Entry e = Pack(v, u);
          while (has_t && t < e) has_t = reverse->Next(&t);
          if (has_t && t == e) ++result.reciprocated_edges;
        }
        begin = end;
      }
      RETURN_IF_ERROR(reverse->status());
    } else {
      NodeId u;
      int64_t done = 0;
      while (raw->Next(&u)) {
        RETURN_IF_ERROR(indices.Append(u));
        if (++done % kProgressEvery == 0) progress.Update(done);
      }
      RETURN_IF_ERROR(raw->status());
      result.non_loop_edges = result.num_edges - loops;
      result.reciprocated_edges = result.non_loop_edges;
    }
    RETURN_IF_ERROR(indices.Flush());
    RETURN_IF_ERROR(indices_file->Close());
    progress.Update(result.num_edges);
    progress.Done();
  }
  result.duplicate_edges_dropped =
      (options_.csr.undirected ? removed_ / 2 : removed_) + removed_self_;
  std::error_code ec;
  fs::remove_all(options_.temp_dir, ec);
  return result;
}

absl::StatusOr<ExternalCsrOptions> ImportOutOfCoreOptions(
    const OutOfCoreOptions& limit, int64_t num_nodes, const CsrOptions& csr,
    const std::string& dir) {
  // Kept beside the sort buffer: read and write buffers, a feature pass's
  // chunks (12 MiB for float64), allocator slack.
  constexpr int64_t kReserveBytes = int64_t{32} << 20;
  constexpr int64_t kMinSortBytes = int64_t{1} << 20;
  const int64_t held = ResidentBytes();
  const int64_t node_bits = (num_nodes + 7) / 8;
  ExternalCsrOptions options;
  options.csr = csr;
  options.memory_bytes = limit.memory_limit - held - node_bits - kReserveBytes;
  // A limit beyond the machine's memory would reserve a buffer the kernel
  // may refuse: what the machine has is the limit then.
  const int64_t physical = PhysicalMemoryBytes();
  if (physical > 0) {
    options.memory_bytes = std::min(
        options.memory_bytes, physical - held - node_bits - kReserveBytes);
  }
  options.run_entries = limit.run_entries;
  options.read_buffer_entries = limit.read_buffer_entries;
  options.temp_dir = JoinPath(dir, ".csr-runs");
  if (options.run_entries <= 0 && options.memory_bytes < kMinSortBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--memory-limit ", HumanBytes(static_cast<double>(limit.memory_limit)),
        " is too small for this import: the process already holds ",
        HumanBytes(static_cast<double>(held)),
        " (the program, and the labels and splits of ", num_nodes,
        " nodes), and sorting edges needs at least ",
        HumanBytes(
            static_cast<double>(node_bits + kReserveBytes + kMinSortBytes)),
        " more"));
  }
  return options;
}

std::string OutOfCoreNote(const OutOfCoreOptions& limit,
                          const ExternalCsrStats& stats) {
  return absl::StrCat(
      "edges: CSR built out of core under --memory-limit ",
      HumanBytes(static_cast<double>(limit.memory_limit)), " (",
      HumanBytes(static_cast<double>(stats.entries_per_run * kEntryBytes)),
      " sort buffer): ", stats.runs, " sorted run", stats.runs == 1 ? "" : "s",
      ", ", stats.merge_passes, " merge pass",
      stats.merge_passes == 1 ? "" : "es", ", up to ",
      HumanBytes(static_cast<double>(stats.peak_temp_bytes)),
      " of temporary files");
}

}  // namespace shardgnn::datasets_internal
