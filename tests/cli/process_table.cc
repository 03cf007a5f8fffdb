#include "tests/cli/process_table.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

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

std::vector<pid_t> ServersOfPart(const std::vector<ProcessInfo>& children,
                                 int part) {
  std::vector<pid_t> pids;
  const std::string needle = " --part " + std::to_string(part) + " ";
  for (const auto& c : children) {
    if (c.cmdline.find(" serve ") != std::string::npos &&
        c.cmdline.find(needle) != std::string::npos) {
      pids.push_back(c.pid);
    }
  }
  return pids;
}

pid_t TrainerOfRank(const std::vector<ProcessInfo>& children, int rank) {
  std::vector<pid_t> pids;
  for (const auto& c : children) {
    if (c.cmdline.find(" train ") != std::string::npos) pids.push_back(c.pid);
  }
  std::sort(pids.begin(), pids.end());
  return rank < static_cast<int>(pids.size()) ? pids[rank] : 0;
}

bool IsAlive(pid_t pid) {
  // Gone, or a zombie nobody reaped yet: either way no longer running.
  std::string stat = ReadProcFile(pid, "stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

}  // namespace shardgnn::testing

namespace shardgnn::testing {

std::vector<std::string> ListeningAddresses(pid_t pid) {
  // Socket inodes of the process's descriptors.
  std::set<std::string> inodes;
  std::error_code ec;
  const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
  for (const auto& entry : std::filesystem::directory_iterator(fd_dir, ec)) {
    std::error_code link_ec;
    const std::string target =
        std::filesystem::read_symlink(entry.path(), link_ec).string();
    if (!link_ec && target.rfind("socket:[", 0) == 0)
      inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> out;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/net/", table));
    std::string line;
    std::getline(in, line);  // Header.
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, tmo,
          inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retr >>
          uid >> tmo >> inode;
      if (state != "0A" || inodes.count(inode) == 0) continue;  // LISTEN
      const size_t colon = local.find(':');
      const std::string hex = local.substr(0, colon);
      const int port = std::stoi(local.substr(colon + 1), nullptr, 16);
      std::string addr;
      // IPv4 (little-endian bytes), also when mapped into IPv6
      // (::ffff:a.b.c.d: 0000000000000000FFFF0000 then the IPv4 word).
      const bool mapped =
          hex.size() == 32 && hex.rfind("0000000000000000FFFF0000", 0) == 0;
      if (hex.size() == 8 || mapped) {
        const unsigned long v =
            std::stoul(mapped ? hex.substr(24) : hex, nullptr, 16);
        addr = absl::StrCat(v & 0xff, ".", (v >> 8) & 0xff, ".",
                            (v >> 16) & 0xff, ".", v >> 24);
      } else {
        addr = hex == std::string(32, '0')                 ? "[::]"
               : hex == "00000000000000000000000001000000" ? "[::1]"
                                                           : "[" + hex + "]";
      }
      out.push_back(absl::StrCat(addr, ":", port));
    }
  }
  return out;
}

}  // namespace shardgnn::testing
