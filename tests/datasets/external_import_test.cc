// Tests for the out-of-core edge list import (ImportEdgeList with
// memory_limit, datasets/edgelist_importer.cc over internal/external_csr.cc):
// every output file equals the in-memory import's byte for byte, and bad
// input fails with the in-memory import's error, leaving nothing behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/npy.h"
#include "common/progress.h"
#include "datasets/importers.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

constexpr int64_t kNodes = 120;

class ExternalImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    // Mostly among nodes 0-30 (repeats in both orientations), self-loops, a
    // few edges to any node (so some nodes have none), a header and
    // comments.
    std::mt19937 rng(5);
    std::string text = "src dst\n# a comment\n";
    for (int i = 0; i < 1500; ++i) {
      NodeId s = rng() % 40 == 0 ? rng() % kNodes : rng() % 31;
      NodeId d = rng() % 40 == 0 ? rng() % kNodes : rng() % 31;
      if (rng() % 25 == 0) d = s;
      src_.push_back(s);
      dst_.push_back(d);
      const char* sep = i % 3 == 0 ? "," : i % 3 == 1 ? "\t" : " ";
      text += std::to_string(s) + sep + std::to_string(d) + "\n";
    }
    testing::WriteText(tmp_.Sub("in/g.txt"), text);
    std::vector<float> x(kNodes * 2);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 7;
    ASSERT_OK(WriteNpy<float>(tmp_.Sub("in/x.npy"), {kNodes, 2}, x));
    std::vector<int64_t> y(kNodes);
    for (int64_t v = 0; v < kNodes; ++v) y[v] = v % 5 == 0 ? -1 : v % 3;
    ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/y.npy"), {kNodes}, y));
  }

  EdgeListImportOptions Options(const std::string& edges) {
    EdgeListImportOptions options;
    options.edges_path = tmp_.Sub(edges);
    options.features_path = tmp_.Sub("in/x.npy");
    options.labels_path = tmp_.Sub("in/y.npy");
    options.seed = 9;
    return options;
  }

  // Runs of 32 entries read 4 at a time (a fan-in of 4): about 50-100 runs
  // and several merge passes for 1500 edges.
  static EdgeListImportOptions OutOfCore(EdgeListImportOptions options) {
    options.out_of_core.memory_limit = int64_t{1} << 40;
    options.out_of_core.run_entries = 32;
    options.out_of_core.read_buffer_entries = 4;
    return options;
  }

  // Imports in memory into "mem" and out of core into "ext" and expects the
  // same files, byte for byte, and the same summary.
  void ExpectSameImport(const EdgeListImportOptions& options) {
    ASSERT_OK_AND_ASSIGN(BuildSummary mem,
                         ImportEdgeList(options, tmp_.Sub("mem")));
    ASSERT_OK_AND_ASSIGN(BuildSummary ext,
                         ImportEdgeList(OutOfCore(options), tmp_.Sub("ext")));
    std::vector<std::string> files = testing::Entries(tmp_.Sub("mem"));
    std::sort(files.begin(), files.end());
    std::vector<std::string> ext_files = testing::Entries(tmp_.Sub("ext"));
    std::sort(ext_files.begin(), ext_files.end());
    EXPECT_EQ(files, ext_files);
    EXPECT_THAT(files, ::testing::Contains("indices.npy"));
    EXPECT_THAT(files, ::testing::Contains("manifest.json"));
    for (const std::string& file : files) {
      EXPECT_EQ(FileBytes(tmp_.Sub("mem/" + file)),
                FileBytes(tmp_.Sub("ext/" + file)))
          << file;
    }
    EXPECT_EQ(ext.input_edges, mem.input_edges);
    EXPECT_EQ(ext.duplicate_edges_dropped, mem.duplicate_edges_dropped);
    EXPECT_EQ(ext.self_loops_dropped, mem.self_loops_dropped);
    EXPECT_EQ(ext.max_degree, mem.max_degree);
    EXPECT_EQ(ext.nodes_without_neighbors, mem.nodes_without_neighbors);
    EXPECT_EQ(ext.split_nodes_without_neighbors,
              mem.split_nodes_without_neighbors);
    EXPECT_EQ(ext.non_loop_edges, mem.non_loop_edges);
    EXPECT_EQ(ext.reciprocated_edges, mem.reciprocated_edges);
    EXPECT_EQ(ext.warnings, mem.warnings);
    // The same notes, and one more saying how the build went.
    std::vector<std::string> notes;
    std::string built;
    for (const std::string& note : ext.notes) {
      if (note.find("built out of core") != std::string::npos) {
        built = note;
      } else {
        notes.push_back(note);
      }
    }
    EXPECT_EQ(notes, mem.notes);
    EXPECT_THAT(built, HasSubstr("merge passes"));
    EXPECT_GT(mem.duplicate_edges_dropped, 0);
    EXPECT_GT(mem.nodes_without_neighbors, 0);
  }

  // Expects the same error from both imports and nothing left in tmp_ but
  // the inputs.
  void ExpectSameError(const EdgeListImportOptions& options,
                       const std::string& message_part) {
    absl::StatusOr<BuildSummary> mem = ImportEdgeList(options, tmp_.Sub("out"));
    absl::StatusOr<BuildSummary> ext =
        ImportEdgeList(OutOfCore(options), tmp_.Sub("out"));
    ASSERT_FALSE(mem.ok());
    ASSERT_FALSE(ext.ok());
    EXPECT_EQ(ext.status(), mem.status());
    EXPECT_THAT(std::string(ext.status().message()), HasSubstr(message_part));
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  std::vector<NodeId> src_, dst_;
  testing::TempDir tmp_;
};

TEST_F(ExternalImportTest, DirectedTextEqualsInMemory) {
  ExpectSameImport(Options("in/g.txt"));
}

TEST_F(ExternalImportTest, UndirectedTextEqualsInMemory) {
  EdgeListImportOptions options = Options("in/g.txt");
  options.edges.undirected = true;
  ExpectSameImport(options);
}

TEST_F(ExternalImportTest, SelfLoopsKeptEqualsInMemory) {
  EdgeListImportOptions options = Options("in/g.txt");
  options.edges.keep_self_loops = true;
  ExpectSameImport(options);
}

TEST_F(ExternalImportTest, EdgeIndexNpyEqualsInMemory) {
  // [2, E] int32 (edge_index) and [E, 2] int64.
  std::vector<int32_t> index(src_.begin(), src_.end());
  index.insert(index.end(), dst_.begin(), dst_.end());
  const auto m = static_cast<int64_t>(src_.size());
  ASSERT_OK(WriteNpy<int32_t>(tmp_.Sub("in/edge_index.npy"), {2, m}, index));
  std::vector<int64_t> pairs;
  for (int64_t e = 0; e < m; ++e) {
    pairs.push_back(src_[e]);
    pairs.push_back(dst_[e]);
  }
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/pairs.npy"), {m, 2}, pairs));
  EdgeListImportOptions options = Options("in/edge_index.npy");
  options.edges.undirected = true;
  ExpectSameImport(options);
  std::filesystem::remove_all(tmp_.Sub("mem"));
  std::filesystem::remove_all(tmp_.Sub("ext"));
  ExpectSameImport(Options("in/pairs.npy"));
}

TEST_F(ExternalImportTest, MalformedLineLateInTheFileFailsTheSame) {
  // Line 1203: after dozens of runs were written.
  std::string text = FileBytes(tmp_.Sub("in/g.txt"));
  std::string bad;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    bad += (number == 1203 ? "12 x7" : line) + "\n";
  }
  testing::WriteText(tmp_.Sub("in/g.txt"), bad);
  ExpectSameError(Options("in/g.txt"),
                  "g.txt:1203: \"x7\" is not an integer node ID");
}

TEST_F(ExternalImportTest, OutOfRangeIdFailsTheSame) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "0 1\n1 2\n2 120\n");
  ExpectSameError(Options("in/g.txt"), "node ID 120 is outside [0, 120)");
}

TEST_F(ExternalImportTest, OutOfRangeNpyEdgeFailsTheSame) {
  std::vector<int64_t> index = {0, 1, 2, 3, 1, 2, 500, 0};
  ASSERT_OK(WriteNpy<int64_t>(tmp_.Sub("in/e.npy"), {2, 4}, index));
  ExpectSameError(Options("in/e.npy"), "edge 2 (2 -> 500) has node 500");
}

TEST_F(ExternalImportTest, NoEdgesFailsTheSame) {
  testing::WriteText(tmp_.Sub("in/g.txt"), "# nothing\n");
  ExpectSameError(Options("in/g.txt"), "the graph has no edges");
}

TEST_F(ExternalImportTest, ALimitBelowWhatTheProcessHoldsIsRefused) {
  EdgeListImportOptions options = Options("in/g.txt");
  options.out_of_core.memory_limit = 1 << 20;
  absl::StatusOr<BuildSummary> s = ImportEdgeList(options, tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("--memory-limit 1.0 MiB is too small"));
  EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
}

// The OGB raw layout (bundled Cora-ML: split/ of random nodes; Cora: the
// public split) out of core equals the in-memory import, both directions.
TEST_F(ExternalImportTest, OgbFolderEqualsInMemory) {
  for (const char* graph : {"cora-ml", "cora/ogb-planetoid"}) {
    for (bool undirected : {false, true}) {
      SCOPED_TRACE(std::string(graph) + (undirected ? " undirected" : ""));
      OgbImportOptions options;
      options.input_dir = testing::SourcePath(std::string("datasets/") + graph);
      options.edges.undirected = undirected;
      ASSERT_OK_AND_ASSIGN(BuildSummary mem,
                           ImportOgb(options, tmp_.Sub("mem")));
      options.out_of_core.memory_limit = int64_t{1} << 40;
      options.out_of_core.run_entries = 256;
      options.out_of_core.read_buffer_entries = 4;
      ASSERT_OK_AND_ASSIGN(BuildSummary ext,
                           ImportOgb(options, tmp_.Sub("ext")));
      int compared = 0;
      for (const std::string& file : testing::Entries(tmp_.Sub("mem"))) {
        EXPECT_EQ(FileBytes(tmp_.Sub("mem/" + file)),
                  FileBytes(tmp_.Sub("ext/" + file)))
            << file;
        ++compared;
      }
      EXPECT_GE(compared, 8);
      EXPECT_EQ(testing::Entries(tmp_.Sub("ext")).size(),
                static_cast<size_t>(compared));
      EXPECT_EQ(ext.duplicate_edges_dropped, mem.duplicate_edges_dropped);
      EXPECT_EQ(ext.reciprocated_edges, mem.reciprocated_edges);
      EXPECT_EQ(ext.warnings, mem.warnings);
      ASSERT_EQ(ext.notes.size(), mem.notes.size() + 1);
      EXPECT_THAT(ext.notes.back(), HasSubstr("merge passes"));
      std::filesystem::remove_all(tmp_.Sub("mem"));
      std::filesystem::remove_all(tmp_.Sub("ext"));
    }
  }
}

// What the OGB out-of-core build cannot do is refused before any work.
TEST_F(ExternalImportTest, OgbEdgeFeaturesAreRefusedOutOfCore) {
  const std::string in = tmp_.Sub("in/ogb");
  testing::WriteText(in + "/raw/num-node-list.csv", "3\n");
  testing::WriteText(in + "/raw/num-edge-list.csv", "2\n");
  testing::WriteText(in + "/raw/edge.csv", "0,1\n1,2\n");
  testing::WriteText(in + "/raw/edge-feat.csv", "0.5\n0.25\n");
  testing::WriteText(in + "/raw/node-feat.csv", "1,0\n0,1\n1,1\n");
  testing::WriteText(in + "/raw/node-label.csv", "0\n1\n0\n");
  OgbImportOptions options;
  options.input_dir = in;
  options.class_split = ClassSplitOptions{1, 0, 0};
  options.out_of_core.memory_limit = int64_t{1} << 40;
  absl::StatusOr<BuildSummary> s = ImportOgb(options, tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("edge-feat.csv: edge features follow their edges"));
  EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
}

}  // namespace
}  // namespace shardgnn
