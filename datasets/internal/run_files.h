// Temporary files of fixed-size records for the out-of-core CSR build
// (external_csr.h): written through a stdio buffer, read back a buffer at a
// time, and sorted runs of uint64 keys merged into one ordered stream. Every
// I/O error is a RESOURCE_EXHAUSTED status naming the file and errno's text
// (a full disk is the usual cause). Not thread-safe.
#ifndef SHARDGNN_DATASETS_INTERNAL_RUN_FILES_H_
#define SHARDGNN_DATASETS_INTERNAL_RUN_FILES_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn::datasets_internal {

// RESOURCE_EXHAUSTED "<what> <path>: <strerror(errno)>".
absl::Status RunFileError(const std::string& what, const std::string& path);

// A file created (or truncated) at `path`, written through a 1 MiB buffer.
class TempWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TempWriter>> Open(std::string path);
  ~TempWriter();  // Closes the file if Close() was not called.
  TempWriter(const TempWriter&) = delete;
  TempWriter& operator=(const TempWriter&) = delete;

  absl::Status Write(const void* data, size_t bytes);
  // Flushes and closes; the file is complete only if this succeeds.
  absl::Status Close();

 private:
  TempWriter(std::string path, FILE* file);
  std::string path_;
  FILE* file_;
};

// Reads a file of T records from byte `offset` on, `buffer` records at a
// time.
template <typename T>
class TempReader {
 public:
  static absl::StatusOr<std::unique_ptr<TempReader>> Open(
      const std::string& path, int64_t buffer, int64_t offset = 0) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return RunFileError("opening", path);
    auto r = std::unique_ptr<TempReader>(new TempReader(path, f, buffer));
    if (offset != 0 && std::fseek(f, offset, SEEK_SET) != 0) {
      return RunFileError("reading", path);
    }
    return r;
  }
  ~TempReader() { std::fclose(file_); }
  TempReader(const TempReader&) = delete;
  TempReader& operator=(const TempReader&) = delete;

  // The next record into *out; false at the end or on an error (status()).
  bool Next(T* out) {
    if (pos_ == end_) {
      if (!status_.ok()) return false;
      end_ = std::fread(buffer_.data(), sizeof(T), buffer_.size(), file_);
      pos_ = 0;
      if (end_ == 0) {
        if (std::ferror(file_)) status_ = RunFileError("reading", path_);
        return false;
      }
    }
    *out = buffer_[pos_++];
    return true;
  }
  const absl::Status& status() const { return status_; }

 private:
  TempReader(std::string path, FILE* f, int64_t buffer)
      : path_(std::move(path)), file_(f), buffer_(buffer) {}
  std::string path_;
  FILE* file_;
  std::vector<T> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  absl::Status status_;
};

// The keys of several files of ascending uint64 keys (sorted runs) in
// ascending order, repeats included: a k-way merge through a heap, each run
// read `buffer` keys at a time.
class RunMerger {
 public:
  static absl::StatusOr<std::unique_ptr<RunMerger>> Open(
      const std::vector<std::string>& runs, int64_t buffer);
  RunMerger(const RunMerger&) = delete;
  RunMerger& operator=(const RunMerger&) = delete;

  // The next key into *out; false at the end or on an error (status()).
  bool Next(uint64_t* out);
  // The first read error of any run.
  absl::Status status() const;

 private:
  struct Head {
    uint64_t key;
    size_t run;
  };
  struct After {
    bool operator()(const Head& a, const Head& b) const {
      return b.key < a.key;
    }
  };
  RunMerger() = default;
  std::vector<std::unique_ptr<TempReader<uint64_t>>> readers_;
  std::priority_queue<Head, std::vector<Head>, After> heap_;
};

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_RUN_FILES_H_
