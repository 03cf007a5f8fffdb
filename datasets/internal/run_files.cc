#include "datasets/internal/run_files.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace shardgnn::datasets_internal {

namespace {
constexpr size_t kWriteBufferBytes = size_t{1} << 20;
}  // namespace

absl::Status RunFileError(const std::string& what, const std::string& path) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::StatusOr<std::unique_ptr<TempWriter>> TempWriter::Open(std::string path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return RunFileError("creating", path);
  auto w = std::unique_ptr<TempWriter>(new TempWriter(std::move(path), f));
  std::setvbuf(f, nullptr, _IOFBF, kWriteBufferBytes);
  return w;
}

TempWriter::TempWriter(std::string path, FILE* file)
    : path_(std::move(path)), file_(file) {}

TempWriter::~TempWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status TempWriter::Write(const void* data, size_t bytes) {
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    return RunFileError("writing", path_);
  }
  return absl::OkStatus();
}

absl::Status TempWriter::Close() {
  FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) return RunFileError("writing", path_);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RunMerger>> RunMerger::Open(
    const std::vector<std::string>& runs, int64_t buffer) {
  auto m = std::unique_ptr<RunMerger>(new RunMerger());
  for (const std::string& run : runs) {
    ASSIGN_OR_RETURN(std::unique_ptr<TempReader<uint64_t>> r,
                     TempReader<uint64_t>::Open(run, buffer));
    m->readers_.push_back(std::move(r));
    uint64_t key;
    if (m->readers_.back()->Next(&key)) {
      m->heap_.push({key, m->readers_.size() - 1});
    }
    RETURN_IF_ERROR(m->readers_.back()->status());
  }
  return m;
}

bool RunMerger::Next(uint64_t* out) {
  if (heap_.empty()) return false;
  const Head head = heap_.top();
  heap_.pop();
  *out = head.key;
  uint64_t key;
  if (readers_[head.run]->Next(&key)) heap_.push({key, head.run});
  return true;
}

absl::Status RunMerger::status() const {
  for (const auto& r : readers_) RETURN_IF_ERROR(r->status());
  return absl::OkStatus();
}

}  // namespace shardgnn::datasets_internal
