// Helpers for the datasets tests: writing small text / gzip fixtures and
// checking that a failed run left nothing behind.
#ifndef SHARDGNN_TESTS_DATASETS_TEST_FILES_H_
#define SHARDGNN_TESTS_DATASETS_TEST_FILES_H_

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace shardgnn::testing {

inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline void WriteGzip(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
}

// Cuts the last `bytes` bytes off a file.
inline void Truncate(const std::string& path, size_t bytes) {
  auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - bytes);
}

// Names of the entries in `dir` (to check that no output or temp dir was
// left behind).
inline std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_DATASETS_TEST_FILES_H_
