// How `shardgnn launch` (cli/launch_cmd.cc) reaches its hosts: OpenSSH's
// `ssh` and `rsync -e ssh` command lines for a host of the cluster file, and
// the POSIX sh scripts run there.
//
// Every remote process runs under a small sh wrapper (RemoteProcessScript):
// the process is started in a session of its own (setsid) with its pid in a
// pid file, and the wrapper waits for it and exits with its status, which
// ssh passes back (a signal N as 128+N). The wrapper also reads its stdin,
// which is ssh's, held open by the launcher (SubprocessOptions::stdin_pipe):
// when it ends (the launcher closed it to stop the process, or died, or the
// connection was lost) the wrapper sends SIGTERM to the process's group, and
// SIGKILL after a grace period. SweepScript kills what a lost connection may
// still have left, by the pid files. Pure functions; nothing here runs.
#ifndef SHARDGNN_CLI_SSH_REMOTE_H_
#define SHARDGNN_CLI_SSH_REMOTE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/cluster_file.h"

namespace shardgnn::cli {

// `s` as one word for POSIX sh ('...', with ' written '\'').
std::string ShellQuote(absl::string_view s);

// `ssh OPTIONS... DESTINATION`: the cluster's -F file, BatchMode=yes (never a
// password prompt), ConnectTimeout, ServerAliveInterval (a silent host is
// given up after 3 of them), the host's -p, -l, -i, and the cluster's extra
// -o options. The remote command goes after it as one argument.
std::vector<std::string> SshArgv(const ClusterSpec& spec,
                                 const ClusterHost& host);

// `ssh OPTIONS...` without the destination, as one string for rsync's -e.
std::string RsyncShell(const ClusterSpec& spec, const ClusterHost& host);

// The remote command that runs `script` under sh, whatever the login shell.
std::string ShCommand(const std::string& script);

struct RemoteProcess {
  std::string work_dir;  // Remote; relative to the login directory.
  std::string pid_file;  // Relative to work_dir.
  std::map<std::string, std::string> env;
  std::vector<std::string> argv;
  // When set (an IP address of the host), GLOO_SOCKET_IFNAME is set to the
  // interface holding it, unless the environment already names one: the
  // trainers' collectives then use the address the cluster file gives.
  std::string gloo_address;
  int grace_seconds = 10;  // From SIGTERM to SIGKILL once stdin ends.
};

// The wrapper script described above.
std::string RemoteProcessScript(const RemoteProcess& process);

// Kills (SIGTERM, then SIGKILL after `grace_seconds`) the process group of
// every pid file in `pid_dir` (relative to `work_dir`) whose process still
// runs, naming each on stdout, then removes the pid files and `remove` (a
// path relative to work_dir: the run's token).
std::string SweepScript(const std::string& work_dir, const std::string& pid_dir,
                        const std::string& remove, int grace_seconds);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_SSH_REMOTE_H_
