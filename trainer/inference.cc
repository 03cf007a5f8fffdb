#include "trainer/inference.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/large_buffer.h"
#include "common/npy.h"
#include "common/status.h"
#include "sampler/neighbor_sampler.h"
#include "trainer/compute_env.h"
#include "trainer/gradient_sync.h"
#include "trainer/internal/decoder.h"
#include "trainer/internal/layerwise.h"
#include "trainer/internal/models.h"
#include "trainer/internal/parameters_file.h"
#include "trainer/internal/script_model.h"

namespace shardgnn {
namespace {

using Clock = std::chrono::steady_clock;

// A [rows, cols] float32 matrix in a scratch file, mapped shared: one layer's
// states for every node. The file is removed when the object goes.
class LayerFile {
 public:
  static absl::StatusOr<std::unique_ptr<LayerFile>> Create(
      const std::string& path, int64_t rows, int64_t cols) {
    const int fd =
        ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
    }
    const size_t bytes = static_cast<size_t>(rows * cols) * sizeof(float);
    // posix_fallocate reserves the blocks now, so a full disk is an error
    // here rather than a SIGBUS when a page is first written.
    const int err =
        bytes > 0 ? ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) : 0;
    if (err != 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": cannot reserve ", bytes,
                       " bytes for a layer's states: ", std::strerror(err)));
    }
    void* data = nullptr;
    if (bytes > 0) {
      data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (data == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        ::unlink(path.c_str());
        return absl::ResourceExhaustedError(
            absl::StrCat(path, ": cannot map: ", std::strerror(e)));
      }
    }
    ::close(fd);
    return std::unique_ptr<LayerFile>(
        new LayerFile(path, static_cast<float*>(data), rows, cols));
  }
  ~LayerFile() {
    if (data_ != nullptr) ::munmap(data_, bytes());
    ::unlink(path_.c_str());
  }
  LayerFile(const LayerFile&) = delete;
  LayerFile& operator=(const LayerFile&) = delete;

  float* row(int64_t i) { return data_ + i * cols_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  size_t bytes() const {
    return static_cast<size_t>(rows_ * cols_) * sizeof(float);
  }

 private:
  LayerFile(std::string path, float* data, int64_t rows, int64_t cols)
      : path_(std::move(path)), data_(data), rows_(rows), cols_(cols) {}
  std::string path_;
  float* data_;
  int64_t rows_, cols_;
};

// Writes rows of `rows_of` to `path` in original ID order: row o of the file
// is row inverse[o] of the source (inverse empty: the identity). Temporary
// name, then rename.
template <typename T, typename RowFn>
absl::Status WriteInOriginalOrder(const std::string& path, NpyDtype dtype,
                                  int64_t n, int64_t cols,
                                  const std::vector<NodeId>& inverse,
                                  RowFn rows_of) {
  const std::string tmp = path + ".tmp";
  ASSIGN_OR_RETURN(
      std::unique_ptr<NpyWriter> writer,
      NpyWriter::Create(
          tmp, dtype,
          cols == 0 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, cols}));
  const size_t width = static_cast<size_t>(std::max<int64_t>(cols, 1));
  std::vector<T> buffer;
  constexpr int64_t kRows = 4096;
  for (int64_t begin = 0; begin < n; begin += kRows) {
    const int64_t end = std::min(n, begin + kRows);
    buffer.resize(static_cast<size_t>(end - begin) * width);
    for (int64_t o = begin; o < end; ++o) {
      const int64_t v = inverse.empty() ? o : inverse[static_cast<size_t>(o)];
      rows_of(v, buffer.data() + static_cast<size_t>(o - begin) * width);
    }
    absl::Status s = writer->Append(buffer.data(), buffer.size());
    if (!s.ok()) {
      (void)writer->Close();
      std::filesystem::remove(tmp);
      return s;
    }
  }
  absl::Status s = writer->Close();
  if (s.ok()) {
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      s = absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot rename into place: ", ec.message()));
    }
  }
  if (!s.ok()) std::filesystem::remove(tmp);
  return s;
}

absl::Status CheckInputWidth(const GraphSource& source,
                             const ModelConfig& config,
                             const InferOptions& options) {
  if (config.learned_dim > 0 && !options.learned_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes learned node embeddings (",
                     config.learned_dim, " wide) and none were given"));
  }
  if (config.ignore_features || source.feature_dim() == config.in_dim) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the model takes ", config.in_dim,
                   " input features but the graph has ", source.feature_dim()));
}

// One call of RunLayerwise(): every layer for every node, each rank computing
// its share of the rows and exchanging them with the others after every
// round of chunks. Every rank runs the same number of rounds (the largest
// share's), so their allreduces meet in lockstep even when a share is empty.
class LayerwiseRun {
 public:
  LayerwiseRun(const GraphSource& source, internal::GnnModel& model,
               const ModelConfig& config, const InferOptions& options,
               GradientSync* sync)
      : source_(source),
        model_(&model),
        config_(config),
        options_(options),
        sync_(sync) {}

  // Checks the options, runs the layers, then reports on `splits` and
  // writes the outputs; every rank calls it with the same options but its
  // rank.
  absl::StatusOr<InferResult> Go(
      const std::map<std::string, std::vector<NodeId>>& splits) {
    start_ = Clock::now();
    RETURN_IF_ERROR(Check());
    model_->eval();
    transform_ = internal::MakeInputTransform(config_.model.features);
    const int num_layers = model_->num_layers();
    InferResult result;
    result.num_nodes = n_;
    result.num_classes = config_.num_classes;
    // A link model's embeddings are its last layer's outputs.
    const bool link = config_.task == TaskKind::kLink;
    result.embedding_layer =
        options_.embedding_layer > 0
            ? options_.embedding_layer
            : (link ? num_layers : std::max(1, num_layers - 1));
    // states[l]: the outputs of layer l (from 1); layer 0's input is the
    // source's features.
    std::vector<std::unique_ptr<LayerFile>> states(
        static_cast<size_t>(num_layers) + 1);
    RETURN_IF_ERROR(RunLayers(&states, &result));
    RETURN_IF_ERROR(Conclude(*states[num_layers],
                             *states[result.embedding_layer], splits, &result));
    result.seconds =
        std::chrono::duration<double>(Clock::now() - start_).count();
    return result;
  }

 private:
  // Fills (*states)[1..] layer after layer in scratch files. A layer's input
  // is removed once its outputs are computed, unless it is the exported
  // layer, so that at most two layers (and that one) take disk space.
  absl::Status RunLayers(std::vector<std::unique_ptr<LayerFile>>* states,
                         InferResult* result) {
    std::error_code ec;
    std::filesystem::create_directories(options_.scratch_dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          options_.scratch_dir, ": cannot create: ", ec.message()));
    }
    std::vector<std::unique_ptr<LayerFile>>& files = *states;
    int64_t scratch = 0;
    for (int l = 0; l < model_->num_layers(); ++l) {
      ASSIGN_OR_RETURN(
          files[l + 1],
          LayerFile::Create(JoinPath(options_.scratch_dir,
                                     absl::StrCat("layer-", l + 1, "-rank-",
                                                  options_.rank, ".f32")),
                            n_, model_->layer_width(l)));
      scratch += static_cast<int64_t>(files[l + 1]->bytes());
      result->scratch_bytes = std::max(result->scratch_bytes, scratch);
      RETURN_IF_ERROR(RunLayer(l, files[l].get(), files[l + 1].get(), result));
      // The input of this layer is no longer needed, unless it is exported.
      if (l >= 1 && l != result->embedding_layer) {
        scratch -= static_cast<int64_t>(files[l]->bytes());
        files[l].reset();
      }
    }
    return absl::OkStatus();
  }

  // What the last layer (`logits`) and the exported one (`embeddings`)
  // give: a node model's accuracies, a link model's pair scores, and rank
  // 0's output files.
  absl::Status Conclude(
      LayerFile& logits, LayerFile& embeddings,
      const std::map<std::string, std::vector<NodeId>>& splits,
      InferResult* result) {
    const bool link = config_.task == TaskKind::kLink;
    result->embedding_dim = embeddings.cols();
    if (!link) RETURN_IF_ERROR(Accuracies(logits, splits, result));
    if (link && options_.pair_scores != nullptr) {
      // Every rank holds the whole last layer: each scores every pair.
      *options_.pair_scores = ScorePairRows(logits);
      result->scored_pairs = static_cast<int64_t>(options_.pair_scores->size());
    }
    if (options_.rank == 0 && !options_.out_dir.empty()) {
      RETURN_IF_ERROR(WriteOutputs(embeddings, logits));
      if (link && !options_.score_pairs.empty()) {
        ASSIGN_OR_RETURN(result->scored_pairs, WriteScores(logits));
      }
    }
    return absl::OkStatus();
  }

  // The first layer's input for `batch`'s input nodes, as training built it
  // (trainer/internal/input_rows.h): the features, transformed, with the
  // learned rows appended (or the learned rows alone).
  absl::Status FirstLayerInput(MiniBatch& batch, torch::Tensor* x) {
    const auto rows = static_cast<int64_t>(batch.input_nodes.size());
    torch::Tensor features;
    if (!config_.ignore_features) {
      features = torch::from_blob(batch.features.data(), {rows, config_.in_dim},
                                  torch::kFloat);
      internal::ApplyInputTransform(transform_, features);
    }
    if (config_.learned_dim == 0) {
      *x = features;
      return absl::OkStatus();
    }
    torch::Tensor learned =
        torch::empty({rows, config_.learned_dim}, torch::kFloat);
    RETURN_IF_ERROR(
        options_.learned_rows(batch.input_nodes, learned.data_ptr<float>()));
    if (config_.learned_row_length > 0)  // Pre-trained rows, as trained.
      learned = internal::RowsOfLength(learned, config_.learned_row_length);
    *x = config_.ignore_features ? learned : torch::cat({features, learned}, 1);
    return absl::OkStatus();
  }

  // A later layer's input: the previous layer's rows of `nodes`, copied out
  // of its file in their order.
  static torch::Tensor GatherRows(LayerFile& in, const Int64Buffer& nodes) {
    const auto rows = static_cast<int64_t>(nodes.size());
    torch::Tensor x = torch::empty({rows, in.cols()}, torch::kFloat);
    float* dst = x.data_ptr<float>();
    const size_t row_bytes = static_cast<size_t>(in.cols()) * sizeof(float);
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(dst + i * in.cols(), in.row(nodes[static_cast<size_t>(i)]),
                  row_bytes);
    }
    return x;
  }

  // Refuses options that would index outside the graph or the world (the
  // layer files are indexed by node without further checks), and sets n_.
  absl::Status Check() {
    n_ = source_.num_nodes();
    if (options_.world_size < 1 || options_.rank < 0 ||
        options_.rank >= options_.world_size) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", options_.rank,
                                                     " is not in a world of ",
                                                     options_.world_size));
    }
    if (options_.world_size > 1 && sync_ == nullptr) {
      return absl::InvalidArgumentError(
          "inference over several ranks needs a process group");
    }
    if (options_.chunk_nodes < 1)
      return absl::InvalidArgumentError("the chunk size must be positive");
    RETURN_IF_ERROR(CheckInputWidth(source_, config_, options_));
    if (options_.embedding_layer < 0 ||
        options_.embedding_layer > config_.model.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("embedding layer ", options_.embedding_layer,
                       " is not one of the model's layers (1..",
                       config_.model.num_layers, ")"));
    }
    if (!options_.orig_ids.empty() &&
        static_cast<int64_t>(options_.orig_ids.size()) != n_) {
      return absl::InvalidArgumentError(
          absl::StrCat("the original IDs cover ", options_.orig_ids.size(),
                       " nodes but the graph has ", n_));
    }
    if (options_.scratch_dir.empty())
      return absl::InvalidArgumentError("no scratch directory");
    return absl::OkStatus();
  }

  // The rows rank r computes: [N r / W, N (r + 1) / W).
  int64_t ShareBegin(int r) const { return n_ * r / options_.world_size; }

  // Layer l for every node: this rank's share in chunks, each round followed
  // by the exchange of the rows every rank computed in it. The next chunk is
  // sampled while this one computes.
  absl::Status RunLayer(int l, LayerFile* in, LayerFile* out,
                        InferResult* result) {
    const int64_t chunk = options_.chunk_nodes;
    const int64_t largest =
        (n_ + options_.world_size - 1) / options_.world_size;
    const int64_t rounds = (largest + chunk - 1) / chunk;
    ASSIGN_OR_RETURN(std::unique_ptr<NeighborSampler> sampler,
                     MakeLayerSampler(l));
    const int64_t lo = ShareBegin(options_.rank);
    const int64_t hi = ShareBegin(options_.rank + 1);
    std::vector<NodeId> ids[2];
    MiniBatch batches[2];
    auto sample = [&](int64_t k, int slot) -> absl::Status {
      const int64_t a = std::min(hi, lo + k * chunk);
      const int64_t b = std::min(hi, a + chunk);
      ids[slot].resize(static_cast<size_t>(b - a));
      for (int64_t v = a; v < b; ++v) ids[slot][static_cast<size_t>(v - a)] = v;
      if (a == b) return absl::OkStatus();
      return sampler->Sample(ids[slot], /*seed=*/0, &batches[slot]);
    };
    std::vector<float> exchange;
    const auto layer_start = Clock::now();
    std::future<absl::Status> next =
        std::async(std::launch::async, sample, 0, 0);
    for (int64_t k = 0; k < rounds; ++k) {
      // (On an error return the pending future's destructor waits for its
      // sampling, which ends: every remote call has a deadline.)
      RETURN_IF_ERROR(next.get());
      const int slot = static_cast<int>(k % 2);
      if (k + 1 < rounds)
        next = std::async(std::launch::async, sample, k + 1, 1 - slot);
      const std::vector<NodeId>& seeds = ids[slot];
      if (!seeds.empty()) {
        RETURN_IF_ERROR(ComputeChunk(l, seeds, batches[slot], in, out, result));
      }
      if (options_.world_size > 1) {
        RETURN_IF_ERROR(ExchangeRound(k, seeds, out, &exchange));
      }
      if (options_.rank == 0 && options_.on_progress) {
        ReportProgress(l, k, layer_start);
      }
    }
    return absl::OkStatus();
  }

  // Full neighborhoods, one hop: layer l needs only its inputs' rows, and
  // the features only for the first layer.
  absl::StatusOr<std::unique_ptr<NeighborSampler>> MakeLayerSampler(
      int l) const {
    SamplerOptions sampling;
    sampling.fanouts = {-1};
    sampling.fetch_features = l == 0 && !config_.ignore_features;
    sampling.fetch_labels = false;
    sampling.fetch_degrees = internal::NeedsOf(config_.model.kind).degrees;
    return NeighborSampler::Create(&source_, sampling);
  }

  // Layer l's outputs for `seeds` (consecutive nodes of this rank's share),
  // from their sampled neighborhood `batch`, into their rows of `out`.
  absl::Status ComputeChunk(int l, const std::vector<NodeId>& seeds,
                            MiniBatch& batch, LayerFile* in, LayerFile* out,
                            InferResult* result) {
    RETURN_IF_ERROR(CheckBatch(batch, seeds));
    result->edges += batch.blocks[0].num_edges();
    torch::NoGradGuard no_grad;
    torch::Tensor x;
    if (l == 0) {
      RETURN_IF_ERROR(FirstLayerInput(batch, &x));
    } else {
      x = GatherRows(*in, batch.input_nodes);
    }
    std::vector<internal::BlockTensors> blocks =
        internal::ToBlockTensors(batch, config_.model.kind);
    torch::Tensor y = model_->ForwardLayer(l, blocks[0], x).contiguous();
    std::memcpy(out->row(seeds.front()), y.data_ptr<float>(),
                static_cast<size_t>(y.numel()) * sizeof(float));
    return absl::OkStatus();
  }

  // Round k's exchange: every rank's rows of the round (this rank's
  // `seeds`), each in its own slot of one allreduce, copied into `out` by
  // the ranks that did not compute them. Every rank calls it every round,
  // with or without rows.
  absl::Status ExchangeRound(int64_t k, const std::vector<NodeId>& seeds,
                             LayerFile* out, std::vector<float>* exchange) {
    const int world = options_.world_size;
    const int64_t chunk = options_.chunk_nodes;
    const int64_t width = out->cols();
    exchange->assign(static_cast<size_t>(world * chunk * width), 0.0f);
    if (!seeds.empty()) {
      std::memcpy(exchange->data() + options_.rank * chunk * width,
                  out->row(seeds.front()),
                  seeds.size() * static_cast<size_t>(width) * sizeof(float));
    }
    RETURN_IF_ERROR(sync_->AllreduceSum(absl::MakeSpan(*exchange)));
    for (int r = 0; r < world; ++r) {
      if (r == options_.rank) continue;
      const int64_t rb = std::min(ShareBegin(r + 1), ShareBegin(r) + k * chunk);
      const int64_t re = std::min(ShareBegin(r + 1), rb + chunk);
      if (rb < re) {
        std::memcpy(out->row(rb), exchange->data() + r * chunk * width,
                    static_cast<size_t>((re - rb) * width) * sizeof(float));
      }
    }
    return absl::OkStatus();
  }

  // InferOptions::on_progress after round k of layer l: the rows all ranks
  // have computed of the layer so far.
  void ReportProgress(int l, int64_t k, Clock::time_point layer_start) const {
    const int64_t chunk = options_.chunk_nodes;
    InferProgress p;
    p.layer = l + 1;
    p.layers = model_->num_layers();
    p.rows = n_;
    for (int r = 0; r < options_.world_size; ++r) {
      p.rows_done +=
          std::min(ShareBegin(r + 1) - ShareBegin(r), (k + 1) * chunk);
    }
    p.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    p.layer_seconds =
        std::chrono::duration<double>(Clock::now() - layer_start).count();
    options_.on_progress(p);
  }

  // What came from the source must match what was asked before it indexes
  // a layer file: the seeds first, every input node a node of the graph.
  absl::Status CheckBatch(const MiniBatch& batch,
                          const std::vector<NodeId>& seeds) const {
    if (batch.blocks.size() != 1 || batch.input_nodes.size() < seeds.size() ||
        batch.blocks[0].num_dst != static_cast<int64_t>(seeds.size())) {
      return absl::InternalError("a neighborhood came back malformed");
    }
    for (size_t i = 0; i < batch.input_nodes.size(); ++i) {
      const NodeId v = batch.input_nodes[i];
      if (v < 0 || v >= n_ || (i < seeds.size() && v != seeds[i])) {
        return absl::DataLossError(absl::StrCat(
            "a neighborhood names node ", v, ", not a node of the graph (0..",
            n_ - 1, ") or not the seed asked for"));
      }
    }
    return absl::OkStatus();
  }

  // Each split's accuracy over its labelled nodes (every rank holds every
  // row of the last layer, so each measures whole splits itself).
  absl::Status Accuracies(
      LayerFile& logits,
      const std::map<std::string, std::vector<NodeId>>& splits,
      InferResult* result) const {
    std::vector<int64_t> labels;
    for (const auto& [name, nodes] : splits) {
      SplitAccuracy& acc = result->accuracy[name];
      acc.nodes = static_cast<int64_t>(nodes.size());
      labels.resize(nodes.size());
      RETURN_IF_ERROR(source_.FetchLabels(nodes, labels.data()));
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (labels[i] < 0) continue;
        if (nodes[i] < 0 || nodes[i] >= n_) {
          return absl::InvalidArgumentError(
              absl::StrCat("split '", name, "' names node ", nodes[i],
                           ", not a node of the graph"));
        }
        ++acc.labeled;
        acc.beyond_classes += labels[i] >= logits.cols();
        acc.correct += Argmax(logits.row(nodes[i]), logits.cols()) == labels[i];
      }
      if (acc.labeled > 0)
        acc.acc =
            static_cast<double>(acc.correct) / static_cast<double>(acc.labeled);
    }
    return absl::OkStatus();
  }

  // The first largest of the row's n values (the predicted class).
  static int64_t Argmax(const float* row, int64_t n) {
    return static_cast<int64_t>(std::max_element(row, row + n) - row);
  }

  // embeddings.npy (and for node models logits.npy, predictions.npy), rows
  // in original ID order.
  absl::Status WriteOutputs(LayerFile& embeddings, LayerFile& logits) const {
    std::error_code ec;
    std::filesystem::create_directories(options_.out_dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(options_.out_dir, ": cannot create: ", ec.message()));
    }
    // inverse[o]: the node whose original ID is o.
    std::vector<NodeId> inverse;
    if (!options_.orig_ids.empty()) {
      inverse.assign(static_cast<size_t>(n_), -1);
      for (int64_t v = 0; v < n_; ++v) {
        const NodeId o = options_.orig_ids[static_cast<size_t>(v)];
        if (o < 0 || o >= n_ || inverse[static_cast<size_t>(o)] >= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("the original IDs are not a permutation of 0..",
                           n_ - 1, " (node ", v, " maps to ", o, ")"));
        }
        inverse[static_cast<size_t>(o)] = v;
      }
    }
    auto copy_rows = [](LayerFile& file) {
      return [&file](int64_t v, float* dst) {
        std::memcpy(dst, file.row(v),
                    static_cast<size_t>(file.cols()) * sizeof(float));
      };
    };
    RETURN_IF_ERROR(WriteInOriginalOrder<float>(
        JoinPath(options_.out_dir, "embeddings.npy"), NpyDtype::kFloat32, n_,
        embeddings.cols(), inverse, copy_rows(embeddings)));
    if (config_.task == TaskKind::kLink) return absl::OkStatus();
    RETURN_IF_ERROR(WriteInOriginalOrder<float>(
        JoinPath(options_.out_dir, "logits.npy"), NpyDtype::kFloat32, n_,
        logits.cols(), inverse, copy_rows(logits)));
    return WriteInOriginalOrder<int64_t>(
        JoinPath(options_.out_dir, "predictions.npy"), NpyDtype::kInt64, n_, 0,
        inverse, [&logits](int64_t v, int64_t* dst) {
          *dst = Argmax(logits.row(v), logits.cols());
        });
  }

  // The decoder's logit for each of options_.score_pairs, from the last
  // layer's rows (original IDs mapped through orig_ids), in chunks.
  std::vector<float> ScorePairRows(LayerFile& last) const {
    const std::vector<NodeId>& pairs = options_.score_pairs;
    std::vector<NodeId> current(static_cast<size_t>(n_));
    for (int64_t v = 0; v < n_; ++v) current[static_cast<size_t>(v)] = v;
    if (!options_.orig_ids.empty()) {
      for (int64_t v = 0; v < n_; ++v) {
        const NodeId o = options_.orig_ids[static_cast<size_t>(v)];
        if (o >= 0 && o < n_) current[static_cast<size_t>(o)] = v;
      }
    }
    const auto m = static_cast<int64_t>(pairs.size() / 2);
    const int64_t d = last.cols();
    std::vector<float> scores(static_cast<size_t>(m));
    constexpr int64_t kChunk = 4096;
    torch::NoGradGuard no_grad;
    for (int64_t b = 0; b < m; b += kChunk) {
      const int64_t count = std::min(kChunk, m - b);
      torch::Tensor hu = torch::empty({count, d});
      torch::Tensor hv = torch::empty({count, d});
      float* hu_rows = hu.data_ptr<float>();
      float* hv_rows = hv.data_ptr<float>();
      for (int64_t i = 0; i < count; ++i) {
        const NodeId u = current[static_cast<size_t>(pairs[2 * (b + i)])];
        const NodeId v = current[static_cast<size_t>(pairs[2 * (b + i) + 1])];
        std::memcpy(hu_rows + i * d, last.row(u),
                    static_cast<size_t>(d) * sizeof(float));
        std::memcpy(hv_rows + i * d, last.row(v),
                    static_cast<size_t>(d) * sizeof(float));
      }
      torch::Tensor s =
          internal::ScorePairs(*model_, config_.decoder, hu, hv).contiguous();
      std::memcpy(scores.data() + b, s.data_ptr<float>(),
                  static_cast<size_t>(count) * sizeof(float));
    }
    return scores;
  }

  // scores.npy: ScorePairRows, written under a temporary name.
  absl::StatusOr<int64_t> WriteScores(LayerFile& last) const {
    const std::vector<float> scores = ScorePairRows(last);
    const auto m = static_cast<int64_t>(scores.size());
    const std::string path = JoinPath(options_.out_dir, "scores.npy");
    const std::string tmp = path + ".tmp";
    RETURN_IF_ERROR(WriteNpy(tmp, {m}, scores));
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot rename into place"));
    }
    return m;
  }

  const GraphSource& source_;
  internal::GnnModel* model_;
  const ModelConfig& config_;
  const InferOptions& options_;
  GradientSync* sync_;
  int64_t n_ = 0;
  internal::InputTransform transform_;
  Clock::time_point start_;  // Of the run, for its progress and seconds.
};

}  // namespace

namespace internal {

absl::StatusOr<InferResult> RunLayerwise(
    const GraphSource& source, GnnModel& model, const ModelConfig& config,
    const std::map<std::string, std::vector<NodeId>>& splits,
    const InferOptions& options, GradientSync* sync) {
  return LayerwiseRun(source, model, config, options, sync).Go(splits);
}

}  // namespace internal

absl::StatusOr<InferResult> Infer(
    const GraphSource& source, const ModelConfig& config,
    const std::string& parameters_path,
    const std::map<std::string, std::vector<NodeId>>& splits,
    const InferOptions& options, GradientSync* sync) {
  RETURN_IF_ERROR(CheckInputWidth(source, config, options));
  if (config.model.kind == ModelKind::kScript &&
      source.edge_feature_dim() > 0) {
    return absl::FailedPreconditionError(
        "the graph has edge features, and layer-wise inference does not pass "
        "them to a model script yet (infer and --exact-test take model "
        "scripts of graphs without edge features)");
  }
  if (!options.score_pairs.empty()) {
    if (config.task != TaskKind::kLink) {
      return absl::InvalidArgumentError(
          "pairs can be scored only by a link-prediction model (this one "
          "classifies nodes)");
    }
    RETURN_IF_ERROR(
        CheckPairs(options.score_pairs, source.num_nodes(), "pairs to score"));
  }
  try {
    SetComputeThreads(options.torch_threads);
    ASSIGN_OR_RETURN(auto saved, internal::ReadParametersDict(parameters_path));
    // A description that needs more parameters than the file holds is not
    // its file's: refused before its model is allocated.
    int64_t held = 0;
    for (const auto& [name, t] : saved) held += t.numel();
    const int64_t least = internal::MinParameterCount(
        config.model, config.input_dim(), config.num_classes);
    if (least > held) {
      return absl::InvalidArgumentError(absl::StrCat(
          parameters_path, " holds ", held, " parameters, but the model ",
          "described (", ModelKindName(config.model.kind), ", ",
          config.model.num_layers, " layers, hidden ", config.model.hidden,
          ", ", config.input_dim(), " inputs, ", config.num_classes,
          " outputs) has at least ", least,
          ": the description and the parameters do not belong together"));
    }
    std::shared_ptr<internal::GnnModel> model;
    if (config.model.kind == ModelKind::kScript) {
      // The run's module, beside its parameters.
      const std::string script =
          (std::filesystem::path(parameters_path).parent_path() /
           kModelScriptFile)
              .string();
      ASSIGN_OR_RETURN(model,
                       internal::LoadScriptModel(
                           script,
                           {config.input_dim(), config.num_classes,
                            config.model.num_layers, /*edge_feature_dim=*/0},
                           /*seed=*/0));
    } else {
      model = internal::MakeModel(config.model, config.input_dim(),
                                  config.num_classes, /*seed=*/0);
    }
    if (config.task == TaskKind::kLink)
      internal::AddPairDecoder(model.get(), config.decoder, config.num_classes,
                               /*seed=*/0);
    RETURN_IF_ERROR(
        internal::CopyParameters(saved, parameters_path, model.get()));
    return internal::RunLayerwise(source, *model, config, splits, options,
                                  sync);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch error during inference: ",
                                            e.what_without_backtrace()));
  } catch (const std::exception& e) {  // TorchScript's own (JITException).
    return absl::InternalError(
        absl::StrCat("error during inference: ", e.what()));
  }
}

}  // namespace shardgnn
