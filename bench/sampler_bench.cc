// End-to-end minibatch sampling benchmark; prints one JSON object to stdout.
//
// Generates an R-MAT power-law graph (default 1M nodes, average degree 20, 128
// features), partitions it into 2 parts with METIS, serves each part with an
// in-process GraphStoreServer (memory mode) on 127.0.0.1 port 0, and samples
// batches of train seeds (fanouts 15,10,5, batch 1024) through:
//   in_process       NeighborSampler over InMemoryGraphSource on the
//                    relabelled graph, on the calling thread;
//   remote           NeighborSampler over RemoteGraphSource (2 servers),
//                    features over the servers' feature ports;
//   remote_grpc_only the same with features over gRPC;
//   remote_cache_P   the same behind a static FeatureCache holding P% of all
//                    feature rows, filled by pre-sampling 8 batches (GNNLab);
//   loader_cache_P   remote_cache_P through the PrefetchLoader (prefetch 4,
//                    --workers threads, default 4; loader_cache_P_1_worker
//                    with one) with a consumer that does nothing. A worker
//                    spends much of a batch blocked on calls, so more workers
//                    than cores pay (measured: 2 -> 0.68, 3 -> 0.83, 4 ->
//                    0.87 of in-process with the 10% cache, on 2 cores);
//   loader_shared_memory  remote through the loader with the servers'
//                    feature matrices mapped (no cache).
// Every configuration samples the same batches (the loader's seeded order).
// For each: seeds/s, sampled edges/s, input nodes per batch, remote feature
// bytes per batch and per epoch (one pass over the train seeds; measured when
// --batches is 0, the default, else extrapolated), and the cache hit rate. Also
// the in-process sampler alone (no features, no labels) on one thread: sampled
// edges/s.
//
// Servers, client and sampler share this process and its cores; on loopback
// the remote figures include the servers' CPU time.
//
//   sampler_bench [--nodes N] [--avg_degree D] [--dim F] [--batch B]
//                 [--fanouts 15,10,5] [--batches K] [--workers W]
//                 [--prefetch P] [--method metis|random] [--dir DIR]
//
// --dir keeps the generated dataset and partition there and reuses them on
// the next run with the same sizes (otherwise a temporary directory is used
// and removed). Progress goes to stderr. CI smoke run (a few seconds):
//   sampler_bench --nodes 5000 --avg_degree 10 --dim 16 --batch 64 --batches 4
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/progress.h"
#include "common/sampling.h"
#include "datasets/dataset.h"
#include "datasets/generators.h"
#include "graphstore/server.h"
#include "graphstore/shard_store.h"
#include "nlohmann/json.hpp"
#include "partition/partition.h"
#include "partition/relabelled_graph.h"
#include "sampler/cached_graph_source.h"
#include "sampler/feature_cache.h"
#include "sampler/graph_source.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"

namespace shardgnn {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Flags {
  int64_t nodes = 1000000;
  double avg_degree = 20;
  int64_t dim = 128;
  int64_t batch = 1024;
  std::vector<int> fanouts = {15, 10, 5};
  int64_t batches = 0;  // 0: one epoch over the train seeds.
  int workers = 4;
  int prefetch = 4;
  std::string method = "metis";
  std::string dir;
};

[[noreturn]] void Fail(absl::string_view what, const absl::Status& s) {
  std::fprintf(stderr, "sampler_bench: %s: %s\n", std::string(what).c_str(),
               std::string(s.message()).c_str());
  std::exit(1);
}

template <typename T>
T OrDie(absl::StatusOr<T> value, absl::string_view what) {
  if (!value.ok()) Fail(what, value.status());
  return std::move(value).value();
}

void Check(const absl::Status& s, absl::string_view what) {
  if (!s.ok()) Fail(what, s);
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Process CPU time (user + system, all threads: client and servers).
double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void Note(const std::string& line) {
  std::fprintf(stderr, "sampler_bench: %s\n", line.c_str());
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "--help" || name == "-h") {
      std::printf(
          "sampler_bench [--nodes N] [--avg_degree D] [--dim F] [--batch B]\n"
          "              [--fanouts 15,10,5] [--batches K] [--workers W]\n"
          "              [--prefetch P] [--method metis|random] [--dir DIR]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) Fail(name, absl::InvalidArgumentError("needs a value"));
    std::string value = argv[++i];
    bool ok = true;
    if (name == "--nodes") {
      ok = absl::SimpleAtoi(value, &f.nodes) && f.nodes > 0;
    } else if (name == "--avg_degree") {
      ok = absl::SimpleAtod(value, &f.avg_degree) && f.avg_degree > 0;
    } else if (name == "--dim") {
      ok = absl::SimpleAtoi(value, &f.dim) && f.dim > 0;
    } else if (name == "--batch") {
      ok = absl::SimpleAtoi(value, &f.batch) && f.batch > 0;
    } else if (name == "--batches") {
      ok = absl::SimpleAtoi(value, &f.batches) && f.batches >= 0;
    } else if (name == "--workers") {
      ok = absl::SimpleAtoi(value, &f.workers) && f.workers > 0;
    } else if (name == "--prefetch") {
      ok = absl::SimpleAtoi(value, &f.prefetch) && f.prefetch > 0;
    } else if (name == "--method") {
      f.method = value;
      ok = ParsePartitionMethod(value).ok();
    } else if (name == "--dir") {
      f.dir = value;
    } else if (name == "--fanouts") {
      f.fanouts.clear();
      for (absl::string_view part : absl::StrSplit(value, ',')) {
        int fanout = 0;
        ok = ok && absl::SimpleAtoi(part, &fanout) && fanout >= -1;
        f.fanouts.push_back(fanout);
      }
    } else {
      Fail(name, absl::InvalidArgumentError("unknown flag (try --help)"));
    }
    if (!ok) {
      Fail(name,
           absl::InvalidArgumentError(absl::StrCat("bad value '", value, "'")));
    }
  }
  return f;
}

// The graph in relabelled IDs, as the shards store it: row v lists the
// relabelled neighbors of orig_ids[v], sorted; features and labels follow.
// One configuration's figures.
struct Run {
  double seconds = 0;
  double cpu_seconds = 0;
  SampleStats sampled;
  int64_t batches = 0;
  int64_t feature_bytes = 0;  // Remote feature bytes over the timed batches.
  int64_t neighbor_bytes = 0;
  FeatureCacheStats cache;  // Over the timed batches.
};

Json ToJson(const Run& r, int64_t steps_per_epoch) {
  Json j;
  j["batches"] = r.batches;
  j["seconds"] = r.seconds;
  // CPU time per batch does not depend on how busy the machine is.
  j["cpu_ms_per_batch"] = 1e3 * r.cpu_seconds / r.batches;
  j["seeds_per_s"] = r.sampled.seeds / r.seconds;
  j["sampled_edges_per_s"] = r.sampled.sampled_edges / r.seconds;
  j["batches_per_s"] = r.batches / r.seconds;
  j["input_nodes_per_batch"] =
      static_cast<double>(r.sampled.input_nodes) / r.batches;
  j["sampled_edges_per_batch"] =
      static_cast<double>(r.sampled.sampled_edges) / r.batches;
  const double per_batch = static_cast<double>(r.feature_bytes) / r.batches;
  j["remote_feature_bytes_per_batch"] = per_batch;
  j["remote_feature_bytes_per_epoch"] = per_batch * steps_per_epoch;
  j["remote_neighbor_bytes_per_epoch"] =
      static_cast<double>(r.neighbor_bytes) / r.batches * steps_per_epoch;
  if (r.cache.hits + r.cache.misses > 0) {
    j["cache_hit_rate"] = r.cache.hit_rate();
  }
  return j;
}

// Samples `flags.batches` batches (0: a whole epoch) from a loader over
// `sampler` and measures all of them, from the start of the epoch (so the
// loader's start-up counts).
Run Measure(const NeighborSampler& sampler, const std::vector<NodeId>& seeds,
            const Flags& flags, int prefetch, const RemoteGraphSource* remote,
            const FeatureCache* cache, int workers = 0) {
  LoaderOptions options;
  options.batch_size = flags.batch;
  options.steps_per_epoch = flags.batches;
  options.prefetch = prefetch;
  options.workers = workers > 0 ? workers : flags.workers;
  options.shuffle_seed = 7;
  options.sample_seed = 8;
  auto loader = OrDie(PrefetchLoader::Create(&sampler, seeds, options),
                      "creating the loader");
  Run run;
  const RemoteStats remote_before = remote ? remote->stats() : RemoteStats{};
  const FeatureCacheStats cache_before =
      cache ? cache->stats() : FeatureCacheStats{};
  const double cpu_start = CpuSeconds();
  const auto start = Clock::now();
  loader->StartEpoch(0);
  MiniBatch batch;
  while (OrDie(loader->Next(&batch), "sampling")) {
    AccumulateStats(batch, &run.sampled);
    ++run.batches;
  }
  run.seconds = Since(start);
  loader->Stop();
  run.cpu_seconds = CpuSeconds() - cpu_start;
  if (remote != nullptr) {
    run.feature_bytes =
        remote->stats().feature_bytes - remote_before.feature_bytes;
    run.neighbor_bytes =
        remote->stats().neighbor_bytes - remote_before.neighbor_bytes;
  }
  if (cache != nullptr) {
    FeatureCacheStats now = cache->stats();
    run.cache.hits = now.hits - cache_before.hits;
    run.cache.misses = now.misses - cache_before.misses;
  }
  return run;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  Json out;
  out["benchmark"] = "sampler";
  out["config"] = {{"nodes", flags.nodes},
                   {"avg_degree", flags.avg_degree},
                   {"feature_dim", flags.dim},
                   {"batch", flags.batch},
                   {"fanouts", flags.fanouts},
                   {"batches", flags.batches},
                   {"workers", flags.workers},
                   {"prefetch", flags.prefetch},
                   {"method", flags.method},
                   {"servers", 2},
                   {"servers_in", "this process, memory mode, 127.0.0.1"}};

  // Data: generated once (kept under --dir, keyed by its sizes).
  std::string root = flags.dir;
  std::string temp_root;
  if (root.empty()) {
    temp_root = (std::filesystem::temp_directory_path() /
                 absl::StrCat("sampler_bench.", ::getpid()))
                    .string();
    root = temp_root;
  }
  std::filesystem::create_directories(root);
  const std::string tag =
      absl::StrCat("rmat-", flags.nodes, "-", flags.avg_degree, "-", flags.dim);
  const std::string data_dir = JoinPath(root, tag);
  const std::string part_dir =
      JoinPath(root, absl::StrCat(tag, "-", flags.method, "2"));
  auto stage = Clock::now();
  if (!std::filesystem::exists(JoinPath(data_dir, kDatasetManifestFile))) {
    GeneratorOptions gen;
    gen.kind = GraphKind::kRmat;
    gen.num_nodes = flags.nodes;
    gen.avg_degree = flags.avg_degree;
    gen.feature_dim = flags.dim;
    gen.num_classes = 16;
    gen.seed = 1;
    Check(GenerateDataset(gen, data_dir).status(), "generating the graph");
  }
  LoadDatasetOptions load;
  load.verify_checksums = false;
  Dataset dataset = OrDie(LoadDataset(data_dir, load), "loading the dataset");
  out["setup"]["generate_and_load_seconds"] = Since(stage);
  out["graph"] = {{"nodes", dataset.num_nodes()},
                  {"adjacency_entries", dataset.num_edges()},
                  {"feature_dim", dataset.feature_dim()}};
  stage = Clock::now();
  if (!std::filesystem::exists(JoinPath(part_dir, kPartitionManifestFile))) {
    PartitionOptions options;
    options.num_parts = 2;
    options.method = OrDie(ParsePartitionMethod(flags.method), "--method");
    Check(PartitionInMemory(dataset, part_dir, options).status(),
          "partitioning");
  }
  out["setup"]["partition_seconds"] = Since(stage);
  stage = Clock::now();
  const RelabelledGraph graph =
      OrDie(RelabelForPartition(dataset, part_dir), "relabelling");
  dataset = Dataset();  // The relabelled copy is all that is needed now.
  out["setup"]["relabel_seconds"] = Since(stage);

  // Servers and the remote source.
  stage = Clock::now();
  std::vector<std::unique_ptr<GraphStoreServer>> servers;
  std::vector<std::string> addresses;
  for (int p = 0; p < 2; ++p) {
    ShardStoreOptions store_options;
    store_options.path = JoinPath(part_dir, PartDirName(p));
    store_options.in_memory = true;
    std::shared_ptr<const ShardStore> store =
        OrDie(ShardStore::Open(store_options), store_options.path);
    servers.push_back(
        OrDie(GraphStoreServer::Start(store, {}), "starting a server"));
    addresses.push_back(servers.back()->address());
  }
  // (b)-(d) measure the network path: features through GetFeatures calls.
  // The servers run in this process, so shared memory would be available;
  // it gets its own row below.
  RemoteGraphSourceOptions calls_only;
  calls_only.use_shared_memory = false;
  auto remote =
      OrDie(RemoteGraphSource::Connect(addresses, calls_only), "connecting");
  auto shared_remote =
      OrDie(RemoteGraphSource::Connect(addresses), "connecting (shared)");
  // (b) again with features through gRPC instead of the feature ports.
  RemoteGraphSourceOptions grpc_only = calls_only;
  grpc_only.client.use_feature_port = false;
  auto grpc_remote = OrDie(RemoteGraphSource::Connect(addresses, grpc_only),
                           "connecting (gRPC only)");
  out["setup"]["serve_seconds"] = Since(stage);
  const std::vector<NodeId> seeds =
      OrDie(remote->FetchSplit("train"), "train split");
  const int64_t steps_per_epoch =
      (static_cast<int64_t>(seeds.size()) + flags.batch - 1) / flags.batch;
  out["train_seeds"] = seeds.size();
  out["steps_per_epoch"] = steps_per_epoch;

  GraphArrays arrays;
  arrays.indptr = graph.indptr;
  arrays.indices = graph.indices;
  arrays.features = graph.features;
  arrays.feature_dim = graph.feature_dim;
  arrays.labels = graph.labels;
  auto local = OrDie(InMemoryGraphSource::Create(arrays), "in-memory source");
  SamplerOptions sampler_options;
  sampler_options.fanouts = flags.fanouts;

  // In-process sampling alone, one thread.
  {
    SamplerOptions bare = sampler_options;
    bare.fetch_features = false;
    bare.fetch_labels = false;
    auto sampler = OrDie(NeighborSampler::Create(local.get(), bare), "sampler");
    Note("in-process sampling only");
    Run run = Measure(*sampler, seeds, flags, 0, nullptr, nullptr);
    out["in_process_sampling_only_1_thread"] = {
        {"sampled_edges_per_s", run.sampled.sampled_edges / run.seconds},
        {"seeds_per_s", run.sampled.seeds / run.seconds}};
  }
  auto in_process =
      OrDie(NeighborSampler::Create(local.get(), sampler_options), "sampler");
  Note("(a) in-process");
  const Run a = Measure(*in_process, seeds, flags, 0, nullptr, nullptr);
  out["in_process"] = ToJson(a, steps_per_epoch);

  auto distributed =
      OrDie(NeighborSampler::Create(remote.get(), sampler_options), "sampler");
  Note("(b) 2 servers");
  const Run b = Measure(*distributed, seeds, flags, 0, remote.get(), nullptr);
  out["remote"] = ToJson(b, steps_per_epoch);
  {
    auto sampler = OrDie(
        NeighborSampler::Create(grpc_remote.get(), sampler_options), "sampler");
    Note("(b) 2 servers, features over gRPC instead of the feature ports");
    Run grpc = Measure(*sampler, seeds, flags, 0, grpc_remote.get(), nullptr);
    Json j = ToJson(grpc, steps_per_epoch);
    j["feature_port_seeds_per_s_ratio"] =
        (b.sampled.seeds / b.seconds) / (grpc.sampled.seeds / grpc.seconds);
    out["remote_grpc_only"] = j;
  }
  Note("(b) 2 servers, prefetching loader, no cache");
  out["loader_no_cache"] =
      ToJson(Measure(*distributed, seeds, flags, flags.prefetch, remote.get(),
                     nullptr),
             steps_per_epoch);

  // (b) with the servers' feature matrices mapped (same machine): sampling
  // by calls, features by memcpy from shared memory, no cache.
  {
    auto sampler =
        OrDie(NeighborSampler::Create(shared_remote.get(), sampler_options),
              "sampler");
    Note("(b) 2 servers, shared-memory features, prefetching loader");
    Run shm = Measure(*sampler, seeds, flags, flags.prefetch,
                      shared_remote.get(), nullptr);
    Json j = ToJson(shm, steps_per_epoch);
    j["shared_feature_bytes"] = shared_remote->stats().shared_feature_bytes;
    j["seeds_per_s_vs_in_process"] =
        (shm.sampled.seeds / shm.seconds) / (a.sampled.seeds / a.seconds);
    out["loader_shared_memory"] = j;
  }

  // Hottest nodes by pre-sampling (GNNLab), shared by both cache sizes.
  stage = Clock::now();
  SamplerOptions presample = sampler_options;
  presample.fetch_features = false;
  presample.fetch_labels = false;
  auto presampler =
      OrDie(NeighborSampler::Create(remote.get(), presample), "sampler");
  const std::vector<NodeId> hottest =
      OrDie(HottestByPresampling(*presampler, seeds, 8, flags.batch, 99),
            "presampling");
  out["setup"]["presample_seconds"] = Since(stage);
  double best_ratio = 0;
  for (int percent : {10, 25}) {
    const int64_t rows = graph.indptr.size() - 1;
    FeatureCacheOptions cache_options;
    cache_options.capacity_bytes = rows * percent / 100 * graph.feature_dim *
                                   static_cast<int64_t>(sizeof(float));
    cache_options.feature_dim = graph.feature_dim;
    cache_options.policy = CachePolicy::kStatic;
    auto cache = OrDie(FeatureCache::Create(cache_options), "cache");
    stage = Clock::now();
    Check(PrefillCache(*remote, hottest, cache.get()), "filling the cache");
    const double fill_seconds = Since(stage);
    CachedGraphSource cached(remote.get(), cache.get());
    auto sampler =
        OrDie(NeighborSampler::Create(&cached, sampler_options), "sampler");
    Note(absl::StrCat("(c) 2 servers, static cache ", percent, "%"));
    Run c = Measure(*sampler, seeds, flags, 0, remote.get(), cache.get());
    Json cj = ToJson(c, steps_per_epoch);
    cj["cache_rows"] = cache->stats().entries;
    cj["cache_fill_seconds"] = fill_seconds;
    cj["remote_feature_bytes_vs_uncached"] =
        static_cast<double>(c.feature_bytes) / c.batches /
        (static_cast<double>(b.feature_bytes) / b.batches);
    out[absl::StrCat("remote_cache_", percent)] = cj;
    // (d) with --workers threads, and with one if that is not the same.
    for (int workers : {flags.workers, 1}) {
      if (workers == 1 && flags.workers == 1) break;
      Note(absl::StrCat("(d) 2 servers, static cache ", percent,
                        "%, prefetching loader, ", workers, " worker(s)"));
      Run d = Measure(*sampler, seeds, flags, flags.prefetch, remote.get(),
                      cache.get(), workers);
      Json dj = ToJson(d, steps_per_epoch);
      dj["workers"] = workers;
      const double ratio =
          (d.sampled.seeds / d.seconds) / (a.sampled.seeds / a.seconds);
      dj["seeds_per_s_vs_in_process"] = ratio;
      best_ratio = std::max(best_ratio, ratio);
      out[absl::StrCat("loader_cache_", percent,
                       workers == flags.workers ? "" : "_1_worker")] = dj;
    }
  }
  out["goals"] = {{"loader_vs_in_process_best", best_ratio},
                  {"loader_cache_10_vs_in_process",
                   out["loader_cache_10"]["seeds_per_s_vs_in_process"]},
                  {"loader_cache_25_vs_in_process",
                   out["loader_cache_25"]["seeds_per_s_vs_in_process"]},
                  {"loader_vs_in_process_goal", 0.7},
                  {"cache_10_remote_bytes_vs_uncached",
                   out["remote_cache_10"]["remote_feature_bytes_vs_uncached"]},
                  {"cache_10_remote_bytes_goal", 0.5}};

  for (auto& server : servers) server->Shutdown(absl::Now() + absl::Seconds(2));
  if (!temp_root.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_root, ec);
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace
}  // namespace shardgnn

int main(int argc, char** argv) { return shardgnn::Main(argc, argv); }
