// The per-row update cost of a learned embedding table (issue 15): pushes per
// second into one storage server's table from 1, 2 and 4 concurrent pushing
// clients (each its own trainer of the table, its own gRPC channel), and the
// same pushes applied to an EmbeddingTable in this process (no RPC); pushes
// and pulls over the server's feature port (when it has one) and over gRPC
// only, side by side. Prints one JSON object.
//
//   embedding_bench --server HOST:PORT [--dim 64] [--batch 1024]
//                   [--seconds 3] [--optimizer adam] [--table-dir DIR]
//
// With --table-dir, the in-process pushes also run on a disk-mode table (its
// arrays files in DIR, mapped: EmbeddingTable::Create), side by side with the
// memory one ("in_process_disk").
//
// The server must serve a part (any `shardgnn serve`); the bench creates its
// own table ("bench") in it. Each push holds `batch` distinct random rows of
// the server's node range (a minibatch's input rows), pull the same.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/sampling.h"
#include "embedding/embedding_table.h"
#include "graphstore/client.h"
#include "nlohmann/json.hpp"

namespace shardgnn {
namespace {

struct Flags {
  std::string server;
  int64_t dim = 64;
  int64_t batch = 1024;
  double seconds = 3.0;
  std::string optimizer = "adam";
  std::string table_dir;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "embedding_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) Fail(absl::StrCat(what, ": ", s.ToString()));
}

using Clock = std::chrono::steady_clock;

// `batch` distinct rows of [start, end), drawn from `state`.
std::vector<NodeId> Rows(uint64_t* state, NodeId start, NodeId end,
                         int64_t batch) {
  std::vector<NodeId> ids;
  ids.reserve(static_cast<size_t>(batch));
  const auto n = static_cast<uint64_t>(end - start);
  while (static_cast<int64_t>(ids.size()) < batch) {
    ids.push_back(start + static_cast<NodeId>(UniformBelow(state, n)));
    if (static_cast<int64_t>(ids.size()) == batch) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
  }
  return ids;
}

struct Rate {
  double calls_per_second = 0;
  double rows_per_second = 0;
  double mean_call_ms = 0;
};

// `clients` threads calling `call(client, step, state)` for `seconds`.
template <typename Call>
Rate Measure(int clients, double seconds, Call call) {
  std::atomic<int64_t> calls{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      uint64_t state = MixSeed(99, static_cast<uint64_t>(c));
      for (int64_t step = 0; !stop.load(); ++step) {
        call(c, step, &state);
        calls.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - t0).count();
  Rate r;
  r.calls_per_second = static_cast<double>(calls.load()) / elapsed;
  r.mean_call_ms = 1000.0 * clients / r.calls_per_second;
  return r;
}

int Main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(name + " needs a value");
      return argv[++i];
    };
    if (name == "--server") {
      f.server = value();
    } else if (name == "--dim") {
      if (!absl::SimpleAtoi(value(), &f.dim)) Fail("--dim: not a number");
    } else if (name == "--batch") {
      if (!absl::SimpleAtoi(value(), &f.batch)) Fail("--batch: not a number");
    } else if (name == "--seconds") {
      if (!absl::SimpleAtod(value(), &f.seconds))
        Fail("--seconds: not a number");
    } else if (name == "--optimizer") {
      f.optimizer = value();
    } else if (name == "--table-dir") {
      f.table_dir = value();
    } else {
      Fail("unknown flag " + name);
    }
  }
  if (f.server.empty()) Fail("--server HOST:PORT is required");
  auto optimizer = ParseEmbeddingOptimizer(f.optimizer);
  Check(optimizer.status(), "--optimizer");

  nlohmann::ordered_json out;
  out["dim"] = f.dim;
  out["batch"] = f.batch;
  out["optimizer"] = f.optimizer;
  out["hardware_concurrency"] = std::thread::hardware_concurrency();
  const std::vector<int> client_counts = {1, 2, 4};
  NodeId start = 0, end = 0;
  {
    auto probe = GraphStoreClient::Connect(f.server);
    Check(probe.status(), "connecting");
    auto info = (*probe)->Info();
    Check(info.status(), "Info");
    start = info->meta.node_start;
    end = info->meta.node_end;
  }
  out["server_rows"] = end - start;
  const std::vector<float> grads(static_cast<size_t>(f.batch * f.dim), 0.01f);

  nlohmann::ordered_json server = nlohmann::ordered_json::array();
  for (int clients : client_counts) {
    EmbeddingTableConfig config;
    config.name = "bench";
    config.dim = f.dim;
    config.optimizer = *optimizer;
    config.num_trainers = clients;
    config.run_id = absl::StrCat("bench-", clients);
    config.run_secret = "the benchmark run's secret, 128 bits";
    // conns pull over the feature port (if the server has one), grpc_conns
    // over gRPC.
    std::vector<std::unique_ptr<GraphStoreClient>> conns, grpc_conns;
    for (int c = 0; c < clients; ++c) {
      for (bool port : {true, false}) {
        GraphStoreClientOptions options;
        options.use_feature_port = port;
        auto conn = GraphStoreClient::Connect(f.server, options);
        Check(conn.status(), "connecting");
        Check((*conn)->Info().status(), "Info");
        (port ? conns : grpc_conns).push_back(std::move(conn).value());
      }
    }
    auto measure_pushes =
        [&](std::vector<std::unique_ptr<GraphStoreClient>>& over,
            const EmbeddingTableConfig& table) {
          Check(over[0]->CreateEmbeddingTable(table), "CreateEmbeddingTable");
          Rate push = Measure(
              clients, f.seconds, [&](int c, int64_t step, uint64_t* state) {
                std::vector<NodeId> ids = Rows(state, start, end, f.batch);
                Check(over[static_cast<size_t>(c)]->PushEmbeddingGradients(
                          table, c, step, ids,
                          absl::MakeConstSpan(grads).subspan(
                              0, ids.size() * f.dim)),
                      "PushEmbeddingGradients");
              });
          push.rows_per_second =
              push.calls_per_second * static_cast<double>(f.batch);
          return push;
        };
    const Rate push = measure_pushes(conns, config);
    std::vector<float> rows(static_cast<size_t>(f.batch * f.dim));
    auto measure_pulls =
        [&](std::vector<std::unique_ptr<GraphStoreClient>>& over) {
          Rate pull =
              Measure(clients, f.seconds, [&](int c, int64_t, uint64_t* state) {
                thread_local std::vector<float> buffer;
                std::vector<NodeId> ids = Rows(state, start, end, f.batch);
                buffer.resize(ids.size() * f.dim);
                Check(over[static_cast<size_t>(c)]->PullEmbeddings(
                          config, ids, 0, -1, absl::ZeroDuration(),
                          buffer.data()),
                      "PullEmbeddings");
              });
          pull.rows_per_second =
              pull.calls_per_second * static_cast<double>(f.batch);
          return pull;
        };
    const Rate pull = measure_pulls(conns);
    const Rate grpc_pull = measure_pulls(grpc_conns);
    // Last: a table of its own replaces the one the pulls read.
    EmbeddingTableConfig grpc_config = config;
    grpc_config.run_id = absl::StrCat("bench-grpc-", clients);
    const Rate grpc_push = measure_pushes(grpc_conns, grpc_config);
    server.push_back(
        {{"clients", clients},
         {"pushes_per_second", push.calls_per_second},
         {"pushed_rows_per_second", push.rows_per_second},
         {"push_ms", push.mean_call_ms},
         {"pulls_per_second", pull.calls_per_second},
         {"pulled_rows_per_second", pull.rows_per_second},
         {"pull_ms", pull.mean_call_ms},
         {"over", conns[0]->UsesFeaturePort() ? "feature port" : "gRPC"},
         {"grpc_pushes_per_second", grpc_push.calls_per_second},
         {"grpc_push_ms", grpc_push.mean_call_ms},
         {"grpc_pulls_per_second", grpc_pull.calls_per_second},
         {"grpc_pull_ms", grpc_pull.mean_call_ms}});
    std::fprintf(stderr,
                 "embedding_bench: %d client(s): %.0f pushes/s (gRPC %.0f), "
                 "%.0f pulls/s (gRPC %.0f)\n",
                 clients, push.calls_per_second, grpc_push.calls_per_second,
                 pull.calls_per_second, grpc_pull.calls_per_second);
  }
  out["server"] = server;

  // The same pushes into a table in this process: the update itself; in
  // memory, and with --table-dir in mapped files.
  auto in_process = [&](const std::string& backing_dir) {
    nlohmann::ordered_json local = nlohmann::ordered_json::array();
    for (int clients : client_counts) {
      EmbeddingTableConfig config;
      config.name = "bench";
      config.dim = f.dim;
      config.optimizer = *optimizer;
      config.num_trainers = clients;
      auto table = EmbeddingTable::Create(config, start, end, backing_dir);
      Check(table.status(), "EmbeddingTable::Create");
      Rate push = Measure(
          clients, f.seconds, [&](int c, int64_t step, uint64_t* state) {
            std::vector<NodeId> ids = Rows(state, start, end, f.batch);
            Check((*table)->Push(c, step, ids,
                                 absl::MakeConstSpan(grads).subspan(
                                     0, ids.size() * f.dim)),
                  "Push");
          });
      local.push_back(
          {{"threads", clients},
           {"pushes_per_second", push.calls_per_second},
           {"pushed_rows_per_second",
            push.calls_per_second * static_cast<double>(f.batch)},
           {"row_update_ns",
            1e9 / (push.calls_per_second * static_cast<double>(f.batch)) *
                clients}});
    }
    return local;
  };
  out["in_process"] = in_process("");
  if (!f.table_dir.empty()) out["in_process_disk"] = in_process(f.table_dir);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace
}  // namespace shardgnn

int main(int argc, char** argv) { return shardgnn::Main(argc, argv); }
