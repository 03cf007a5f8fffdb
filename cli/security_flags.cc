#include "cli/security_flags.h"

#include "CLI/CLI.hpp"
#include "common/auth.h"
#include "common/status.h"

namespace shardgnn::cli {

void AddSecurityFlags(CLI::App* cmd, SecurityFlags* flags, SecurityRole role) {
  const bool server = role == SecurityRole::kServer;
  cmd->add_option(
      "--auth-token-file", flags->auth_token_file,
      server ? "File holding the cluster's secret token (mode 600): every "
               "call but Health and every feature port connection must "
               "present it"
      : role == SecurityRole::kClient
          ? "File holding the cluster's secret token (mode 600), presented "
            "to the storage servers"
          : "File holding the cluster's secret token (mode 600) for "
            "--servers; the servers run starts get a new random token "
            "unless this is given");
  cmd->add_option("--tls-cert", flags->tls_cert,
                  server ? "PEM certificate chain to serve gRPC over TLS "
                           "(turns the feature port off)"
                         : "PEM client certificate, for servers that require "
                           "one (mutual TLS; needs --tls-ca)");
  cmd->add_option("--tls-key", flags->tls_key,
                  server ? "PEM private key of --tls-cert"
                         : "PEM private key of the client --tls-cert");
  cmd->add_option("--tls-ca", flags->tls_ca,
                  server ? "PEM CA bundle: clients must present a certificate "
                           "it signed (mutual TLS; needs --tls-cert)"
                         : "PEM CA bundle that signed the servers' "
                           "certificates: talk to them over TLS");
}

namespace {

// Reads each named file: the token, then the PEMs.
struct Loaded {
  std::string token, cert, key, ca;
};
absl::StatusOr<Loaded> Load(const SecurityFlags& flags) {
  Loaded out;
  if (!flags.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(out.token, ReadAuthTokenFile(flags.auth_token_file));
  }
  if (!flags.tls_cert.empty()) {
    ASSIGN_OR_RETURN(out.cert, ReadPemFile(flags.tls_cert, "--tls-cert"));
  }
  if (!flags.tls_key.empty()) {
    ASSIGN_OR_RETURN(out.key, ReadPemFile(flags.tls_key, "--tls-key"));
  }
  if (!flags.tls_ca.empty()) {
    ASSIGN_OR_RETURN(out.ca, ReadPemFile(flags.tls_ca, "--tls-ca"));
  }
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together (a certificate and its private "
        "key)");
  }
  return out;
}

}  // namespace

absl::Status ApplySecurityFlags(const SecurityFlags& flags,
                                GraphStoreServerOptions* options) {
  ASSIGN_OR_RETURN(Loaded loaded, Load(flags));
  if (!flags.tls_ca.empty() && flags.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls-ca (the CA of client certificates) needs TLS: give the "
        "server's --tls-cert and --tls-key");
  }
  options->auth_token = loaded.token;
  options->tls_cert_pem = loaded.cert;
  options->tls_key_pem = loaded.key;
  options->tls_client_ca_pem = loaded.ca;
  return absl::OkStatus();
}

absl::Status ApplySecurityFlags(const SecurityFlags& flags,
                                GraphStoreClientOptions* options) {
  ASSIGN_OR_RETURN(Loaded loaded, Load(flags));
  if (!flags.tls_cert.empty() && flags.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert (a client certificate) needs TLS: give --tls-ca, the CA "
        "that signed the servers' certificates");
  }
  options->auth_token = loaded.token;
  options->tls_cert_pem = loaded.cert;
  options->tls_key_pem = loaded.key;
  options->tls_ca_pem = loaded.ca;
  return absl::OkStatus();
}

std::vector<std::string> SecurityArgs(const SecurityFlags& flags) {
  std::vector<std::string> args;
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    args.push_back(flag);
    args.push_back(value);
  };
  add("--auth-token-file", flags.auth_token_file);
  add("--tls-cert", flags.tls_cert);
  add("--tls-key", flags.tls_key);
  add("--tls-ca", flags.tls_ca);
  return args;
}

}  // namespace shardgnn::cli
