// A fresh temporary directory per test, removed at the end of the test.
#ifndef SHARDGNN_TESTS_TESTING_TEMP_DIR_H_
#define SHARDGNN_TESTS_TESTING_TEMP_DIR_H_

#include <string>

namespace shardgnn::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name
  std::string Sub(const std::string& name) const;

 private:
  std::string path_;
};

// Absolute path of a file in the source tree ("datasets/cora/...").
std::string SourcePath(const std::string& relative);
// Absolute path of the built shardgnn binary.
std::string ShardgnnBinary();

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_TEMP_DIR_H_
