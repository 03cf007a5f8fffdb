// `shardgnn serve --partition DIR --part P --listen HOST:PORT`: one storage
// server for DIR/part-P, until SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/security_flags.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "common/status.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "partition/partition_book.h"

namespace shardgnn::cli {
namespace {

struct ServeFlags {
  std::string partition_dir;
  int part = -1;
  std::string listen = "127.0.0.1:0";
  std::string metrics_listen;  // Empty: no metrics.
  bool memory = false;
  bool no_shared_memory = false;
  // The server's own defaults (graphstore/server.h).
  int feature_port = GraphStoreServerOptions().feature_port;
  int feature_port_connections =
      GraphStoreServerOptions().feature_port_connections;
  int feature_port_connections_per_ip =
      GraphStoreServerOptions().feature_port_connections_per_ip;
  int64_t max_sampled_per_call = GraphStoreServerOptions().max_sampled_per_call;
  int64_t max_embedding_mb = 0;  // 0: DefaultMaxEmbeddingBytes.
  std::string embedding_dir;
  std::string embedding_table_dir;
  int max_connections = GraphStoreServerOptions().max_connections;
  int max_connections_per_ip = GraphStoreServerOptions().max_connections_per_ip;
  double idle_timeout_seconds =
      absl::ToDoubleSeconds(GraphStoreServerOptions().idle_timeout);
  int max_queued_per_ip = GraphStoreServerOptions().max_queued_per_ip;
  int64_t cache_mb = 256;
  int threads = 0;
  double drain_seconds = 10;
  SecurityFlags security;
};

// Self-pipe: the signal handler only writes a byte, the main thread reads it.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int signo) {
  const char byte = static_cast<char>(signo);
  const int saved = errno;
  // Nothing to do if the pipe is full: one byte already wakes the reader.
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

absl::Status InstallSignalHandlers() {
  if (pipe(g_signal_pipe) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, nullptr) != 0 ||
      sigaction(SIGINT, &sa, nullptr) != 0) {
    return absl::InternalError(
        absl::StrCat("sigaction: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Blocks until SIGTERM or SIGINT arrives; returns its name.
const char* WaitForSignal() {
  char byte = 0;
  while (read(g_signal_pipe[0], &byte, 1) != 1) {
    if (errno != EINTR) break;
  }
  return byte == SIGINT ? "SIGINT" : "SIGTERM";
}

// Says which parts DIR does hold, for the error message.
std::string PartsFound(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("part-", 0) == 0 && entry.is_directory(ec)) {
      parts.push_back(name);
    }
  }
  std::sort(parts.begin(), parts.end());
  if (parts.empty()) return "it holds no part-* shard directories";
  return absl::StrCat("it holds ", absl::StrJoin(parts, ", "));
}

absl::Status RunServe(const ServeFlags& flags) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(flags.partition_dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat(flags.partition_dir, ": no such partition directory"));
  }
  if (flags.part < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--part ", flags.part, " is negative"));
  }
  const std::string shard_dir =
      JoinPath(flags.partition_dir, absl::StrCat("part-", flags.part));
  if (!fs::is_directory(shard_dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat(shard_dir, ": part ", flags.part, " does not exist (",
                     PartsFound(flags.partition_dir), ")"));
  }
  if (flags.cache_mb < 1) {
    return absl::InvalidArgumentError("--cache-mb must be at least 1");
  }
  // Read before the shard is loaded: a bad token file fails at once.
  GraphStoreServerOptions server_options;
  RETURN_IF_ERROR(ApplySecurityFlags(flags.security, &server_options));
  server_options.listen_address = flags.listen;
  server_options.num_threads = flags.threads;
  server_options.feature_port = flags.feature_port;
  server_options.feature_port_connections = flags.feature_port_connections;
  server_options.feature_port_connections_per_ip =
      flags.feature_port_connections_per_ip;
  server_options.max_sampled_per_call = flags.max_sampled_per_call;
  server_options.max_embedding_bytes = flags.max_embedding_mb << 20;
  server_options.embedding_snapshot_dir = flags.embedding_dir;
  if (!flags.embedding_table_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(flags.embedding_table_dir, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--embedding-table-dir ", flags.embedding_table_dir,
                       ": cannot create it: ", ec.message()));
    }
  }
  server_options.embedding_table_dir = flags.embedding_table_dir;
  server_options.max_connections = flags.max_connections;
  server_options.max_connections_per_ip = flags.max_connections_per_ip;
  server_options.idle_timeout = absl::Seconds(flags.idle_timeout_seconds);
  server_options.max_queued_per_ip = flags.max_queued_per_ip;
  server_options.metrics_listen_address = flags.metrics_listen;
  server_options.metrics_part = flags.part;
  RETURN_IF_ERROR(InstallSignalHandlers());
  TuneAllocatorForServing();
  // Bound before the shard is loaded (memory mode may take minutes): health
  // checks find the server and answer NOT_SERVING until it serves, and a
  // busy address (gRPC or metrics) fails at once.
  ASSIGN_OR_RETURN(std::unique_ptr<GraphStoreServer> server,
                   GraphStoreServer::Bind(server_options));

  ShardStoreOptions store_options;
  store_options.path = shard_dir;
  store_options.in_memory = flags.memory;
  store_options.share_features = !flags.no_shared_memory;
  store_options.block_cache_bytes = flags.cache_mb << 20;
  ASSIGN_OR_RETURN(std::unique_ptr<ShardStore> opened,
                   ShardStore::Open(store_options));
  std::shared_ptr<const ShardStore> store = std::move(opened);
  const ShardMeta& meta = store->Meta();
  if (meta.part_id != flags.part) {
    return absl::FailedPreconditionError(
        absl::StrCat(shard_dir, " holds part ", meta.part_id, ", not part ",
                     flags.part, " (was the directory renamed?)"));
  }
  // The shard must be the one the partition's manifest describes (without a
  // manifest, a warning once the server runs).
  const bool has_manifest =
      fs::exists(JoinPath(flags.partition_dir, kPartitionManifestFile), ec);
  if (has_manifest) {
    ASSIGN_OR_RETURN(PartitionManifest manifest,
                     ReadPartitionManifest(flags.partition_dir));
    RETURN_IF_ERROR(
        Annotate(CheckShardOfPartition(manifest, meta, flags.part), shard_dir));
  }

  RETURN_IF_ERROR(server->Serve(store));
  if (!has_manifest) {
    std::fprintf(stderr,
                 "shardgnn serve: warning: %s has no %s; part %d is served "
                 "without checking that it belongs there\n",
                 flags.partition_dir.c_str(), kPartitionManifestFile,
                 flags.part);
  }
  const std::string feature_port =
      server->feature_port() > 0
          ? absl::StrCat("feature port ", server->feature_port())
          : std::string("no feature port");
  std::printf("shardgnn serve: part %d ready on %s (%s mode, %lld nodes, %s)\n",
              meta.part_id, server->address().c_str(),
              store->in_memory() ? "memory" : "disk",
              static_cast<long long>(meta.node_end - meta.node_start),
              feature_port.c_str());
  std::fflush(stdout);
  // After the ready line, which scripts and launchers read first.
  if (server->metrics_port() > 0) {
    const std::string& m = flags.metrics_listen;
    std::printf("shardgnn serve: metrics on http://%s:%d/metrics\n",
                m.substr(0, m.rfind(':')).c_str(), server->metrics_port());
  }
  if (server->tls()) {
    std::printf(
        "shardgnn serve: gRPC over TLS%s; the feature port is off (it speaks "
        "plain TCP), so trainers fetch features over gRPC\n",
        server_options.tls_client_ca_pem.empty()
            ? ""
            : ", clients must present a certificate --tls-ca signed");
  }
  if (server_options.auth_token.empty()) {
    std::printf(
        "shardgnn serve: warning: no --auth-token-file: anyone who can reach "
        "%s may call it\n",
        server->address().c_str());
  }
  std::fflush(stdout);

  const char* signal_name = WaitForSignal();
  std::fprintf(stderr, "shardgnn serve: %s, draining calls in flight\n",
               signal_name);
  server->Shutdown(absl::Now() + absl::Seconds(flags.drain_seconds));
  ServerTotals totals = server->Totals();
  std::fprintf(stderr,
               "shardgnn serve: part %d stopped: %lld calls (%lld errors), "
               "%s sent\n",
               meta.part_id, static_cast<long long>(totals.calls),
               static_cast<long long>(totals.errors),
               HumanBytes(static_cast<double>(totals.bytes_out)).c_str());
  return absl::OkStatus();
}

}  // namespace

void AddServeCommand(CLI::App& app, absl::Status* result) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve one shard of a partition over gRPC until SIGTERM");
  cmd->add_option("--partition", flags->partition_dir,
                  "Partition directory (written by `shardgnn partition`)")
      ->required();
  cmd->add_option("--part", flags->part, "Part to serve (DIR/part-P)")
      ->required();
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT to listen on; port 0 picks a free port")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", flags->metrics_listen,
                  "HOST:PORT to serve Prometheus metrics on over HTTP (GET "
                  "/metrics); port 0 picks a free port; default: no metrics");
  cmd->add_flag("--memory", flags->memory,
                "Load the shard into memory (default: read RocksDB per call)");
  cmd->add_flag("--no-shared-memory", flags->no_shared_memory,
                "Memory mode: keep the features private instead of letting "
                "trainers on this machine map them");
  cmd->add_option("--feature-port", flags->feature_port,
                  "Port on the --listen host for bulk feature fetches over "
                  "plain TCP; 0 picks a free port, -1 serves features over "
                  "gRPC only")
      ->capture_default_str();
  cmd->add_option("--feature-port-connections", flags->feature_port_connections,
                  "Feature port connections served at once (a thread each); "
                  "trainers beyond it fetch over gRPC")
      ->capture_default_str();
  cmd->add_option("--feature-port-connections-per-ip",
                  flags->feature_port_connections_per_ip,
                  "Feature port connections from one client address (IPv4 "
                  "address or IPv6 /64)")
      ->capture_default_str();
  cmd->add_option("--max-connections", flags->max_connections,
                  "gRPC connections held at once; more are closed on accept "
                  "(each port also stays under a quarter of the open-file "
                  "limit)")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-ip", flags->max_connections_per_ip,
                  "gRPC connections from one client address")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", flags->idle_timeout_seconds,
                  "Seconds after which a connection without calls is closed "
                  "(clients reconnect)")
      ->capture_default_str();
  cmd->add_option("--max-sampled-per-call", flags->max_sampled_per_call,
                  "Neighbor IDs one SampleNeighbors call may return; larger "
                  "samples get RESOURCE_EXHAUSTED")
      ->capture_default_str();
  cmd->add_option("--max-embedding-mb", flags->max_embedding_mb,
                  "MiB the learnable embedding tables of training runs may "
                  "reserve on this server (rows and optimizer state); a larger "
                  "table is refused. 0: half of this machine's memory (65536 "
                  "with --embedding-table-dir); above the machine's memory "
                  "only with --embedding-table-dir")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--embedding-dir", flags->embedding_dir,
                  "Directory for snapshots of the learnable embedding tables, "
                  "taken with the trainers' checkpoints (a resumed run, or "
                  "this server restarted, reads them back); without it runs "
                  "with learned embeddings cannot checkpoint");
  cmd->add_option("--embedding-table-dir", flags->embedding_table_dir,
                  "Keep the learnable embedding tables in files in this "
                  "directory (mapped: the kernel keeps the rows in use in "
                  "memory) instead of memory, for tables larger than RAM; "
                  "each table's size is reserved on disk when it is created");
  cmd->add_option("--max-queued-per-ip", flags->max_queued_per_ip,
                  "Large calls from one client address waiting for a worker; "
                  "more get UNAVAILABLE (server busy), which clients retry")
      ->capture_default_str();
  cmd->add_option("--cache-mb", flags->cache_mb,
                  "RocksDB block cache in MiB (disk mode)")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads,
                  "Worker threads for large and disk-mode calls, the feature "
                  "port's large samples too (default: one per core)");
  cmd->add_option("--drain-seconds", flags->drain_seconds,
                  "On shutdown, how long calls in flight may finish")
      ->capture_default_str();
  AddSecurityFlags(cmd, &flags->security, SecurityRole::kServer);
  cmd->callback([flags, result] { *result = RunServe(*flags); });
}

}  // namespace shardgnn::cli
