#include "cli/run_supervisor.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "common/status.h"

namespace shardgnn::cli {
namespace {

using std::chrono::milliseconds;

std::atomic<int> g_signal{0};
void OnSignal(int signo) { g_signal = signo; }

// How long a failed run waits for the trainer that caused it to exit: one
// whose loader is blocked on an unreachable server exits within the client's
// call deadline and retries (graphstore/client.h: up to 4 attempts of 5 s).
constexpr milliseconds kSettleLimit = std::chrono::seconds(25);

// "exited with status N", or for 128+N, N a signal, "was killed by signal N
// (NAME)". 255 is an exit status (ssh's own, when its connection failed).
std::string ExitDescription(int code, const char* exited) {
  if (code > 128 && code <= 128 + 64) {
    return absl::StrCat("was killed by signal ", code - 128, " (",
                        strsignal(code - 128), ")");
  }
  return absl::StrCat(exited, " with status ", code);
}

}  // namespace

void InstallRunSignalHandlers() {
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int CaughtSignal() { return g_signal.load(); }

absl::StatusOr<std::string> WaitUntilReady(Subprocess& server) {
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(120000);
  while (std::chrono::steady_clock::now() < deadline) {
    if (int signo = g_signal.load()) {
      return absl::CancelledError(absl::StrCat("interrupted by signal ", signo,
                                               "; stopped every child"));
    }
    auto line = server.WaitForLine("ready on ", milliseconds(200));
    if (line.ok() || !absl::IsDeadlineExceeded(line.status())) return line;
  }
  return absl::DeadlineExceededError(
      absl::StrCat(server.name(), " not ready within 120 s; its last output:\n",
                   server.Tail(5)));
}

void PrintLine(const std::string& prefix, const std::string& line) {
  std::string text = prefix.empty()
                         ? line + "\n"
                         : absl::StrCat("[", prefix, "] ", line, "\n");
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void Supervisor::AddServer(std::unique_ptr<Subprocess> p, int part,
                           SubprocessOptions options) {
  servers_.push_back(std::move(p));
  server_options_.push_back(std::move(options));
  server_addresses_.emplace_back();
  server_parts_.push_back(part);
  server_exit_said_.push_back(false);
}

void Supervisor::StopTrainers() {
  for (auto& t : trainers_) t->Terminate(milliseconds(3000));
  trainers_.clear();
  server_restarted_ = false;
}

absl::Status Supervisor::WaitForTrainers() {
  restart_may_help_ = false;
  std::vector<bool> done(trainers_.size(), false);
  size_t finished = 0;
  while (finished < trainers_.size()) {
    if (int signo = g_signal.load()) {
      return absl::CancelledError(absl::StrCat("interrupted by signal ", signo,
                                               "; stopped every child"));
    }
    RETURN_IF_ERROR(CheckServers());
    for (size_t i = 0; i < trainers_.size(); ++i) {
      if (done[i]) continue;
      if (auto code = trainers_[i]->Poll()) {
        if (*code != 0) return TrainerFailure(i, *code);
        done[i] = true;
        ++finished;
      }
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return absl::OkStatus();
}

// The error for a failed trainer, naming the root cause. One failure cascades
// (a dead server or a dead peer makes the other trainers fail their calls and
// collectives), and the trainer that failed first may exit last: its loader
// can be blocked on calls until their deadline. So let the others settle, then
// prefer a server that exited, then a trainer killed by a signal, then a
// trainer that failed on its own, over trainers whose collective failed because
// of a peer (kPeerFailureExit).
absl::Status Supervisor::TrainerFailure(size_t first, int first_code) {
  auto rank = [](int code) {
    return code >= 128 ? 3 : code == kPeerFailureExit ? 1 : 2;
  };
  const auto start = std::chrono::steady_clock::now();
  size_t culprit = first;
  int culprit_code = first_code;
  for (;;) {
    RETURN_IF_ERROR(CheckServers());
    bool running = false;
    for (size_t i = 0; i < trainers_.size(); ++i) {
      auto code = trainers_[i]->Poll();
      if (!code && trainers_[i]->Stopped()) {
        // The others failed waiting for it (their peer timeout).
        return absl::AbortedError(absl::StrCat(
            trainers_[i]->name(), " (pid ", trainers_[i]->pid(),
            ") is stopped (SIGSTOP, or a debugger), so the other trainers "
            "cannot go on; ",
            trainers_[first]->name(), "'s last output:\n",
            trainers_[first]->Tail(3)));
      }
      if (!code) {
        running = true;
      } else if (*code != 0 && rank(*code) > rank(culprit_code)) {
        culprit = i;
        culprit_code = *code;
      }
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    // At least a moment for a signal-killed peer to be seen; longer (up to
    // a call deadline and its retries) while only peer failures are known.
    if (!running || (waited >= milliseconds(500) && rank(culprit_code) >= 2) ||
        waited >= kSettleLimit) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  restart_may_help_ = rank(culprit_code) != 2 || server_restarted_;
  const std::string how = ExitDescription(culprit_code, "failed");
  return absl::AbortedError(absl::StrCat(trainers_[culprit]->name(), " ", how,
                                         "; its last output:\n",
                                         trainers_[culprit]->Tail(5)));
}

// An error naming the first server that has exited and was not started again
// (RestartServer), once no other replica of its part runs; a replica that
// exited while another serves its part is a line.
absl::Status Supervisor::CheckServers() {
  for (size_t i = 0; i < servers_.size(); ++i) {
    auto code = servers_[i]->Poll();
    if (!code) continue;
    std::string where = server_addresses_[i].empty()
                            ? ""
                            : absl::StrCat(" (", server_addresses_[i], ")");
    if (!server_exit_said_[i] && RestartServer(i, *code, where)) continue;
    std::vector<std::string> others;
    for (size_t j = 0; j < servers_.size(); ++j) {
      if (j != i && server_parts_[j] == server_parts_[i] &&
          !servers_[j]->Poll()) {
        others.push_back(servers_[j]->name());
      }
    }
    if (others.empty()) {
      return absl::UnavailableError(absl::StrCat(
          servers_[i]->name(), where, " ", ExitDescription(*code, "exited"),
          " during training; its last output:\n", servers_[i]->Tail(5)));
    }
    if (!server_exit_said_[i]) {
      server_exit_said_[i] = true;
      PrintLine("", absl::StrCat("shardgnn run: ", servers_[i]->name(), where,
                                 " exited with status ", *code, "; part ",
                                 server_parts_[i], " is still served by ",
                                 absl::StrJoin(others, ", ")));
    }
  }
  return absl::OkStatus();
}

void Supervisor::StopAll() {
  for (auto& t : trainers_) t->Terminate(milliseconds(3000));
  for (auto& s : servers_) s->Terminate(milliseconds(5000));
}

void SetListenAddress(const std::string& address, SubprocessOptions* options) {
  for (size_t a = 0; a + 1 < options->argv.size(); ++a) {
    if (options->argv[a] == "--listen") options->argv[a + 1] = address;
  }
}

// Starts server i again, listening on the address it had (so the trainers'
// probes find it: sampler/internal/replica_set.h), if restarts are left;
// true once it is ready. Meanwhile the trainers wait for it (--server-wait)
// or use its part's other replicas.
bool Supervisor::RestartServer(size_t i, int code, const std::string& where) {
  if (server_restarts_left_ <= 0 || server_addresses_[i].empty() ||
      g_signal.load() != 0) {
    return false;
  }
  --server_restarts_left_;
  const std::string cause =
      absl::StrCat(servers_[i]->name(), where, " exited with status ", code);
  server_restarts_.push_back(cause);
  PrintLine("", absl::StrCat("shardgnn run: ", cause,
                             "; restarting it on the same address (server "
                             "restart ",
                             server_restarts_.size(), ")"));
  SubprocessOptions options = server_options_[i];
  SetListenAddress(server_addresses_[i], &options);
  auto started = Subprocess::Start(options);
  if (!started.ok()) {
    PrintLine("", absl::StrCat("shardgnn run: restarting ", servers_[i]->name(),
                               " failed: ", started.status().message()));
    server_restarts_left_ = 0;
    return false;
  }
  std::unique_ptr<Subprocess> old = std::move(servers_[i]);
  servers_[i] = std::move(started).value();
  auto ready = WaitUntilReady(*servers_[i]);
  if (!ready.ok()) {
    PrintLine("", absl::StrCat("shardgnn run: restarting ", servers_[i]->name(),
                               " failed: ", ready.status().message()));
    servers_[i] = std::move(old);  // Report the first exit.
    server_restarts_left_ = 0;     // And do not try again.
    return false;
  }
  PrintLine("", *ready);
  server_restarted_ = true;
  return true;
}

}  // namespace shardgnn::cli
