// Writes the batches C++'s PrefetchLoader makes over a dataset, set up as the
// Python package's NeighborLoader sets it up (python/shardgnn_py.cc), so that
// tests/python/loader_test.py can check that the Python loader hands out the
// same batches:
//
//   dump_batches --dataset DIR --split train --fanouts 5,3 --batch-size 64
//                --seed 7 --epochs 0,1 [--steps N] [--no-shuffle] --out DIR
//
// For epoch E and batch i it writes, in --out, eE_bI_n_id.npy (input node
// IDs, seeds first), eE_bI_y.npy (the seeds' labels), eE_bI_x.npy (the input
// features) and per layer L (0: the outermost hop, which reads x)
// eE_bI_lL_indptr.npy and eE_bI_lL_indices.npy (the block's CSR over local
// indices: row d lists the sources of destination d) and eE_bI_lL_sizes.npy
// ([num_src, num_dst]); eE_batches.npy holds the number of batches. Exits 1
// with a message on stderr on any error.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/sampling.h"
#include "datasets/dataset.h"
#include "sampler/graph_source.h"
#include "sampler/loader.h"
#include "sampler/neighbor_sampler.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

struct Flags {
  std::string dataset;
  std::string split = "train";
  std::vector<int> fanouts = {15, 10};
  int64_t batch_size = 1024;
  uint64_t seed = 0;
  std::vector<int64_t> epochs = {0};
  int64_t steps = 0;
  bool shuffle = true;
  std::string out;
};

absl::Status ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--no-shuffle") {
      flags->shuffle = false;
      continue;
    }
    if (i + 1 >= argc)
      return absl::InvalidArgumentError(name + " needs a value");
    const std::string value = argv[++i];
    bool ok = true;
    if (name == "--dataset") {
      flags->dataset = value;
    } else if (name == "--split") {
      flags->split = value;
    } else if (name == "--out") {
      flags->out = value;
    } else if (name == "--batch-size") {
      ok = absl::SimpleAtoi(value, &flags->batch_size);
    } else if (name == "--seed") {
      ok = absl::SimpleAtoi(value, &flags->seed);
    } else if (name == "--steps") {
      ok = absl::SimpleAtoi(value, &flags->steps);
    } else if (name == "--fanouts") {
      flags->fanouts.clear();
      for (absl::string_view f : absl::StrSplit(value, ',')) {
        int fanout = 0;
        ok = ok && absl::SimpleAtoi(f, &fanout);
        flags->fanouts.push_back(fanout);
      }
    } else if (name == "--epochs") {
      flags->epochs.clear();
      for (absl::string_view e : absl::StrSplit(value, ',')) {
        int64_t epoch = 0;
        ok = ok && absl::SimpleAtoi(e, &epoch);
        flags->epochs.push_back(epoch);
      }
    } else {
      return absl::InvalidArgumentError("unknown flag " + name);
    }
    if (!ok) return absl::InvalidArgumentError(name + ": bad value " + value);
  }
  if (flags->dataset.empty() || flags->out.empty())
    return absl::InvalidArgumentError("--dataset and --out are required");
  return absl::OkStatus();
}

template <typename T, typename Alloc>
absl::Status Write(const std::string& path, const std::vector<int64_t>& shape,
                   const std::vector<T, Alloc>& data) {
  return WriteNpyRaw(path, NpyDtypeOf<T>(), shape, data.data(), data.size());
}

absl::Status WriteBatch(const std::string& prefix, const MiniBatch& b) {
  const auto inputs = static_cast<int64_t>(b.input_nodes.size());
  absl::Status s = Write(prefix + "_n_id.npy", {inputs}, b.input_nodes);
  if (s.ok()) {
    s = Write(prefix + "_y.npy", {static_cast<int64_t>(b.labels.size())},
              b.labels);
  }
  if (s.ok()) s = Write(prefix + "_x.npy", {inputs, b.feature_dim}, b.features);
  for (size_t l = 0; s.ok() && l < b.blocks.size(); ++l) {
    const Block& block = b.blocks[l];
    const std::string layer = absl::StrCat(prefix, "_l", l);
    s = Write(layer + "_indptr.npy",
              {static_cast<int64_t>(block.indptr.size())}, block.indptr);
    if (s.ok()) {
      s = Write(layer + "_indices.npy", {block.num_edges()}, block.indices);
    }
    if (s.ok()) {
      s = Write(layer + "_sizes.npy", {2},
                std::vector<int64_t>{block.num_src, block.num_dst});
    }
  }
  return s;
}

absl::Status Run(const Flags& flags) {
  absl::StatusOr<Dataset> dataset = LoadDataset(flags.dataset);
  if (!dataset.ok()) return dataset.status();
  auto source = InMemoryGraphSource::FromDataset(*dataset);
  if (!source.ok()) return source.status();
  auto split = dataset->splits.find(flags.split);
  if (split == dataset->splits.end())
    return absl::NotFoundError("the dataset has no split " + flags.split);

  // As python/shardgnn_py.cc's NeighborLoader.
  SamplerOptions sampling;
  sampling.fanouts = flags.fanouts;
  sampling.fetch_edge_features = (*source)->edge_feature_dim() > 0;
  auto sampler = NeighborSampler::Create(source->get(), sampling);
  if (!sampler.ok()) return sampler.status();
  LoaderOptions loading;
  loading.batch_size = flags.batch_size;
  loading.shuffle = flags.shuffle;
  loading.steps_per_epoch = flags.steps;
  loading.shuffle_seed = MixSeed(flags.seed, kShuffleStream);
  loading.sample_seed = MixSeed(flags.seed, kTrainSampleStream);
  auto loader = PrefetchLoader::Create(sampler->get(), split->second, loading);
  if (!loader.ok()) return loader.status();

  for (int64_t epoch : flags.epochs) {
    (*loader)->StartEpoch(epoch);
    MiniBatch batch;
    int64_t count = 0;
    while (true) {
      absl::StatusOr<bool> more = (*loader)->Next(&batch);
      if (!more.ok()) return more.status();
      if (!*more) break;
      absl::Status s = WriteBatch(
          JoinPath(flags.out, absl::StrCat("e", epoch, "_b", count)), batch);
      if (!s.ok()) return s;
      ++count;
    }
    absl::Status s =
        Write(JoinPath(flags.out, absl::StrCat("e", epoch, "_batches.npy")),
              {1}, std::vector<int64_t>{count});
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace shardgnn

int main(int argc, char** argv) {
  shardgnn::Flags flags;
  absl::Status s = shardgnn::ParseFlags(argc, argv, &flags);
  if (s.ok()) s = shardgnn::Run(flags);
  if (!s.ok()) {
    std::fprintf(stderr, "dump_batches: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
