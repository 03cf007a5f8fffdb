// The feature port's server side (graphstore/internal/feature_port.h) on
// arbitrary bytes from a client: a real server on a loopback port over a
// real shard, with a learnable table (run "fuzz", table "node", 4 wide) for
// embedding pulls and pushes; each input is sent on a new connection, which is
// then closed for writing and drained. The server must answer or close, never
// crash. Pulls that wait for the table's clock end by the I/O timeout.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/socket_util.h"

namespace {

shardgnn::internal::EmbeddingService* Embeddings() {
  static shardgnn::internal::EmbeddingService* service = [] {
    auto* e = new shardgnn::internal::EmbeddingService({});
    shardgnn::proto::CreateEmbeddingTableRequest create;
    shardgnn::proto::EmbeddingTableSpec* spec = create.mutable_spec();
    spec->set_name("node");
    spec->set_dim(4);
    spec->set_optimizer("adagrad");
    spec->set_lr(0.01);
    spec->set_eps(1e-8);
    spec->set_init_std(1.0);
    spec->set_num_trainers(1);
    spec->set_run_id("fuzz");
    create.set_run_secret("the fuzz run's secret, 128 bits");
    shardgnn::proto::CreateEmbeddingTableResponse created;
    absl::Status s =
        e->Create(shardgnn::fuzz::TestShard()->Meta(), create, &created);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::abort();
    }
    return e;
  }();
  return service;
}

shardgnn::internal::FeaturePortServer& Server() {
  static shardgnn::internal::FeaturePortServer* server = [] {
    shardgnn::internal::FeaturePortLimits limits;
    limits.io_timeout = absl::Milliseconds(500);
    shardgnn::internal::FeaturePortHooks hooks;
    hooks.embeddings = Embeddings();
    auto s = shardgnn::internal::FeaturePortServer::Start(
        "127.0.0.1", 0, shardgnn::fuzz::TestShard(), limits, hooks);
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
