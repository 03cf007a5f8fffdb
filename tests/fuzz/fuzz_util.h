// Shared pieces of the libFuzzer targets (tests/fuzz/README.md): a scratch
// directory per process, and a small real shard served in process.
#ifndef SHARDGNN_TESTS_FUZZ_FUZZ_UTIL_H_
#define SHARDGNN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graphstore/shard_store.h"

namespace shardgnn::fuzz {

// A directory of this process's own under /tmp, made on first use and removed
// at exit.
const std::string& ScratchDir();

// Writes `size` bytes to ScratchDir()/name and returns the path.
std::string WriteInput(const std::string& name, const uint8_t* data,
                       size_t size);

// Part 0 of 2 of a 300-node test graph (tests/graphstore/test_shards.h) with
// 8 features per node, written once under ScratchDir() and opened in memory.
std::shared_ptr<const ShardStore> TestShard();

// Consumes bytes from the front of a fuzz input.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace shardgnn::fuzz

#endif  // SHARDGNN_TESTS_FUZZ_FUZZ_UTIL_H_
