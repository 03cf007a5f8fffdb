// The peak resident set and the minor page faults of this process, for
// summaries and reports.
#ifndef SHARDGNN_COMMON_PEAK_RSS_H_
#define SHARDGNN_COMMON_PEAK_RSS_H_

#include <sys/resource.h>

#include <cstdint>

namespace shardgnn {

// Peak resident set of this process in bytes (getrusage; Linux reports KiB),
// -1 if unknown.
inline int64_t PeakRssBytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// Minor page faults of this process so far, every thread (getrusage): pages
// touched for the first time (fresh allocations). -1 if unknown.
inline int64_t MinorFaults() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<int64_t>(usage.ru_minflt);
}

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PEAK_RSS_H_
