#include "common/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "absl/strings/str_format.h"

namespace shardgnn {
namespace {
std::atomic<bool> g_quiet_default{false};
}  // namespace

void Progress::SetQuietByDefault(bool quiet) { g_quiet_default = quiet; }

Progress::Progress(std::string task, int64_t total, std::string unit,
                   bool quiet, double interval_seconds)
    : task_(std::move(task)),
      total_(total),
      unit_(std::move(unit)),
      quiet_(quiet || g_quiet_default.load()),
      tty_(isatty(STDERR_FILENO) != 0),
      interval_(interval_seconds),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  // A task abandoned on error ends its in-place line so the error starts on a
  // fresh one.
  if (!finished_ && !quiet_ && tty_ && done_ > 0) std::fputc('\n', stderr);
}

double Progress::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

void Progress::Update(int64_t done) {
  done_ = done;
  if (quiet_ || (++calls_ & 4095) != 0) return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_print_).count() < interval_)
    return;
  last_print_ = now;
  Print(false);
}

void Progress::Done() {
  if (finished_) return;
  finished_ = true;
  if (!quiet_) Print(true);
}

void Progress::Print(bool final_line) {
  std::string text;
  double elapsed = ElapsedSeconds();
  if (final_line) {
    text =
        absl::StrFormat("%s: done, %s %s in %.1fs", task_,
                        HumanCount(static_cast<double>(done_)), unit_, elapsed);
  } else if (total_ > 0) {
    text = absl::StrFormat(
        "%s: %3.0f%% (%s/%s %s, %.1fs)", task_, 100.0 * done_ / total_,
        HumanCount(static_cast<double>(done_)),
        HumanCount(static_cast<double>(total_)), unit_, elapsed);
  } else {
    text =
        absl::StrFormat("%s: %s %s, %.1fs", task_,
                        HumanCount(static_cast<double>(done_)), unit_, elapsed);
  }
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

std::string HumanCount(double n) {
  if (n >= 1e9) return absl::StrFormat("%.2fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1e4) return absl::StrFormat("%.1fk", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  // (Two literals: clang checks absl::StrFormat's format at compile time.)
  return u == 0 ? absl::StrFormat("%.0f %s", bytes, units[u])
                : absl::StrFormat("%.1f %s", bytes, units[u]);
}

}  // namespace shardgnn
