// The storage client's response checks (graphstore/client.h) on arbitrary
// answers: an in-process gRPC service on a loopback port answers the method
// the first byte picks with the rest of the input parsed as its response
// (other methods get a consistent, valid answer), and the client calls Info
// and then that method. Whatever the answer, the client returns a status or
// checked data; it never reads or writes out of bounds.
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graphstore/client.h"
#include "proto/graphstore.grpc.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace pb = shardgnn::proto;

constexpr int64_t kDim = 8;

// The method being fuzzed and its answer's bytes.
std::mutex mu;
int fuzzed_method = -1;
std::string answer;

class HostileService final : public pb::GraphStore::Service {
 public:
  grpc::Status Info(grpc::ServerContext*, const pb::InfoRequest*,
                    pb::InfoResponse* r) override {
    if (Fuzzed(0, r)) return grpc::Status::OK;
    r->set_part_id(0);
    r->set_num_parts(2);
    r->set_node_start(0);
    r->set_node_end(150);
    r->set_num_nodes_total(300);
    r->set_num_edges(3000);
    r->set_feature_dim(kDim);
    r->set_num_classes(4);
    (*r->mutable_split_counts())["train"] = 10;
    r->set_partition_id("p");
    r->set_content_checksum("c");
    r->set_format_version(1);
    r->set_in_memory(true);
    return grpc::Status::OK;
  }
  grpc::Status SampleNeighbors(grpc::ServerContext*,
                               const pb::SampleNeighborsRequest*,
                               pb::SampleNeighborsResponse* r) override {
    return Answer(1, r);
  }
  grpc::Status GetFeatures(grpc::ServerContext*, const pb::NodeIdsRequest*,
                           pb::GetFeaturesResponse* r) override {
    return Answer(2, r);
  }
  grpc::Status GetLabels(grpc::ServerContext*, const pb::NodeIdsRequest*,
                         pb::GetLabelsResponse* r) override {
    return Answer(3, r);
  }
  grpc::Status GetDegrees(grpc::ServerContext*, const pb::NodeIdsRequest*,
                          pb::GetDegreesResponse* r) override {
    return Answer(4, r);
  }
  grpc::Status GetSplit(grpc::ServerContext*, const pb::GetSplitRequest*,
                        pb::GetSplitResponse* r) override {
    return Answer(5, r);
  }
  grpc::Status Health(grpc::ServerContext*, const pb::HealthRequest*,
                      pb::HealthResponse* r) override {
    r->set_serving(true);
    return grpc::Status::OK;
  }

 private:
  static bool Fuzzed(int method, google::protobuf::Message* r) {
    std::lock_guard<std::mutex> lock(mu);
    if (fuzzed_method != method) return false;
    // An input that does not parse leaves a partial message: answered too.
    (void)r->ParseFromString(answer);
    return true;
  }
  static grpc::Status Answer(int method, google::protobuf::Message* r) {
    if (!Fuzzed(method, r))
      return grpc::Status(grpc::StatusCode::INTERNAL, "not this method");
    return grpc::Status::OK;
  }
};

shardgnn::GraphStoreClient& Client() {
  static shardgnn::GraphStoreClient* client = [] {
    static HostileService service;
    static std::unique_ptr<grpc::Server> server;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    shardgnn::GraphStoreClientOptions options;
    options.call_timeout = absl::Seconds(5);
    options.use_feature_port = false;
    auto c = shardgnn::GraphStoreClient::Connect(
        "127.0.0.1:" + std::to_string(port), options);
    if (!c.ok() || server == nullptr) {
      std::fprintf(stderr, "cannot start the hostile service\n");
      std::abort();
    }
    return c->release();
  }();
  return *client;
}

std::string Int64s(std::vector<int64_t> v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(int64_t));
}

// SHARDGNN_FUZZ_WRITE_SEEDS=DIR: a valid answer for each method.
void WriteSeeds(const std::string& dir) {
  auto write = [&](uint8_t method, const google::protobuf::Message& m) {
    std::ofstream out(dir + "/seed-" + std::to_string(method),
                      std::ios::binary);
    out.put(static_cast<char>(method));
    out << m.SerializeAsString();
  };
  pb::InfoResponse info;
  HostileService().Info(nullptr, nullptr, &info);
  write(0, info);
  pb::SampleNeighborsResponse sample;
  sample.set_counts(Int64s({1, 2, 0, 1, 1}));
  sample.set_neighbors(Int64s({5, 6, 7, 8, 9}));
  write(1, sample);
  pb::GetFeaturesResponse features;
  features.set_feature_dim(kDim);
  std::vector<float> rows(5 * kDim, 0.5f);
  features.set_features(std::string(reinterpret_cast<const char*>(rows.data()),
                                    rows.size() * sizeof(float)));
  write(2, features);
  pb::GetLabelsResponse labels;
  labels.set_labels(Int64s({0, 1, -1, 3, 2}));
  write(3, labels);
  pb::GetDegreesResponse degrees;
  degrees.set_degrees(Int64s({0, 140, 3, 2, 1}));
  write(4, degrees);
  pb::GetSplitResponse split;
  split.set_node_ids(Int64s({1, 4, 9, 16, 25, 36, 49, 64, 81, 100}));
  write(5, split);
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
  const int method = in.Byte() % 6;
  {
    std::lock_guard<std::mutex> lock(mu);
    fuzzed_method = method;
    answer.assign(reinterpret_cast<const char*>(in.data()), in.size());
  }
  shardgnn::GraphStoreClient& client = Client();
  auto info = client.Info();
  if (!info.ok()) return 0;
  const std::vector<shardgnn::NodeId> ids = {0, 1, 2, 3, 149};
  switch (method) {
    case 1:
      (void)client.SampleNeighbors(ids, 5, false, 7);
      (void)client.SampleNeighbors(ids, -1, false, 7);
      break;
    case 2: {
      std::vector<float> rows(ids.size() * kDim);
      (void)client.GetFeatures(ids, kDim, rows.data());
      break;
    }
    case 3:
      (void)client.GetLabels(ids);
      break;
    case 4:
      (void)client.GetDegrees(ids);
      break;
    case 5:
      (void)client.GetSplit("train");
      break;
  }
  return 0;
}
