#include "tests/fuzz/fuzz_util.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/graphstore/test_shards.h"

namespace shardgnn::fuzz {

const std::string& ScratchDir() {
  static const std::string* dir = [] {
    char templ[] = "/tmp/shardgnn-fuzz-XXXXXX";
    if (mkdtemp(templ) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    auto* d = new std::string(templ);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return *dir;
}

std::string WriteInput(const std::string& name, const uint8_t* data,
                       size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data),
            static_cast<std::streamsize>(size));
  return path;
}

std::shared_ptr<const ShardStore> TestShard() {
  static const std::shared_ptr<const ShardStore>* store = [] {
    const std::string dir = ScratchDir() + "/shards";
    testing::TestGraph graph = testing::MakeTestGraph(300, 8);
    auto metas = testing::WriteTestShards(graph, 2, dir);
    if (!metas.ok()) {
      std::fprintf(stderr, "%s\n", metas.status().ToString().c_str());
      std::abort();
    }
    ShardStoreOptions options;
    options.path = dir + "/part-0";
    options.in_memory = true;
    auto opened = ShardStore::Open(options);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
      std::abort();
    }
    return new std::shared_ptr<const ShardStore>(std::move(*opened));
  }();
  return *store;
}

}  // namespace shardgnn::fuzz
