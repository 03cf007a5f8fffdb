// Shared secrets for the storage servers' ports (issue 12): the auth token
// file, random tokens and nonces, HMAC-SHA256 and constant-time comparison
// (OpenSSL's libcrypto underneath).
//
// A token is what every party of one cluster holds: servers check it on each
// gRPC call (metadata "authorization: Bearer TOKEN") and in the feature
// port's challenge-response (graphstore/internal/feature_port.h); clients
// send it. It travels in an HTTP/2 header, so it is printable ASCII without
// spaces. All functions are thread-safe.
#ifndef SHARDGNN_COMMON_AUTH_H_
#define SHARDGNN_COMMON_AUTH_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn {

inline constexpr size_t kMinAuthTokenChars = 16;
inline constexpr size_t kMaxAuthTokenChars = 4096;
inline constexpr size_t kHmacBytes = 32;  // SHA-256.

// Reads the token in `path` (--auth-token-file). One trailing newline ("\n"
// or "\r\n") is stripped. Fails with PERMISSION_DENIED if group or others
// may read the file (like ssh with a private key: chmod 600), and with
// INVALID_ARGUMENT if the token is empty, shorter than kMinAuthTokenChars,
// longer than kMaxAuthTokenChars, or holds anything but printable ASCII
// without spaces. Every error names the file.
absl::StatusOr<std::string> ReadAuthTokenFile(const std::string& path);

// A new random token: 64 hex digits (256 bits from the kernel's CSPRNG).
absl::StatusOr<std::string> NewAuthToken();

// Creates `path` with mode 0600 (it must not exist) holding `token` and a
// newline. ALREADY_EXISTS if it exists.
absl::Status WriteAuthTokenFile(const std::string& path,
                                absl::string_view token);

// `n` random bytes from the kernel's CSPRNG.
absl::StatusOr<std::string> RandomBytes(size_t n);

// HMAC-SHA256(key, data): kHmacBytes bytes.
std::string HmacSha256(absl::string_view key, absl::string_view data);

// SHA-256(data): kHmacBytes bytes.
std::string Sha256(absl::string_view data);

// a == b in time that depends on neither content nor where they differ (both
// are hashed first, so not on their lengths either).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// Reads a PEM file named by `flag` (--tls-cert, ...): NOT_FOUND or
// INVALID_ARGUMENT (no "-----BEGIN") naming the flag and the file.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view flag);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_AUTH_H_
