#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "graphstore/internal/connection_limits.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/feature_port_server_parts.h"
#include "graphstore/internal/sample_request.h"
#include "graphstore/internal/slice_pool.h"
#include "graphstore/internal/socket_io.h"
#include "graphstore/internal/work_queue.h"

namespace shardgnn::internal {
namespace {

// Largest buffer a server connection keeps between requests; larger answers
// are gathered and sent in pieces of this size.
constexpr size_t kKeptBufferBytes = 1 << 20;
// After this long without a pull or push the pooled embedding buffers are
// given back: longer than a trainer's validation, during which its training
// pulls and pushes pause.
constexpr int kEmbeddingBuffersIdleMs = 10000;
// The server's bound on a connection's authentication handshake.
constexpr absl::Duration kHandshakeTimeout = absl::Seconds(10);

// The clock of a connection's idle_since.
int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace port_server {

bool SendResponse(int fd, const absl::Status& status, const void* rows,
                  size_t bytes) {
  FeatureResponseHeader h;
  h.code = static_cast<int32_t>(status.code());
  std::string message(status.message().substr(0, kMaxFeaturePortErrorBytes));
  iovec iov[2];
  iov[0] = {&h, sizeof(h)};
  if (status.ok()) {
    iov[1] = {const_cast<void*>(rows), bytes};
  } else {
    iov[1] = {message.data(), message.size()};
  }
  h.payload_bytes = iov[1].iov_len;
  return WriteFullV(fd, iov, 2);
}

bool ReadInto(int fd, std::string* s, size_t n) {
  s->resize(n);
  return ReadFull(fd, s->data(), n);
}

bool Refuse(int fd, const RequestTimer& timer, int64_t bytes_in,
            const absl::Status& why) {
  timer.Record(why.code(), bytes_in, why.message().size());
  SendResponse(fd, why, nullptr, 0);
  return false;
}

}  // namespace port_server

using port_server::ReadInto;
using port_server::Refuse;
using port_server::RequestTimer;
using port_server::SendResponse;

absl::StatusOr<std::unique_ptr<FeaturePortServer>> FeaturePortServer::Start(
    const std::string& host, int port, std::shared_ptr<const ShardStore> store,
    FeaturePortLimits limits, FeaturePortHooks hooks, std::string auth_token) {
  auto listener = Listener::Bind(host, port, "feature port");
  if (!listener.ok()) return listener.status();
  auto server = std::unique_ptr<FeaturePortServer>(new FeaturePortServer());
  server->listener_ = std::move(listener).value();
  server->port_ = server->listener_->port();
  server->store_ = std::move(store);
  server->limits_ = limits;
  server->limits_.max_connections_per_ip =
      PerAddressCap(limits.max_connections, limits.max_connections_per_ip,
                    kFeaturePortAddressParts);
  server->hooks_ = hooks;
  server->embedding_buffers_ = std::make_unique<EmbeddingBuffers>();
  if (server->hooks_.pulls == nullptr) server->hooks_.pulls = hooks.features;
  if (server->hooks_.pushes == nullptr) server->hooks_.pushes = hooks.features;
  server->auth_token_ = std::move(auth_token);
  server->listener_->Start([s = server.get()](int fd, const std::string& peer) {
    return s->Admit(fd, peer);
  });
  return server;
}

bool FeaturePortServer::Admit(int fd, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  ReapLocked();
  auto reject = [this] {
    if (hooks_.connections != nullptr) {
      hooks_.connections->rejected.fetch_add(1, std::memory_order_relaxed);
    }
    return false;  // The client falls back to gRPC.
  };
  // Evicted connections are on their way out: their places are free.
  int total = 0, from_peer = 0;
  for (const Connection& c : connections_) {
    if (c.idle_since.load() == kEvicted) continue;
    ++total;
    if (c.peer == peer) ++from_peer;
  }
  if (stopped_ || from_peer >= limits_.max_connections_per_ip ||
      (total >= limits_.max_connections && !EvictLocked())) {
    return reject();
  }
  if (hooks_.connections != nullptr) {
    hooks_.connections->accepted.fetch_add(1, std::memory_order_relaxed);
    hooks_.connections->open.fetch_add(1, std::memory_order_relaxed);
  }
  SetNoDelay(fd);
  SetIoTimeout(fd, limits_.io_timeout);
  Connection& conn = connections_.emplace_back();
  conn.fd = fd;
  conn.peer = peer;
  conn.idle_since = SteadyNowNs();
  conn.thread = std::thread([this, c = &conn] { Serve(c); });
  return true;
}

bool FeaturePortServer::EvictLocked() {
  const int64_t latest =
      SteadyNowNs() - absl::ToInt64Nanoseconds(limits_.min_idle_to_evict);
  while (true) {
    Connection* victim = nullptr;
    int64_t since = 0;
    for (Connection& c : connections_) {
      const int64_t t = c.idle_since.load();
      if (!c.done && t >= 0 && t <= latest &&
          (victim == nullptr || t < since)) {
        victim = &c;
        since = t;
      }
    }
    if (victim == nullptr) return false;
    // Lost to its thread if a request has just begun: try the next.
    if (victim->idle_since.compare_exchange_strong(since, kEvicted)) {
      // The thread sees end of file and ends; the fd is closed when reaped.
      shutdown(victim->fd, SHUT_RDWR);
      return true;
    }
  }
}

void FeaturePortServer::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();
    close(it->fd);
    it = connections_.erase(it);
  }
}

struct FeaturePortServer::Buffers {
  std::vector<NodeId> ids;
  std::vector<char> rows;

  // After every request: keeps no large feature buffer (rows are gathered
  // in pieces; only the IDs can be large).
  void Trim() {
    if (ids.capacity() * sizeof(NodeId) > kKeptBufferBytes) {
      std::vector<NodeId>().swap(ids);
    }
    if (rows.capacity() > kKeptBufferBytes) std::vector<char>().swap(rows);
  }
};

void FeaturePortServer::Serve(Connection* conn) {
  Buffers buffers;
  const bool admitted = auth_token_.empty() || Authenticate(conn->fd);
  while (admitted) {
    // Idle between requests: wait for the next one up to the idle timeout.
    pollfd p{conn->fd, POLLIN, 0};
    const int64_t ms = absl::ToInt64Milliseconds(limits_.idle_timeout);
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    int64_t since = conn->idle_since.load();
    if (since < 0 || !conn->idle_since.compare_exchange_strong(since, kBusy)) {
      break;  // Evicted for a newcomer.
    }
    if (!Answer(conn->fd, conn->peer, &buffers)) break;
    conn->idle_since = SteadyNowNs();
    buffers.Trim();
    if (poll(&p, 1, kEmbeddingBuffersIdleMs) == 0) {
      const absl::Duration idle = absl::Milliseconds(kEmbeddingBuffersIdleMs);
      embedding_buffers_->pulls.ReleaseIfIdle(idle);
      embedding_buffers_->pushes.ReleaseIfIdle(idle);
    }
  }
  // The client sees end of file now; the fd is closed when reaped.
  shutdown(conn->fd, SHUT_RDWR);
  if (hooks_.connections != nullptr) {
    hooks_.connections->open.fetch_sub(1, std::memory_order_relaxed);
  }
  absl::MutexLock lock(&mu_);
  conn->done = true;
}

bool FeaturePortServer::Answer(int fd, const std::string& peer,
                               Buffers* buffers) {
  FeatureRequestHeader h;
  if (!ReadFull(fd, &h, sizeof(h))) {
    return false;  // Closed, shut down, or stalled mid-header.
  }
  if (h.magic == kEmbeddingPullMagic) return AnswerPull(fd, h);
  if (h.magic == kEmbeddingPushMagic) return AnswerPush(fd, h);
  if (h.magic == kEmbeddingPullMagicV1 || h.magic == kEmbeddingPushMagicV1) {
    return AnswerFirstProtocol(fd, h);
  }
  if (h.magic == kSampleMagic) return AnswerSample(fd, peer, h, buffers);
  std::vector<NodeId>* ids = &buffers->ids;
  std::vector<char>* rows = &buffers->rows;
  const RequestTimer timer(hooks_.features);
  auto record = [&](absl::StatusCode code, size_t bytes_out) {
    timer.Record(code, static_cast<int64_t>(sizeof(h) + ids->size() * 8),
                 bytes_out);
  };
  // Framing errors: answer, then close (the rest of the stream is unknown).
  if (h.magic == kAuthHelloMagic) {
    ids->clear();
    record(absl::StatusCode::kUnauthenticated, 0);
    SendResponse(fd,
                 absl::UnauthenticatedError(
                     "this feature port's server runs without an auth token, "
                     "but the client offers one; start the server with the "
                     "clients' --auth-token-file"),
                 nullptr, 0);
    return false;
  }
  if (h.magic != kFeatureRequestMagic) {
    ids->clear();
    record(absl::StatusCode::kInvalidArgument, 0);
    SendResponse(fd,
                 absl::InvalidArgumentError(
                     "not a shardgnn feature request (bad magic number)"),
                 nullptr, 0);
    return false;
  }
  if (h.num_ids > static_cast<uint64_t>(limits_.max_ids_per_call)) {
    ids->clear();
    record(absl::StatusCode::kInvalidArgument, 0);
    SendResponse(fd,
                 absl::InvalidArgumentError(absl::StrCat(
                     "batch of ", h.num_ids, " IDs exceeds the limit of ",
                     limits_.max_ids_per_call, " IDs per call")),
                 nullptr, 0);
    return false;
  }
  ids->resize(h.num_ids);
  if (!ReadFull(fd, ids->data(), ids->size() * sizeof(NodeId))) return false;

  const int64_t dim = store_->Meta().feature_dim;
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  const int64_t bytes = static_cast<int64_t>(ids->size() * row_bytes);
  absl::Status status;
  if (bytes > limits_.max_message_bytes - 1024) {
    status = absl::ResourceExhaustedError(absl::StrFormat(
        "%d feature rows of %d floats are %.1f MiB, over the %.1f MiB message "
        "limit; request fewer IDs per call",
        ids->size(), dim, bytes / 1048576.0,
        limits_.max_message_bytes / 1048576.0));
  } else {
    status = store_->CheckOwned(*ids);
  }
  // The rows go out in pieces of at most kKeptBufferBytes (at least a row).
  const size_t piece_rows =
      row_bytes == 0 ? ids->size()
                     : std::max<size_t>(1, kKeptBufferBytes / row_bytes);
  const size_t first_rows = std::min(piece_rows, ids->size());
  auto gather = [&](size_t from, size_t count) {
    try {
      rows->resize(count * row_bytes);
      return store_->GetFeatures(absl::MakeConstSpan(*ids).subspan(from, count),
                                 reinterpret_cast<float*>(rows->data()));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("GetFeatures: out of memory");
    }
  };
  if (status.ok()) status = gather(0, first_rows);
  const size_t out =
      status.ok() ? static_cast<size_t>(bytes) : status.message().size();
  record(status.code(), out);
  if (!status.ok()) return SendResponse(fd, status, nullptr, 0);
  FeatureResponseHeader response;
  response.payload_bytes = static_cast<uint64_t>(bytes);
  iovec iov[2] = {{&response, sizeof(response)},
                  {rows->data(), first_rows * row_bytes}};
  bool ok = WriteFullV(fd, iov, 2);
  for (size_t from = first_rows; ok && from < ids->size(); from += piece_rows) {
    const size_t count = std::min(piece_rows, ids->size() - from);
    // The header promised the rows: a failure now can only close the
    // connection (the client then fetches over gRPC, which reports it).
    if (!gather(from, count).ok()) ok = false;
    iovec piece = {rows->data(), count * row_bytes};
    ok = ok && WriteFullV(fd, &piece, 1);
  }
  return ok;
}

namespace {

// SampleWithinLimits, with running out of memory as an answer.
absl::Status SampleCaught(const ShardStore& store, absl::Span<const NodeId> ids,
                          const SampleHeader& p, const SampleLimits& limits,
                          SampledNeighbors* out) {
  try {
    return SampleWithinLimits(store, ids, p.fanout, p.replace != 0, p.seed,
                              limits, out);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("SampleNeighbors: out of memory");
  }
}

// A sample handed to the workers, shared by the connection thread that waits
// for it and the worker that runs it. A waiter that gives up before a
// worker took the sample marks it abandoned, and the worker then skips it
// without touching anything else; a sample once started is waited for.
struct SampleJob {
  std::shared_ptr<const ShardStore> store;
  std::vector<NodeId> ids;
  SampleHeader header;
  SampleLimits limits;
  SampledNeighbors out;
  absl::Status status;
  absl::Mutex mu;
  bool started ABSL_GUARDED_BY(mu) = false;
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  bool done ABSL_GUARDED_BY(mu) = false;
};

}  // namespace

absl::Status FeaturePortServer::SampleOnWorkers(const std::string& peer,
                                                const SampleHeader& p,
                                                const SampleLimits& limits,
                                                std::vector<NodeId>* ids,
                                                SampledNeighbors* out) {
  auto job = std::make_shared<SampleJob>();
  job->store = store_;
  job->ids.swap(*ids);
  job->header = p;
  job->limits = limits;
  absl::Status status = hooks_.workers->Submit(peer, [job] {
    {
      absl::MutexLock lock(&job->mu);
      if (job->abandoned) return;
      job->started = true;
    }
    absl::Status s = SampleCaught(*job->store, job->ids, job->header,
                                  job->limits, &job->out);
    absl::MutexLock lock(&job->mu);
    job->status = std::move(s);
    job->done = true;
  });
  if (status.ok()) {
    absl::MutexLock lock(&job->mu);
    if (!job->mu.AwaitWithTimeout(absl::Condition(&job->done),
                                  limits_.io_timeout) &&
        !job->started) {
      job->abandoned = true;
      status = absl::UnavailableError(
          absl::StrCat("server busy: a sample from ", peer, " waited ",
                       absl::FormatDuration(limits_.io_timeout),
                       " for a worker; retry later"));
    } else {
      job->mu.Await(absl::Condition(&job->done));  // Running: it ends.
      status = std::move(job->status);
      std::swap(*out, job->out);
    }
  }
  // Not read by the worker any more (skipped, or done).
  ids->swap(job->ids);
  return status;
}

bool FeaturePortServer::AnswerSample(int fd, const std::string& peer,
                                     const FeatureRequestHeader& h,
                                     Buffers* buffers) {
  const RequestTimer timer(hooks_.samples != nullptr ? hooks_.samples
                                                     : hooks_.features);
  int64_t bytes_in = sizeof(h);
  SampleHeader p;
  if (!ReadFull(fd, &p, sizeof(p))) return false;
  bytes_in += sizeof(p);
  if (h.num_ids > static_cast<uint64_t>(limits_.max_ids_per_call)) {
    return Refuse(fd, timer, bytes_in,
                  absl::InvalidArgumentError(absl::StrCat(
                      "sample of ", h.num_ids, " IDs exceeds the limit of ",
                      limits_.max_ids_per_call, " IDs per call")));
  }
  std::vector<NodeId>* ids = &buffers->ids;
  ids->resize(h.num_ids);
  if (!ReadFull(fd, ids->data(), ids->size() * sizeof(NodeId))) return false;
  bytes_in += static_cast<int64_t>(ids->size() * sizeof(NodeId));
  SampleLimits sample_limits;
  sample_limits.max_fanout = limits_.max_fanout;
  sample_limits.max_sampled_per_call = limits_.max_sampled_per_call;
  sample_limits.max_message_bytes = limits_.max_message_bytes;
  SampledNeighbors out;
  const absl::Status status =
      hooks_.workers != nullptr &&
              (SampleIsHeavy(ids->size(), p.fanout) || !store_->in_memory())
          ? SampleOnWorkers(peer, p, sample_limits, ids, &out)
          : SampleCaught(*store_, *ids, p, sample_limits, &out);
  bool ok;
  if (!status.ok()) {
    // The request was read whole: the connection stays open.
    timer.Record(status.code(), bytes_in, status.message().size());
    ok = SendResponse(fd, status, nullptr, 0);
  } else {
    FeatureResponseHeader response;
    const size_t counts = out.counts.size() * sizeof(int64_t);
    const size_t neighbors = out.neighbors.size() * sizeof(NodeId);
    response.payload_bytes = counts + neighbors;
    timer.Record(status.code(), bytes_in, response.payload_bytes);
    iovec iov[3] = {{&response, sizeof(response)},
                    {out.counts.data(), counts},
                    {out.neighbors.data(), neighbors}};
    ok = WriteFullV(fd, iov, 3);
  }
  SampleBufferPool::Shared().Put(std::move(out));
  return ok;
}

bool FeaturePortServer::Authenticate(int fd) {
  SetIoTimeout(fd, std::min(limits_.io_timeout, kHandshakeTimeout));
  auto refuse = [&](absl::Status why) {
    if (hooks_.features != nullptr) {
      hooks_.features->Record(0, why.code(), 0, 0);
    }
    SendResponse(fd, why, nullptr, 0);
    return false;
  };
  FeatureRequestHeader hello;
  if (!ReadFull(fd, &hello, sizeof(hello))) return false;
  if (hello.magic == kFeatureRequestMagic) {
    return refuse(absl::UnauthenticatedError(
        "this feature port requires the auth token (--auth-token-file); the "
        "client has none"));
  }
  if (hello.magic != kAuthHelloMagic || hello.num_ids != kAuthNonceBytes) {
    return refuse(absl::InvalidArgumentError(
        "not a shardgnn feature port handshake (bad magic number)"));
  }
  std::string client_nonce(kAuthNonceBytes, '\0');
  if (!ReadFull(fd, client_nonce.data(), client_nonce.size())) return false;
  absl::StatusOr<std::string> server_nonce = RandomBytes(kAuthNonceBytes);
  if (!server_nonce.ok()) return refuse(server_nonce.status());
  FeatureResponseHeader challenge;
  challenge.magic = kAuthChallengeMagic;
  challenge.payload_bytes = kAuthNonceBytes;
  iovec out[2] = {{&challenge, sizeof(challenge)},
                  {server_nonce->data(), server_nonce->size()}};
  if (!WriteFullV(fd, out, 2)) return false;
  FeatureRequestHeader proof_header;
  std::string proof(kHmacBytes, '\0');
  if (!ReadFull(fd, &proof_header, sizeof(proof_header))) return false;
  if (proof_header.magic != kAuthProofMagic ||
      proof_header.num_ids != kHmacBytes) {
    return refuse(absl::InvalidArgumentError(
        "not a shardgnn feature port handshake (expected the proof)"));
  }
  if (!ReadFull(fd, proof.data(), proof.size())) return false;
  const std::string expected = HmacSha256(
      auth_token_, absl::StrCat(kAuthClientLabel, *server_nonce, client_nonce));
  if (!ConstantTimeEquals(proof, expected)) {
    return refuse(absl::UnauthenticatedError(
        "wrong auth token (the client's --auth-token-file differs from the "
        "server's)"));
  }
  std::string server_proof = HmacSha256(
      auth_token_, absl::StrCat(kAuthServerLabel, client_nonce, *server_nonce));
  FeatureResponseHeader accept;
  accept.magic = kAuthAcceptMagic;
  accept.payload_bytes = server_proof.size();
  iovec accepted[2] = {{&accept, sizeof(accept)},
                       {server_proof.data(), server_proof.size()}};
  if (!WriteFullV(fd, accepted, 2)) return false;
  SetIoTimeout(fd, limits_.io_timeout);
  return true;
}

void FeaturePortServer::BeginShutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  if (listener_ != nullptr) listener_->Stop();
  absl::MutexLock lock(&mu_);
  // Requests already read are answered; reads of new ones see end of file.
  for (Connection& c : connections_) shutdown(c.fd, SHUT_RD);
}

void FeaturePortServer::Shutdown(absl::Time deadline) {
  BeginShutdown();
  absl::MutexLock lock(&mu_);
  if (joined_) return;
  joined_ = true;
  auto all_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::all_of(connections_.begin(), connections_.end(),
                       [](const Connection& c) { return c.done; });
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&all_done), deadline)) {
    for (Connection& c : connections_) shutdown(c.fd, SHUT_RDWR);
    mu_.Await(absl::Condition(&all_done));
  }
  ReapLocked();
}

FeaturePortServer::~FeaturePortServer() { Shutdown(absl::Now()); }

}  // namespace shardgnn::internal
