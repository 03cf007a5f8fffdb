#include "graphstore/internal/call_runner.h"

#include "common/auth.h"

namespace shardgnn::internal {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

int64_t PayloadBytes(const google::protobuf::Message& m) {
  return static_cast<int64_t>(m.ByteSizeLong());
}
int64_t PayloadBytes(const grpc::ByteBuffer& b) {
  return static_cast<int64_t>(b.Length());
}

CallRunner::CallRunner(const std::vector<const char*>& method_names,
                       int open_method, const std::string& auth_token,
                       WorkQueueOptions queue, std::function<bool()> loaded)
    : open_method_(open_method),
      loaded_(std::move(loaded)),
      queue_(std::make_unique<WorkQueue>(queue)) {
  for (const char* name : method_names) stats_.emplace_back(name);
  if (!auth_token.empty()) {
    expected_authorization_ = absl::StrCat("Bearer ", auth_token);
  }
}

bool CallRunner::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_ == 0;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

bool CallRunner::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

int64_t CallRunner::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

int64_t CallRunner::queued() const {
  return queue_ != nullptr ? queue_->queued() : 0;
}

absl::Status CallRunner::Authenticate(const grpc::CallbackServerContext& ctx,
                                      int method) const {
  if (method == open_method_) return absl::OkStatus();
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find("authorization");
  if (expected_authorization_.empty()) {
    if (it == metadata.end()) return absl::OkStatus();
    return absl::UnauthenticatedError(
        "this server runs without an auth token, but the call carries one; "
        "start the server with the clients' --auth-token-file");
  }
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(
        "this server requires an auth token (--auth-token-file); the call "
        "carries none");
  }
  if (!ConstantTimeEquals(
          absl::string_view(it->second.data(), it->second.size()),
          expected_authorization_)) {
    return absl::UnauthenticatedError(
        "wrong auth token (the client's --auth-token-file differs from the "
        "server's)");
  }
  return absl::OkStatus();
}

absl::Status CallRunner::Admit(const grpc::CallbackServerContext& ctx,
                               int method) {
  if (absl::Status s = Authenticate(ctx, method); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (draining_) return absl::UnavailableError("server is shutting down");
  if (method != open_method_ && !loaded_()) {
    // Clients retry this as they would a refused connection.
    return absl::UnavailableError("server is still loading its shard");
  }
  ++in_flight_;
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
