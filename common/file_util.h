// Filesystem helpers that keep outputs whole: nothing half-written is ever left
// under a final name.
#ifndef SHARDGNN_COMMON_FILE_UTIL_H_
#define SHARDGNN_COMMON_FILE_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn {

// An output directory built under a temporary sibling name and renamed into
// place by Commit().
//
// Create() fails if `final_path` already exists (shardgnn never overwrites a
// user's output) or its parent cannot be made (missing parents are created,
// as `mkdir -p`) or written. Until Commit() the work
// happens in path() (".<name>.partial-<pid>" beside the final path); if the
// object is destroyed without Commit() succeeding, the temporary directory is
// removed, so a failed import or partition leaves nothing behind. A process
// killed before that leaves its ".<name>.partial-<pid>": Create() removes
// those of the same output whose process no longer exists on this machine
// (never a live process's). Not thread-safe.
class StagingDir {
 public:
  static absl::StatusOr<std::unique_ptr<StagingDir>> Create(
      const std::string& final_path);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::string& path() const { return temp_path_; }
  const std::string& final_path() const { return final_path_; }

  // Renames the temporary directory to the final path.
  absl::Status Commit();

 private:
  StagingDir(std::string final_path, std::string temp_path);
  std::string final_path_;
  std::string temp_path_;
  bool committed_ = false;
};

// Writes `contents` to `path` through a temporary file, fsync and rename.
// The file has `mode` (less the umask's bits) from its first byte on: 0600
// for a secret, never readable by others even for a moment.
absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents, mode_t mode = 0644);

// Reads a whole (small) file.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Joins path components with '/'.
std::string JoinPath(absl::string_view a, absl::string_view b);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_FILE_UTIL_H_
