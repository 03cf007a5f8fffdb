// The fixture of the learned-embedding training tests (issue 15): an SBM
// graph served by real storage servers and the same relabelled graph in
// memory, the training options and tables the tests share.
#ifndef SHARDGNN_TESTS_TRAINER_EMBEDDING_TRAINING_FIXTURE_H_
#define SHARDGNN_TESTS_TRAINER_EMBEDDING_TRAINING_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/progress.h"
#include "datasets/generators.h"
#include "partition/partition.h"
#include "sampler/embedding_rows.h"
#include "sampler/remote_graph_source.h"
#include "tests/sampler/test_cluster.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "trainer/trainer.h"

namespace shardgnn {

class EmbeddingTrainingTest : public ::testing::Test {
 protected:
  // An SBM graph of `nodes` nodes whose communities are the labels (a
  // `train_fraction` of the nodes train, 0.2 validate, the rest test), split
  // in 2 parts served by real servers, and the same relabelled graph in
  // memory.
  void Build(int64_t nodes, double homophily, double train_fraction = 0.3) {
    Progress::SetQuietByDefault(true);
    GeneratorOptions g;
    g.num_nodes = nodes;
    g.avg_degree = 10;
    g.feature_dim = 8;
    g.num_classes = 4;
    g.homophily = homophily;
    g.feature_noise = 4.0;  // Weak features: the embeddings must help.
    g.split = {train_fraction, 0.2, 0.8 - train_fraction};
    g.seed = 5;
    ASSERT_OK(GenerateDataset(g, tmp_.Sub("sbm")).status());
    ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(tmp_.Sub("sbm")));
    PartitionOptions options;
    options.num_parts = 2;
    ASSERT_OK(PartitionInMemory(dataset, tmp_.Sub("part"), options).status());
    ASSERT_OK_AND_ASSIGN(
        graph_, testing::RelabelForPartition(dataset, tmp_.Sub("part")));
    ASSERT_OK_AND_ASSIGN(cluster_, testing::TestCluster::Start(
                                       tmp_.Sub("part"), /*in_memory=*/true,
                                       tmp_.Sub("server-snapshots")));
    RemoteGraphSourceOptions remote;
    remote.connect_timeout = absl::Seconds(10);
    ASSERT_OK_AND_ASSIGN(
        remote_, RemoteGraphSource::Connect(cluster_->addresses(), remote));
    ASSERT_OK_AND_ASSIGN(local_, InMemoryGraphSource::Create(graph_.arrays()));
    ASSERT_OK_AND_ASSIGN(splits_.train, remote_->FetchSplit("train"));
    ASSERT_OK_AND_ASSIGN(splits_.valid, remote_->FetchSplit("valid"));
    ASSERT_OK_AND_ASSIGN(splits_.test, remote_->FetchSplit("test"));
  }

  static TrainOptions Options() {
    TrainOptions o;
    o.model.kind = ModelKind::kSage;
    o.model.hidden = 16;
    o.fanouts = {5, 5};
    o.batch_size = 64;
    o.epochs = 3;
    o.checkpoint_every = 0;
    o.lr = 0.01;
    o.seed = 3;
    o.num_classes = 4;
    return o;
  }

  static EmbeddingTableConfig Table(int64_t dim, const std::string& run) {
    EmbeddingTableConfig c;
    c.dim = dim;
    c.lr = 0.05;
    c.init_std = 0.1;
    c.seed = 11;
    c.run_id = run;
    c.run_secret = "secret of run " + run + ", 128 bits or more";
    return c;
  }

  // Every row of the table, as of the end of the run.
  std::vector<float> AllRows(LearnableRows& rows, int64_t step) {
    std::vector<NodeId> all(static_cast<size_t>(local_->num_nodes()));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<NodeId>(i);
    std::vector<float> out(all.size() * static_cast<size_t>(rows.dim()));
    EXPECT_OK(rows.Pull(all, step, out.data()));
    return out;
  }

  testing::TempDir tmp_;
  testing::RelabelledGraph graph_;
  std::unique_ptr<testing::TestCluster> cluster_;
  std::unique_ptr<RemoteGraphSource> remote_;
  std::unique_ptr<InMemoryGraphSource> local_;
  TrainSplits splits_;
};

}  // namespace shardgnn

#endif  // SHARDGNN_TESTS_TRAINER_EMBEDDING_TRAINING_FIXTURE_H_
