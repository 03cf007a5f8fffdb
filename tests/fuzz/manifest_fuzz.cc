// The JSON manifests on arbitrary text: the dataset's manifest.json
// (datasets/dataset.h), the partition's partition.json
// (partition/partition_book.h) and a shard's metadata
// (graphstore/shard_format.h). The first byte picks which.
#include <cstdint>
#include <filesystem>
#include <string>

#include "datasets/dataset.h"
#include "graphstore/shard_format.h"
#include "partition/partition_book.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardgnn::fuzz::Input in(data, size);
  const uint8_t which = in.Byte() % 3;
  const std::string text(reinterpret_cast<const char*>(in.data()), in.size());
  switch (which) {
    case 0: {
      const std::string dir = shardgnn::fuzz::ScratchDir() + "/dataset";
      std::filesystem::create_directories(dir);
      shardgnn::fuzz::WriteInput("dataset/manifest.json", in.data(), in.size());
      (void)shardgnn::ReadDatasetManifest(dir);
      break;
    }
    case 1: {
      auto manifest = shardgnn::PartitionManifest::FromJson(text);
      if (manifest.ok()) (void)shardgnn::PartitionBook::FromManifest(*manifest);
      break;
    }
    case 2:
      (void)shardgnn::ShardMeta::FromJson(text);
      break;
  }
  return 0;
}
