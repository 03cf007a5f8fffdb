// A memory-mode server's shared feature matrix is sealed (issue 12): another
// process of the same user that opens it through /proc/PID/fd/N cannot
// rewrite or truncate it, and the server keeps answering with the right rows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "graphstore/client.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

constexpr int64_t kNodes = 300;
constexpr int64_t kDim = 16;

// In a child process: every way to change the region that a process holding
// its descriptor might try. Exits with the number of the first that worked,
// 0 if none did.
[[noreturn]] void Attack(const SharedRegionRef& ref) {
  const std::string path =
      "/proc/" + std::to_string(ref.pid) + "/fd/" + std::to_string(ref.fd);
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) _exit(100);
  std::vector<char> junk(4096, 0x7f);
  if (pwrite(fd, junk.data(), junk.size(), 64) >= 0) _exit(1);
  void* w = mmap(nullptr, ref.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (w != MAP_FAILED) {
    std::memset(static_cast<char*>(w) + 64, 0x7f, 4096);
    _exit(2);
  }
  // A truncation would make the server's next read of the matrix SIGBUS.
  if (ftruncate(fd, 0) == 0) _exit(3);
  if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                static_cast<off_t>(ref.bytes)) == 0) {
    _exit(4);
  }
  _exit(0);
}

TEST(SealedFeaturesTest, ServerSurvivesAttemptsToRewriteOrTruncateIt) {
  testing::TempDir dir;
  testing::TestGraph graph = testing::MakeTestGraph(kNodes, kDim);
  ASSERT_OK(testing::WriteTestShards(graph, 1, dir.path()).status());
  ShardStoreOptions store_options;
  store_options.path = dir.Sub("part-0");
  store_options.in_memory = true;
  ASSERT_OK_AND_ASSIGN(auto store, ShardStore::Open(store_options));
  ASSERT_OK_AND_ASSIGN(auto server,
                       GraphStoreServer::Start(
                           std::shared_ptr<const ShardStore>(std::move(store)),
                           GraphStoreServerOptions()));
  ASSERT_OK_AND_ASSIGN(auto client,
                       GraphStoreClient::Connect(server->address()));
  ASSERT_OK_AND_ASSIGN(ServerInfo info, client->Info());
  ASSERT_TRUE(info.shared_features.has_value());

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) Attack(*info.shared_features);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "attack " << WEXITSTATUS(status) << " changed the served matrix";

  // The server is alive and serves the original rows, over every path.
  std::vector<NodeId> ids(kNodes);
  for (NodeId v = 0; v < kNodes; ++v) ids[v] = v;
  std::vector<float> rows(kNodes * kDim);
  ASSERT_OK(client->GetFeatures(ids, kDim, rows.data()));
  EXPECT_EQ(rows, graph.features);
  ASSERT_OK_AND_ASSIGN(auto mapped,
                       SharedRegion::MapPeer(*info.shared_features));
  EXPECT_EQ(std::memcmp(mapped->payload(), graph.features.data(),
                        graph.features.size() * sizeof(float)),
            0);
  EXPECT_OK(client->Health());
  server->Shutdown(absl::Now());
}

}  // namespace
}  // namespace shardgnn
