#include "graphstore/internal/standard_services.h"

#include <mutex>

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/graphstore.grpc.pb.h"

namespace shardgnn::internal {

void EnableStandardServices() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

void SetServingStatus(grpc::Server* server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;  // Only if gRPC's default was replaced.
  health->SetServingStatus("", serving);
  health->SetServingStatus(proto::GraphStore::service_full_name(), serving);
}

}  // namespace shardgnn::internal
