// The Python package's native module (shardgnn._shardgnn): graphs (the
// storage servers through RemoteGraphSource, or a dataset in memory), and a
// NeighborLoader over PrefetchLoader whose batches become torch tensors
// without copies. docs/python.md describes the API; python/shardgnn/
// __init__.py is the package.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "common/sampling.h"
#include "datasets/dataset.h"
#include "embedding/embedding_table.h"
#include "sampler/cached_graph_source.h"
#include "sampler/embedding_rows.h"
#include "sampler/feature_cache.h"
#include "sampler/graph_source.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/remote_graph_source.h"
#include "trainer/trainer.h"

namespace py = pybind11;

namespace shardgnn::python {
namespace {

// A failed status as the Python exception its code suggests.
[[noreturn]] void Raise(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      throw py::value_error(message);
    case absl::StatusCode::kNotFound:
      throw py::key_error(message);
    default:
      throw std::runtime_error(message);
  }
}

template <typename T>
T Check(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return std::move(*value);
}

void Check(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}

std::string ReadSmallFile(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in)
    throw py::value_error(absl::StrCat(what, " ", path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An int64 copy of a 1-D integer tensor's values.
std::vector<NodeId> IdsOf(const torch::Tensor& ids, const char* what) {
  if (ids.dim() != 1 || ids.scalar_type() != torch::kLong) {
    throw py::value_error(
        absl::StrCat(what, " must be a 1-D int64 tensor of node IDs"));
  }
  const torch::Tensor c = ids.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<NodeId>(p, p + c.numel());
}

torch::Tensor TensorOf(std::vector<NodeId> ids) {
  auto holder = std::make_shared<std::vector<NodeId>>(std::move(ids));
  const auto n = static_cast<int64_t>(holder->size());
  return torch::from_blob(
      holder->data(), {n}, [holder](void*) mutable { holder.reset(); },
      torch::kLong);
}

// A graph the loaders read: servers or a dataset in memory.
class Graph {
 public:
  static std::shared_ptr<Graph> Connect(const std::vector<std::string>& servers,
                                        const std::string& auth_token_file,
                                        const std::string& tls_ca,
                                        const std::string& tls_cert,
                                        const std::string& tls_key,
                                        bool shared_memory, bool feature_port,
                                        double timeout_seconds) {
    RemoteGraphSourceOptions options;
    if (!auth_token_file.empty()) {
      // The checks `train --auth-token-file` makes (mode 600, length).
      absl::StatusOr<std::string> token = ReadAuthTokenFile(auth_token_file);
      if (!token.ok())
        throw py::value_error(std::string(token.status().message()));
      options.client.auth_token = *token;
    }
    if (!tls_ca.empty())
      options.client.tls_ca_pem = ReadSmallFile(tls_ca, "TLS CA");
    if (!tls_cert.empty())
      options.client.tls_cert_pem = ReadSmallFile(tls_cert, "TLS certificate");
    if (!tls_key.empty())
      options.client.tls_key_pem = ReadSmallFile(tls_key, "TLS key");
    options.use_shared_memory = shared_memory;
    options.client.use_feature_port = feature_port;
    options.connect_timeout = absl::Seconds(timeout_seconds);
    auto graph = std::make_shared<Graph>();
    {
      py::gil_scoped_release release;
      graph->remote_ = Check(RemoteGraphSource::Connect(servers, options));
    }
    graph->source_ = graph->remote_.get();
    graph->num_classes_ = graph->remote_->num_classes();
    return graph;
  }

  static std::shared_ptr<Graph> Load(const std::string& dir) {
    auto graph = std::make_shared<Graph>();
    {
      py::gil_scoped_release release;
      graph->dataset_ = std::make_unique<Dataset>(Check(LoadDataset(dir)));
      graph->memory_ =
          Check(InMemoryGraphSource::FromDataset(*graph->dataset_));
    }
    graph->source_ = graph->memory_.get();
    graph->num_classes_ = graph->dataset_->manifest.num_classes;
    return graph;
  }

  int64_t num_nodes() const { return source_->num_nodes(); }
  int64_t feature_dim() const { return source_->feature_dim(); }
  int64_t num_classes() const { return num_classes_; }
  int64_t edge_feature_dim() const { return source_->edge_feature_dim(); }
  int num_parts() const {
    return remote_ != nullptr ? remote_->book().num_parts() : 1;
  }

  torch::Tensor Split(const std::string& name) const {
    if (remote_ != nullptr) {
      py::gil_scoped_release release;
      return TensorOf(Check(remote_->FetchSplit(name)));
    }
    auto it = dataset_->splits.find(name);
    if (it == dataset_->splits.end())
      throw py::key_error(
          absl::StrCat("the dataset has no split '", name, "'"));
    return TensorOf(it->second);
  }

  // The part that owns each node (0 for a dataset in memory).
  torch::Tensor PartOf(const torch::Tensor& ids) const {
    std::vector<NodeId> nodes = IdsOf(ids, "ids");
    std::vector<NodeId> parts(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i] < 0 || nodes[i] >= num_nodes()) {
        throw py::value_error(absl::StrCat("node ", nodes[i],
                                           " is not in the graph (",
                                           num_nodes(), " nodes)"));
      }
      if (remote_ != nullptr) parts[i] = remote_->book().Owner(nodes[i]);
    }
    return TensorOf(std::move(parts));
  }

  torch::Tensor Features(const torch::Tensor& ids) const {
    const std::vector<NodeId> nodes = IdsOf(ids, "ids");
    torch::Tensor out = torch::empty(
        {static_cast<int64_t>(nodes.size()), feature_dim()}, torch::kFloat);
    py::gil_scoped_release release;
    Check(source_->FetchFeatures(nodes, out.data_ptr<float>()));
    return out;
  }

  torch::Tensor Labels(const torch::Tensor& ids) const {
    const std::vector<NodeId> nodes = IdsOf(ids, "ids");
    torch::Tensor out = torch::empty(
        {static_cast<int64_t>(nodes.size()) * source_->label_columns()},
        torch::kLong);
    py::gil_scoped_release release;
    Check(source_->FetchLabels(nodes, out.data_ptr<int64_t>()));
    return out;
  }

  // A feature cache in front of the servers (what `train --cache-mb` does):
  // kClock fills as batches fetch; kStatic is filled once with the rows that
  // pre-sampling `seeds` with `fanouts` touches most. Loaders made before
  // this read around it.
  void EnableCache(int64_t cache_mb, const std::string& policy_name,
                   const py::object& seeds, std::vector<int> fanouts,
                   int64_t batch_size, uint64_t seed) {
    if (remote_ == nullptr) {
      throw py::value_error(
          "a dataset in memory holds every feature: no cache applies");
    }
    if (cache_ != nullptr) throw py::value_error("the cache is already on");
    if (cache_mb < 1) throw py::value_error("cache_mb must be at least 1");
    const CachePolicy policy = Check(ParseCachePolicy(policy_name));
    std::vector<NodeId> hot_seeds;
    if (policy == CachePolicy::kStatic) {
      if (seeds.is_none() || fanouts.empty()) {
        throw py::value_error(
            "a static cache is filled by pre-sampling: give seeds and fanouts");
      }
      hot_seeds = IdsOf(seeds.cast<torch::Tensor>(), "seeds");
    }
    py::gil_scoped_release release;
    auto cache = Check(
        FeatureCache::Create({cache_mb << 20, remote_->feature_dim(), policy}));
    if (policy == CachePolicy::kStatic) {
      SamplerOptions presample;
      presample.fanouts = std::move(fanouts);
      presample.fetch_features = false;
      presample.fetch_labels = false;
      auto sampler = Check(NeighborSampler::Create(remote_.get(), presample));
      const std::vector<NodeId> hottest = Check(HottestByPresampling(
          *sampler, hot_seeds, /*num_batches=*/8, batch_size, seed));
      Check(PrefillCache(*remote_, hottest, cache.get()));
    }
    cache_ = std::move(cache);
    cached_ = std::make_unique<CachedGraphSource>(remote_.get(), cache_.get());
    source_ = cached_.get();
  }

  py::dict CacheStats() const {
    py::dict out;
    if (cache_ == nullptr) return out;
    const FeatureCacheStats stats = cache_->stats();
    out["hits"] = stats.hits;
    out["misses"] = stats.misses;
    out["hit_rate"] = stats.hit_rate();
    out["bytes_saved"] = stats.bytes_saved;
    out["entries"] = stats.entries;
    out["capacity_rows"] = stats.capacity_rows;
    return out;
  }

  const RemoteGraphSource* remote() const { return remote_.get(); }
  const GraphSource* source() const { return source_; }
  bool typed() const { return source_->schema() != nullptr; }

 private:
  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<Dataset> dataset_;
  std::unique_ptr<InMemoryGraphSource> memory_;
  std::unique_ptr<FeatureCache> cache_;
  std::unique_ptr<CachedGraphSource> cached_;
  const GraphSource* source_ = nullptr;
  int64_t num_classes_ = 0;
};

// A learnable node embedding table (what `train --learn-embeddings` trains):
// on the storage servers, each holding its nodes' rows, or in this process
// for a dataset in memory. Every trainer of a run pulls the rows of its
// batch's input nodes at step s and pushes their gradient for step s; the
// holders apply the pushes with the table's sparse optimizer
// (sampler/embedding_rows.h).
class Embeddings {
 public:
  Embeddings(std::shared_ptr<Graph> graph, int64_t dim, int rank,
             int world_size, const std::string& run_id,
             const std::string& run_secret, const std::string& optimizer,
             double lr, double init_std, uint64_t seed, const std::string& sync)
      : graph_(std::move(graph)) {
    const int staleness = Check(ParseEmbeddingSync(sync));
    EmbeddingTableConfig config;
    config.name = "node";
    config.dim = dim;
    config.optimizer = Check(ParseEmbeddingOptimizer(optimizer));
    config.lr = lr;
    config.eps =
        config.optimizer == EmbeddingOptimizer::kAdagrad ? 1e-10 : 1e-8;
    config.init_std = init_std;
    config.seed = seed;
    config.num_trainers = world_size;
    config.run_id = run_id;
    config.run_secret = run_secret;
    config.ordered = staleness == 0;
    Check(ValidateEmbeddingConfig(config));
    if (rank < 0 || rank >= world_size) {
      throw py::value_error(
          absl::StrCat("rank ", rank, " is not within 0..", world_size - 1));
    }
    py::gil_scoped_release release;
    if (graph_->remote() != nullptr) {
      rows_ = Check(MakeRemoteRows(graph_->remote(), config, rank, staleness));
    } else {
      if (world_size != 1) {
        throw py::value_error(
            "a table in this process has one trainer: world_size must be 1 "
            "(connect to servers to share one)");
      }
      std::shared_ptr<EmbeddingTable> table =
          Check(EmbeddingTable::Create(config, 0, graph_->num_nodes()));
      rows_ = MakeLocalRows(std::move(table), rank, staleness);
    }
  }

  ~Embeddings() {
    py::gil_scoped_release release;
    rows_.reset();
  }

  int64_t dim() const { return rows_->dim(); }

  torch::Tensor Pull(const torch::Tensor& ids, int64_t step) {
    const std::vector<NodeId> nodes = IdsOf(ids, "ids");
    torch::Tensor out = torch::empty(
        {static_cast<int64_t>(nodes.size()), dim()}, torch::kFloat);
    py::gil_scoped_release release;
    Check(rows_->Pull(nodes, step, out.data_ptr<float>()));
    return out;
  }

  void Push(int64_t step, const torch::Tensor& ids,
            const torch::Tensor& grads) {
    const std::vector<NodeId> nodes = IdsOf(ids, "ids");
    if (grads.dim() != 2 || grads.scalar_type() != torch::kFloat ||
        grads.size(0) != static_cast<int64_t>(nodes.size()) ||
        grads.size(1) != dim()) {
      throw py::value_error(absl::StrCat("grads must be float32 [",
                                         nodes.size(), ", ", dim(), "]"));
    }
    const torch::Tensor g = grads.contiguous();
    py::gil_scoped_release release;
    Check(rows_->Push(step, nodes,
                      absl::MakeConstSpan(g.data_ptr<float>(),
                                          static_cast<size_t>(g.numel()))));
  }

  void Flush() {
    py::gil_scoped_release release;
    Check(rows_->Flush());
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<LearnableRows> rows_;
};

// One minibatch as tensors over its MiniBatch's own buffers (kept alive by
// every tensor's deleter).
struct Batch {
  torch::Tensor x, y, n_id;
  std::vector<torch::Tensor> edge_indices;
  std::vector<py::object> edge_attrs;  // Tensors, or None.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  int64_t batch_size = 0;
};

Batch ToBatch(MiniBatch&& mb) {
  auto holder = std::make_shared<MiniBatch>(std::move(mb));
  auto keep = [holder](void*) {};
  MiniBatch& b = *holder;
  Batch out;
  const auto inputs = static_cast<int64_t>(b.input_nodes.size());
  out.batch_size = static_cast<int64_t>(b.seeds.size());
  out.n_id =
      torch::from_blob(b.input_nodes.data(), {inputs}, keep, torch::kLong);
  out.x = torch::from_blob(b.features.data(), {inputs, b.feature_dim}, keep,
                           torch::kFloat);
  // One label per seed, or a row of them per seed (multi-label graphs).
  const auto labels = static_cast<int64_t>(b.labels.size());
  const int64_t seeds = out.batch_size;
  out.y = seeds > 0 && labels > seeds
              ? torch::from_blob(b.labels.data(), {seeds, labels / seeds}, keep,
                                 torch::kLong)
              : torch::from_blob(b.labels.data(), {labels}, keep, torch::kLong);
  for (const Block& block : b.blocks) {
    const int64_t edges = block.num_edges();
    // PyG's edge_index: sources, then each edge's destination.
    torch::Tensor edge_index = torch::empty({2, edges}, torch::kLong);
    int64_t* src = edge_index.data_ptr<int64_t>();
    int64_t* dst = src + edges;
    std::copy(block.indices.data(), block.indices.data() + edges, src);
    for (int64_t i = 0; i < block.num_dst; ++i) {
      for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e)
        dst[e] = i;
    }
    out.edge_indices.push_back(edge_index);
    out.sizes.emplace_back(block.num_src, block.num_dst);
    if (block.edge_features.empty()) {
      out.edge_attrs.push_back(py::none());
    } else {
      out.edge_attrs.push_back(py::cast(torch::from_blob(
          const_cast<float*>(block.edge_features.data()),
          {edges, block.edge_feature_dim}, keep, torch::kFloat)));
    }
  }
  return out;
}

class NeighborLoader {
 public:
  NeighborLoader(std::shared_ptr<Graph> graph, const torch::Tensor& seeds,
                 std::vector<int> fanouts, int64_t batch_size, bool shuffle,
                 uint64_t seed, int prefetch, int workers,
                 int64_t steps_per_epoch)
      : graph_(std::move(graph)) {
    if (graph_->typed()) {
      throw py::value_error(
          "typed graphs are not loaded from Python yet (untyped graphs only)");
    }
    SamplerOptions sampling;
    sampling.fanouts = std::move(fanouts);
    sampling.fetch_edge_features = graph_->edge_feature_dim() > 0;
    sampler_ = Check(NeighborSampler::Create(graph_->source(), sampling));
    LoaderOptions loading;
    loading.batch_size = batch_size;
    loading.shuffle = shuffle;
    loading.prefetch = prefetch;
    loading.workers = workers;
    loading.steps_per_epoch = steps_per_epoch;
    // As the trainer derives its training loader's seeds from --seed.
    loading.shuffle_seed = MixSeed(seed, kShuffleStream);
    loading.sample_seed = MixSeed(seed, kTrainSampleStream);
    loader_ = Check(
        PrefetchLoader::Create(sampler_.get(), IdsOf(seeds, "seeds"), loading));
  }

  ~NeighborLoader() {
    py::gil_scoped_release release;
    loader_.reset();
  }

  int64_t size() const { return loader_->steps_per_epoch(); }
  void set_epoch(int64_t epoch) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    epoch_ = epoch;
  }

  NeighborLoader& Iter() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    loader_->StartEpoch(epoch_);
    started_ = true;
    return *this;
  }

  // Safe from several Python threads at once: each call takes the next batch
  // of the epoch (the loader has one consumer; the lock is taken with the GIL
  // released, so a waiting thread never holds it).
  Batch Next() {
    MiniBatch batch;
    absl::StatusOr<bool> more = false;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      if (started_) {
        more = loader_->Next(&batch);
        if (more.ok() && !*more) {
          started_ = false;
          ++epoch_;  // The next pass is the next epoch unless set_epoch says.
        }
      }
    }
    if (!more.ok()) Raise(more.status());
    if (!*more) throw py::stop_iteration();
    return ToBatch(std::move(batch));
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<NeighborSampler> sampler_;
  std::unique_ptr<PrefetchLoader> loader_;
  std::mutex mu_;  // Guards loader_'s epoch and batches, epoch_, started_.
  int64_t epoch_ = 0;
  bool started_ = false;
};

std::vector<std::string> ServerList(const py::object& servers) {
  if (py::isinstance<py::str>(servers)) {
    return absl::StrSplit(servers.cast<std::string>(), ',',
                          absl::SkipWhitespace());
  }
  return servers.cast<std::vector<std::string>>();
}

}  // namespace
}  // namespace shardgnn::python

PYBIND11_MODULE(_shardgnn, m) {
  using namespace shardgnn::python;
  m.doc() = "shardgnn's native module (see the shardgnn package)";
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def_property_readonly("feature_dim", &Graph::feature_dim)
      .def_property_readonly("num_classes", &Graph::num_classes)
      .def_property_readonly("edge_feature_dim", &Graph::edge_feature_dim)
      .def_property_readonly("num_parts", &Graph::num_parts)
      .def("split", &Graph::Split, py::arg("name"),
           "The node IDs of a split (train, valid, test) as int64")
      .def("part_of", &Graph::PartOf, py::arg("ids"),
           "The part owning each node (the partition book)")
      .def("features", &Graph::Features, py::arg("ids"),
           "The nodes' feature rows, float32 [n, feature_dim]")
      .def("labels", &Graph::Labels, py::arg("ids"),
           "The nodes' labels, int64 (-1: none)")
      .def("enable_cache", &Graph::EnableCache, py::arg("cache_mb"),
           py::arg("policy") = "clock", py::arg("seeds") = py::none(),
           py::arg("fanouts") = std::vector<int>(),
           py::arg("batch_size") = 1024, py::arg("seed") = 0,
           "A feature cache of cache_mb MiB in front of the servers (before "
           "any loader is made): clock, or static (filled by pre-sampling "
           "seeds with fanouts)")
      .def("cache_stats", &Graph::CacheStats,
           "The cache's hits, misses, hit_rate, bytes_saved, entries and "
           "capacity_rows ({} without a cache)");
  py::class_<Embeddings>(m, "Embeddings")
      .def(py::init<std::shared_ptr<Graph>, int64_t, int, int,
                    const std::string&, const std::string&, const std::string&,
                    double, double, uint64_t, const std::string&>(),
           py::arg("graph"), py::arg("dim"), py::arg("rank") = 0,
           py::arg("world_size") = 1, py::arg("run_id") = "python",
           py::arg("run_secret") = "", py::arg("optimizer") = "adam",
           py::arg("lr") = 0.01, py::arg("init_std") = 1.0, py::arg("seed") = 0,
           py::arg("sync") = "sync")
      .def_property_readonly("dim", &Embeddings::dim)
      .def("pull", &Embeddings::Pull, py::arg("ids"), py::arg("step"),
           "The rows of ids as of step (float32 [n, dim])")
      .def("push", &Embeddings::Push, py::arg("step"), py::arg("ids"),
           py::arg("grads"),
           "This trainer's gradient of step for the rows of ids")
      .def("flush", &Embeddings::Flush, "Waits until every push is applied");
  m.def(
      "connect",
      [](const py::object& servers, const std::string& auth_token_file,
         const std::string& tls_ca, const std::string& tls_cert,
         const std::string& tls_key, bool shared_memory, bool feature_port,
         double timeout) {
        return Graph::Connect(ServerList(servers), auth_token_file, tls_ca,
                              tls_cert, tls_key, shared_memory, feature_port,
                              timeout);
      },
      py::arg("servers"), py::arg("auth_token_file") = "",
      py::arg("tls_ca") = "", py::arg("tls_cert") = "", py::arg("tls_key") = "",
      py::arg("shared_memory") = true, py::arg("feature_port") = true,
      py::arg("timeout") = 30.0,
      "Connects to the storage servers of one partition (HOST:PORT,... or a "
      "list)");
  m.def("load_dataset", &Graph::Load, py::arg("dir"),
        "A dataset directory in this process's memory");
  py::class_<Batch>(m, "Batch")
      .def_readonly("x", &Batch::x)
      .def_readonly("y", &Batch::y)
      .def_readonly("n_id", &Batch::n_id)
      .def_readonly("edge_indices", &Batch::edge_indices)
      .def_readonly("edge_attrs", &Batch::edge_attrs)
      .def_readonly("sizes", &Batch::sizes)
      .def_readonly("batch_size", &Batch::batch_size);
  py::class_<NeighborLoader>(m, "NeighborLoader")
      .def(py::init<std::shared_ptr<Graph>, const torch::Tensor&,
                    std::vector<int>, int64_t, bool, uint64_t, int, int,
                    int64_t>(),
           py::arg("graph"), py::arg("seeds"), py::arg("fanouts"),
           py::arg("batch_size") = 1024, py::arg("shuffle") = true,
           py::arg("seed") = 0, py::arg("prefetch") = 4, py::arg("workers") = 1,
           py::arg("steps_per_epoch") = 0)
      .def("__len__", &NeighborLoader::size)
      .def("set_epoch", &NeighborLoader::set_epoch, py::arg("epoch"))
      .def("__iter__", &NeighborLoader::Iter,
           py::return_value_policy::reference_internal)
      .def("__next__", &NeighborLoader::Next);
}
