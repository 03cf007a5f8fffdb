#include "common/file_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace fs = std::filesystem;

namespace {

// Removes the staging directories ".NAME.partial-PID" in `parent` whose
// process no longer exists on this machine (a killed import or partition):
// kill(PID, 0) failing with ESRCH. A live process's (or one we may not
// signal) is left alone, and so is anything else.
void RemoveStalePartials(const fs::path& parent, const std::string& name) {
  const std::string prefix = absl::StrCat(".", name, ".partial-");
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= prefix.size() ||
        file.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    const std::string digits = file.substr(prefix.size());
    if (digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == getpid()) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<StagingDir>> StagingDir::Create(
    const std::string& final_path) {
  std::error_code ec;
  fs::path final(final_path);
  if (final.filename().empty()) final = final.parent_path();
  if (fs::exists(final, ec)) {
    return absl::AlreadyExistsError(
        absl::StrCat(final.string(),
                     ": output already exists; remove it or choose "
                     "another path"));
  }
  fs::path parent =
      final.has_parent_path() ? final.parent_path() : fs::path(".");
  // As `mkdir -p`: missing parents are made (and left, even if the output
  // is not written: they are the user's path).
  if (!fs::is_directory(parent, ec) &&
      (fs::create_directories(parent, ec), !fs::is_directory(parent, ec))) {
    return absl::FailedPreconditionError(absl::StrCat(
        parent.string(), ": cannot create the output's parent directory",
        ec ? absl::StrCat(": ", ec.message()) : ""));
  }
  RemoveStalePartials(parent, final.filename().string());
  fs::path temp = parent / absl::StrCat(".", final.filename().string(),
                                        ".partial-", getpid());
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec)) {
    return absl::PermissionDeniedError(
        absl::StrCat(temp.string(), ": cannot create: ", ec.message()));
  }
  return std::unique_ptr<StagingDir>(
      new StagingDir(final.string(), temp.string()));
}

StagingDir::StagingDir(std::string final_path, std::string temp_path)
    : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)) {}

StagingDir::~StagingDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_path_, ec);
  }
}

absl::Status StagingDir::Commit() {
  std::error_code ec;
  if (fs::exists(final_path_, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        final_path_, ": appeared while the output was being built"));
  }
  fs::rename(temp_path_, final_path_, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("renaming ", temp_path_, " to ",
                                            final_path_, ": ", ec.message()));
  committed_ = true;
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents, mode_t mode) {
  std::string temp = absl::StrCat(path, ".tmp-", getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0)
    return absl::PermissionDeniedError(
        absl::StrCat(temp, ": cannot create: ", std::strerror(errno)));
  // A temporary file left behind keeps its own mode: never more than `mode`.
  struct stat st;
  if (::fstat(fd, &st) != 0 || ((st.st_mode & 07777 & ~mode) != 0 &&
                                ::fchmod(fd, st.st_mode & 07777 & mode) != 0)) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat(temp, ": cannot set its mode: ", std::strerror(err)));
  }
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": write failed: ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": write failed: ", std::strerror(err)));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat(path, ": rename failed: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return out.str();
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty()) return std::string(b);
  if (a.back() == '/') return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

}  // namespace shardgnn
