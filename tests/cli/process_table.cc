#include "tests/cli/process_table.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shardgnn::testing {

namespace {

std::string ReadProcFile(pid_t pid, const char* name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/", name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::vector<ProcessInfo> ProcessesMentioning(const std::string& needle) {
  std::vector<ProcessInfo> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    int pid;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid == getpid()) continue;
    std::string raw = ReadProcFile(pid, "cmdline");
    if (raw.empty()) continue;
    std::vector<std::string> args =
        absl::StrSplit(raw, '\0', absl::SkipEmpty());
    ProcessInfo info{pid, 0, absl::StrJoin(args, " ")};
    if (info.cmdline.find(needle) == std::string::npos) continue;
    // "pid (comm) state ppid ...": the ppid follows the last ')'.
    std::string stat = ReadProcFile(pid, "stat");
    size_t paren = stat.rfind(')');
    if (paren != std::string::npos) {
      std::vector<std::string> fields =
          absl::StrSplit(stat.substr(paren + 2), ' ');
      if (fields.size() > 1) (void)absl::SimpleAtoi(fields[1], &info.ppid);
    }
    found.push_back(info);
  }
  closedir(proc);
  return found;
}

std::vector<ProcessInfo> ChildrenOf(pid_t parent, const std::string& needle) {
  std::vector<ProcessInfo> children;
  for (auto& p : ProcessesMentioning(needle)) {
    if (p.ppid == parent) children.push_back(p);
  }
  return children;
}

std::string Describe(const std::vector<ProcessInfo>& processes) {
  std::string text;
  for (const auto& p : processes) {
    absl::StrAppend(&text, "\n  pid ", p.pid, " (parent ", p.ppid,
                    "): ", p.cmdline);
  }
  return text;
}

bool IsAlive(pid_t pid) {
  // Gone, or a zombie nobody reaped yet: either way no longer running.
  std::string stat = ReadProcFile(pid, "stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

}  // namespace shardgnn::testing
