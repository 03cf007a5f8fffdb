// Every gRPC handler of the storage server (graphstore/server.h), the learned
// embedding calls included, on arbitrary
// requests: a real server over a real shard on a loopback port, in this
// process (so the sanitizers watch the handlers); the first byte picks the
// method, the rest is parsed as its request message (inputs that do not parse
// are skipped). Every call must end with a status within its deadline.
//
// SHARDGNN_FUZZ_WRITE_SEEDS=DIR writes a seed corpus of valid requests to DIR
// and exits.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "graphstore/server.h"
#include "proto/graphstore.grpc.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace pb = shardgnn::proto;

pb::GraphStore::Stub& Stub() {
  static pb::GraphStore::Stub* stub = [] {
    static std::unique_ptr<shardgnn::GraphStoreServer> server;
    shardgnn::GraphStoreServerOptions options;
    options.feature_port = -1;
    // Snapshots (SnapshotEmbeddings, restores) go to a directory of this
    // process's own.
    static std::string snapshots =
        "/tmp/shardgnn-fuzz-snapshots-" + std::to_string(::getpid());
    options.embedding_snapshot_dir = snapshots;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(snapshots, ec);
    });
    auto started =
        shardgnn::GraphStoreServer::Start(shardgnn::fuzz::TestShard(), options);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
      std::abort();
    }
    server = std::move(*started);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    return pb::GraphStore::NewStub(
               grpc::CreateCustomChannel(
                   server->address(), grpc::InsecureChannelCredentials(), args))
        .release();
  }();
  return *stub;
}

// `seconds`: the call's deadline. A DEADLINE_EXCEEDED the server sent itself
// (an embedding pull waiting for a step clock that no push advances: it
// answers before the call's deadline, naming the table) is an answer; any
// other means the call did not end in time.
template <typename Request, typename Response, typename Method>
void Call(const uint8_t* data, size_t size, Method method, int seconds = 10) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  Response response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(seconds));
  grpc::Status status = (Stub().*method)(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      status.error_message().find("embedding table") == std::string::npos) {
    std::fprintf(stderr, "a call did not end within %d s: %s\n", seconds,
                 status.error_message().c_str());
    std::abort();
  }
}

std::string Ids(std::vector<int64_t> ids) {
  return std::string(reinterpret_cast<const char*>(ids.data()),
                     ids.size() * sizeof(int64_t));
}

// The seeds' table's run secret.
constexpr char kFuzzSecret[] = "the fuzz run's secret, 128 bits";

void WriteSeeds(const std::string& dir) {
  int n = 0;
  auto write = [&](uint8_t method, const google::protobuf::Message& m) {
    std::ofstream out(dir + "/seed-" + std::to_string(n++), std::ios::binary);
    out.put(static_cast<char>(method));
    out << m.SerializeAsString();
  };
  write(0, pb::InfoRequest());
  pb::SampleNeighborsRequest sample;
  sample.set_node_ids(Ids({0, 1, 2, 149}));
  sample.set_fanout(5);
  sample.set_seed(7);
  write(1, sample);
  sample.set_fanout(-1);
  sample.set_replace(true);
  write(1, sample);
  pb::NodeIdsRequest ids;
  ids.set_node_ids(Ids({3, 1, 4, 1, 5}));
  write(2, ids);
  write(3, ids);
  write(4, ids);
  pb::GetSplitRequest split;
  split.set_name("train");
  write(5, split);
  write(6, pb::HealthRequest());
  write(7, pb::StatsRequest());
  // Learned embeddings: a table, a pull, a push of step 0, the stats.
  pb::CreateEmbeddingTableRequest create;
  pb::EmbeddingTableSpec* spec = create.mutable_spec();
  spec->set_name("node");
  spec->set_dim(4);
  spec->set_optimizer("adam");
  spec->set_lr(0.01);
  spec->set_beta1(0.9);
  spec->set_beta2(0.999);
  spec->set_eps(1e-8);
  spec->set_init_std(1.0);
  spec->set_num_trainers(2);
  spec->set_run_id("fuzz");
  create.set_run_secret(kFuzzSecret);
  write(8, create);
  pb::PullEmbeddingsRequest pull;
  pull.set_table("node");
  pull.set_run_id("fuzz");
  pull.set_run_secret(kFuzzSecret);
  pull.set_node_ids(Ids({0, 1, 2}));
  pull.set_step(0);
  write(9, pull);
  pull.set_step(1);
  pull.set_staleness(-1);
  write(9, pull);
  pb::PushEmbeddingGradientsRequest push;
  push.set_table("node");
  push.set_run_id("fuzz");
  push.set_run_secret(kFuzzSecret);
  push.set_trainer(1);
  push.set_step(0);
  push.set_node_ids(Ids({2, 2}));
  const std::vector<float> grads = {1, 2, 3, 4, -1, -2, -3, -4};
  push.set_gradients(std::string(reinterpret_cast<const char*>(grads.data()),
                                 grads.size() * sizeof(float)));
  write(10, push);
  write(11, pb::EmbeddingStatsRequest());
  // A snapshot of that table, and a restore from it.
  pb::SnapshotEmbeddingsRequest snapshot;
  snapshot.set_table("node");
  snapshot.set_run_id("fuzz");
  snapshot.set_run_secret(kFuzzSecret);
  snapshot.set_epoch(1);
  snapshot.set_step(0);
  write(12, snapshot);
  create.set_restore(true);
  create.set_restore_epoch(1);
  create.set_restore_step(0);
  write(8, create);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("SHARDGNN_FUZZ_WRITE_SEEDS")) {
    WriteSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardgnn::fuzz::Input in(data, size);
  const uint8_t method = in.Byte() % 13;
  const uint8_t* d = in.data();
  const size_t n = in.size();
  using S = pb::GraphStore::Stub;
  switch (method) {
    case 0:
      Call<pb::InfoRequest, pb::InfoResponse>(d, n, &S::Info);
      break;
    case 1:
      Call<pb::SampleNeighborsRequest, pb::SampleNeighborsResponse>(
          d, n, &S::SampleNeighbors);
      break;
    case 2:
      Call<pb::NodeIdsRequest, pb::GetFeaturesResponse>(d, n, &S::GetFeatures);
      break;
    case 3:
      Call<pb::NodeIdsRequest, pb::GetLabelsResponse>(d, n, &S::GetLabels);
      break;
    case 4:
      Call<pb::NodeIdsRequest, pb::GetDegreesResponse>(d, n, &S::GetDegrees);
      break;
    case 5:
      Call<pb::GetSplitRequest, pb::GetSplitResponse>(d, n, &S::GetSplit);
      break;
    case 6:
      Call<pb::HealthRequest, pb::HealthResponse>(d, n, &S::Health);
      break;
    case 7:
      Call<pb::StatsRequest, pb::StatsResponse>(d, n, &S::Stats);
      break;
    case 8:
      Call<pb::CreateEmbeddingTableRequest, pb::CreateEmbeddingTableResponse>(
          d, n, &S::CreateEmbeddingTable);
      break;
    case 9:
      // A pull may wait for the step clock: answered within the deadline.
      Call<pb::PullEmbeddingsRequest, pb::PullEmbeddingsResponse>(
          d, n, &S::PullEmbeddings, /*seconds=*/1);
      break;
    case 10:
      Call<pb::PushEmbeddingGradientsRequest,
           pb::PushEmbeddingGradientsResponse>(d, n,
                                               &S::PushEmbeddingGradients);
      break;
    case 11:
      Call<pb::EmbeddingStatsRequest, pb::EmbeddingStatsResponse>(
          d, n, &S::EmbeddingStats);
      break;
    case 12:
      Call<pb::SnapshotEmbeddingsRequest, pb::SnapshotEmbeddingsResponse>(
          d, n, &S::SnapshotEmbeddings);
      break;
  }
  return 0;
}
