// Process-level settings for the compute of a training process: the threading
// libraries' idle policies, the malloc policy, and the thread counts of
// LibTorch's intra-op pool and of OpenBLAS. Free of LibTorch headers.
//
// Why (measured with perf on the 200k-node PyG configuration, 2 cores): with
// the libraries' defaults OpenBLAS's worker spun in sched_yield for ~2^28
// cycles after every GEMM and libgomp's workers for ~300k iterations after
// every parallel region, taking the core the loader and co-located storage
// servers need; and glibc returned every freed activation (> 32 MiB or above
// its dynamic mmap threshold) to the kernel, so each step faulted its memory in
// again (sys time 8 s of a 20 s run). Together these cost ~40% of an epoch.
#ifndef SHARDGNN_TRAINER_COMPUTE_ENV_H_
#define SHARDGNN_TRAINER_COMPUTE_ENV_H_

#include <string>

namespace shardgnn {

// The environment the threading libraries read once, when they are loaded
// (before main): OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 (idle
// workers sleep at once). If either is unset, sets both (keeping any value the
// user gave) and re-executes the program (/proc/self/exe) with the same argv,
// so it does not return; if they are already set, or the re-exec fails (then
// with a warning on stderr), returns and the process runs as it is.
// Call first thing in main, before any thread exists. Child processes inherit
// the settings, so they do not re-execute again.
void ReexecWithComputeEnvironment(char** argv);

// glibc malloc keeps freed memory for reuse: mmap threshold fixed at 32 MiB
// (its maximum) and trim threshold 1 GiB; and LibTorch's CPU tensors of 256
// KiB or more come from the caching allocator
// (trainer/cpu_caching_allocator.h), which keeps freed blocks, even those over
// glibc's 32 MiB, for the next step. For training and inference processes,
// whose steps allocate and free the same large activations over and over.
void TuneAllocatorForTraining();

// This machine's cores shared among `trainers` processes on it: at least 1.
int ComputeThreadsShare(int trainers);

// Sets LibTorch's intra-op threads and OpenBLAS's threads (when the BLAS in use
// is OpenBLAS) to `threads`, or to every core of the machine
// (ComputeThreadsShare(1)) when threads <= 0. Returns the count set.
int SetComputeThreads(int threads);

// OpenBLAS's thread count, or -1 when the BLAS in use is not OpenBLAS.
int BlasThreads();

// The value of environment variable `name`, or "" when unset (for reports).
std::string EnvOrEmpty(const char* name);

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_COMPUTE_ENV_H_
