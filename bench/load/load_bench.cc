// Load and attack benchmark (issue 12): well-behaved training clients against
// a storage server while the attacks of bench/load/attacks.h run; prints one
// JSON object.
//
// Unless --servers is given, it writes a random graph as one real shard
// (ShardWriter) and serves it in memory mode from a child process (this
// program re-executed with --serve-shard), bound on [::] so that the
// well-behaved clients come from 127.0.0.1 and the attacker from ::1, and
// with a fresh auth token as `shardgnn run` gives its servers (--no-auth:
// none). The server's RSS is read from /proc/PID/status of that child (or of
// --server-pid with --servers).
//
// N clients (each its own GraphStoreClient: its own channel and feature port
// connections, as N trainers) loop a training step: SampleNeighbors of a
// batch of seeds, SampleNeighbors of the frontier (seeds and their sampled
// neighbors on the server), GetFeatures of the frontier (over the feature
// port). Phases of --seconds each: quiet, one under each attack, after.
// With --clients 0 it is only the attacker (bench/load/run_attack_training.sh
// runs it beside a real training run): no quiet or after phase, and SIGINT or
// SIGTERM ends the current attack early and prints the report.
//
//   load_bench [--clients 4] [--seconds 5] [--attacks all|none|a,b,...]
//              [--nodes 100000] [--dim 128] [--batch 256] [--fanouts 10,10]
//              [--servers HOST:PORT,...] [--auth-token-file F] [--no-auth]
//              [--server-pid PID] [--attacker-host ::1] [--dir DIR] [--check]
//
// --check: exit 1 unless every phase had steps and no well-behaved error.
// Progress goes to stderr.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/load/attacks.h"
#include "common/auth.h"
#include "common/sampling.h"
#include "common/subprocess.h"
#include "graphstore/client.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "graphstore/shard_writer.h"
#include "nlohmann/json.hpp"

namespace shardgnn::bench {
namespace {

constexpr char kReadyLine[] = "load_bench server ready on";

// Set by SIGINT/SIGTERM: end the current phase and the run (the report is
// still printed).
std::atomic<bool> stop_requested{false};
extern "C" void RequestStop(int) { stop_requested = true; }

struct Flags {
  int clients = 4;
  double seconds = 5;
  std::vector<std::string> attacks;
  int64_t nodes = 100000;
  int64_t dim = 128;
  int batch = 256;
  std::vector<int> fanouts = {10, 10};
  std::vector<std::string> servers;
  std::string auth_token_file;
  bool no_auth = false;
  pid_t server_pid = 0;
  std::string attacker_host = "::1";
  std::string dir;
  bool check = false;
};

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) {
    std::fprintf(stderr, "load_bench: %s: %s\n", what.c_str(),
                 s.ToString().c_str());
    std::exit(1);
  }
}

// A random graph (degrees 1..29, random features and labels) as one shard.
void WriteShard(const std::string& path, int64_t nodes, int64_t dim) {
  ShardMeta meta;
  meta.node_end = nodes;
  meta.num_nodes_total = nodes;
  meta.feature_dim = dim;
  meta.num_classes = 10;
  meta.partition_id = "load_bench";
  auto writer = ShardWriter::Create(path, meta);
  Check(writer.status(), "creating shard");
  uint64_t state = 12345;
  std::vector<NodeId> adj;
  std::vector<float> row(static_cast<size_t>(dim));
  for (NodeId v = 0; v < nodes; ++v) {
    adj.resize(1 + UniformBelow(&state, 29));
    for (auto& n : adj) n = static_cast<NodeId>(UniformBelow(&state, nodes));
    std::sort(adj.begin(), adj.end());
    adj.erase(std::unique(adj.begin(), adj.end()), adj.end());
    for (auto& x : row) x = static_cast<float>(SplitMix64(&state) >> 40);
    Check((*writer)->AddNode(v, adj.data(), adj.size(), row.data(), v % 10),
          "adding node");
  }
  Check((*writer)->Finish().status(), "finishing shard");
}

// VmRSS of `pid` in MiB (0 if unreadable).
double RssMiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stod(line.substr(6)) / 1024.0;  // kB.
    }
  }
  return 0;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// What the well-behaved clients saw in one phase.
struct PhaseRecord {
  std::mutex mu;
  std::vector<double> step_ms;
  std::map<std::string, std::vector<double>> call_ms;  // By method.
  std::map<std::string, int64_t> errors;               // By status code.
  std::string first_error;
  int64_t failed_steps = 0;
  double rss_max = 0;
};

struct Server {
  std::string address;
  ServerInfo info;
};

// The well-behaved clients and the phase they record into.
class Clients {
 public:
  Clients(const Flags& flags, std::vector<Server> servers, std::string token)
      : flags_(flags), servers_(std::move(servers)), token_(std::move(token)) {}

  void Start() {
    for (int c = 0; c < flags_.clients; ++c) {
      threads_.emplace_back([this, c] { Loop(c); });
    }
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  // Steps ending from now on are recorded into `phase` (nullptr: nowhere).
  void SetPhase(PhaseRecord* phase) { phase_.store(phase); }

 private:
  void Record(const std::string& method, absl::Time start,
              const absl::Status& s) {
    PhaseRecord* p = phase_.load();
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(p->mu);
    p->call_ms[method].push_back(
        absl::ToDoubleMilliseconds(absl::Now() - start));
    if (!s.ok()) {
      ++p->errors[absl::StatusCodeToString(s.code())];
      if (p->first_error.empty()) p->first_error = s.ToString();
    }
  }

  void Loop(int c) {
    std::vector<std::unique_ptr<GraphStoreClient>> clients;
    GraphStoreClientOptions options;
    options.auth_token = token_;
    for (const Server& s : servers_) {
      auto client = GraphStoreClient::Connect(s.address, options);
      Check(client.status(), "connecting a client");
      Check((*client)->Info().status(), "Info");
      clients.push_back(std::move(client).value());
    }
    uint64_t state = MixSeed(42, static_cast<uint64_t>(c));
    std::vector<NodeId> seeds, frontier;
    std::vector<float> rows;
    for (int64_t step = 0; !stop_; ++step) {
      const size_t k = static_cast<size_t>(step) % servers_.size();
      const ShardMeta& meta = servers_[k].info.meta;
      GraphStoreClient* client = clients[k].get();
      const absl::Time step_start = absl::Now();
      seeds.resize(static_cast<size_t>(flags_.batch));
      for (auto& s : seeds) {
        s = meta.node_start +
            static_cast<NodeId>(UniformBelow(
                &state,
                static_cast<uint64_t>(meta.node_end - meta.node_start)));
      }
      bool ok = true;
      absl::Time t = absl::Now();
      auto first = client->SampleNeighbors(seeds, flags_.fanouts[0], false,
                                           SplitMix64(&state));
      Record("SampleNeighbors", t, first.status());
      ok = first.ok();
      if (ok) {
        frontier = seeds;
        for (NodeId n : first->neighbors) {
          if (n >= meta.node_start && n < meta.node_end) frontier.push_back(n);
        }
        std::sort(frontier.begin(), frontier.end());
        frontier.erase(std::unique(frontier.begin(), frontier.end()),
                       frontier.end());
        const int fanout =
            flags_.fanouts.size() > 1 ? flags_.fanouts[1] : flags_.fanouts[0];
        t = absl::Now();
        auto second = client->SampleNeighbors(frontier, fanout, false,
                                              SplitMix64(&state));
        Record("SampleNeighbors", t, second.status());
        ok = second.ok();
      }
      if (ok) {
        rows.resize(frontier.size() * static_cast<size_t>(meta.feature_dim));
        t = absl::Now();
        absl::Status s =
            client->GetFeatures(frontier, meta.feature_dim, rows.data());
        Record("GetFeatures", t, s);
        ok = s.ok();
      }
      PhaseRecord* p = phase_.load();
      if (p == nullptr) continue;
      std::lock_guard<std::mutex> lock(p->mu);
      if (ok) {
        p->step_ms.push_back(
            absl::ToDoubleMilliseconds(absl::Now() - step_start));
      } else {
        ++p->failed_steps;
      }
    }
  }

  const Flags& flags_;
  const std::vector<Server> servers_;
  const std::string token_;
  std::atomic<bool> stop_{false};
  std::atomic<PhaseRecord*> phase_{nullptr};
  std::vector<std::thread> threads_;
};

nlohmann::json Summarize(const std::string& name, PhaseRecord* p,
                         double seconds) {
  std::lock_guard<std::mutex> lock(p->mu);
  nlohmann::json out;
  out["phase"] = name;
  out["seconds"] = seconds;
  const double steps = static_cast<double>(p->step_ms.size());
  out["steps"] = p->step_ms.size();
  out["failed_steps"] = p->failed_steps;
  out["steps_per_s"] = steps / seconds;
  out["step_ms"] = {{"p50", Percentile(p->step_ms, 0.5)},
                    {"p99", Percentile(p->step_ms, 0.99)}};
  std::vector<double> all;
  nlohmann::json methods = nlohmann::json::object();
  for (const auto& [method, ms] : p->call_ms) {
    all.insert(all.end(), ms.begin(), ms.end());
    methods[method] = {{"calls", ms.size()},
                       {"p50_ms", Percentile(ms, 0.5)},
                       {"p99_ms", Percentile(ms, 0.99)}};
  }
  out["calls"] = all.size();
  out["calls_per_s"] = static_cast<double>(all.size()) / seconds;
  out["call_ms"] = {{"p50", Percentile(all, 0.5)},
                    {"p99", Percentile(all, 0.99)}};
  out["by_method"] = methods;
  out["errors"] = p->errors;
  if (!p->first_error.empty()) out["first_error"] = p->first_error;
  out["server_rss_mib_max"] = p->rss_max;
  return out;
}

std::vector<int> ParseInts(const std::string& s) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    out.push_back(std::stoi(std::string(part)));
  }
  return out;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--no-auth") {
      f.no_auth = true;
      continue;
    }
    if (name == "--check") {
      f.check = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "load_bench: %s needs a value\n", name.c_str());
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (name == "--clients") {
      f.clients = std::stoi(value);
    } else if (name == "--seconds") {
      f.seconds = std::stod(value);
    } else if (name == "--attacks") {
      if (value == "all") {
        f.attacks = AttackNames();
      } else if (value != "none") {
        f.attacks = absl::StrSplit(value, ',', absl::SkipEmpty());
      }
    } else if (name == "--nodes") {
      f.nodes = std::stoll(value);
    } else if (name == "--dim") {
      f.dim = std::stoll(value);
    } else if (name == "--batch") {
      f.batch = std::stoi(value);
    } else if (name == "--fanouts") {
      f.fanouts = ParseInts(value);
    } else if (name == "--servers") {
      f.servers = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (name == "--auth-token-file") {
      f.auth_token_file = value;
    } else if (name == "--server-pid") {
      f.server_pid = std::stoi(value);
    } else if (name == "--attacker-host") {
      f.attacker_host = value;
    } else if (name == "--dir") {
      f.dir = value;
    } else {
      std::fprintf(stderr, "load_bench: unknown flag %s\n", name.c_str());
      std::exit(2);
    }
  }
  for (const std::string& a : f.attacks) {
    const auto names = AttackNames();
    if (std::find(names.begin(), names.end(), a) == names.end()) {
      std::fprintf(stderr, "load_bench: unknown attack %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (f.clients < 0 || f.seconds <= 0 || f.batch < 1 || f.fanouts.empty() ||
      (f.clients == 0 && f.attacks.empty())) {
    std::fprintf(stderr,
                 "load_bench: bad --clients/--seconds/--batch/"
                 "--fanouts (--clients 0 needs --attacks)\n");
    std::exit(2);
  }
  return f;
}

// --serve-shard PATH [--auth-token-file F]: the storage server process.
int ServeShard(int argc, char** argv) {
  TuneAllocatorForServing();  // As `shardgnn serve`.
  ShardStoreOptions store_options;
  GraphStoreServerOptions options;
  options.listen_address = "[::]:0";  // 127.0.0.1 and ::1 both reach it.
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--serve-shard") store_options.path = argv[++i];
    if (name == "--auth-token-file") {
      auto token = ReadAuthTokenFile(argv[++i]);
      Check(token.status(), "server token");
      options.auth_token = *token;
    }
  }
  store_options.in_memory = true;
  auto store = ShardStore::Open(store_options);
  Check(store.status(), "opening shard (server process)");
  auto server = GraphStoreServer::Start(
      std::shared_ptr<const ShardStore>(std::move(*store)), options);
  Check(server.status(), "starting server (server process)");
  std::printf("%s %d\n", kReadyLine, (*server)->port());
  std::fflush(stdout);
  for (;;) pause();
}

int Main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--serve-shard") return ServeShard(argc, argv);
  }
  const Flags flags = ParseFlags(argc, argv);
  // Idle connections need descriptors: raise the soft limit, as serve does.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }

  std::string token;
  std::unique_ptr<Subprocess> child;
  std::vector<std::string> addresses = flags.servers;
  pid_t server_pid = flags.server_pid;
  std::string rss_of = server_pid > 0 ? "--server-pid" : "none";
  std::string dir;
  if (!flags.auth_token_file.empty()) {
    auto t = ReadAuthTokenFile(flags.auth_token_file);
    Check(t.status(), "--auth-token-file");
    token = *t;
  }
  if (addresses.empty()) {
    dir = flags.dir.empty() ? absl::StrCat("/tmp/load_bench-", getpid())
                            : flags.dir;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string shard = dir + "/shard";
    std::fprintf(
        stderr, "load_bench: writing a shard of %lld nodes, dim %lld\n",
        static_cast<long long>(flags.nodes), static_cast<long long>(flags.dim));
    WriteShard(shard, flags.nodes, flags.dim);
    SubprocessOptions server;
    server.argv = {"/proc/self/exe", "--serve-shard", shard};
    if (!flags.no_auth) {
      if (token.empty()) {
        auto t = NewAuthToken();
        Check(t.status(), "making a token");
        token = *t;
      }
      const std::string token_file = dir + "/token";
      Check(WriteAuthTokenFile(token_file, token), "writing the token");
      server.argv.push_back("--auth-token-file");
      server.argv.push_back(token_file);
    }
    server.name = "server";
    auto started = Subprocess::Start(server);
    Check(started.status(), "starting the server");
    child = std::move(started).value();
    auto ready = child->WaitForLine(kReadyLine, std::chrono::minutes(5));
    Check(ready.status(), "waiting for the server");
    addresses = {
        absl::StrCat("127.0.0.1:", ready->substr(ready->rfind(' ') + 1))};
    server_pid = child->pid();
    rss_of = "server child process";
  }

  // Who the servers are, and how the attacker reaches the first one.
  std::vector<Server> servers;
  for (const std::string& address : addresses) {
    GraphStoreClientOptions options;
    options.auth_token = token;
    auto client = GraphStoreClient::Connect(address, options);
    Check(client.status(), "connecting");
    Check((*client)->WaitForHealthy(absl::Now() + absl::Seconds(30)),
          "waiting for " + address);
    auto info = (*client)->Info();
    Check(info.status(), "Info of " + address);
    servers.push_back({address, *info});
  }
  AttackTarget target;
  target.host = flags.attacker_host;
  target.grpc_port =
      std::stoi(addresses[0].substr(addresses[0].rfind(':') + 1));
  target.feature_port = servers[0].info.feature_port;
  target.auth_token = token;
  target.node_start = servers[0].info.meta.node_start;
  target.node_end = servers[0].info.meta.node_end;
  target.feature_dim = servers[0].info.meta.feature_dim;

  // The server's RSS, sampled while phases run.
  std::atomic<PhaseRecord*> rss_phase{nullptr};
  std::atomic<bool> done{false};
  std::thread rss_sampler([&] {
    while (!done) {
      PhaseRecord* p = rss_phase.load();
      if (p != nullptr && server_pid > 0) {
        const double rss = RssMiB(server_pid);
        std::lock_guard<std::mutex> lock(p->mu);
        p->rss_max = std::max(p->rss_max, rss);
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });

  Clients clients(flags, servers, token);
  clients.Start();
  absl::SleepFor(absl::Milliseconds(500));  // Connections and warm-up.

  // Without well-behaved clients (the attacker beside a real training run)
  // there is nothing to measure before or after the attacks.
  std::vector<std::string> phases;
  if (flags.clients > 0) phases.push_back("quiet");
  for (const auto& a : flags.attacks) phases.push_back(a);
  if (!flags.attacks.empty() && flags.clients > 0) phases.push_back("after");
  struct sigaction action = {};
  action.sa_handler = RequestStop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  nlohmann::json results = nlohmann::json::array();
  bool healthy = true;
  double quiet_p50 = 0, quiet_p99 = 0;
  for (const std::string& phase : phases) {
    if (stop_requested) break;
    const bool attacked = phase != "quiet" && phase != "after";
    std::unique_ptr<Attack> attack;
    nlohmann::json attack_report;
    if (attacked && phase == "unauth" && token.empty()) {
      attack_report = {{"skipped", "the server has no token"}};
    } else if (attacked) {
      attack = StartAttack(phase, target);
      absl::SleepFor(absl::Milliseconds(200));  // Let it take hold.
    }
    std::fprintf(stderr, "load_bench: phase %s (%.1f s)\n", phase.c_str(),
                 flags.seconds);
    PhaseRecord record;
    const double rss_start = server_pid > 0 ? RssMiB(server_pid) : 0;
    const absl::Time start = absl::Now();
    clients.SetPhase(&record);
    rss_phase = &record;
    const absl::Time end = start + absl::Seconds(flags.seconds);
    while (!stop_requested && absl::Now() < end) {
      absl::SleepFor(std::min(absl::Milliseconds(100), end - absl::Now()));
    }
    clients.SetPhase(nullptr);
    const double took = absl::ToDoubleSeconds(absl::Now() - start);
    const double rss_end = server_pid > 0 ? RssMiB(server_pid) : 0;
    rss_phase = nullptr;
    if (attack != nullptr) attack_report = attack->Stop();
    attack.reset();
    nlohmann::json out = Summarize(phase, &record, took);
    out["server_rss_mib"] = {
        {"start", rss_start}, {"end", rss_end}, {"max", record.rss_max}};
    if (attacked) out["attack"] = attack_report;
    const double p50 = out["step_ms"]["p50"], p99 = out["step_ms"]["p99"];
    if (phase == "quiet") {
      quiet_p50 = p50;
      quiet_p99 = p99;
    } else if (quiet_p50 > 0) {
      out["ratio_to_quiet"] = {{"p50_step", p50 / quiet_p50},
                               {"p99_step", p99 / quiet_p99}};
    }
    const bool ok = (out["steps"].get<int64_t>() > 0 || flags.clients == 0) &&
                    out["errors"].empty() &&
                    out["failed_steps"].get<int64_t>() == 0;
    healthy = healthy && ok;
    std::fprintf(stderr,
                 "load_bench:   %.1f steps/s, step p50 %.1f ms p99 %.1f ms, "
                 "%zu error kinds, server RSS %.0f MiB max%s\n",
                 out["steps_per_s"].get<double>(), p50, p99,
                 out["errors"].size(), record.rss_max, ok ? "" : " (NOT OK)");
    results.push_back(out);
  }
  clients.Stop();
  done = true;
  rss_sampler.join();

  nlohmann::json report;
  report["config"] = {{"clients", flags.clients},
                      {"seconds_per_phase", flags.seconds},
                      {"batch", flags.batch},
                      {"fanouts", flags.fanouts},
                      {"servers", addresses},
                      {"started_server", child != nullptr},
                      {"nodes", servers[0].info.meta.node_end -
                                    servers[0].info.meta.node_start},
                      {"feature_dim", target.feature_dim},
                      {"auth_token", !token.empty()},
                      {"feature_port", target.feature_port > 0},
                      {"client_address", "127.0.0.1 (or as --servers says)"},
                      {"attacker_address", flags.attacker_host},
                      {"server_rss_of", rss_of},
                      {"cores", std::thread::hardware_concurrency()}};
  report["phases"] = results;
  report["well_behaved_ok"] = healthy;
  std::printf("%s\n", report.dump(2).c_str());
  std::fflush(stdout);

  if (child != nullptr) child->Terminate(std::chrono::seconds(5));
  if (flags.dir.empty() && !dir.empty()) std::filesystem::remove_all(dir);
  return flags.check && !healthy ? 1 : 0;
}

}  // namespace
}  // namespace shardgnn::bench

int main(int argc, char** argv) { return shardgnn::bench::Main(argc, argv); }
