// The peak and current resident set, the minor page faults and the CPU time
// of this process, for summaries and reports, and the machine's physical
// memory.
#ifndef SHARDGNN_COMMON_PEAK_RSS_H_
#define SHARDGNN_COMMON_PEAK_RSS_H_

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace shardgnn {

// Peak resident set of this process in bytes (getrusage; Linux reports KiB),
// -1 if unknown.
inline int64_t PeakRssBytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// Resident set of this process now in bytes (/proc/self/statm), 0 if
// unknown.
inline int64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const bool read = std::fscanf(f, "%lld %lld", &size, &resident) == 2;
  std::fclose(f);
  return read ? resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// Minor page faults of this process so far, every thread (getrusage): pages
// touched for the first time (fresh allocations). -1 if unknown.
inline int64_t MinorFaults() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<int64_t>(usage.ru_minflt);
}

// CPU time this process used so far, user + system, every thread (getrusage);
// -1 if unknown.
inline double CpuSeconds() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) +
           1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Physical memory of this machine in bytes (sysconf), -1 if unknown.
inline int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return -1;
  return static_cast<int64_t>(pages) * page;
}

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PEAK_RSS_H_
