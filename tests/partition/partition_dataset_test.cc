// PartitionDataset on real dataset directories: the bundled Cora, imported
// through the datasets API, and damaged or missing inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "common/file_util.h"
#include "common/progress.h"
#include "datasets/dataset.h"
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

}  // namespace
}  // namespace shardgnn
