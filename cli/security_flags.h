// The flags that secure the storage servers' ports (issue 12;
// docs/architecture.md, "Security"), shared by `serve`, `train` and `run`:
// --auth-token-file, --tls-cert, --tls-key, --tls-ca.
#ifndef SHARDGNN_CLI_SECURITY_FLAGS_H_
#define SHARDGNN_CLI_SECURITY_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graphstore/client.h"
#include "graphstore/server.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

// File paths, never the secrets themselves (which must not appear on a
// command line, where `ps` shows them).
struct SecurityFlags {
  std::string auth_token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;

  bool tls() const {
    return !tls_cert.empty() || !tls_key.empty() || !tls_ca.empty();
  }
};

// Who takes the flags, for their help texts: a server (its own certificate,
// the CA of its clients' certificates), a client (its certificate, the CA of
// the servers'), or `run` (a client that makes a token for its own servers).
enum class SecurityRole { kServer, kClient, kLauncher };

// Registers the four flags on `cmd`.
void AddSecurityFlags(CLI::App* cmd, SecurityFlags* flags, SecurityRole role);

// Reads the token and PEM files into a server's or a client's options. Errors
// name the flag and the file (common/auth.h).
absl::Status ApplySecurityFlags(const SecurityFlags& flags,
                                GraphStoreServerOptions* options);
absl::Status ApplySecurityFlags(const SecurityFlags& flags,
                                GraphStoreClientOptions* options);

// The flags as arguments for a child `shardgnn` (paths only).
std::vector<std::string> SecurityArgs(const SecurityFlags& flags);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_SECURITY_FLAGS_H_
