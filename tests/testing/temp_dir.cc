#include "tests/testing/temp_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace shardgnn::testing {

TempDir::TempDir() {
  std::string base =
      std::filesystem::temp_directory_path().string() + "/shardgnn-test-XXXXXX";
  if (mkdtemp(base.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  path_ = base;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Sub(const std::string& name) const {
  return path_ + "/" + name;
}

std::string SourcePath(const std::string& relative) {
  return std::string(SHARDGNN_SOURCE_DIR) + "/" + relative;
}

std::string ShardgnnBinary() { return SHARDGNN_BINARY; }

}  // namespace shardgnn::testing
