// Child processes for the local launcher (`shardgnn run`) and for tests that
// run real servers and trainers.
//
// A Subprocess starts a program with a pipe on its stdout and stderr and a
// background thread that reads both line by line: every line is handed to an
// optional callback (the launcher forwards it with a prefix) and kept for
// WaitForLine(), which is how a parent learns that a server is ready ("...
// ready on 127.0.0.1:PORT"). Each child leads its own process group (signals go
// to the whole group) and is started with PR_SET_PDEATHSIG(SIGKILL), so they
// die with the parent even when the parent is killed outright: no orphans. The
// destructor kills a child still running (SIGKILL) and reaps it. Thread-safe:
// the callback runs on the reader thread; other methods may be called from any
// one thread.
#ifndef SHARDGNN_COMMON_SUBPROCESS_H_
#define SHARDGNN_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn {

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the program path.
  std::map<std::string, std::string>
      env;           // Set in the child on top of the parent's environment.
  std::string name;  // For messages ("server 0"); defaults to argv[0].
  // Called on the reader thread with each output line (stdout and stderr
  // alike), without the newline.
  std::function<void(const std::string& line)> on_line;
  size_t max_kept_lines = 1000;  // Lines kept for WaitForLine / Tail.
  // The child's stdin: /dev/null, or (true) a pipe the parent keeps open
  // until CloseStdin() or its destructor, so the child sees end-of-file when
  // the parent lets go or dies (ssh passes it on to the remote command).
  bool stdin_pipe = false;
};

class Subprocess {
 public:
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      SubprocessOptions options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return options_.name; }

  // Returns the first output line containing `needle` (including lines already
  // seen). Fails with DEADLINE_EXCEEDED after `timeout`, or FAILED_PRECONDITION
  // if the child exits first (with its exit status and its last output lines in
  // the message).
  absl::StatusOr<std::string> WaitForLine(const std::string& needle,
                                          std::chrono::milliseconds timeout);

  // The exit status if the child has exited (reaped), without blocking. As in a
  // shell: 128+N for signal N.
  std::optional<int> Poll();
  // Whether the child is running but stopped (SIGSTOP, SIGTSTP, a debugger):
  // state T or t in /proc/PID/stat.
  bool Stopped() const;
  // Waits up to `timeout` for the child to exit.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGTERM (and SIGCONT, for a stopped child), then SIGKILL if it has not
  // exited within `grace`. Returns the exit
  // status.
  int Terminate(std::chrono::milliseconds grace);
  void Signal(int signo);
  // With SubprocessOptions::stdin_pipe: closes the parent's end, so the child
  // reads end-of-file. Otherwise does nothing.
  void CloseStdin();

  // The last `n` kept output lines, joined by newlines (for error messages).
  std::string Tail(size_t n) const;

 private:
  explicit Subprocess(SubprocessOptions options);
  void ReadLoop(int fd);
  std::optional<int> Reap(bool block);

  SubprocessOptions options_;
  pid_t pid_ = -1;
  std::atomic<int> stdin_fd_{-1};  // The parent's end of the stdin pipe.
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_ ABSL_GUARDED_BY(mu_);
  bool output_closed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<int> exit_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_SUBPROCESS_H_
