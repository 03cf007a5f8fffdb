#include "cli/ssh_remote.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace shardgnn::cli {

std::string ShellQuote(absl::string_view s) {
  bool plain = !s.empty();
  for (char c : s) {
    plain = plain && (absl::ascii_isalnum(c) || c == '/' || c == '.' ||
                      c == '_' || c == '-' || c == ':' || c == ',' ||
                      c == '=' || c == '@' || c == '+');
  }
  if (plain) return std::string(s);
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

std::vector<std::string> SshArgv(const ClusterSpec& spec,
                                 const ClusterHost& host) {
  std::vector<std::string> argv = {"ssh"};
  if (!spec.ssh_config.empty()) {
    argv.push_back("-F");
    argv.push_back(spec.ssh_config);
  }
  for (const std::string& option :
       {std::string("BatchMode=yes"),
        absl::StrCat("ConnectTimeout=", spec.connect_timeout_seconds),
        absl::StrCat("ServerAliveInterval=", spec.alive_interval_seconds),
        std::string("ServerAliveCountMax=3")}) {
    argv.push_back("-o");
    argv.push_back(option);
  }
  for (const std::string& option : spec.ssh_options) {
    argv.push_back("-o");
    argv.push_back(option);
  }
  if (host.ssh_port > 0) {
    argv.push_back("-p");
    argv.push_back(std::to_string(host.ssh_port));
  }
  if (!host.user.empty()) {
    argv.push_back("-l");
    argv.push_back(host.user);
  }
  if (!host.identity.empty()) {
    argv.push_back("-i");
    argv.push_back(host.identity);
  }
  argv.push_back(host.ssh);
  return argv;
}

std::string RsyncShell(const ClusterSpec& spec, const ClusterHost& host) {
  std::vector<std::string> argv = SshArgv(spec, host);
  argv.pop_back();  // The destination: rsync adds it.
  std::vector<std::string> quoted;
  for (const auto& a : argv) quoted.push_back(ShellQuote(a));
  return absl::StrJoin(quoted, " ");
}

std::string ShCommand(const std::string& script) {
  return absl::StrCat("exec sh -c ", ShellQuote(script));
}

std::string RemoteProcessScript(const RemoteProcess& p) {
  std::vector<std::string> command = {"env"};
  for (const auto& [name, value] : p.env) {
    command.push_back(ShellQuote(absl::StrCat(name, "=", value)));
  }
  command.push_back("setsid");
  for (const auto& a : p.argv) command.push_back(ShellQuote(a));
  std::string script =
      absl::StrCat("cd ", ShellQuote(p.work_dir), " || exit 96\n");
  if (!p.gloo_address.empty()) {
    absl::StrAppend(&script, "if [ -z \"${GLOO_SOCKET_IFNAME:-}\" ]; then\n",
                    "  i=$(PATH=\"$PATH:/usr/sbin:/sbin\" ip -o addr show to ",
                    ShellQuote(p.gloo_address),
                    " 2>/dev/null | awk '{print $2; exit}')\n",
                    "  if [ -n \"$i\" ]; then GLOO_SOCKET_IFNAME=$i; export "
                    "GLOO_SOCKET_IFNAME; fi\n",
                    "fi\n");
  }
  // setsid does not fork here (a background job of a shell without job
  // control leads no process group), so $! is the process and its group.
  // Such a job's stdin is /dev/null, so the watcher reads ssh's stdin from
  // fd 3, a copy made first.
  absl::StrAppend(&script, "exec 3<&0\n", absl::StrJoin(command, " "),
                  " </dev/null 3<&- &\n", "pid=$!\n", "echo $pid > ",
                  ShellQuote(p.pid_file), "\n",
                  "(cat <&3 >/dev/null; kill -TERM -$pid; sleep ",
                  p.grace_seconds, "; kill -KILL -$pid) >/dev/null 2>&1 &\n",
                  "watch=$!\n", "exec 3<&-\n", "wait $pid\n", "code=$?\n",
                  "rm -f ", ShellQuote(p.pid_file), "\n",
                  "kill $watch 2>/dev/null\n", "exit $code\n");
  return script;
}

std::string SweepScript(const std::string& work_dir, const std::string& pid_dir,
                        const std::string& remove, int grace_seconds) {
  return absl::StrCat(
      "cd ", ShellQuote(work_dir), " || exit 0\n", "left=\n", "for f in ",
      ShellQuote(pid_dir), "/*.pid; do\n", "  [ -f \"$f\" ] || continue\n",
      "  pid=$(cat \"$f\")\n",
      "  if [ -n \"$pid\" ] && kill -0 \"$pid\" 2>/dev/null; then\n",
      "    echo \"stopping $(basename \"$f\" .pid) (pid $pid), still "
      "running\"\n",
      "    kill -TERM -\"$pid\" 2>/dev/null; left=\"$left $pid\"\n", "  fi\n",
      "  rm -f \"$f\"\n", "done\n", "n=0\n",
      "while [ -n \"$left\" ] && [ $n -lt ", grace_seconds * 5, " ]; do\n",
      "  alive=\n",
      "  for pid in $left; do kill -0 \"$pid\" 2>/dev/null && "
      "alive=\"$alive $pid\"; done\n",
      "  left=$alive; [ -n \"$left\" ] && sleep 0.2; n=$((n+1))\n", "done\n",
      "for pid in $left; do kill -KILL -\"$pid\" 2>/dev/null; done\n", "rm -f ",
      ShellQuote(remove), "\n", "exit 0\n");
}

}  // namespace shardgnn::cli
