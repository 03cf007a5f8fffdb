// Streams the lines of a text file, plain or gzip-compressed (detected from the
// bytes, not the name).
//
// Importers read inputs far larger than memory (ogbn-products' node-feat.csv is
// several GB) one line at a time through this class; only one buffer is held.
// Truncated or corrupt gzip input is an error, not a silent end of file. Not
// thread-safe.
#ifndef SHARDGNN_COMMON_LINE_READER_H_
#define SHARDGNN_COMMON_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn {

class LineReader {
 public:
  // Fails if the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(
      const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line without its '\n' (and '\r'), valid until the
  // next call. Returns false at the end of the input or on an error; then
  // status() tells which (OK at a clean end).
  bool Next(absl::string_view* line);

  const absl::Status& status() const { return status_; }
  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // Compressed bytes consumed so far and the file's size, for progress.
  int64_t bytes_read() const;
  int64_t file_size() const { return file_size_; }

  // An error naming this file and the current line: "<path>:<line>: <message>".
  absl::Status LineError(absl::string_view message) const;

 private:
  LineReader(std::string path, void* gz, int64_t file_size);
  bool Fill();

  std::string path_;
  void* gz_;  // gzFile
  int64_t file_size_;
  std::string buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  absl::Status status_;
};

// Number parsing for text importers: the whole field must be a number
// (surrounding spaces allowed).
bool ParseInt64(absl::string_view text, int64_t* value);
bool ParseFloat(absl::string_view text, float* value);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_LINE_READER_H_
