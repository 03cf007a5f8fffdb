// Looking at other processes through /proc, for tests that must show a
// launcher left no child running (no orphans) or must find a child to kill.
#ifndef SHARDGNN_TESTS_CLI_PROCESS_TABLE_H_
#define SHARDGNN_TESTS_CLI_PROCESS_TABLE_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace shardgnn::testing {

// A process found in /proc.
struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string cmdline;  // Arguments joined by spaces.
};

// Every live process (not zombies: their cmdline is empty) whose command line
// contains `needle`, other than the calling process.
std::vector<ProcessInfo> ProcessesMentioning(const std::string& needle);

// Those of ProcessesMentioning(needle) whose parent is `parent`.
std::vector<ProcessInfo> ChildrenOf(pid_t parent, const std::string& needle);

// One line per process, for failure messages.
std::string Describe(const std::vector<ProcessInfo>& processes);

// The local addresses ("127.0.0.1:PORT", "0.0.0.0:PORT", "[::]:PORT") of the
// TCP sockets `pid` listens on: its socket descriptors matched by inode with
// /proc/PID/net/tcp and tcp6.
std::vector<std::string> ListeningAddresses(pid_t pid);

// Among the children of `shardgnn run`: the pids of part `part`'s storage
// servers (`serve ... --part PART ...`), in the order listed.
std::vector<pid_t> ServersOfPart(const std::vector<ProcessInfo>& children,
                                 int part);

// Among the children of `shardgnn run`: the pid of the trainer of rank
// `rank` (trainers start in rank order: the rank-th lowest pid), or 0.
pid_t TrainerOfRank(const std::vector<ProcessInfo>& children, int rank);

// True while `pid` runs; false once it has exited (also as an unreaped zombie).
bool IsAlive(pid_t pid);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_CLI_PROCESS_TABLE_H_
