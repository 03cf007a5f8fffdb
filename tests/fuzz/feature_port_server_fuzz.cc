// The feature port's server side (graphstore/internal/feature_port.h) on
// arbitrary bytes from a client: a real server on a loopback port over a
// real shard; each input is sent on a new connection, which is then closed
// for writing and drained. The server must answer or close, never crash.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "graphstore/internal/feature_port.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/socket_util.h"

namespace {

shardgnn::internal::FeaturePortServer& Server() {
  static shardgnn::internal::FeaturePortServer* server = [] {
    shardgnn::internal::FeaturePortLimits limits;
    limits.io_timeout = absl::Milliseconds(500);
    auto s = shardgnn::internal::FeaturePortServer::Start(
        "127.0.0.1", 0, shardgnn::fuzz::TestShard(), limits, nullptr, nullptr);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      std::abort();
    }
    return s->release();
  }();
  return *server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = shardgnn::fuzz::ConnectLoopback(Server().port());
  if (fd < 0) return 0;
  shardgnn::fuzz::WriteSome(fd, data, size);
  shutdown(fd, SHUT_WR);
  shardgnn::fuzz::Drain(fd, 2000);
  close(fd);
  return 0;
}
