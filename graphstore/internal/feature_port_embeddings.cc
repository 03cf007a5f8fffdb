// The feature port's embedding pulls and pushes (FeaturePortServer's share
// of them; the rest of the server is in feature_port_server.cc).
#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/feature_port_server_parts.h"
#include "graphstore/internal/socket_io.h"
#include "proto/graphstore.pb.h"

namespace shardgnn::internal {

using port_server::PullSet;
using port_server::PushSet;
using port_server::ReadInto;
using port_server::Refuse;
using port_server::RequestTimer;
using port_server::SendResponse;

namespace {

// An embedding request's table name, run ID, run secret and node IDs, in
// that order on the wire after its header `p` (their sizes checked by
// CheckEmbeddingFraming), counted into *bytes_in; false if the connection
// failed.
template <typename Header, typename Request>
bool ReadNamesAndIds(int fd, const FeatureRequestHeader& h, const Header& p,
                     Request* req, int64_t* bytes_in) {
  if (!ReadInto(fd, req->mutable_table(), p.table_bytes) ||
      !ReadInto(fd, req->mutable_run_id(), p.run_id_bytes) ||
      !ReadInto(fd, req->mutable_run_secret(), p.secret_bytes) ||
      !ReadInto(fd, req->mutable_node_ids(), h.num_ids * sizeof(NodeId))) {
    return false;
  }
  *bytes_in += static_cast<int64_t>(p.table_bytes) + p.run_id_bytes +
               p.secret_bytes + static_cast<int64_t>(req->node_ids().size());
  return true;
}

}  // namespace

// The framing an embedding request shares, checked before anything is sized
// by it: the number of IDs and the lengths of the names and the secret.
absl::Status FeaturePortServer::CheckEmbeddingFraming(
    const char* what, const FeatureRequestHeader& h, uint32_t table_bytes,
    uint32_t run_id_bytes, uint32_t secret_bytes) const {
  if (h.num_ids > static_cast<uint64_t>(limits_.max_ids_per_call)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding ", what, " of ", h.num_ids, " IDs exceeds the limit of ",
        limits_.max_ids_per_call, " IDs per call"));
  }
  if (table_bytes > kMaxEmbeddingNameBytes ||
      run_id_bytes > kMaxEmbeddingNameBytes ||
      secret_bytes > kMaxEmbeddingNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding ", what, " names a table of ", table_bytes,
        " bytes and a run ID of ", run_id_bytes, " bytes, with a secret of ",
        secret_bytes, " bytes; at most ", kMaxEmbeddingNameBytes, " each"));
  }
  return absl::OkStatus();
}

bool FeaturePortServer::AnswerPull(int fd, const FeatureRequestHeader& h) {
  const RequestTimer timer(hooks_.pulls);
  int64_t bytes_in = sizeof(h);
  EmbeddingPullHeader p;
  if (!ReadFull(fd, &p, sizeof(p))) return false;
  bytes_in += sizeof(p);
  const absl::Status framing = CheckEmbeddingFraming(
      "pull", h, p.table_bytes, p.run_id_bytes, p.secret_bytes);
  if (!framing.ok()) return Refuse(fd, timer, bytes_in, framing);
  const port_server::KeptPool<PullSet>::Lease set =
      embedding_buffers_->pulls.Take();
  proto::PullEmbeddingsRequest& req = set->request;
  if (!ReadNamesAndIds(fd, h, p, &req, &bytes_in)) return false;
  absl::Status status;
  proto::PullEmbeddingsResponse& resp = set->response;
  resp.Clear();
  if (hooks_.embeddings == nullptr) {
    status = absl::UnimplementedError(
        "this feature port does not serve embedding pulls");
  } else {
    req.set_step(p.step);
    req.set_staleness(p.staleness);
    req.set_max_wait_ms(p.max_wait_ms);
    // The client's deadline, within the I/O timeout: a pull waiting for the
    // step clock holds this connection's thread no longer.
    const absl::Duration timeout =
        p.timeout_ms > 0
            ? std::min(absl::Milliseconds(p.timeout_ms), limits_.io_timeout)
            : limits_.io_timeout;
    absl::Notification answered;
    hooks_.embeddings->Pull(&req, absl::Now() + timeout, &resp,
                            [&status, &answered](absl::Status s) {
                              status = std::move(s);
                              answered.Notify();
                            });
    answered.WaitForNotification();
  }
  const std::string& rows = resp.rows();
  timer.Record(status.code(), bytes_in,
               status.ok() ? rows.size() : status.message().size());
  return SendResponse(fd, status, rows.data(), rows.size());
}

bool FeaturePortServer::AnswerPush(int fd, const FeatureRequestHeader& h) {
  const RequestTimer timer(hooks_.pushes);
  int64_t bytes_in = sizeof(h);
  EmbeddingPushHeader p;
  if (!ReadFull(fd, &p, sizeof(p))) return false;
  bytes_in += sizeof(p);
  absl::Status framing = CheckEmbeddingFraming("push", h, p.table_bytes,
                                               p.run_id_bytes, p.secret_bytes);
  if (framing.ok() &&
      p.gradient_bytes > static_cast<uint64_t>(limits_.max_message_bytes)) {
    framing = absl::InvalidArgumentError(absl::StrFormat(
        "embedding push of %d bytes of gradients exceeds the %.1f MiB message "
        "limit",
        p.gradient_bytes, limits_.max_message_bytes / 1048576.0));
  }
  if (!framing.ok()) return Refuse(fd, timer, bytes_in, framing);
  const port_server::KeptPool<PushSet>::Lease set =
      embedding_buffers_->pushes.Take();
  proto::PushEmbeddingGradientsRequest& req = set->request;
  if (!ReadNamesAndIds(fd, h, p, &req, &bytes_in) ||
      !ReadInto(fd, req.mutable_gradients(), p.gradient_bytes)) {
    return false;
  }
  bytes_in += static_cast<int64_t>(p.gradient_bytes);
  absl::Status status;
  int64_t applied_steps = 0;
  if (hooks_.embeddings == nullptr) {
    status = absl::UnimplementedError(
        "this feature port does not serve embedding pushes");
  } else {
    req.set_trainer(p.trainer);
    req.set_step(p.step);
    proto::PushEmbeddingGradientsResponse resp;
    status = hooks_.embeddings->Push(req, &resp);
    applied_steps = resp.applied_steps();
  }
  timer.Record(status.code(), bytes_in,
               status.ok() ? sizeof(applied_steps) : status.message().size());
  return SendResponse(fd, status, &applied_steps, sizeof(applied_steps));
}

bool FeaturePortServer::AnswerFirstProtocol(int fd,
                                            const FeatureRequestHeader& h) {
  const bool pull = h.magic == kEmbeddingPullMagicV1;
  const RequestTimer timer(pull ? hooks_.pulls : hooks_.pushes);
  return Refuse(
      fd, timer, sizeof(h),
      absl::FailedPreconditionError(absl::StrCat(
          "an embedding ", pull ? "pull" : "push",
          " of the feature port's first protocol, without the run's secret: "
          "the client is older than this server, whose learned-embedding "
          "tables answer only their run's secret; update the trainers' "
          "shardgnn")));
}

}  // namespace shardgnn::internal
