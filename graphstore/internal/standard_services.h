// gRPC's standard services on the storage server: health checking
// (grpc.health.v1, what load balancers and ProbeServing ask; open to all, see
// docs/architecture.md "Security") and server reflection (for grpcurl and
// other stock clients: docs/formats.md).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_STANDARD_SERVICES_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_STANDARD_SERVICES_H_

namespace grpc {
class Server;
}  // namespace grpc

namespace shardgnn::internal {

// Turns both on. gRPC has only process-wide switches for them, read when a
// server is built: every gRPC server this process builds afterwards has them
// too (tests' fake servers included, which is harmless). Call before building
// a server; thread-safe, and only the first call does anything.
void EnableStandardServices();

// Sets the health status of "" (the whole server) and of GraphStore on
// `server`; health checks and Watch streams see it at once. Does nothing if
// the server has no standard health service.
void SetServingStatus(grpc::Server* server, bool serving);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_STANDARD_SERVICES_H_
