#include "common/progress.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shardgnn {
namespace {

std::atomic<bool> g_quiet_default{false};

int64_t ToNanos(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1e9));
}

// The coarse monotonic clock: a vDSO read without the TSC, a few ns, with
// the resolution of a timer tick (1-4 ms). Good enough to decide whether a
// line may be due.
int64_t CoarseNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

bool IsTerminal(const ProgressOptions& options) {
  switch (options.mode) {
    case ProgressOptions::Mode::kTerminal:
      return true;
    case ProgressOptions::Mode::kLines:
      return false;
    case ProgressOptions::Mode::kAuto:
      break;
  }
  return options.out != nullptr && isatty(fileno(options.out)) != 0;
}

// One line on a terminal is rewritten in place; a log gets whole lines.
void Emit(std::FILE* out, bool tty, const std::string& text, bool final_line) {
  if (tty) {
    std::fprintf(out, "\r\033[K%s%s", text.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(out, "%s\n", text.c_str());
  }
  std::fflush(out);
}

}  // namespace

void Progress::SetQuietByDefault(bool quiet) { g_quiet_default = quiet; }

Progress::Progress(std::string task, int64_t total, std::string unit,
                   bool quiet, double interval_seconds)
    : Progress(std::move(task), total, std::move(unit), [&] {
        ProgressOptions options;
        options.quiet = quiet;
        options.interval_seconds = interval_seconds;
        return options;
      }()) {}

Progress::Progress(std::string task, int64_t total, std::string unit,
                   ProgressOptions options)
    : task_(std::move(task)),
      total_(total),
      unit_(std::move(unit)),
      options_(std::move(options)),
      quiet_(options_.quiet || g_quiet_default.load() ||
             options_.out == nullptr),
      tty_(IsTerminal(options_)),
      start_(Now()) {
  const int64_t interval = ToNanos(options_.interval_seconds);
  next_due_ns_ = options_.clock ? interval : CoarseNanos() + interval;
}

Progress::~Progress() {
  // A task abandoned on error ends its in-place line so the error starts on a
  // fresh one.
  if (!finished_ && !quiet_ && tty_ && printed_) {
    std::fputc('\n', options_.out);
    std::fflush(options_.out);
  }
}

std::chrono::steady_clock::time_point Progress::Now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

double Progress::ElapsedSeconds() const {
  return std::chrono::duration<double>(Now() - start_).count();
}

void Progress::Update(int64_t done) {
  done_ = done;
  // All done: the caller's Done() line follows, a 100% line would repeat it.
  if (quiet_ || finished_ || (total_ > 0 && done >= total_)) return;
  const int64_t now =
      options_.clock
          ? std::chrono::duration_cast<std::chrono::nanoseconds>(Now() - start_)
                .count()
          : CoarseNanos();
  if (now < next_due_ns_) return;
  next_due_ns_ = now + ToNanos(options_.interval_seconds);
  Print(false);
}

void Progress::Done() {
  if (finished_) return;
  finished_ = true;
  if (!quiet_) Print(true);
}

void Progress::Print(bool final_line) {
  const double elapsed = ElapsedSeconds();
  const double done = static_cast<double>(done_);
  const double rate = elapsed > 0 && done_ > 0 ? done / elapsed : 0;
  const std::string rate_text =
      rate > 0 ? absl::StrFormat("%s %s/s", HumanCount(rate), unit_) : "";
  std::string text;
  if (final_line) {
    text = absl::StrFormat("%s: done, %s %s in %.1fs", task_, HumanCount(done),
                           unit_, elapsed);
    if (rate > 0) absl::StrAppend(&text, " (", rate_text, ")");
  } else if (total_ > 0) {
    text = absl::StrFormat("%s: %3.0f%% (%s/%s %s, %.1fs", task_,
                           100.0 * done / total_, HumanCount(done),
                           HumanCount(static_cast<double>(total_)), unit_,
                           elapsed);
    if (rate > 0) {
      absl::StrAppend(&text, ", ", rate_text);
      if (done_ <= total_) {
        absl::StrAppend(&text, ", ETA ", HumanDuration((total_ - done) / rate));
      }
    }
    absl::StrAppend(&text, ")");
  } else {
    text = absl::StrFormat("%s: %s %s, %.1fs", task_, HumanCount(done), unit_,
                           elapsed);
    if (rate > 0) absl::StrAppend(&text, ", ", rate_text);
  }
  Emit(options_.out, tty_, text, final_line);
  printed_ = true;
}

StageHeartbeat::StageHeartbeat(std::string what, ProgressOptions options)
    : what_(std::move(what)),
      options_(std::move(options)),
      tty_(IsTerminal(options_)),
      start_(std::chrono::steady_clock::now()) {
  if (options_.quiet || g_quiet_default.load() || options_.out == nullptr) {
    return;
  }
  thread_ = std::thread([this] { Loop(); });
}

StageHeartbeat::~StageHeartbeat() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

void StageHeartbeat::Loop() {
  const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(options_.interval_seconds));
  bool printed = false;
  std::unique_lock<std::mutex> lock(mu_);
  auto next = start_ + interval;
  while (!stop_cv_.wait_until(lock, next, [this] { return stop_; })) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    Emit(options_.out, tty_,
         absl::StrFormat("%s, %.0fs elapsed", what_, elapsed),
         /*final_line=*/false);
    printed = true;
    next += interval;
  }
  if (printed && tty_) {
    std::fputs("\r\033[K", options_.out);
    std::fflush(options_.out);
  }
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

std::string HumanDuration(double seconds) {
  const int64_t s = seconds > 0 ? std::llround(seconds) : 0;
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
}

}  // namespace shardgnn
