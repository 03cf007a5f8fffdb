// The .npy reader (common/npy.h) on arbitrary files: any header and payload
// either loads an array whose size matches its shape or fails with a status;
// it never aborts, overflows or allocates what the file cannot hold.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "common/npy.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

template <typename T>
void Load(const std::string& path) {
  auto array = shardgnn::ReadNpy<T>(path);
  if (!array.ok()) return;
  int64_t n = 1;
  for (int64_t d : array->shape) n *= d;
  if (static_cast<size_t>(n) != array->data.size()) {
    std::fprintf(stderr, "shape says %lld elements, read %zu\n",
                 static_cast<long long>(n), array->data.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = shardgnn::fuzz::WriteInput("input.npy", data, size);
  (void)shardgnn::ReadNpyHeader(path);
  Load<float>(path);
  Load<int64_t>(path);
  Load<int32_t>(path);
  Load<uint8_t>(path);
  return 0;
}
