// gRPC's standard health check (grpc.health.v1.Health/Check), as the client's
// ProbeServing speaks it: request and answer encoded by hand. The generated
// code for HealthCheckRequest{service = 1: string} and
// HealthCheckResponse{status = 1: enum, SERVING = 1} would register
// grpc.health.v1 in this process's descriptor pool, where libgrpc++'s own
// health service (which the server turns on) must not meet it.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_HEALTH_PROBE_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_HEALTH_PROBE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/byte_buffer.h"

namespace shardgnn::internal {

// The full method name of the check, for a generic call.
inline constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// A HealthCheckRequest asking after `service`. REQUIRES: service.size() <
// 128 (its length is one varint byte).
grpc::ByteBuffer HealthCheckRequest(absl::string_view service);

// OK if `response` is a HealthCheckResponse saying SERVING; DATA_LOSS
// "unreadable answer" if its bytes cannot be read; UNAVAILABLE "server is not
// serving (STATUS)" for any other status, or for an answer that is not one.
absl::Status CheckHealthResponse(const grpc::ByteBuffer& response);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_HEALTH_PROBE_H_
