// The fixture of the single-process trainer tests (trainer_test.cc,
// trainer_resume_test.cc): a small SBM graph in memory and options that every
// model learns it with in a few seconds.
#ifndef SHARDGNN_TESTS_TRAINER_TRAINER_FIXTURE_H_
#define SHARDGNN_TESTS_TRAINER_TRAINER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>

#include "sampler/graph_source.h"
#include "tests/testing/status_matchers.h"
#include "tests/trainer/sbm_graph.h"
#include "trainer/trainer.h"

namespace shardgnn::testing {

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(source_, InMemoryGraphSource::Create(graph_.arrays()));
  }
  TrainOptions SbmOptions(ModelKind kind) const {
    TrainOptions options;
    options.model.kind = kind;
    options.model.hidden = 32;
    options.model.heads = 2;
    options.model.dropout = 0.2;
    options.model.attn_dropout = 0.1;
    options.fanouts = {10, 10};
    options.batch_size = 64;
    options.epochs = 8;
    options.lr = 0.01;
    options.seed = 5;
    return options;
  }

  SbmGraph graph_{1200, 4, 12, 3, 11};
  std::unique_ptr<InMemoryGraphSource> source_;
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TRAINER_TRAINER_FIXTURE_H_
