// Progress lines for long work (import, generate, partition, ingest).
//
// Prints "<task>: 42% (1.2M/2.9M edges, 3.1s)" to stderr at most every
// `interval` seconds, then Done() prints a final line with the total time. On a
// terminal the line is rewritten in place; otherwise (logs, CI) whole lines are
// printed, at most one per interval. Quiet mode prints nothing. Update() is
// cheap enough to call per item: it reads the clock only every 4096 calls. Not
// thread-safe.
#ifndef SHARDGNN_COMMON_PROGRESS_H_
#define SHARDGNN_COMMON_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace shardgnn {

class Progress {
 public:
  // `total` <= 0 means unknown (no percentage is shown).
  Progress(std::string task, int64_t total, std::string unit,
           bool quiet = false, double interval_seconds = 2.0);
  ~Progress();

  // Reports that `done` units are complete.
  void Update(int64_t done);
  // Prints the closing line ("<task>: done, N units in T s") once.
  void Done();
  double ElapsedSeconds() const;

  // Process-wide switch used by the CLI's --quiet flag and by tests.
  static void SetQuietByDefault(bool quiet);

 private:
  void Print(bool final_line);

  std::string task_;
  int64_t total_;
  std::string unit_;
  bool quiet_;
  bool tty_;
  double interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  int64_t done_ = 0;
  uint32_t calls_ = 0;
  bool finished_ = false;
};

// "1.2M", "34.5k", "999" — for progress and summaries.
std::string HumanCount(double n);
// "1.5 GiB", "20.0 MiB".
std::string HumanBytes(double bytes);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PROGRESS_H_
