// PartitionDataset on real dataset directories: the bundled Cora, imported
// through the datasets API, and damaged or missing inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/generators.h"
#include "datasets/importers.h"
#include "partition/partition.h"
#include "tests/partition/partition_checks.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::shardgnn::testing::CheckPartition;
using ::shardgnn::testing::Entries;
using ::shardgnn::testing::SourcePath;
using ::shardgnn::testing::TempDir;
using ::testing::HasSubstr;

class PartitionDatasetTest : public ::testing::Test {
 protected:
  // Cora is imported once for the whole suite.
  static void SetUpTestSuite() {
    Progress::SetQuietByDefault(true);
    cora_tmp_ = new TempDir();
    OgbImportOptions options;
    options.input_dir = SourcePath("datasets/cora/ogb-planetoid");
    options.edges.undirected = true;
    options.name = "cora";
    cora_status_ = new absl::Status(ImportOgb(options, CoraDir()).status());
  }
  static void TearDownTestSuite() {
    delete cora_tmp_;
    delete cora_status_;
  }
  void SetUp() override { ASSERT_OK(*cora_status_); }
  static std::string CoraDir() { return cora_tmp_->Sub("cora"); }

  static TempDir* cora_tmp_;
  static absl::Status* cora_status_;
  TempDir tmp_;
};
TempDir* PartitionDatasetTest::cora_tmp_ = nullptr;
absl::Status* PartitionDatasetTest::cora_status_ = nullptr;

TEST_F(PartitionDatasetTest, CoraIntoTwoBalancedParts) {
  PartitionOptions options;
  options.num_parts = 2;
  PartitionTiming timing;
  ASSERT_OK_AND_ASSIGN(
      PartitionManifest m,
      PartitionDataset(CoraDir(), tmp_.Sub("p"), options, &timing));
  EXPECT_EQ(m.dataset_name, "cora");
  EXPECT_EQ(m.num_nodes, 2708);
  EXPECT_EQ(m.num_edges, 10556);
  EXPECT_EQ(m.feature_dim, 1433);
  EXPECT_EQ(m.num_classes, 7);
  EXPECT_EQ(m.splits.at("train"), 140);
  EXPECT_EQ(m.splits.at("valid"), 500);
  EXPECT_EQ(m.splits.at("test"), 1000);
  EXPECT_EQ(m.method, "metis");
  // Cora's citation clusters cut well; 2-way METIS cuts a few percent.
  EXPECT_LT(m.edge_cut_fraction, 0.10);
  EXPECT_LE(m.balance.at("train_nodes").Imbalance(), 1.10);
  EXPECT_LE(m.balance.at("nodes").Imbalance(), 1.10);
  EXPECT_GT(timing.total_seconds, 0);
  EXPECT_GT(timing.peak_rss_after_write, 0);
  ASSERT_OK_AND_ASSIGN(std::string timing_json,
                       ReadFileToString(tmp_.Sub("p/timing.json")));
  EXPECT_THAT(timing_json, HasSubstr("write_seconds"));
  ASSERT_OK_AND_ASSIGN(Dataset cora, LoadDataset(CoraDir()));
  CheckPartition(cora, tmp_.Sub("p"), m);
}

// The reload of indices and features after METIS belongs to load_seconds and
// is counted once: the total is at least the sum of the stages and at most
// the wall time of the call (it once counted the reload twice).
TEST_F(PartitionDatasetTest, TotalTimeIsNoLongerThanTheCall) {
  PartitionOptions options;
  options.num_parts = 2;
  PartitionTiming timing;
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK(PartitionDataset(CoraDir(), tmp_.Sub("p"), options, &timing));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double stages = timing.load_seconds + timing.symmetrize_seconds +
                        timing.assign_seconds + timing.relabel_seconds +
                        timing.write_seconds;
  EXPECT_LE(timing.total_seconds, wall);
  EXPECT_GE(timing.total_seconds, stages);
}

TEST_F(PartitionDatasetTest, FileAndMemoryEntryPointsAgree) {
  PartitionOptions options;
  options.num_parts = 3;
  options.seed = 5;
  ASSERT_OK(PartitionDataset(CoraDir(), tmp_.Sub("file"), options));
  ASSERT_OK_AND_ASSIGN(Dataset cora, LoadDataset(CoraDir()));
  ASSERT_OK(PartitionInMemory(cora, tmp_.Sub("memory"), options));
  ASSERT_OK_AND_ASSIGN(std::string a,
                       ReadFileToString(tmp_.Sub("file/partition.json")));
  ASSERT_OK_AND_ASSIGN(std::string b,
                       ReadFileToString(tmp_.Sub("memory/partition.json")));
  EXPECT_EQ(a, b);
}

TEST_F(PartitionDatasetTest, MissingDatasetDirIsNamed) {
  PartitionOptions options;
  auto result = PartitionDataset(tmp_.Sub("nope"), tmp_.Sub("p"), options);
  EXPECT_TRUE(absl::IsNotFound(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("nope: dataset directory does not exist"));
  EXPECT_TRUE(Entries(tmp_.path()).empty());
}

TEST_F(PartitionDatasetTest, ExistingOutputIsLeftAlone) {
  std::filesystem::create_directory(tmp_.Sub("p"));
  PartitionOptions options;
  auto result = PartitionDataset(CoraDir(), tmp_.Sub("p"), options);
  EXPECT_TRUE(absl::IsAlreadyExists(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("already exists"));
  EXPECT_TRUE(Entries(tmp_.Sub("p")).empty());
}

TEST_F(PartitionDatasetTest, TooManyPartsFailsAndLeavesNothing) {
  PartitionOptions options;
  options.num_parts = 5000;
  auto result = PartitionDataset(CoraDir(), tmp_.Sub("p"), options);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("--parts 5000 is larger than "));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("'s 2708 nodes"));
  EXPECT_TRUE(Entries(tmp_.path()).empty());
}

TEST_F(PartitionDatasetTest, DamagedFeaturesAreDetectedAndNothingIsLeft) {
  std::filesystem::copy(CoraDir(), tmp_.Sub("cora"));
  const std::string features = tmp_.Sub("cora/features.npy");
  {
    std::FILE* f = std::fopen(features.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, -3, SEEK_END);
    std::fputc(0x5a, f);
    std::fclose(f);
  }
  PartitionOptions options;
  auto result = PartitionDataset(tmp_.Sub("cora"), tmp_.Sub("p"), options);
  EXPECT_TRUE(absl::IsDataLoss(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("features.npy: checksum"));
  EXPECT_EQ(Entries(tmp_.path()), std::vector<std::string>{"cora"});
}

// How a partition run in a child process ended.
struct ChildOutcome {
  bool exited = false;  // Not killed by a signal (an abort, an assertion).
  int code = -1;        // 0 = partitioned, 1 = a clean error.
  std::string error;
};

// Runs `setup` then PartitionDataset(dataset, out) in a child process, which
// exits 3 if afterwards the output's directory holds anything but a finished
// output ("out" on success, nothing after an error).
ChildOutcome PartitionInChild(const std::string& dataset,
                              const std::string& out,
                              const std::function<bool()>& setup) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (!setup()) _exit(2);
    PartitionOptions options;
    options.num_parts = 2;
    absl::Status s = PartitionDataset(dataset, out, options).status();
    std::string message(s.message());
    const std::vector<std::string> left =
        Entries(std::filesystem::path(out).parent_path().string());
    const bool whole =
        s.ok() ? left == std::vector<std::string>{"out"} : left.empty();
    if (!whole) message += " [left: " + absl::StrJoin(left, ", ") + "]";
    (void)!write(fds[1], message.data(), message.size());
    _exit(!whole ? 3 : s.ok() ? 0 : 1);
  }
  close(fds[1]);
  ChildOutcome outcome;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) outcome.error.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  outcome.exited = WIFEXITED(status);
  outcome.code = outcome.exited ? WEXITSTATUS(status) : -WTERMSIG(status);
  return outcome;
}

// A tiny graph, so that RocksDB's own files (its info LOG, MANIFEST) fill up
// at some limits rather than the shard's data.
std::string TinyDataset(const TempDir& tmp) {
  Progress::SetQuietByDefault(true);
  GeneratorOptions options;
  options.num_nodes = 40;
  options.avg_degree = 3;
  options.feature_dim = 4;
  options.num_classes = 2;
  EXPECT_OK(GenerateDataset(options, tmp.Sub("tiny")).status());
  return tmp.Sub("tiny");
}

// Writes beyond a file-size limit fail with EFBIG (SIGXFSZ ignored), as a
// full disk fails them with ENOSPC: at every limit the partition either
// completes or fails with a clean error, never an abort, and leaves nothing.
TEST(PartitionDiskFullTest, FileSizeLimitIsACleanErrorWithNoLeftovers) {
  TempDir data;
  const std::string dataset = TinyDataset(data);
  int clean_errors = 0;
  for (rlim_t limit = 1024; limit <= 96 * 1024; limit += 1024) {
    SCOPED_TRACE(limit);
    TempDir tmp;
    ChildOutcome r = PartitionInChild(dataset, tmp.Sub("out"), [limit] {
      signal(SIGXFSZ, SIG_IGN);
      rlimit l{limit, limit};
      return setrlimit(RLIMIT_FSIZE, &l) == 0;
    });
    ASSERT_TRUE(r.exited) << "killed by signal " << -r.code;
    ASSERT_TRUE(r.code == 0 || r.code == 1) << r.code << ": " << r.error;
    if (r.code == 1) {
      ++clean_errors;
      EXPECT_THAT(r.error, HasSubstr(tmp.path()));
    }
  }
  EXPECT_GT(clean_errors, 0);
}

// The same on a real full filesystem: a small tmpfs in a private mount
// namespace of the child (needs root; skipped otherwise).
TEST(PartitionDiskFullTest, FullFilesystemIsACleanErrorWithNoLeftovers) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
  TempDir data;
  const std::string dataset = TinyDataset(data);
  int clean_errors = 0;
  for (int kb = 16; kb <= 400; kb += 8) {
    SCOPED_TRACE(kb);
    TempDir tmp;
    const std::string mnt = tmp.Sub("fs");
    std::filesystem::create_directory(mnt);
    const std::string out = mnt + "/out";
    ChildOutcome r = PartitionInChild(dataset, out, [&] {
      const std::string size = "size=" + std::to_string(kb) + "k";
      return unshare(CLONE_NEWNS) == 0 &&
             mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
             mount("tmpfs", mnt.c_str(), "tmpfs", 0, size.c_str()) == 0;
    });
    if (r.exited && r.code == 2) GTEST_SKIP() << "cannot mount a tmpfs here";
    ASSERT_TRUE(r.exited) << "killed by signal " << -r.code;
    ASSERT_TRUE(r.code == 0 || r.code == 1) << r.code << ": " << r.error;
    if (r.code == 1) {
      ++clean_errors;
      EXPECT_THAT(r.error, HasSubstr(mnt));
    }
  }
  EXPECT_GT(clean_errors, 0);
}

}  // namespace
}  // namespace shardgnn
