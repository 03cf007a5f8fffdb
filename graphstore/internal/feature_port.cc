#include "graphstore/internal/feature_port.h"

#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "common/auth.h"
#include "common/status.h"
#include "graphstore/internal/embedding_service.h"

namespace shardgnn::internal {
namespace {

// Longest error message a client reads; longer ones are cut.
constexpr uint64_t kMaxErrorBytes = 64 << 10;
// Largest buffer a server connection keeps between requests; larger answers
// are gathered and sent in pieces of this size.
constexpr size_t kKeptBufferBytes = 1 << 20;
// A connection idle this long gives back its pull buffers: longer than a
// trainer's validation, during which its training pulls pause.
constexpr int kPullBuffersIdleMs = 10000;
// A connection attempt gives up after this (then the caller uses gRPC).
constexpr absl::Duration kConnectTimeout = absl::Seconds(1);
// The server's bound on a connection's authentication handshake.
constexpr absl::Duration kHandshakeTimeout = absl::Seconds(10);

void SetIoTimeout(int fd, absl::Duration timeout) {
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Strips the brackets of "[::1]".
std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// Skips `done` bytes of an iovec array; returns the first unfinished entry.
iovec* Advance(iovec* iov, iovec* end, size_t done) {
  while (iov != end && done >= iov->iov_len) {
    done -= iov->iov_len;
    ++iov;
  }
  if (iov != end) {
    iov->iov_base = static_cast<char*>(iov->iov_base) + done;
    iov->iov_len -= done;
  }
  return iov;
}

// Blocking-socket helpers for the server: false on EOF, error or the
// socket's timeout.
bool ReadFull(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool WriteFullV(int fd, iovec* iov, int count) {
  iovec* end = iov + count;
  while (iov != end) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen =
        static_cast<size_t>(std::min<ptrdiff_t>(end - iov, IOV_MAX));
    ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    iov = Advance(iov, end, static_cast<size_t>(w));
  }
  return true;
}
bool SendResponse(int fd, const absl::Status& status, const void* rows,
                  size_t bytes) {
  FeatureResponseHeader h;
  h.code = static_cast<int32_t>(status.code());
  std::string message(status.message().substr(0, kMaxErrorBytes));
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

// Non-blocking client I/O with a deadline. UNAVAILABLE for a broken or
// closed connection, DEADLINE_EXCEEDED when the deadline passes.
absl::Status WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("no answer before the deadline");
    }
    pollfd p{fd, events, 0};
    const int ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, INT_MAX));
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::UnavailableError(strerror(errno));
    if (r > 0) return absl::OkStatus();
  }
}
absl::Status TransferV(int fd, iovec* iov, int count, bool send,
                       absl::Time deadline) {
  iovec* end = iov + count;
  iov = Advance(iov, end, 0);  // A zero-byte read would wait for nothing.
  while (iov != end) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen =
        static_cast<size_t>(std::min<ptrdiff_t>(end - iov, IOV_MAX));
    ssize_t n = send ? sendmsg(fd, &msg, MSG_NOSIGNAL) : recvmsg(fd, &msg, 0);
    if (n > 0) {
      iov = Advance(iov, end, static_cast<size_t>(n));
      continue;
    }
    if (n == 0)
      return absl::UnavailableError("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(strerror(errno));
    }
    absl::Status s = WaitFor(fd, send ? POLLOUT : POLLIN, deadline);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------- server

absl::StatusOr<std::unique_ptr<FeaturePortServer>> FeaturePortServer::Start(
    const std::string& host, int port, std::shared_ptr<const ShardStore> store,
    FeaturePortLimits limits, MethodStats* stats,
    ConnectionStats* connection_stats, std::string auth_token,
    EmbeddingService* embeddings, MethodStats* pull_stats) {
  auto listener = Listener::Bind(host, port, "feature port");
  if (!listener.ok()) return listener.status();
  auto server = std::unique_ptr<FeaturePortServer>(new FeaturePortServer());
  server->listener_ = std::move(listener).value();
  server->port_ = server->listener_->port();
  server->store_ = std::move(store);
  server->limits_ = limits;
  server->stats_ = stats;
  server->connection_stats_ = connection_stats;
  server->auth_token_ = std::move(auth_token);
  server->embeddings_ = embeddings;
  server->pull_stats_ = pull_stats;
  server->listener_->Start([s = server.get()](int fd, const std::string& peer) {
    return s->Admit(fd, peer);
  });
  return server;
}

bool FeaturePortServer::Admit(int fd, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  ReapLocked();
  auto reject = [this] {
    if (connection_stats_ != nullptr) {
      connection_stats_->rejected.fetch_add(1, std::memory_order_relaxed);
    }
    return false;  // The client falls back to gRPC.
  };
  if (stopped_ ||
      static_cast<int>(connections_.size()) >= limits_.max_connections) {
    return reject();
  }
  const auto from_peer =
      std::count_if(connections_.begin(), connections_.end(),
                    [&](const Connection& c) { return c.peer == peer; });
  if (from_peer >= limits_.max_connections_per_ip) return reject();
  if (connection_stats_ != nullptr) {
    connection_stats_->accepted.fetch_add(1, std::memory_order_relaxed);
    connection_stats_->open.fetch_add(1, std::memory_order_relaxed);
  }
  SetNoDelay(fd);
  SetIoTimeout(fd, limits_.io_timeout);
  Connection& conn = connections_.emplace_back();
  conn.fd = fd;
  conn.peer = peer;
  conn.thread = std::thread([this, c = &conn] { Serve(c); });
  return true;
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
  proto::PullEmbeddingsRequest pull;
  proto::PullEmbeddingsResponse pulled;

  // After every request: keeps no large feature buffer (rows are gathered
  // in pieces; only the IDs can be large).
  void Trim() {
    if (ids.capacity() * sizeof(NodeId) > kKeptBufferBytes) {
      std::vector<NodeId>().swap(ids);
    }
    if (rows.capacity() > kKeptBufferBytes) std::vector<char>().swap(rows);
  }
  // A pull's rows come whole from the table, so its buffers are kept while
  // the connection is busy (a trainer pulls every step: fresh pages for
  // every answer cost the server thousands of page faults per step) and
  // given back once it has been idle for kPullBuffersIdleMs.
  void TrimPull() {
    if (pull.node_ids().capacity() > kKeptBufferBytes) {
      std::string().swap(*pull.mutable_node_ids());
    }
    if (pulled.rows().capacity() > kKeptBufferBytes) {
      std::string().swap(*pulled.mutable_rows());
    }
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
    if (r <= 0 || !Answer(conn->fd, &buffers)) break;
    buffers.Trim();
    if (poll(&p, 1, kPullBuffersIdleMs) == 0) buffers.TrimPull();
  }
  // The client sees end of file now; the fd is closed when reaped.
  shutdown(conn->fd, SHUT_RDWR);
  if (connection_stats_ != nullptr) {
    connection_stats_->open.fetch_sub(1, std::memory_order_relaxed);
  }
  absl::MutexLock lock(&mu_);
  conn->done = true;
}

bool FeaturePortServer::Answer(int fd, Buffers* buffers) {
  FeatureRequestHeader h;
  if (!ReadFull(fd, &h, sizeof(h))) {
    return false;  // Closed, shut down, or stalled mid-header.
  }
  if (h.magic == kEmbeddingPullMagic) return AnswerPull(fd, h, buffers);
  std::vector<NodeId>* ids = &buffers->ids;
  std::vector<char>* rows = &buffers->rows;
  const auto start = std::chrono::steady_clock::now();
  auto record = [&](absl::StatusCode code, size_t bytes_out) {
    if (stats_ == nullptr) return;
    std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - start;
    stats_->Record(
        us.count(), code, static_cast<int64_t>(sizeof(h) + ids->size() * 8),
        static_cast<int64_t>(sizeof(FeatureResponseHeader) + bytes_out));
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

bool FeaturePortServer::AnswerPull(int fd, const FeatureRequestHeader& h,
                                   Buffers* buffers) {
  const auto start = std::chrono::steady_clock::now();
  MethodStats* stats = pull_stats_ != nullptr ? pull_stats_ : stats_;
  int64_t bytes_in = sizeof(h);
  auto record = [&](absl::StatusCode code, size_t bytes_out) {
    if (stats == nullptr) return;
    std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - start;
    stats->Record(
        us.count(), code, bytes_in,
        static_cast<int64_t>(sizeof(FeatureResponseHeader) + bytes_out));
  };
  // Framing errors: answer, then close.
  auto refuse = [&](const absl::Status& why) {
    record(why.code(), why.message().size());
    SendResponse(fd, why, nullptr, 0);
    return false;
  };
  EmbeddingPullHeader p;
  if (!ReadFull(fd, &p, sizeof(p))) return false;
  bytes_in += sizeof(p);
  if (h.num_ids > static_cast<uint64_t>(limits_.max_ids_per_call)) {
    return refuse(absl::InvalidArgumentError(absl::StrCat(
        "embedding pull of ", h.num_ids, " IDs exceeds the limit of ",
        limits_.max_ids_per_call, " IDs per call")));
  }
  if (p.table_bytes > kMaxEmbeddingNameBytes ||
      p.run_id_bytes > kMaxEmbeddingNameBytes) {
    return refuse(absl::InvalidArgumentError(
        absl::StrCat("embedding pull names a table of ", p.table_bytes,
                     " bytes and a run ID of ", p.run_id_bytes,
                     " bytes; at most ", kMaxEmbeddingNameBytes, " each")));
  }
  proto::PullEmbeddingsRequest& req = buffers->pull;
  std::string* table = req.mutable_table();
  std::string* run_id = req.mutable_run_id();
  std::string* ids = req.mutable_node_ids();
  table->resize(p.table_bytes);
  run_id->resize(p.run_id_bytes);
  ids->resize(h.num_ids * sizeof(NodeId));
  if (!ReadFull(fd, table->data(), table->size()) ||
      !ReadFull(fd, run_id->data(), run_id->size()) ||
      !ReadFull(fd, ids->data(), ids->size())) {
    return false;
  }
  bytes_in +=
      static_cast<int64_t>(table->size() + run_id->size() + ids->size());
  if (embeddings_ == nullptr) {
    const absl::Status status = absl::UnimplementedError(
        "this feature port does not serve embedding pulls");
    record(status.code(), status.message().size());
    return SendResponse(fd, status, nullptr, 0);
  }
  req.set_step(p.step);
  req.set_staleness(p.staleness);
  req.set_max_wait_ms(p.max_wait_ms);
  // The client's deadline, within the I/O timeout: a pull waiting for the
  // step clock holds this connection's thread no longer.
  const absl::Duration timeout =
      p.timeout_ms > 0
          ? std::min(absl::Milliseconds(p.timeout_ms), limits_.io_timeout)
          : limits_.io_timeout;
  proto::PullEmbeddingsResponse& resp = buffers->pulled;
  resp.Clear();
  absl::Status status;
  absl::Notification answered;
  embeddings_->Pull(&req, absl::Now() + timeout, &resp,
                    [&status, &answered](absl::Status s) {
                      status = std::move(s);
                      answered.Notify();
                    });
  answered.WaitForNotification();
  const std::string& rows = resp.rows();
  record(status.code(), status.ok() ? rows.size() : status.message().size());
  if (!status.ok()) return SendResponse(fd, status, nullptr, 0);
  return SendResponse(fd, status, rows.data(), rows.size());
}

bool FeaturePortServer::Authenticate(int fd) {
  SetIoTimeout(fd, std::min(limits_.io_timeout, kHandshakeTimeout));
  auto refuse = [&](absl::Status why) {
    if (stats_ != nullptr) stats_->Record(0, why.code(), 0, 0);
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

// ---------------------------------------------------------------- client

FeaturePortClient::FeaturePortClient(std::string host, int port,
                                     std::string auth_token)
    : host_(BareHost(host)), port_(port), auth_token_(std::move(auth_token)) {}

FeaturePortClient::~FeaturePortClient() {
  absl::MutexLock lock(&mu_);
  for (int fd : idle_) close(fd);
}

absl::StatusOr<int> FeaturePortClient::Acquire(absl::Time deadline, bool pooled,
                                               bool* reused) {
  sockaddr_storage addr;
  socklen_t addr_len;
  {
    absl::MutexLock lock(&mu_);
    *reused = pooled && !idle_.empty();
    if (*reused) {
      int fd = idle_.back();
      idle_.pop_back();
      return fd;
    }
    if (!resolved_) {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      int rc = getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints,
                           &found);
      if (rc != 0) {
        return absl::UnavailableError(
            absl::StrCat("cannot resolve ", host_, ": ", gai_strerror(rc)));
      }
      std::memcpy(&addr_, found->ai_addr, found->ai_addrlen);
      addr_len_ = found->ai_addrlen;
      freeaddrinfo(found);
      resolved_ = true;
    }
    addr = addr_;
    addr_len = addr_len_;
  }
  int fd =
      socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(strerror(errno));
  absl::Status s;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    if (errno != EINPROGRESS) {
      s = absl::UnavailableError(strerror(errno));
    } else {
      s = WaitFor(fd, POLLOUT,
                  std::min(deadline, absl::Now() + kConnectTimeout));
      int err = 0;
      socklen_t len = sizeof(err);
      if (s.ok() && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
          err != 0) {
        s = absl::UnavailableError(strerror(err));
      }
      if (absl::IsDeadlineExceeded(s)) {
        s = absl::UnavailableError("connection not accepted in time");
      }
    }
  }
  if (!s.ok()) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("feature port ", port_, ": ", s.message()));
  }
  SetNoDelay(fd);
  if (!auth_token_.empty()) {
    s = Handshake(fd, deadline);
    if (!s.ok()) {
      close(fd);
      return absl::Status(
          s.code(), absl::StrCat("feature port ", port_, ": ", s.message()));
    }
  }
  return fd;
}

absl::Status FeaturePortClient::Handshake(int fd, absl::Time deadline) {
  // A server that does not answer the handshake in time is as good as
  // unreachable (the caller may use gRPC).
  auto transfer = [&](iovec* iov, int count, bool send) {
    absl::Status s = TransferV(fd, iov, count, send, deadline);
    if (absl::IsDeadlineExceeded(s)) {
      return absl::UnavailableError("no answer to the auth handshake in time");
    }
    return s;
  };
  // The server's header: OK if it has `magic` and a 32-byte payload, else
  // the server's error (read from the connection) or DATA_LOSS.
  auto expect = [&](uint32_t magic, const char* what) -> absl::Status {
    FeatureResponseHeader h;
    iovec iov = {&h, sizeof(h)};
    RETURN_IF_ERROR(transfer(&iov, 1, /*send=*/false));
    if (h.magic == kFeatureResponseMagic && h.code != 0) {
      std::string message(std::min(h.payload_bytes, kMaxErrorBytes), '\0');
      iovec text = {message.data(), message.size()};
      RETURN_IF_ERROR(transfer(&text, 1, /*send=*/false));
      return absl::Status(static_cast<absl::StatusCode>(h.code), message);
    }
    if (h.magic != magic || h.payload_bytes != kAuthNonceBytes) {
      return absl::DataLossError(
          absl::StrCat("not a shardgnn feature port ", what));
    }
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::string client_nonce, RandomBytes(kAuthNonceBytes));
  FeatureRequestHeader hello;
  hello.magic = kAuthHelloMagic;
  hello.num_ids = kAuthNonceBytes;
  iovec hello_iov[2] = {{&hello, sizeof(hello)},
                        {client_nonce.data(), client_nonce.size()}};
  RETURN_IF_ERROR(transfer(hello_iov, 2, /*send=*/true));
  RETURN_IF_ERROR(expect(kAuthChallengeMagic, "challenge"));
  std::string server_nonce(kAuthNonceBytes, '\0');
  iovec nonce_iov = {server_nonce.data(), server_nonce.size()};
  RETURN_IF_ERROR(transfer(&nonce_iov, 1, /*send=*/false));
  std::string proof = HmacSha256(
      auth_token_, absl::StrCat(kAuthClientLabel, server_nonce, client_nonce));
  FeatureRequestHeader proof_header;
  proof_header.magic = kAuthProofMagic;
  proof_header.num_ids = proof.size();
  iovec proof_iov[2] = {{&proof_header, sizeof(proof_header)},
                        {proof.data(), proof.size()}};
  RETURN_IF_ERROR(transfer(proof_iov, 2, /*send=*/true));
  RETURN_IF_ERROR(expect(kAuthAcceptMagic, "acceptance"));
  std::string server_proof(kHmacBytes, '\0');
  iovec server_iov = {server_proof.data(), server_proof.size()};
  RETURN_IF_ERROR(transfer(&server_iov, 1, /*send=*/false));
  if (!ConstantTimeEquals(
          server_proof,
          HmacSha256(auth_token_, absl::StrCat(kAuthServerLabel, client_nonce,
                                               server_nonce)))) {
    return absl::UnauthenticatedError(
        "the server does not know the auth token (its proof is wrong)");
  }
  return absl::OkStatus();
}

void FeaturePortClient::Release(int fd) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(fd);
}

absl::Status FeaturePortClient::Fetch(absl::Span<const NodeId> ids,
                                      int64_t feature_dim, float* out,
                                      const size_t* rows, absl::Time deadline,
                                      bool* transport_failed) {
  return Request(Prefix(), ids, feature_dim, out, rows, deadline,
                 transport_failed);
}

absl::Status FeaturePortClient::Pull(const PullSpec& spec,
                                     absl::Span<const NodeId> ids, float* out,
                                     const size_t* rows, absl::Time deadline,
                                     bool* transport_failed) {
  *transport_failed = false;
  if (spec.table.size() > kMaxEmbeddingNameBytes ||
      spec.run_id.size() > kMaxEmbeddingNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding table name or run ID over ",
                     kMaxEmbeddingNameBytes, " bytes"));
  }
  EmbeddingPullHeader p;
  p.step = spec.step;
  p.staleness = spec.staleness;
  if (spec.max_wait > absl::ZeroDuration()) {
    p.max_wait_ms =
        std::max<int64_t>(1, absl::ToInt64Milliseconds(spec.max_wait));
  }
  p.timeout_ms =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
  p.table_bytes = static_cast<uint32_t>(spec.table.size());
  p.run_id_bytes = static_cast<uint32_t>(spec.run_id.size());
  Prefix prefix;
  prefix.magic = kEmbeddingPullMagic;
  prefix.extra.append(reinterpret_cast<const char*>(&p), sizeof(p));
  prefix.extra += spec.table;
  prefix.extra += spec.run_id;
  absl::Status s =
      Request(prefix, ids, spec.dim, out, rows, deadline, transport_failed);
  // A server that pulls only over gRPC: as good as no port.
  if (absl::IsUnimplemented(s)) *transport_failed = true;
  return s;
}

absl::Status FeaturePortClient::Request(const Prefix& prefix,
                                        absl::Span<const NodeId> ids,
                                        int64_t width, float* out,
                                        const size_t* rows, absl::Time deadline,
                                        bool* transport_failed) {
  bool reused = false;
  absl::Status s = RequestOnce(prefix, ids, width, out, rows, deadline,
                               /*pooled=*/true, &reused, transport_failed);
  if (*transport_failed && reused) {
    // A pooled connection may have been closed by the server since its last
    // use (a restart, an idle cut): one more try on a new connection. Both
    // requests only read, so the first try's partial work does not matter.
    s = RequestOnce(prefix, ids, width, out, rows, deadline, /*pooled=*/false,
                    &reused, transport_failed);
  }
  return s;
}

absl::Status FeaturePortClient::RequestOnce(
    const Prefix& prefix, absl::Span<const NodeId> ids, int64_t feature_dim,
    float* out, const size_t* rows, absl::Time deadline, bool pooled,
    bool* reused, bool* transport_failed) {
  *transport_failed = false;
  absl::StatusOr<int> acquired = Acquire(deadline, pooled, reused);
  if (!acquired.ok()) {
    // Unreachable (UNAVAILABLE), or refused by the handshake.
    *transport_failed = absl::IsUnavailable(acquired.status());
    return acquired.status();
  }
  const int fd = *acquired;
  // Any I/O error leaves the stream in an unknown state: drop the connection.
  auto broken = [&](absl::Status s) {
    close(fd);
    if (absl::IsDeadlineExceeded(s)) {
      s = absl::DeadlineExceededError(absl::StrCat(
          "no answer on feature port ", port_, " before the deadline"));
    }
    *transport_failed = absl::IsUnavailable(s);
    return s;
  };
  FeatureRequestHeader request;
  request.magic = prefix.magic;
  request.num_ids = ids.size();
  iovec send_iov[3] = {
      {&request, sizeof(request)},
      {const_cast<char*>(prefix.extra.data()), prefix.extra.size()},
      {const_cast<NodeId*>(ids.data()), ids.size() * sizeof(NodeId)}};
  absl::Status s = TransferV(fd, send_iov, 3, /*send=*/true, deadline);
  if (!s.ok()) return broken(s);
  FeatureResponseHeader h;
  iovec header_iov = {&h, sizeof(h)};
  s = TransferV(fd, &header_iov, 1, /*send=*/false, deadline);
  if (!s.ok()) return broken(s);
  if (h.magic != kFeatureResponseMagic) {
    return broken(absl::DataLossError("not a shardgnn feature response"));
  }
  if (h.code != 0) {
    std::string message(std::min(h.payload_bytes, kMaxErrorBytes), '\0');
    iovec iov = {message.data(), message.size()};
    s = TransferV(fd, &iov, 1, /*send=*/false, deadline);
    if (!s.ok() || h.payload_bytes > kMaxErrorBytes) {
      close(fd);
    } else {
      Release(fd);
    }
    // A message cut short (deadline, closed connection) keeps only the
    // bytes that came: TransferV leaves iov_len at what was still missing.
    if (!s.ok()) message.resize(message.size() - iov.iov_len);
    return absl::Status(static_cast<absl::StatusCode>(h.code), message);
  }
  const size_t row_bytes = static_cast<size_t>(feature_dim) * sizeof(float);
  if (h.payload_bytes != ids.size() * row_bytes) {
    const uint64_t got_dim =
        ids.empty() ? 0 : h.payload_bytes / (ids.size() * sizeof(float));
    return broken(absl::DataLossError(absl::StrCat(
        "got ", h.payload_bytes, " bytes of rows ", got_dim, " wide, expected ",
        ids.size() * row_bytes, " bytes of rows ", feature_dim, " wide")));
  }
  if (rows == nullptr) {
    iovec iov = {out, h.payload_bytes};
    s = TransferV(fd, &iov, 1, /*send=*/false, deadline);
  } else {
    // The kernel scatters the rows to their places: no copy here.
    std::vector<iovec> iov(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      iov[i] = {out + rows[i] * static_cast<size_t>(feature_dim), row_bytes};
    }
    s = TransferV(fd, iov.data(), static_cast<int>(iov.size()),
                  /*send=*/false, deadline);
  }
  if (!s.ok()) return broken(s);
  Release(fd);
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
