// The supervising half of `shardgnn run` (cli/run_cmd.cc): watching the
// storage servers and trainers it started as child processes until the
// trainers finish, one of them fails, or SIGINT/SIGTERM arrives.
//
// A Supervisor owns the children handed to it and stops them in
// StopTrainers() and StopAll() (graceful first); its destructor kills any
// still running (common/subprocess.h), and they die with the launcher even
// when it is killed outright. A server that exits is started again on the
// address it announced, up to SetMaxServerRestarts() times in all; the run
// fails once no server of a part is left. A failed trainer is reported by the
// root cause of the failures it set off: a server that exited, then a trainer
// killed by a signal, then a trainer's own error, before trainers whose
// collectives failed because of a peer. Not thread-safe: the launcher's
// thread makes every call.
#ifndef SHARDGNN_CLI_RUN_SUPERVISOR_H_
#define SHARDGNN_CLI_RUN_SUPERVISOR_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/subprocess.h"

namespace shardgnn::cli {

// From here on SIGINT and SIGTERM no longer end the launcher: the waits below
// return CANCELLED ("interrupted by signal N; stopped every child") and the
// caller stops every child (Supervisor::StopAll). Forgets a signal seen
// before.
void InstallRunSignalHandlers();

// The signal those handlers caught since, or 0.
int CaughtSignal();

// The storage server's "... ready on HOST:PORT ..." line; CANCELLED on a
// signal, DEADLINE_EXCEEDED (with its last output) after two minutes.
absl::StatusOr<std::string> WaitUntilReady(Subprocess& server);

// One line of a child's output (or the launcher's own) on stdout, with the
// child's prefix ("[server 1] ..."; none for an empty prefix). Safe to call
// from the children's reader threads.
void PrintLine(const std::string& prefix, const std::string& line);

// Points the storage server command in `options` (its "--listen ADDRESS"
// pair) at `address`.
void SetListenAddress(const std::string& address, SubprocessOptions* options);

class Supervisor {
 public:
  // Server `p`, started with `options`, serves part `part`; the run goes on
  // while every part has a live server. A server that exits is started again
  // on its address, up to SetMaxServerRestarts() times in all.
  void AddServer(std::unique_ptr<Subprocess> p, int part,
                 SubprocessOptions options);
  // Server `i`, which exited before it was ready, replaced by `p` started
  // with `options` (another port).
  void ReplaceServer(size_t i, std::unique_ptr<Subprocess> p,
                     SubprocessOptions options) {
    servers_[i] = std::move(p);
    server_options_[i] = std::move(options);
  }
  const SubprocessOptions& server_options(size_t i) const {
    return server_options_[i];
  }
  void SetMaxServerRestarts(int n) { server_restarts_left_ = n; }
  // The causes of the server restarts so far, in order.
  const std::vector<std::string>& server_restarts() const {
    return server_restarts_;
  }
  // The address server `i` announced: where a restart listens, and for
  // error messages.
  void SetServerAddress(size_t i, const std::string& address) {
    server_addresses_[i] = address;
  }
  void AddTrainer(std::unique_ptr<Subprocess> p) {
    trainers_.push_back(std::move(p));
  }
  const std::vector<std::unique_ptr<Subprocess>>& servers() const {
    return servers_;
  }

  // Polls the children until every trainer has exited 0 (OK), a trainer
  // fails (ABORTED naming the root cause, with its last output), no server
  // of a part is left (UNAVAILABLE naming the server), or a signal arrives
  // (CANCELLED).
  absl::Status WaitForTrainers();

  // Whether the last failure WaitForTrainers reported may pass with a
  // restart of the trainers: a trainer killed by a signal, or collectives
  // that failed without a trainer failing on its own. A trainer's own error
  // (bad data, a diverged loss, ...) would come back; a dead server, a
  // stopped trainer and the user's Ctrl-C are not the trainers' to mend.
  // After a server was restarted, though, any trainer failure may: a
  // restarted server holds no state of the run (learned embedding tables
  // are reloaded from their snapshots by resumed trainers).
  bool RestartMayHelp() const { return restart_may_help_; }

  // Stops every trainer (the servers keep running) and forgets them.
  void StopTrainers();
  // Stops trainers, then the servers this run started (graceful first).
  void StopAll();

 private:
  absl::Status TrainerFailure(size_t first, int first_code);
  absl::Status CheckServers();
  bool RestartServer(size_t i, int code, const std::string& where);

  std::vector<std::unique_ptr<Subprocess>> servers_;
  std::vector<std::string> server_addresses_;
  std::vector<int> server_parts_;
  std::vector<bool> server_exit_said_;
  std::vector<SubprocessOptions> server_options_;
  int server_restarts_left_ = 0;
  std::vector<std::string> server_restarts_;
  std::vector<std::unique_ptr<Subprocess>> trainers_;
  bool restart_may_help_ = false;
  // A server was restarted since the trainers were (re)started.
  bool server_restarted_ = false;
};

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_RUN_SUPERVISOR_H_
