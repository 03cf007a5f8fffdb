// `shardgnn partition`: METIS (or streaming, or random) partitioning of a
// canonical dataset into one RocksDB shard per part plus partition.json;
// with --distributed, PT-Scotch on the MPI ranks of `mpirun -np R shardgnn
// partition --distributed ...`.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "datasets/dataset.h"
#include "partition/distributed/distributed_partition.h"
#include "partition/partition.h"

namespace shardgnn::cli {

void AddPartitionCommand(CLI::App& app, absl::Status* result) {
  struct Flags {
    std::string dataset;
    std::string out;
    int parts = 0;
    std::string method = "metis";
    uint64_t seed = 0;
    int threads = 2;
    double imbalance = 1.05;
    int stream_passes = 10;
    bool skip_checksums = false;
    bool distributed = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "partition",
      "Partition a dataset directory into K RocksDB shards (METIS k-way or "
      "streaming, with node/train/edge balance, or random)");
  cmd->add_option("--dataset", flags->dataset, "Canonical dataset directory")
      ->required();
  cmd->add_option("--parts", flags->parts, "Number of parts K")->required();
  cmd->add_option("--out", flags->out,
                  "Output partition directory (must not exist)")
      ->required();
  cmd->add_option("--method", flags->method,
                  "metis, stream (a few sequential passes, no copy of the "
                  "graph: for graphs METIS cannot hold) or random")
      ->capture_default_str();
  cmd->add_option("--stream-passes", flags->stream_passes,
                  "--method stream: most passes over the graph (the first "
                  "assigns, the others refine until two gain nothing)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "Seed for METIS and random")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "Shards written at once")
      ->capture_default_str();
  cmd->add_option("--imbalance", flags->imbalance,
                  "Allowed max/avg per balance constraint (metis, stream)")
      ->capture_default_str();
  cmd->add_flag("--skip-checksums", flags->skip_checksums,
                "Do not verify the dataset files against manifest.json");
  CLI::Option* method_option = cmd->get_option("--method");
  cmd->add_flag("--distributed", flags->distributed,
                "Partition with PT-Scotch on the MPI ranks of `mpirun -np R "
                "shardgnn partition --distributed ...` (each rank reads its "
                "slice of the graph; rank 0 writes the partition)");
  cmd->callback([flags, result, method_option] {
    if (flags->distributed) {
      if (method_option->count() > 0 &&
          absl::AsciiStrToLower(flags->method) != "ptscotch") {
        *result = absl::InvalidArgumentError(
            absl::StrCat("--distributed partitions with PT-Scotch; --method ",
                         flags->method, " does not apply"));
        return;
      }
      PartitionOptions options;
      options.num_parts = flags->parts;
      options.method = PartitionMethod::kPtScotch;
      options.seed = flags->seed;
      options.num_threads = flags->threads;
      options.imbalance_tolerance = flags->imbalance;
      options.verify_checksums = !flags->skip_checksums;
      DistributedPartitionResult run =
          PartitionDistributed(flags->dataset, flags->out, options);
      if (run.status.ok() && run.rank == 0) {
        std::printf("%s  output: %s\n",
                    PartitionSummary(run.manifest, &run.timing).c_str(),
                    flags->out.c_str());
      }
      *result = run.status;
      return;
    }
    absl::StatusOr<PartitionMethod> method =
        ParsePartitionMethod(flags->method);
    if (!method.ok()) {
      *result = method.status();
      return;
    }
    PartitionOptions options;
    options.num_parts = flags->parts;
    options.method = *method;
    options.seed = flags->seed;
    options.num_threads = flags->threads;
    options.imbalance_tolerance = flags->imbalance;
    options.stream_passes = flags->stream_passes;
    options.verify_checksums = !flags->skip_checksums;
    PartitionTiming timing;
    absl::StatusOr<PartitionManifest> manifest =
        PartitionDataset(flags->dataset, flags->out, options, &timing);
    if (!manifest.ok()) {
      *result = manifest.status();
      return;
    }
    std::printf("%s  output: %s\n",
                PartitionSummary(*manifest, &timing).c_str(),
                flags->out.c_str());
    absl::StatusOr<DatasetManifest> dataset =
        ReadDatasetManifest(flags->dataset);
    if (dataset.ok() && dataset->edge_feature_dim > 0) {
      std::printf(
          "warning: the dataset's edge features (%lld wide) are not in the "
          "shards: storage servers do not serve edge features yet\n",
          static_cast<long long>(dataset->edge_feature_dim));
    }
    *result = absl::OkStatus();
  });
}

}  // namespace shardgnn::cli
