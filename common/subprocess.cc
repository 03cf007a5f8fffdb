#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardgnn {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    SubprocessOptions options) {
  if (options.argv.empty())
    return absl::InvalidArgumentError("Subprocess: empty argv");
  if (options.name.empty()) options.name = options.argv[0];
  std::unique_ptr<Subprocess> p(new Subprocess(std::move(options)));

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  // Close-on-exec on both ends: no other child inherits the parent's end,
  // which would keep the pipe open after CloseStdin().
  int in_fds[2] = {-1, -1};
  if (p->options_.stdin_pipe && pipe2(in_fds, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  // Everything the child needs is prepared before fork: only async-signal-safe
  // calls happen in the child.
  std::vector<char*> argv;
  for (auto& a : p->options_.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    if (!p->options_.env.count(key)) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : p->options_.env)
    env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (in_fds[0] >= 0) close(in_fds[0]);
    if (in_fds[1] >= 0) close(in_fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(
        0,
        0);  // Its own process group: signals reach the whole tree it starts.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);  // The parent died before prctl took effect.
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    if (in_fds[0] >= 0) {
      dup2(in_fds[0], STDIN_FILENO);
    } else {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    }
    execve(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // Also here, so the group exists before the parent
                      // signals it (no race with the child).
  close(fds[1]);
  if (in_fds[0] >= 0) close(in_fds[0]);
  p->stdin_fd_ = in_fds[1];
  p->pid_ = pid;
  p->reader_ = std::thread([raw = p.get(), fd = fds[0]] { raw->ReadLoop(fd); });
  return p;
}

Subprocess::Subprocess(SubprocessOptions options)
    : options_(std::move(options)) {}

Subprocess::~Subprocess() {
  CloseStdin();
  if (pid_ > 0 && !Poll().has_value()) {
    kill(-pid_, SIGKILL);
    Reap(/*block=*/true);
  }
  // Descendants that outlived the child would keep the output pipe open.
  if (pid_ > 0) kill(-pid_, SIGKILL);
  if (reader_.joinable()) reader_.join();
}

void Subprocess::ReadLoop(int fd) {
  std::string pending;
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0, newline;
    while ((newline = pending.find('\n', start)) != std::string::npos) {
      std::string line = pending.substr(start, newline - start);
      start = newline + 1;
      if (options_.on_line) options_.on_line(line);
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
      if (lines_.size() > options_.max_kept_lines) lines_.pop_front();
      cv_.notify_all();
    }
    pending.erase(0, start);
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending.empty()) {
    if (options_.on_line) options_.on_line(pending);
    lines_.push_back(pending);
  }
  output_closed_ = true;
  cv_.notify_all();
}

std::optional<int> Subprocess::Reap(bool block) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (exit_status_.has_value()) return exit_status_;
  }
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::unique_lock<std::mutex> lock(mu_);
  exit_status_ = code;
  cv_.notify_all();
  // Let the reader take in what the child wrote before it exited, so Tail() and
  // on_line see its last words. Bounded: a descendant that inherited the pipe
  // may keep it open.
  cv_.wait_for(lock, std::chrono::seconds(1), [&] { return output_closed_; });
  return code;
}

std::optional<int> Subprocess::Poll() { return Reap(/*block=*/false); }

bool Subprocess::Stopped() const {
  std::ifstream in(absl::StrCat("/proc/", pid_, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state == 'T' || state == 't';
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto code = Poll()) return code;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Subprocess::Signal(int signo) {
  if (!Poll().has_value()) kill(-pid_, signo);
}

void Subprocess::CloseStdin() {
  const int fd = stdin_fd_.exchange(-1);
  if (fd >= 0) close(fd);
}

int Subprocess::Terminate(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  Signal(SIGCONT);  // A stopped child handles SIGTERM once continued.
  if (auto code = Wait(grace)) return *code;
  kill(-pid_, SIGKILL);
  return *Reap(/*block=*/true);
}

absl::StatusOr<std::string> Subprocess::WaitForLine(
    const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    for (const auto& line : lines_) {
      if (line.find(needle) != std::string::npos) return line;
    }
    if (output_closed_) {
      lock.unlock();
      auto code = Wait(std::chrono::milliseconds(2000));
      return absl::FailedPreconditionError(absl::StrCat(
          options_.name, " exited (status ",
          code ? std::to_string(*code) : std::string("unknown"),
          ") before printing '", needle, "'; its last output:\n", Tail(10)));
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      lock.unlock();
      return absl::DeadlineExceededError(
          absl::StrCat(options_.name, " did not print '", needle, "' within ",
                       timeout.count(), " ms; its last output:\n", Tail(10)));
    }
  }
}

std::string Subprocess::Tail(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t start = lines_.size() > n ? lines_.size() - n : 0;
  std::vector<std::string> tail(
      lines_.begin() + static_cast<std::ptrdiff_t>(start), lines_.end());
  return absl::StrJoin(tail, "\n");
}

}  // namespace shardgnn
