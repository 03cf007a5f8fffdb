// Every gRPC handler of the storage server (graphstore/server.h) on arbitrary
// requests: a real server over a real shard on a loopback port, in this
// process (so the sanitizers watch the handlers); the first byte picks the
// method, the rest is parsed as its request message (inputs that do not parse
// are skipped). Every call must end with a status within its deadline.
//
// SHARDGNN_FUZZ_WRITE_SEEDS=DIR writes a seed corpus of valid requests to DIR
// and exits.
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

template <typename Request, typename Response, typename Method>
void Call(const uint8_t* data, size_t size, Method method) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  Response response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  grpc::Status status = (Stub().*method)(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::fprintf(stderr, "a call did not end within 10 s\n");
    std::abort();
  }
}

std::string Ids(std::vector<int64_t> ids) {
  return std::string(reinterpret_cast<const char*>(ids.data()),
                     ids.size() * sizeof(int64_t));
}

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
  const uint8_t method = in.Byte() % 8;
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
  }
  return 0;
}
