#include "trainer/compute_env.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "trainer/cpu_caching_allocator.h"

namespace shardgnn {
namespace {

constexpr const char* kComputeEnv[][2] = {
    {"OMP_WAIT_POLICY", "PASSIVE"},
    {"OPENBLAS_THREAD_TIMEOUT", "4"},
};

}  // namespace

void ReexecWithComputeEnvironment(char** argv) {
  bool missing = false;
  for (const auto& kv : kComputeEnv) {
    if (std::getenv(kv[0]) == nullptr) {
      missing = true;
      setenv(kv[0], kv[1], /*overwrite=*/0);
    }
  }
  if (!missing) return;
  execv("/proc/self/exe", argv);
  // Still here: run with the libraries' defaults (slower, not wrong).
  std::fprintf(stderr,
               "shardgnn: warning: could not re-execute with the compute "
               "environment (%s); idle threads will spin\n",
               std::strerror(errno));
}

void TuneAllocatorForTraining() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  InstallCpuCachingAllocator();
}

int ComputeThreadsShare(int trainers) {
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, trainers));
}

int SetComputeThreads(int threads) {
  if (threads <= 0) threads = ComputeThreadsShare(1);
  at::set_num_threads(threads);
  using SetThreadsFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreadsFn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
  return threads;
}

int BlasThreads() {
  using GetThreadsFn = int (*)();
  auto fn = reinterpret_cast<GetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return fn != nullptr ? fn() : -1;
}

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace shardgnn
