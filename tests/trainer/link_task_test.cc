// Link prediction through Train() (trainer/internal/link_task.cc): it learns
// links on a graph with structure, cannot learn them where the only evidence
// is the target edge itself, resumes exactly, agrees across two ranks, and
// rejects bad pairs with one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sampler/graph_source.h"
#include "tests/testing/ports.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/trainer/sbm_graph.h"
#include "trainer/c10d_gradient_sync.h"
#include "trainer/distributed.h"
#include "trainer/trainer.h"

namespace shardgnn {
namespace {

// An undirected graph over the train edges only (valid and test edges left
// out, as the edge split does), with features.
struct LinkGraph {
  int64_t n = 0;
  int64_t dim = 0;
  std::vector<int64_t> indptr;
  std::vector<NodeId> indices;
  std::vector<float> features;
  TrainSplits splits;
  std::unique_ptr<InMemoryGraphSource> source;

  void Build() {
    std::vector<std::vector<NodeId>> adj(static_cast<size_t>(n));
    for (size_t i = 0; i < splits.train_edges.size(); i += 2) {
      adj[splits.train_edges[i]].push_back(splits.train_edges[i + 1]);
      adj[splits.train_edges[i + 1]].push_back(splits.train_edges[i]);
    }
    indptr = {0};
    for (auto& row : adj) {
      std::sort(row.begin(), row.end());
      indices.insert(indices.end(), row.begin(), row.end());
      indptr.push_back(static_cast<int64_t>(indices.size()));
    }
    GraphArrays a;
    a.indptr = indptr;
    a.indices = indices;
    a.features = features;
    a.feature_dim = dim;
    source = InMemoryGraphSource::Create(a).value();
  }
};

// The SBM graph's edges dealt 85 / 5 / 10 with as many uniform negatives as
// positives for valid and test (the GAE protocol).
LinkGraph SbmLinks(uint32_t seed) {
  testing::SbmGraph sbm(600, 4, 10, 1, seed);
  LinkGraph g;
  g.n = 600;
  g.dim = sbm.dim;
  g.features = sbm.features;
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId u = 0; u < g.n; ++u)
    for (int64_t k = sbm.indptr[u]; k < sbm.indptr[u + 1]; ++k)
      if (u < sbm.indices[k]) edges.push_back({u, sbm.indices[k]});
  std::mt19937_64 rng(seed);
  std::shuffle(edges.begin(), edges.end(), rng);
  const size_t valid = edges.size() / 20, test = edges.size() / 10;
  for (size_t i = 0; i < edges.size(); ++i) {
    auto& list = i < valid          ? g.splits.valid_edges
                 : i < valid + test ? g.splits.test_edges
                                    : g.splits.train_edges;
    list.push_back(edges[i].first);
    list.push_back(edges[i].second);
  }
  for (auto* neg : {&g.splits.valid_negatives, &g.splits.test_negatives}) {
    const size_t want = neg == &g.splits.valid_negatives ? valid : test;
    for (size_t i = 0; i < want; ++i) {
      neg->push_back(static_cast<NodeId>(rng() % g.n));
      neg->push_back(static_cast<NodeId>(rng() % g.n));
    }
  }
  g.Build();
  return g;
}

TrainOptions LinkOptionsFor(int epochs) {
  TrainOptions o;
  o.task = TaskKind::kLink;
  o.model.kind = ModelKind::kSage;
  o.model.hidden = 32;
  o.model.dropout = 0.0;
  o.weight_decay = 0.0;
  o.fanouts = {10, 10};
  o.batch_size = 256;
  o.min_steps_per_epoch = 4;
  o.epochs = epochs;
  o.seed = 3;
  return o;
}

double Metric(const std::vector<std::pair<std::string, double>>& metrics,
              const std::string& key) {
  for (const auto& [k, v] : metrics)
    if (k == key) return v;
  ADD_FAILURE() << "no " << key;
  return -2;
}

TEST(LinkTaskTest, LearnsTheLinksOfACommunityGraph) {
  LinkGraph g = SbmLinks(5);
  TrainOptions options = LinkOptionsFor(8);
  for (LinkDecoder decoder : {LinkDecoder::kDot, LinkDecoder::kMlp}) {
    options.link.decoder = decoder;
    ASSERT_OK_AND_ASSIGN(TrainResult r, Train(*g.source, g.splits, options));
    SCOPED_TRACE(LinkDecoderName(decoder));
    // Edges fall within communities (10 in, 1 out per node) and the features
    // carry the community: far better than chance.
    EXPECT_GT(Metric(r.test_metrics, "test_auc"), 0.8);
    EXPECT_GT(Metric(r.test_metrics, "test_ap"), 0.75);
    const double mrr = Metric(r.test_metrics, "test_mrr");
    EXPECT_GT(mrr, 0.0);
    EXPECT_LE(mrr, 1.0);
    EXPECT_LE(Metric(r.test_metrics, "test_hits@20"),
              Metric(r.test_metrics, "test_hits@50"));
    EXPECT_EQ(r.test_acc, -1.0);  // No node accuracy for a link task.
    EXPECT_GT(r.best_val_score, 0.8);
    ASSERT_FALSE(r.epochs.empty());
    EXPECT_GT(Metric(r.epochs.back().metrics, "valid_auc"), 0.8);
    EXPECT_GT(Metric(r.epochs.back().metrics, "train_auc"), 0.8);
  }
}

// Three random perfect matchings (nearly every node of degree 3) with random
// features: an edge can be predicted only by reading it. One layer sampling 2
// neighbors shows every node with 2 neighbors, so removing a target edge
// leaves no trace in the neighborhood's size either. With the targets
// excluded the model stays at chance on its own train edges; leaving them in
// (the control) it learns to read them.
TEST(LinkTaskTest, TargetEdgesCannotLeakIntoTheirOwnPrediction) {
  LinkGraph g;
  g.n = 1200;
  g.dim = 8;
  std::mt19937_64 rng(17);
  std::normal_distribution<float> noise;
  for (int64_t i = 0; i < g.n * g.dim; ++i) g.features.push_back(noise(rng));
  std::vector<NodeId> order(static_cast<size_t>(g.n));
  for (NodeId v = 0; v < g.n; ++v) order[v] = v;
  std::set<std::pair<NodeId, NodeId>> seen;
  for (int matching = 0; matching < 3; ++matching) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); i += 2) {
      const NodeId u = std::min(order[i], order[i + 1]);
      const NodeId v = std::max(order[i], order[i + 1]);
      if (!seen.insert({u, v}).second) continue;
      g.splits.train_edges.push_back(u);
      g.splits.train_edges.push_back(v);
    }
  }
  g.Build();
  TrainOptions options = LinkOptionsFor(12);
  options.model.num_layers = 1;
  options.fanouts = {2};
  ASSERT_OK_AND_ASSIGN(TrainResult excluded,
                       Train(*g.source, g.splits, options));
  options.link.exclude_targets = false;
  ASSERT_OK_AND_ASSIGN(TrainResult leaky, Train(*g.source, g.splits, options));
  const double without_leak =
      Metric(excluded.epochs.back().metrics, "train_auc");
  const double with_leak = Metric(leaky.epochs.back().metrics, "train_auc");
  EXPECT_NEAR(without_leak, 0.5, 0.06) << "with leak: " << with_leak;
  // (The target is among the 2 sampled of 3 neighbors 2 times in 3.)
  EXPECT_GT(with_leak, 0.7) << "without: " << without_leak;
}

TEST(LinkTaskTest, ResumeContinuesExactlyWithTheDecoder) {
  LinkGraph g = SbmLinks(7);
  testing::TempDir dir;
  TrainOptions options = LinkOptionsFor(4);
  options.link.decoder = LinkDecoder::kMlp;
  options.model.dropout = 0.3;  // Its stream must resume too.
  ASSERT_OK_AND_ASSIGN(TrainResult straight,
                       Train(*g.source, g.splits, options));
  options.checkpoint_path = dir.path() + "/rank-0.ckpt";
  options.epochs = 2;
  ASSERT_OK(Train(*g.source, g.splits, options).status());
  options.epochs = 4;
  options.resume = true;
  ASSERT_OK_AND_ASSIGN(TrainResult resumed,
                       Train(*g.source, g.splits, options));
  EXPECT_EQ(resumed.resumed_from_epoch, 2);
  EXPECT_EQ(resumed.parameters_checksum, straight.parameters_checksum);
  EXPECT_EQ(Metric(resumed.test_metrics, "test_auc"),
            Metric(straight.test_metrics, "test_auc"));
  ASSERT_EQ(resumed.epochs.size(), 4u);
  // The restored history keeps its named figures.
  EXPECT_EQ(Metric(resumed.epochs[1].metrics, "valid_auc"),
            Metric(straight.epochs[1].metrics, "valid_auc"));
  // A node-task checkpoint is not a link-task one.
  options.task = TaskKind::kNode;
  EXPECT_FALSE(Train(*g.source, g.splits, options).ok());
}

// --exact-test scores the test pairs from layer-wise embeddings over full
// neighborhoods: the same figures as a sampled test that takes every
// neighbor (fanouts -1), for the same trained parameters.
TEST(LinkTaskTest, ExactTestMatchesASampledTestOverFullNeighborhoods) {
  LinkGraph g = SbmLinks(11);
  TrainOptions options = LinkOptionsFor(6);
  options.eval_fanouts = {-1, -1};
  for (LinkDecoder decoder : {LinkDecoder::kDot, LinkDecoder::kMlp}) {
    SCOPED_TRACE(LinkDecoderName(decoder));
    options.link.decoder = decoder;
    options.exact_test = false;
    ASSERT_OK_AND_ASSIGN(TrainResult sampled,
                         Train(*g.source, g.splits, options));
    options.exact_test = true;
    ASSERT_OK_AND_ASSIGN(TrainResult exact,
                         Train(*g.source, g.splits, options));
    EXPECT_EQ(exact.parameters_checksum, sampled.parameters_checksum);
    ASSERT_EQ(exact.test_metrics.size(), sampled.test_metrics.size());
    for (size_t i = 0; i < exact.test_metrics.size(); ++i) {
      EXPECT_EQ(exact.test_metrics[i].first, sampled.test_metrics[i].first);
      EXPECT_NEAR(exact.test_metrics[i].second, sampled.test_metrics[i].second,
                  1e-3)
          << exact.test_metrics[i].first;
    }
    EXPECT_GT(Metric(exact.test_metrics, "test_auc"), 0.7);
  }
}

TEST(LinkTaskTest, TwoRanksAgreeOnEveryFigure) {
  LinkGraph g = SbmLinks(9);
  TrainOptions options = LinkOptionsFor(8);
  // Both entries made before the threads: each then writes only its own (a
  // map insertion from two threads at once is a data race).
  std::map<int, TrainResult> results = {{0, {}}, {1, {}}};
  const int port = testing::PickFreePort();
  auto rank_main = [&](int rank) {
    DistributedOptions dist;
    dist.rank = rank;
    dist.world_size = 2;
    dist.master_port = port;
    dist.timeout = std::chrono::seconds(60);
    auto group = ProcessGroup::Connect(dist);
    ASSERT_OK(group);
    C10dGradientSync sync(group->get());
    TrainOptions mine = options;
    mine.rank = rank;
    mine.world_size = 2;
    auto r = Train(*g.source, g.splits, mine, &sync);
    ASSERT_OK(r);
    results[rank] = *r;
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].parameters_checksum, results[1].parameters_checksum);
  EXPECT_EQ(results[0].test_metrics, results[1].test_metrics);
  EXPECT_GT(Metric(results[0].test_metrics, "test_auc"), 0.7);
}

TEST(LinkTaskTest, BadPairsGetOneClearError) {
  LinkGraph g = SbmLinks(5);
  TrainOptions options = LinkOptionsFor(1);
  TrainSplits bad = g.splits;
  bad.test_negatives.push_back(3);
  bad.test_negatives.push_back(600);
  absl::StatusOr<TrainResult> r = Train(*g.source, bad, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("test negative pairs"),
            std::string::npos)
      << r.status();
  EXPECT_NE(std::string(r.status().message()).find("node 600"),
            std::string::npos);
  bad = g.splits;
  bad.train_edges.clear();
  r = Train(*g.source, bad, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("no edge split"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace shardgnn
