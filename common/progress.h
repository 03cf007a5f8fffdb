// Progress lines for long work (import, generate, partition, ingest).
//
// Progress prints "<task>: 42% (1.2M/2.9M edges, 3.1s, 390k edges/s, ETA 4s)"
// to stderr at least every `interval` seconds while Update() is being called,
// and at most once per interval; Done() prints a closing line with the total
// time and rate. The gate is time, not a call count: a caller that calls
// Update() a few times per stage gets a line at its first call after each
// interval, and one that calls it per item pays a coarse clock read per call
// (CLOCK_MONOTONIC_COARSE, a few ns) and a precise one only when a line may be
// due. On a terminal the line is rewritten in place; otherwise (logs, CI)
// whole lines are printed. Quiet mode prints nothing.
//
// StageHeartbeat covers a stage that reports nothing itself (a METIS call): a
// background thread prints "<what>, 12s elapsed" every interval until the
// heartbeat is destroyed.
#ifndef SHARDGNN_COMMON_PROGRESS_H_
#define SHARDGNN_COMMON_PROGRESS_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace shardgnn {

struct ProgressOptions {
  double interval_seconds = 2.0;
  bool quiet = false;  // Also quiet when SetQuietByDefault(true) was called.
  std::FILE* out = stderr;
  // kAuto: one updating line if `out` is a terminal, whole lines otherwise.
  enum class Mode { kAuto, kTerminal, kLines };
  Mode mode = Mode::kAuto;
  // Tests: a fake clock, read on every Update (empty: the real clocks).
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// Not thread-safe: one thread at a time calls Update and Done.
class Progress {
 public:
  // `total` <= 0 means unknown (no percentage or ETA is shown).
  Progress(std::string task, int64_t total, std::string unit,
           bool quiet = false, double interval_seconds = 2.0);
  Progress(std::string task, int64_t total, std::string unit,
           ProgressOptions options);
  ~Progress();

  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Reports that `done` units are complete; prints a line if one is due.
  void Update(int64_t done);
  // Prints the closing line ("<task>: done, N units in T s (R units/s)")
  // once.
  void Done();
  double ElapsedSeconds() const;

  // Process-wide switch used by the CLI's --quiet flag and by tests.
  static void SetQuietByDefault(bool quiet);

 private:
  std::chrono::steady_clock::time_point Now() const;
  void Print(bool final_line);

  std::string task_;
  int64_t total_;
  std::string unit_;
  ProgressOptions options_;
  bool quiet_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  // When the next line is due, in the coarse clock's nanoseconds (or the
  // fake clock's time since start_).
  int64_t next_due_ns_ = 0;
  int64_t done_ = 0;
  bool printed_ = false;
  bool finished_ = false;
};

// Prints "<what>, Ns elapsed" every `options.interval_seconds` from a thread
// of its own, from construction until destruction (which stops it at once).
// On a terminal the line is rewritten in place and erased at the end, so the
// caller's next line takes its place. Thread-safe to destroy from the thread
// that made it; prints nothing when quiet.
class StageHeartbeat {
 public:
  explicit StageHeartbeat(std::string what, ProgressOptions options = {});
  ~StageHeartbeat();

  StageHeartbeat(const StageHeartbeat&) = delete;
  StageHeartbeat& operator=(const StageHeartbeat&) = delete;

 private:
  void Loop();

  std::string what_;
  ProgressOptions options_;
  bool tty_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // Guarded by mu_.
  std::thread thread_;
};

// "1.2M", "34.5k", "999" — for progress and summaries.
std::string HumanCount(double n);
// "1.5 GiB", "20.0 MiB".
std::string HumanBytes(double bytes);
// "4s", "3m05s", "2h07m": a duration in whole seconds, for ETAs.
std::string HumanDuration(double seconds);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PROGRESS_H_
