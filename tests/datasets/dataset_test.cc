#include "datasets/dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_util.h"
#include "common/npy.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

namespace fs = std::filesystem;

// A 4-node undirected path 0-1-2-3 with 2 features and 2 classes.
Dataset TinyDataset() {
  Dataset d;
  d.manifest.name = "tiny";
  d.manifest.feature_dim = 2;
  d.manifest.num_classes = 2;
  d.manifest.source = "test";
  d.indptr = {0, 1, 3, 5, 6};
  d.indices = {1, 0, 2, 1, 3, 2};
  d.features = {0, 1, 2, 3, 4, 5, 6, 7};
  d.labels = {0, 1, -1, 1};
  d.splits["train"] = {0, 1};
  d.splits["test"] = {3};
  return d;
}

bool LeavesNothingBut(const std::string& dir, int expected_entries) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n == expected_entries;
}

TEST(DatasetTest, WriteThenLoadRoundTrips) {
  testing::TempDir tmp;
  Dataset d = TinyDataset();
  ASSERT_OK(WriteDataset(d, tmp.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset loaded, LoadDataset(tmp.Sub("out")));
  EXPECT_EQ(loaded.indptr, d.indptr);
  EXPECT_EQ(loaded.indices, d.indices);
  EXPECT_EQ(loaded.features, d.features);
  EXPECT_EQ(loaded.labels, d.labels);
  EXPECT_EQ(loaded.splits, d.splits);
  EXPECT_EQ(loaded.manifest.num_nodes, 4);
  EXPECT_EQ(loaded.manifest.num_edges, 6);
  EXPECT_EQ(loaded.manifest.splits.at("train"), 2);
  EXPECT_EQ(loaded.manifest.files.size(), 6u);
  EXPECT_EQ(loaded.manifest.name, "tiny");
  EXPECT_TRUE(LeavesNothingBut(tmp.path(), 1));
}

// A folder that is not a dataset directory but what one is made from (raw
// OGB input, LINQS files) or made into (a partition) is named as such, with
// the command that makes a dataset of it.
TEST(DatasetTest, RawInputAndPartitionsAreToldApartFromDatasets) {
  testing::TempDir tmp;
  fs::create_directories(tmp.Sub("ogb/raw"));
  std::ofstream(tmp.Sub("ogb/raw/edge.csv.gz")) << "";
  absl::StatusOr<Dataset> ogb = LoadDataset(tmp.Sub("ogb"));
  ASSERT_FALSE(ogb.ok());
  const std::string ogb_message(ogb.status().message());
  EXPECT_NE(ogb_message.find("raw OGB input"), std::string::npos)
      << ogb_message;
  EXPECT_NE(ogb_message.find("shardgnn dataset import --format ogb --input " +
                             tmp.Sub("ogb")),
            std::string::npos)
      << ogb_message;
  EXPECT_NE(ogb_message.find("shardgnn run --dataset"), std::string::npos);

  fs::create_directories(tmp.Sub("linqs"));
  std::ofstream(tmp.Sub("linqs/cora.content")) << "";
  std::ofstream(tmp.Sub("linqs/cora.cites")) << "";
  absl::StatusOr<DatasetManifest> linqs = ReadDatasetManifest(tmp.Sub("linqs"));
  ASSERT_FALSE(linqs.ok());
  EXPECT_NE(std::string(linqs.status().message()).find("--format linqs"),
            std::string::npos)
      << linqs.status();

  // As the bundled datasets ship them: gzipped.
  fs::create_directories(tmp.Sub("linqs_gz"));
  std::ofstream(tmp.Sub("linqs_gz/cora.content.gz")) << "";
  std::ofstream(tmp.Sub("linqs_gz/cora.cites.gz")) << "";
  absl::StatusOr<DatasetManifest> linqs_gz =
      ReadDatasetManifest(tmp.Sub("linqs_gz"));
  ASSERT_FALSE(linqs_gz.ok());
  EXPECT_NE(std::string(linqs_gz.status().message()).find("--format linqs"),
            std::string::npos)
      << linqs_gz.status();

  fs::create_directories(tmp.Sub("mag/raw"));
  std::ofstream(tmp.Sub("mag/raw/num-node-dict.csv.gz")) << "";
  absl::StatusOr<DatasetManifest> mag = ReadDatasetManifest(tmp.Sub("mag"));
  ASSERT_FALSE(mag.ok());
  EXPECT_NE(std::string(mag.status().message()).find("--format ogb-hetero"),
            std::string::npos)
      << mag.status();

  fs::create_directories(tmp.Sub("hgb"));
  std::ofstream(tmp.Sub("hgb/node.dat")) << "";
  std::ofstream(tmp.Sub("hgb/link.dat")) << "";
  absl::StatusOr<DatasetManifest> hgb = ReadDatasetManifest(tmp.Sub("hgb"));
  ASSERT_FALSE(hgb.ok());
  EXPECT_NE(std::string(hgb.status().message()).find("--format hgb"),
            std::string::npos)
      << hgb.status();

  fs::create_directories(tmp.Sub("part"));
  std::ofstream(tmp.Sub("part/partition.json")) << "{}";
  absl::StatusOr<DatasetManifest> part = ReadDatasetManifest(tmp.Sub("part"));
  ASSERT_FALSE(part.ok());
  EXPECT_NE(std::string(part.status().message()).find("partition directory"),
            std::string::npos)
      << part.status();

  // Anything else: the manifest it lacks.
  fs::create_directories(tmp.Sub("empty"));
  absl::StatusOr<DatasetManifest> empty = ReadDatasetManifest(tmp.Sub("empty"));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(empty.status().message()).find("manifest.json"),
            std::string::npos);
}

TEST(DatasetTest, ManifestHasFormatAndVersion) {
  testing::TempDir tmp;
  ASSERT_OK(WriteDataset(TinyDataset(), tmp.Sub("out")));
  ASSERT_OK_AND_ASSIGN(std::string text,
                       ReadFileToString(tmp.Sub("out/manifest.json")));
  EXPECT_NE(text.find("\"format\": \"shardgnn-dataset\""), std::string::npos);
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(DatasetManifest m, ReadDatasetManifest(tmp.Sub("out")));
  EXPECT_EQ(m.feature_dim, 2);
  EXPECT_EQ(m.num_classes, 2);
  EXPECT_FALSE(m.directed);
}

TEST(DatasetTest, LoadWithoutFeatures) {
  testing::TempDir tmp;
  ASSERT_OK(WriteDataset(TinyDataset(), tmp.Sub("out")));
  LoadDatasetOptions options;
  options.load_features = false;
  ASSERT_OK_AND_ASSIGN(Dataset loaded, LoadDataset(tmp.Sub("out"), options));
  EXPECT_TRUE(loaded.features.empty());
  EXPECT_EQ(loaded.num_edges(), 6);
}

TEST(DatasetTest, RefusesExistingOutput) {
  testing::TempDir tmp;
  fs::create_directory(tmp.Sub("out"));
  absl::Status s = WriteDataset(TinyDataset(), tmp.Sub("out"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("out"), absl::string_view::npos);
  EXPECT_TRUE(LeavesNothingBut(tmp.path(), 1));
}

TEST(DatasetTest, RefusesInvalidDataAndLeavesNothing) {
  testing::TempDir tmp;
  Dataset d = TinyDataset();
  d.indices[2] = 9;
  absl::Status s = WriteDataset(d, tmp.Sub("out"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("indices.npy"), absl::string_view::npos) << s;
  EXPECT_TRUE(LeavesNothingBut(tmp.path(), 0));
}

TEST(DatasetTest, ValidateCatchesEachInvariant) {
  EXPECT_OK(ValidateDataset([] {
    Dataset d = TinyDataset();
    d.manifest.num_nodes = 4;
    d.manifest.num_edges = 6;
    d.manifest.splits = {{"train", 2}, {"test", 1}};
    return d;
  }()));
  auto broken = [](auto mutate) {
    Dataset d = TinyDataset();
    d.manifest.num_nodes = 4;
    d.manifest.num_edges = 6;
    d.manifest.splits = {{"train", 2}, {"test", 1}};
    mutate(d);
    return ValidateDataset(d);
  };
  EXPECT_FALSE(broken([](Dataset& d) { d.indptr[2] = 0; }).ok());
  EXPECT_FALSE(broken([](Dataset& d) {
                 d.indices[1] = 2;
                 d.indices[2] = 0;
               }).ok());
  EXPECT_FALSE(broken([](Dataset& d) { d.labels[0] = 2; }).ok());
  EXPECT_FALSE(broken([](Dataset& d) { d.features.pop_back(); }).ok());
  EXPECT_FALSE(broken([](Dataset& d) { d.splits["test"] = {7}; }).ok());
  EXPECT_FALSE(broken([](Dataset& d) { d.splits["train"] = {1, 0}; }).ok());
  EXPECT_FALSE(broken([](Dataset& d) { d.manifest.num_edges = 5; }).ok());
}

TEST(DatasetTest, DetectsDamagedFile) {
  testing::TempDir tmp;
  ASSERT_OK(WriteDataset(TinyDataset(), tmp.Sub("out")));
  {
    std::fstream f(tmp.Sub("out/labels.npy"),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  absl::StatusOr<Dataset> loaded = LoadDataset(tmp.Sub("out"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(loaded.status().message().find("labels.npy"),
            absl::string_view::npos);
  // Without checksum verification the bad label is still caught.
  LoadDatasetOptions options;
  options.verify_checksums = false;
  loaded = LoadDataset(tmp.Sub("out"), options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("labels.npy"),
            absl::string_view::npos);
}

TEST(DatasetTest, RejectsForeignManifest) {
  testing::TempDir tmp;
  fs::create_directory(tmp.Sub("d"));
  ASSERT_OK(WriteFileAtomic(tmp.Sub("d/manifest.json"), "{\"format\": \"x\"}"));
  absl::StatusOr<DatasetManifest> m = ReadDatasetManifest(tmp.Sub("d"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("manifest.json"),
            absl::string_view::npos);
  ASSERT_OK(WriteFileAtomic(tmp.Sub("d/manifest.json"), "{not json"));
  EXPECT_FALSE(ReadDatasetManifest(tmp.Sub("d")).ok());
  EXPECT_FALSE(ReadDatasetManifest(tmp.Sub("missing")).ok());
}

// A "format" or "source" of another JSON type is refused with a status, not
// an uncaught nlohmann type_error (found by manifest_fuzz: a duplicated key
// whose last value is an array).
TEST(DatasetTest, RejectsManifestFieldsOfTheWrongType) {
  testing::TempDir tmp;
  ASSERT_OK(WriteDataset(TinyDataset(), tmp.Sub("d")));
  const std::string path = tmp.Sub("d/manifest.json");
  ASSERT_OK_AND_ASSIGN(const std::string good, ReadFileToString(path));
  const size_t source = good.find("\"source\":");
  ASSERT_NE(source, std::string::npos);
  const std::vector<std::string> texts = {
      "{\n  \"format\": \"shrmivion\",\n  \"format\": []\n}",
      "{\"format\": 7}",
      good.substr(0, source) +
          "\"source\": [1],\n  \"unused\":" + good.substr(source + 9),
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    ASSERT_OK(WriteFileAtomic(path, text));
    auto m = ReadDatasetManifest(tmp.Sub("d"));
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(path), absl::string_view::npos)
        << m.status();
  }
}

// The content checksum says whether two dataset directories hold the same
// data, whatever their name, source text or location.
// A manifest field that is not a whole number in range is refused, naming
// the file and the field (2708.5 used to be read as 2708).
TEST(DatasetTest, RejectsNonIntegralAndOutOfRangeCounts) {
  testing::TempDir tmp;
  ASSERT_OK(WriteDataset(TinyDataset(), tmp.Sub("d")));
  const std::string path = tmp.Sub("d/manifest.json");
  ASSERT_OK_AND_ASSIGN(const std::string good, ReadFileToString(path));
  struct Case {
    std::string field, from, to;
  };
  const std::vector<Case> cases = {
      {"num_nodes", "\"num_nodes\": 4", "\"num_nodes\": 4.5"},
      {"num_nodes", "\"num_nodes\": 4", "\"num_nodes\": -4"},
      {"num_nodes", "\"num_nodes\": 4", "\"num_nodes\": 18446744073709551615"},
      {"num_nodes", "\"num_nodes\": 4", "\"num_nodes\": 1e30"},
      {"num_edges", "\"num_edges\": 6", "\"num_edges\": 6.0"},
      {"feature_dim", "\"feature_dim\": 2", "\"feature_dim\": 4294967296"},
      {"num_classes", "\"num_classes\": 2", "\"num_classes\": \"2\""},
      {"train", "\"train\": 2", "\"train\": 2.5"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    std::string text = good;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.from.size(), c.to);
    ASSERT_OK(WriteFileAtomic(path, text));
    auto m = ReadDatasetManifest(tmp.Sub("d"));
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(path), absl::string_view::npos)
        << m.status();
    EXPECT_NE(m.status().message().find("\"" + c.field + "\""),
              absl::string_view::npos)
        << m.status();
  }
}

TEST(DatasetTest, ContentChecksumFollowsTheDataNotTheName) {
  testing::TempDir tmp;
  Dataset d = TinyDataset();
  ASSERT_OK(WriteDataset(d, tmp.Sub("a")));
  d.manifest.name = "other name";
  d.manifest.source = "somewhere else";
  ASSERT_OK(WriteDataset(d, tmp.Sub("b")));
  d.features[3] = 42;
  ASSERT_OK(WriteDataset(d, tmp.Sub("c")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest a, ReadDatasetManifest(tmp.Sub("a")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest b, ReadDatasetManifest(tmp.Sub("b")));
  ASSERT_OK_AND_ASSIGN(DatasetManifest c, ReadDatasetManifest(tmp.Sub("c")));
  EXPECT_EQ(DatasetContentChecksum(a).size(), 16u);
  EXPECT_EQ(DatasetContentChecksum(a), DatasetContentChecksum(b));
  EXPECT_NE(DatasetContentChecksum(a), DatasetContentChecksum(c));
  // A split renamed is other content too.
  DatasetManifest renamed = a;
  renamed.splits = {{"train", 2}, {"valid", 1}};
  EXPECT_NE(DatasetContentChecksum(a), DatasetContentChecksum(renamed));
}

TEST(DatasetTest, SplitFileName) {
  EXPECT_EQ(SplitFileName("train"), "split_train.npy");
}

}  // namespace
}  // namespace shardgnn
