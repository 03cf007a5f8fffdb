#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/buffers.h"
#include "common/status.h"
#include "graphstore/internal/feature_port.h"
#include "graphstore/internal/socket_io.h"

namespace shardgnn::internal {
namespace {

// A connection attempt gives up after this (then the caller uses gRPC).
constexpr absl::Duration kConnectTimeout = absl::Seconds(1);

// What follows an embedding request's header: `header` (an
// EmbeddingPullHeader or EmbeddingPushHeader, the lengths set here), the
// table name, the run ID and the run's secret. INVALID_ARGUMENT for names
// the server would refuse.
template <typename Header>
absl::StatusOr<std::string> EmbeddingExtra(Header header,
                                           const std::string& table,
                                           const std::string& run_id,
                                           const std::string& run_secret) {
  if (table.size() > kMaxEmbeddingNameBytes ||
      run_id.size() > kMaxEmbeddingNameBytes ||
      run_secret.size() > kMaxEmbeddingNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding table name, run ID or run secret over ",
                     kMaxEmbeddingNameBytes, " bytes"));
  }
  header.table_bytes = static_cast<uint32_t>(table.size());
  header.run_id_bytes = static_cast<uint32_t>(run_id.size());
  header.secret_bytes = static_cast<uint32_t>(run_secret.size());
  std::string extra(reinterpret_cast<const char*>(&header), sizeof(header));
  extra += table;
  extra += run_id;
  extra += run_secret;
  return extra;
}

}  // namespace

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
      std::string message(std::min(h.payload_bytes, kMaxFeaturePortErrorBytes),
                          '\0');
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
  Destination to;
  to.out = reinterpret_cast<char*>(out);
  to.places = rows;
  to.count = ids.size();
  to.piece_bytes = static_cast<size_t>(feature_dim) * sizeof(float);
  return Request(Prefix(), ids, to, deadline, transport_failed);
}

absl::Status FeaturePortClient::Pull(const PullSpec& spec,
                                     absl::Span<const NodeId> ids, float* out,
                                     const size_t* rows, absl::Time deadline,
                                     bool* transport_failed) {
  *transport_failed = false;
  EmbeddingPullHeader p;
  p.step = spec.step;
  p.staleness = spec.staleness;
  if (spec.max_wait > absl::ZeroDuration()) {
    p.max_wait_ms =
        std::max<int64_t>(1, absl::ToInt64Milliseconds(spec.max_wait));
  }
  p.timeout_ms =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
  Prefix prefix;
  prefix.magic = kEmbeddingPullMagic;
  ASSIGN_OR_RETURN(prefix.extra,
                   EmbeddingExtra(p, spec.table, spec.run_id, spec.run_secret));
  Destination to;
  to.out = reinterpret_cast<char*>(out);
  to.places = rows;
  to.count = ids.size();
  to.piece_bytes = static_cast<size_t>(spec.dim) * sizeof(float);
  absl::Status s = Request(prefix, ids, to, deadline, transport_failed);
  // A server that pulls only over gRPC: as good as no port.
  if (absl::IsUnimplemented(s)) *transport_failed = true;
  return s;
}

absl::Status FeaturePortClient::Push(const PushSpec& spec,
                                     absl::Span<const NodeId> ids,
                                     absl::Span<const float> gradients,
                                     absl::Time deadline,
                                     bool* transport_failed) {
  *transport_failed = false;
  EmbeddingPushHeader p;
  p.step = spec.step;
  p.trainer = spec.trainer;
  p.gradient_bytes = gradients.size() * sizeof(float);
  Prefix prefix;
  prefix.magic = kEmbeddingPushMagic;
  ASSIGN_OR_RETURN(prefix.extra,
                   EmbeddingExtra(p, spec.table, spec.run_id, spec.run_secret));
  prefix.trailer = absl::MakeConstSpan(
      reinterpret_cast<const char*>(gradients.data()), p.gradient_bytes);
  int64_t applied_steps = 0;
  Destination to;
  to.out = reinterpret_cast<char*>(&applied_steps);
  to.count = 1;
  to.piece_bytes = sizeof(applied_steps);
  to.rows = false;
  absl::Status s = Request(prefix, ids, to, deadline, transport_failed);
  if (s.ok() && applied_steps < 0) {
    s = absl::DataLossError(
        absl::StrCat("push answered with ", applied_steps, " applied steps"));
  }
  // A server that pushes only over gRPC: as good as no port.
  if (absl::IsUnimplemented(s)) *transport_failed = true;
  return s;
}

absl::Status FeaturePortClient::Sample(absl::Span<const NodeId> ids, int fanout,
                                       bool replace, uint64_t seed,
                                       int64_t max_neighbors,
                                       SampledNeighbors* out,
                                       absl::Time deadline,
                                       bool* transport_failed) {
  *transport_failed = false;
  SampleHeader p;
  p.fanout = fanout;
  p.replace = replace ? 1 : 0;
  p.seed = seed;
  Prefix prefix;
  prefix.magic = kSampleMagic;
  prefix.extra.assign(reinterpret_cast<const char*>(&p), sizeof(p));
  Destination to;
  to.count = ids.size();
  to.sampled = out;
  to.max_neighbors = static_cast<uint64_t>(std::max<int64_t>(max_neighbors, 0));
  absl::Status s = Request(prefix, ids, to, deadline, transport_failed);
  // A server that samples only over gRPC: as good as no port.
  if (absl::IsInvalidArgument(s) &&
      absl::StrContains(s.message(), "bad magic number")) {
    *transport_failed = true;
  }
  return s;
}

absl::Status FeaturePortClient::Request(const Prefix& prefix,
                                        absl::Span<const NodeId> ids,
                                        const Destination& to,
                                        absl::Time deadline,
                                        bool* transport_failed) {
  bool reused = false;
  absl::Status s = RequestOnce(prefix, ids, to, deadline, /*pooled=*/true,
                               &reused, transport_failed);
  if (*transport_failed && reused) {
    // A pooled connection may have been closed by the server since its last
    // use (a restart, an idle cut): one more try on a new connection. Reads
    // may be repeated, and so may pushes (a table applies a trainer's step
    // once and acknowledges a repeat).
    s = RequestOnce(prefix, ids, to, deadline, /*pooled=*/false, &reused,
                    transport_failed);
  }
  return s;
}

absl::Status FeaturePortClient::RequestOnce(
    const Prefix& prefix, absl::Span<const NodeId> ids, const Destination& to,
    absl::Time deadline, bool pooled, bool* reused, bool* transport_failed) {
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
  iovec send_iov[4] = {
      {&request, sizeof(request)},
      {const_cast<char*>(prefix.extra.data()), prefix.extra.size()},
      {const_cast<NodeId*>(ids.data()), ids.size() * sizeof(NodeId)},
      {const_cast<char*>(prefix.trailer.data()), prefix.trailer.size()}};
  absl::Status s = TransferV(fd, send_iov, 4, /*send=*/true, deadline);
  if (!s.ok()) return broken(s);
  FeatureResponseHeader h;
  iovec header_iov = {&h, sizeof(h)};
  s = TransferV(fd, &header_iov, 1, /*send=*/false, deadline);
  if (!s.ok()) return broken(s);
  if (h.magic != kFeatureResponseMagic) {
    return broken(absl::DataLossError("not a shardgnn feature response"));
  }
  if (h.code != 0) {
    std::string message(std::min(h.payload_bytes, kMaxFeaturePortErrorBytes),
                        '\0');
    iovec iov = {message.data(), message.size()};
    s = TransferV(fd, &iov, 1, /*send=*/false, deadline);
    if (!s.ok() || h.payload_bytes > kMaxFeaturePortErrorBytes) {
      close(fd);
    } else {
      Release(fd);
    }
    // A message cut short (deadline, closed connection) keeps only the
    // bytes that came: TransferV leaves iov_len at what was still missing.
    if (!s.ok()) message.resize(message.size() - iov.iov_len);
    return absl::Status(static_cast<absl::StatusCode>(h.code), message);
  }
  if (to.sampled != nullptr) {
    // Counts, then neighbors: each bounded before anything is sized by it.
    const uint64_t counts_bytes = to.count * sizeof(int64_t);
    if (h.payload_bytes < counts_bytes ||
        (h.payload_bytes - counts_bytes) % sizeof(NodeId) != 0 ||
        (h.payload_bytes - counts_bytes) / sizeof(NodeId) > to.max_neighbors) {
      return broken(absl::DataLossError(absl::StrCat(
          "got a sample of ", h.payload_bytes, " bytes for ", to.count,
          " IDs; expected ", to.count, " counts and at most ", to.max_neighbors,
          " neighbors")));
    }
    const size_t neighbors =
        static_cast<size_t>((h.payload_bytes - counts_bytes) / sizeof(NodeId));
    ReserveWithHeadroom(&to.sampled->counts, to.count);
    to.sampled->counts.resize(to.count);
    ReserveWithHeadroom(&to.sampled->neighbors, neighbors);
    to.sampled->neighbors.resize(neighbors);
    iovec iov[2] = {{to.sampled->counts.data(), counts_bytes},
                    {to.sampled->neighbors.data(), neighbors * sizeof(NodeId)}};
    s = TransferV(fd, iov, 2, /*send=*/false, deadline);
    if (!s.ok()) return broken(s);
    Release(fd);
    return absl::OkStatus();
  }
  if (h.payload_bytes != to.count * to.piece_bytes) {
    if (!to.rows) {
      return broken(absl::DataLossError(
          absl::StrCat("got an answer of ", h.payload_bytes,
                       " bytes, expected ", to.count * to.piece_bytes)));
    }
    const uint64_t got_dim =
        to.count == 0 ? 0 : h.payload_bytes / (to.count * sizeof(float));
    return broken(absl::DataLossError(absl::StrCat(
        "got ", h.payload_bytes, " bytes of rows ", got_dim, " wide, expected ",
        to.count * to.piece_bytes, " bytes of rows ",
        to.piece_bytes / sizeof(float), " wide")));
  }
  if (to.places == nullptr) {
    iovec iov = {to.out, h.payload_bytes};
    s = TransferV(fd, &iov, 1, /*send=*/false, deadline);
  } else {
    // The kernel scatters the rows to their places: no copy here. The
    // places go to it a stack array of IOV_MAX at a time, what TransferV
    // hands readv at once anyway (a vector of them, fresh for each call,
    // faulted in fresh pages on every large pull: issue 17).
    constexpr size_t kChunk = IOV_MAX;
    iovec iov[kChunk];
    for (size_t first = 0; first < to.count && s.ok(); first += kChunk) {
      const size_t n = std::min(kChunk, to.count - first);
      for (size_t i = 0; i < n; ++i) {
        iov[i] = {to.out + to.places[first + i] * to.piece_bytes,
                  to.piece_bytes};
      }
      s = TransferV(fd, iov, static_cast<int>(n), /*send=*/false, deadline);
    }
  }
  if (!s.ok()) return broken(s);
  Release(fd);
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
