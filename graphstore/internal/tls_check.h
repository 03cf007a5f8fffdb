// TLS failures said at once and in words (issue 51, item 8).
//
// gRPC retries a failed TLS handshake as it retries a refused connection, so
// a trainer with the wrong CA waited for its connect deadline and then read
// "not healthy". TlsHandshakeProblem makes one handshake of its own with
// OpenSSL, as gRPC's would (the CA, the client certificate, the address's
// host or IP checked against the certificate), and says why it fails.
// CheckCertificateDates keeps a server from starting on a certificate no
// client accepts. Thread-safe (no shared state).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_TLS_CHECK_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_TLS_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shardgnn::internal {

struct TlsClientPems {
  std::string ca;    // Trusted CA certificates (PEM); required.
  std::string cert;  // The client's certificate and key, if it has one.
  std::string key;
};

// Why a TLS handshake with `address` (HOST:PORT or [V6]:PORT) trusting
// `pems.ca` fails, as one line for people ("the server's certificate is not
// signed by a CA in --tls-ca (unable to get local issuer certificate)");
// empty when it succeeds, or when no TCP connection can be made within
// `timeout` (not TLS's doing: the caller's own error says that).
std::string TlsHandshakeProblem(const std::string& address,
                                const TlsClientPems& pems,
                                absl::Duration timeout);

// INVALID_ARGUMENT, naming `what` ("--tls-cert"), when the first certificate
// in `pem` cannot be read, has expired or is not valid yet at `now`. Sets
// *warning (else clears it) when it expires within `soon`.
absl::Status CheckCertificateDates(const std::string& pem,
                                   const std::string& what, absl::Time now,
                                   absl::Duration soon, std::string* warning);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_TLS_CHECK_H_
