#include "graphstore/internal/tls_check.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/ports.h"

namespace shardgnn::internal {
namespace {

struct FreeCtx {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct FreeSsl {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct FreeBio {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct FreeX509 {
  void operator()(X509* x) const { X509_free(x); }
};
struct FreeKey {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, FreeBio> MemoryBio(const std::string& text) {
  return std::unique_ptr<BIO, FreeBio>(
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The first OpenSSL error on this thread's queue, as text; clears the queue.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int)
  ERR_clear_error();
  if (code == 0) return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// A connected TCP socket to host:port within `timeout`, or -1.
int ConnectTcp(const std::string& host, const std::string& port,
               absl::Duration timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return -1;
  }
  int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC,
                  found->ai_protocol);
  if (fd >= 0) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(absl::ToInt64Seconds(timeout));
    tv.tv_usec =
        static_cast<suseconds_t>(absl::ToInt64Microseconds(timeout) % 1000000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// The certificate problem a failed verification names, in the flags'
// words.
std::string VerifyProblem(long result, const std::string& host) {  // NOLINT
  const std::string reason = X509_verify_cert_error_string(result);
  switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return absl::StrCat(
          "the server's certificate is not signed by a CA in --tls-ca (",
          reason, ")");
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return absl::StrCat("the server's certificate does not name ", host, " (",
                          reason,
                          "; its subjectAltName must list the address the "
                          "trainers use)");
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return absl::StrCat("the server's certificate is out of its dates (",
                          reason, ")");
    default:
      return absl::StrCat("the server's certificate is refused (", reason, ")");
  }
}

}  // namespace

std::string TlsHandshakeProblem(const std::string& address,
                                const TlsClientPems& pems,
                                absl::Duration timeout) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) return "";
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, FreeCtx> ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) return "";
  // The CA certificates, every one in the PEM text.
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
  auto ca_bio = MemoryBio(pems.ca);
  int cas = 0;
  while (true) {
    std::unique_ptr<X509, FreeX509> ca(
        PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr));
    if (ca == nullptr) break;
    if (X509_STORE_add_cert(store, ca.get()) == 1) ++cas;
  }
  ERR_clear_error();  // The end of the PEM text reads as an error.
  if (cas == 0) return "--tls-ca holds no readable CA certificate";
  if (!pems.cert.empty()) {
    auto cert_bio = MemoryBio(pems.cert);
    auto key_bio = MemoryBio(pems.key);
    std::unique_ptr<X509, FreeX509> cert(
        PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
    std::unique_ptr<EVP_PKEY, FreeKey> key(
        PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr || key == nullptr ||
        SSL_CTX_use_certificate(ctx.get(), cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
      return absl::StrCat(
          "the client certificate (--tls-cert, --tls-key) "
          "cannot be used: ",
          OpenSslError());
    }
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  std::unique_ptr<SSL, FreeSsl> ssl(SSL_new(ctx.get()));
  if (ssl == nullptr) return "";
  if (IsIpAddress(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
    SSL_set1_host(ssl.get(), host.c_str());
  }
  const int fd = ConnectTcp(host, port, timeout);
  if (fd < 0) return "";
  SSL_set_fd(ssl.get(), fd);
  std::string problem;
  if (SSL_connect(ssl.get()) != 1) {
    const long verified = SSL_get_verify_result(ssl.get());  // NOLINT
    if (verified != X509_V_OK) {
      problem = VerifyProblem(verified, host);
    } else {
      const std::string error = OpenSslError();
      if (error.find("alert") != std::string::npos ||
          error.find("wrong version") != std::string::npos ||
          error.find("packet length") != std::string::npos) {
        problem = absl::StrCat(
            "the server refused the TLS handshake (", error,
            pems.cert.empty() ? "; a server started with --tls-ca wants a "
                                "client certificate: --tls-cert, --tls-key"
                              : "; does the server trust the CA that signed "
                                "--tls-cert?",
            ")");
      }
      // Else a reset or a timeout: not TLS's doing, for the caller to say.
    }
  } else {
    // Under TLS 1.3 a server refuses a client certificate after the client's
    // side of the handshake is done: its alert is the first thing read.
    // (A server that accepted waits for HTTP/2's preface: the read times
    // out.)
    timeval tv{};
    tv.tv_usec = 300000;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char byte;
    const int got = SSL_read(ssl.get(), &byte, 1);
    if (got <= 0 && SSL_get_error(ssl.get(), got) == SSL_ERROR_SSL) {
      problem = absl::StrCat(
          "the server refused this client's certificate (", OpenSslError(),
          pems.cert.empty() ? "; a server started with --tls-ca wants a "
                              "client certificate: --tls-cert, --tls-key"
                            : "; does the server trust the CA that signed "
                              "--tls-cert?",
          ")");
    }
  }
  ERR_clear_error();
  close(fd);
  return problem;
}

absl::Status CheckCertificateDates(const std::string& pem,
                                   const std::string& what, absl::Time now,
                                   absl::Duration soon, std::string* warning) {
  warning->clear();
  auto bio = MemoryBio(pem);
  std::unique_ptr<X509, FreeX509> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a PEM certificate (", OpenSslError(), ")"));
  }
  auto to_time = [](const ASN1_TIME* t, absl::Time* out) {
    std::tm tm{};
    if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return false;
    *out = absl::FromTimeT(timegm(&tm));
    return true;
  };
  absl::Time not_before, not_after;
  if (!to_time(X509_get0_notBefore(cert.get()), &not_before) ||
      !to_time(X509_get0_notAfter(cert.get()), &not_after)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the certificate's dates cannot be read"));
  }
  auto day = [](absl::Time t) {
    return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone());
  };
  if (now > not_after) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the certificate expired on ", day(not_after),
                     "; no client accepts it (renew it)"));
  }
  if (now < not_before) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the certificate is not valid before ", day(not_before),
        "; no client accepts it yet (is this machine's clock right?)"));
  }
  if (not_after - now < soon) {
    *warning = absl::StrCat(what, ": the certificate expires on ",
                            day(not_after), "; renew it before then");
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
