#include "common/line_reader.h"

#include <zlib.h>

#include <charconv>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {
constexpr size_t kChunk = 1 << 20;
}  // namespace

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(
    const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  gzbuffer(gz, 1 << 18);
  return std::unique_ptr<LineReader>(new LineReader(path, gz, size));
}

LineReader::LineReader(std::string path, void* gz, int64_t file_size)
    : path_(std::move(path)), gz_(gz), file_size_(file_size) {}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(gz_)); }

int64_t LineReader::bytes_read() const {
  return gzoffset(static_cast<gzFile>(gz_));
}

bool LineReader::Fill() {
  // Keep the unread tail, then read more after it.
  if (begin_ > 0) {
    buffer_.erase(0, begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  buffer_.resize(end_ + kChunk);
  int n = gzread(static_cast<gzFile>(gz_), buffer_.data() + end_, kChunk);
  if (n < 0) {
    int code;
    const char* message = gzerror(static_cast<gzFile>(gz_), &code);
    status_ = absl::DataLossError(absl::StrCat(
        path_, ": corrupt input after line ", line_number_, ": ", message));
    return false;
  }
  end_ += static_cast<size_t>(n);
  buffer_.resize(end_);
  if (n == 0) {
    int code = Z_OK;
    const char* message = gzerror(static_cast<gzFile>(gz_), &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      status_ = absl::DataLossError(
          absl::StrCat(path_, ": truncated or corrupt input after line ",
                       line_number_, ": ", message));
      return false;
    }
    eof_ = true;
  }
  return true;
}

bool LineReader::Next(absl::string_view* line) {
  if (!status_.ok()) return false;
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* newline = std::memchr(start, '\n', end_ - begin_);
    if (newline != nullptr) {
      size_t len = static_cast<const char*>(newline) - start;
      *line = absl::string_view(start, len);
      begin_ += len + 1;
      break;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      *line = absl::string_view(start, end_ - begin_);
      begin_ = end_;
      break;
    }
    if (!Fill()) return false;
  }
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  ++line_number_;
  return true;
}

absl::Status LineReader::LineError(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ":", line_number_, ": ", message));
}

bool ParseInt64(absl::string_view text, int64_t* value) {
  text = absl::StripAsciiWhitespace(text);
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseFloat(absl::string_view text, float* value) {
  text = absl::StripAsciiWhitespace(text);
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace shardgnn
