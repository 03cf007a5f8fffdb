// The fixture of the `shardgnn run` tests (run_test.cc, run_signal_test.cc,
// run_security_test.cc): the real binary as a child process, with its storage
// servers and trainers as its own children, on the bundled Cora in a
// temporary work dir.
#ifndef SHARDGNN_TESTS_CLI_RUN_FIXTURE_H_
#define SHARDGNN_TESTS_CLI_RUN_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "tests/cli/process_table.h"
#include "tests/cli/shardgnn_child.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::testing {

class RunTest : public ::testing::Test {
 protected:
  // Flags every run in these tests shares: nothing lands outside the temp dir.
  std::vector<std::string> RunArgs(const std::string& out,
                                   const std::string& epochs) {
    return {"run",      "--work-dir", work_dir_,   "--out", out,
            "--epochs", epochs,       "--timeout", "30"};
  }

  // Starts a long run (1000 epochs) in dir_/run and waits until it trains:
  // epoch 1 done, its 2 servers and 2 trainers running (*children).
  void StartTraining(std::unique_ptr<Subprocess>* run,
                     std::vector<ProcessInfo>* children,
                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = RunArgs(dir_.Sub("run"), "1000");
    args.insert(args.end(), extra.begin(), extra.end());
    *run = StartShardgnn(args, "shardgnn run");
    ASSERT_NE(*run, nullptr);
    ASSERT_OK((*run)->WaitForLine("epoch   1/1000", kRunTimeout));
    *children = ChildrenOf((*run)->pid(), work_dir_);
    ASSERT_EQ(children->size(), 4u) << Describe(*children);
  }

  // Fails the test if any process still mentions the work dir.
  void ExpectNoOrphans() {
    auto left = ProcessesMentioning(work_dir_);
    EXPECT_TRUE(left.empty()) << "processes left behind:" << Describe(left);
  }

  // Fails the test if any of `children` still runs, or any process still
  // mentions the work dir.
  void ExpectNoneLeft(const std::vector<ProcessInfo>& children) {
    for (const auto& c : children) {
      EXPECT_FALSE(IsAlive(c.pid)) << "still running: " << c.cmdline;
    }
    ExpectNoOrphans();
  }

  TempDir dir_;
  const std::string work_dir_ = dir_.Sub("work");
};

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_CLI_RUN_FIXTURE_H_
