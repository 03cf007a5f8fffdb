// Tests for ImportOgbHetero (datasets/ogb_hetero_importer.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/progress.h"
#include "datasets/dataset.h"
#include "datasets/importers.h"
#include "datasets/summary.h"
#include "tests/datasets/test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::WriteGzip;
using testing::WriteText;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// One input relation: its types and its edges in type-local IDs.
struct InputRelation {
  std::string src, relation, dst;
  Pairs edges;
};

// A tiny ogbn-mag: author (3, no features), field (2, no features), paper
// (4, 3-wide features, labels); global IDs author 0-2, field 3-4, paper 5-8.
const std::vector<InputRelation>& Relations() {
  static const auto* relations = new std::vector<InputRelation>{
      {"author", "writes", "paper", {{0, 0}, {0, 1}, {1, 1}, {2, 3}}},
      {"paper", "cites", "paper", {{0, 1}, {1, 2}, {2, 0}, {3, 0}}},
      {"paper", "has_topic", "field", {{0, 0}, {1, 1}, {2, 1}, {3, 0}}},
  };
  return *relations;
}
const std::map<std::string, int64_t> kOffsets = {
    {"author", 0}, {"field", 3}, {"paper", 5}};
// paper___cites___paper/edge-feat.csv, row i for input edge i.
const std::vector<std::vector<float>> kCitesFeatures = {
    {0.5f, 1}, {1.5f, 2}, {2.5f, 3}, {3.5f, -4}};
const std::vector<float> kPaperFeatures = {1, 2, 3, 4,  5,  6,
                                           7, 8, 9, 10, 11, 12.25f};

std::string EdgeText(const Pairs& edges) {
  std::string text;
  for (const auto& [s, d] : edges) absl::StrAppend(&text, s, ",", d, "\n");
  return text;
}

// Relation r's CSR entries (u, v), u -> v in global IDs, in CSR order.
Pairs EntriesOf(const Dataset& d, int r) {
  Pairs entries;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    for (int64_t e = d.indptr[v]; e < d.indptr[v + 1]; ++e) {
      if (d.edge_types[e] == r) entries.emplace_back(d.indices[e], v);
    }
  }
  return entries;
}

Pairs Global(const InputRelation& r, bool reversed) {
  Pairs out;
  for (const auto& [s, t] : r.edges) {
    const int64_t u = kOffsets.at(r.src) + s;
    const int64_t v = kOffsets.at(r.dst) + t;
    out.emplace_back(reversed ? v : u, reversed ? u : v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class OgbHeteroImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Progress::SetQuietByDefault(true);
    in_ = tmp_.Sub("in");
    WriteText(raw("num-node-dict.csv"), "author,field,paper\n3,2,4\n");
    WriteGzip(
        raw("triplet-type-list.csv.gz"),
        "author,writes,paper\npaper,cites,paper\npaper,has_topic,field\n");
    for (const InputRelation& r : Relations()) {
      const std::string dir = raw(absl::StrCat("relations/", r.src, "___",
                                               r.relation, "___", r.dst, "/"));
      // One relation gzipped, the others plain.
      if (r.relation == "has_topic") {
        WriteGzip(dir + "edge.csv.gz", EdgeText(r.edges));
        WriteGzip(dir + "num-edge-list.csv.gz",
                  absl::StrCat(r.edges.size(), "\n"));
      } else {
        WriteText(dir + "edge.csv", EdgeText(r.edges));
        WriteText(dir + "num-edge-list.csv",
                  absl::StrCat(r.edges.size(), "\n"));
      }
    }
    WriteText(raw("relations/author___writes___paper/edge_reltype.csv"),
              "0\n0\n0\n0\n");
    WriteText(raw("relations/paper___cites___paper/edge-feat.csv"),
              "0.5,1\n1.5,2\n2.5,3\n3.5,-4\n");
    WriteGzip(raw("node-feat/paper/node-feat.csv.gz"),
              "1,2,3\n4,5,6\n7,8,9\n10,11,12.25\n");
    WriteText(raw("node-label/paper/node-label.csv"), "0\n2\n1\n1\n");
    WriteText(raw("node_year/paper/node_year.csv"), "2010\n2011\n2012\n2019\n");
    WriteText(in_ + "/split/time/paper/train.csv", "1\n0\n");
    WriteText(in_ + "/split/time/paper/valid.csv", "2\n");
    WriteGzip(in_ + "/split/time/paper/test.csv.gz", "3\n");
  }

  std::string raw(const std::string& path) const {
    return absl::StrCat(in_, "/raw/", path);
  }

  OgbHeteroImportOptions Options() const {
    OgbHeteroImportOptions options;
    options.input_dir = in_;
    return options;
  }

  // Runs an import expected to fail; checks the message holds every part
  // and that nothing was left beside the input.
  void ExpectFailure(std::initializer_list<std::string> parts,
                     const OgbHeteroImportOptions* options = nullptr) {
    absl::StatusOr<BuildSummary> s =
        ImportOgbHetero(options ? *options : Options(), tmp_.Sub("out"));
    ASSERT_FALSE(s.ok());
    for (const std::string& part : parts) {
      EXPECT_THAT(std::string(s.status().message()), HasSubstr(part));
    }
    EXPECT_THAT(testing::Entries(tmp_.path()), ElementsAre("in"));
  }

  testing::TempDir tmp_;
  std::string in_;
};

TEST_F(OgbHeteroImporterTest, ImportsTinyMag) {
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.input_edges, 12);
  EXPECT_EQ(s.duplicate_edges_dropped, 0);
  EXPECT_EQ(s.self_loops_dropped, 0);
  EXPECT_EQ(s.nonfinite_features, 0);
  const std::string notes = ::testing::PrintToString(s.notes);
  EXPECT_THAT(notes, HasSubstr("raw/node_year"));
  EXPECT_THAT(notes, HasSubstr("edge_reltype.csv is constant"));

  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  const DatasetManifest& m = d.manifest;
  EXPECT_EQ(m.name, "in");
  ASSERT_EQ(m.node_types.size(), 3u);
  EXPECT_EQ(m.node_types[0].name, "author");
  EXPECT_EQ(m.node_types[0].count, 3);
  EXPECT_EQ(m.node_types[0].feature_dim, 0);
  EXPECT_EQ(m.node_types[1].name, "field");
  EXPECT_EQ(m.node_types[1].count, 2);
  EXPECT_EQ(m.node_types[1].feature_dim, 0);
  EXPECT_EQ(m.node_types[2].name, "paper");
  EXPECT_EQ(m.node_types[2].count, 4);
  EXPECT_EQ(m.node_types[2].feature_dim, 3);
  EXPECT_EQ(m.num_nodes, 9);
  EXPECT_EQ(m.NodeTypeOffset(2), 5);
  EXPECT_EQ(m.target_types, std::vector<std::string>{"paper"});
  ASSERT_EQ(m.edge_types.size(), 3u);

  // Every input edge once, under its relation, u -> v in row v.
  int64_t total = 0;
  for (const InputRelation& r : Relations()) {
    SCOPED_TRACE(r.relation);
    const int index = m.FindEdgeType(r.src, r.relation, r.dst);
    ASSERT_GE(index, 0);
    EXPECT_EQ(m.edge_types[index].count, 4);
    Pairs entries = EntriesOf(d, index);
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, Global(r, /*reversed=*/false));
    total += m.edge_types[index].count;
  }
  EXPECT_EQ(total, d.num_edges());

  // The relation's edge features follow its entries in CSR order.
  const int cites = m.FindEdgeType("paper", "cites", "paper");
  EXPECT_EQ(m.edge_types[cites].feature_dim, 2);
  std::vector<float> expected_edge_features;
  for (const auto& [u, v] : EntriesOf(d, cites)) {
    const Pairs& edges = Relations()[1].edges;
    const auto it =
        std::find(edges.begin(), edges.end(), std::make_pair(u - 5, v - 5));
    ASSERT_NE(it, edges.end());
    const auto& row = kCitesFeatures[it - edges.begin()];
    expected_edge_features.insert(expected_edge_features.end(), row.begin(),
                                  row.end());
  }
  ASSERT_EQ(d.edge_features.size(), 3u);
  EXPECT_EQ(d.edge_features[cites], expected_edge_features);
  const int writes = m.FindEdgeType("author", "writes", "paper");
  EXPECT_EQ(m.edge_types[writes].feature_dim, 0);
  EXPECT_TRUE(d.edge_features[writes].empty());

  ASSERT_EQ(d.type_features.size(), 3u);
  EXPECT_TRUE(d.type_features[0].empty());
  EXPECT_TRUE(d.type_features[1].empty());
  EXPECT_EQ(d.type_features[2], kPaperFeatures);

  EXPECT_EQ(d.labels, (std::vector<int64_t>{-1, -1, -1, -1, -1, 0, 2, 1, 1}));
  EXPECT_EQ(m.num_classes, 3);
  EXPECT_EQ(d.splits["train"], (std::vector<NodeId>{5, 6}));
  EXPECT_EQ(d.splits["valid"], (std::vector<NodeId>{7}));
  EXPECT_EQ(d.splits["test"], (std::vector<NodeId>{8}));
}

TEST_F(OgbHeteroImporterTest, AddReverseAddsRevRelations) {
  OgbHeteroImportOptions options = Options();
  options.add_reverse = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  const DatasetManifest& m = d.manifest;
  EXPECT_EQ(m.edge_types.size(), 6u);
  int64_t total = 0;
  for (const InputRelation& r : Relations()) {
    SCOPED_TRACE(r.relation);
    const int forward = m.FindEdgeType(r.src, r.relation, r.dst);
    const int reverse = m.FindEdgeType(r.dst, "rev_" + r.relation, r.src);
    ASSERT_GE(forward, 0);
    ASSERT_GE(reverse, 0);
    EXPECT_EQ(m.edge_types[reverse].count, m.edge_types[forward].count);
    Pairs entries = EntriesOf(d, reverse);
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, Global(r, /*reversed=*/true));
    total += m.edge_types[forward].count + m.edge_types[reverse].count;
  }
  EXPECT_EQ(total, d.num_edges());
  const int rev_cites = m.FindEdgeType("paper", "rev_cites", "paper");
  EXPECT_EQ(m.edge_types[rev_cites].feature_dim, 2);
}

TEST_F(OgbHeteroImporterTest, SelfLoopsDroppedUnlessKept) {
  const std::string dir = raw("relations/paper___cites___paper/");
  WriteText(dir + "edge.csv", "0,1\n1,1\n2,0\n3,0\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(Options(), tmp_.Sub("out")));
  EXPECT_EQ(s.self_loops_dropped, 1);
  const int cites = s.manifest.FindEdgeType("paper", "cites", "paper");
  EXPECT_EQ(s.manifest.edge_types[cites].count, 3);
  OgbHeteroImportOptions options = Options();
  options.keep_self_loops = true;
  options.name = "mag";
  ASSERT_OK_AND_ASSIGN(s, ImportOgbHetero(options, tmp_.Sub("kept")));
  EXPECT_EQ(s.self_loops_dropped, 0);
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("kept")));
  EXPECT_EQ(d.manifest.name, "mag");
  EXPECT_THAT(EntriesOf(d, cites),
              ::testing::Contains(std::make_pair(int64_t{6}, int64_t{6})));
}

TEST_F(OgbHeteroImporterTest, KeepsAVaryingReltypeAsAnEdgeFeature) {
  WriteText(raw("relations/author___writes___paper/edge_reltype.csv"),
            "3\n3\n4\n3\n");
  WriteText(raw("relations/paper___cites___paper/edge_reltype.csv"),
            "1\n2\n1\n1\n");
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(Options(), tmp_.Sub("out")));
  EXPECT_THAT(::testing::PrintToString(s.notes),
              HasSubstr("edge_reltype.csv varies"));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  const int writes = d.manifest.FindEdgeType("author", "writes", "paper");
  EXPECT_EQ(d.manifest.edge_types[writes].feature_dim, 1);
  // Entries by destination paper: 0 <- 0; 1 <- 0, 1 (edge 1, 2); 3 <- 2.
  EXPECT_EQ(d.edge_features[writes], (std::vector<float>{3, 3, 4, 3}));
  // After edge-feat.csv's columns.
  const int cites = d.manifest.FindEdgeType("paper", "cites", "paper");
  EXPECT_EQ(d.manifest.edge_types[cites].feature_dim, 3);
  // Paper 0 <- 2 (edge 2), 3 (edge 3); 1 <- 0 (edge 0); 2 <- 1 (edge 1).
  EXPECT_EQ(
      d.edge_features[cites],
      (std::vector<float>{2.5f, 3, 1, 3.5f, -4, 1, 0.5f, 1, 1, 1.5f, 2, 2}));
}

TEST_F(OgbHeteroImporterTest, NonfiniteFeaturesFailUnlessAllowed) {
  WriteGzip(raw("node-feat/paper/node-feat.csv.gz"),
            "1,2,3\n4,nan,6\n7,8,9\n10,11,12\n");
  ExpectFailure({"node-feat.csv.gz:2", "not finite"});
  OgbHeteroImportOptions options = Options();
  options.allow_nonfinite = true;
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(options, tmp_.Sub("out")));
  EXPECT_EQ(s.nonfinite_features, 1);
}

TEST_F(OgbHeteroImporterTest, SplitNameChoosesAmongSeveral) {
  WriteText(in_ + "/split/random/paper/train.csv", "3\n");
  WriteText(in_ + "/split/random/paper/valid.csv", "1\n");
  WriteText(in_ + "/split/random/paper/test.csv", "0\n2\n");
  ExpectFailure({"2 split directories", "random, time"});
  OgbHeteroImportOptions options = Options();
  options.split = "random";
  ASSERT_OK(ImportOgbHetero(options, tmp_.Sub("out")).status());
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  EXPECT_EQ(d.splits["test"], (std::vector<NodeId>{5, 7}));
}

// --split random:N,M over the papers' labels (0, 2, 1, 1) replaces split/,
// which may be absent: classes 0 and 2 give their one paper to train, class
// 1 one to train and one to test.
TEST_F(OgbHeteroImporterTest, RandomPerClassSplitWithoutSplitFolder) {
  std::filesystem::remove_all(in_ + "/split");
  OgbHeteroImportOptions options = Options();
  options.class_split = ClassSplitOptions{1, 0, 6};
  ASSERT_OK_AND_ASSIGN(BuildSummary s,
                       ImportOgbHetero(options, tmp_.Sub("out")));
  ASSERT_OK_AND_ASSIGN(Dataset d, LoadDataset(tmp_.Sub("out")));
  const int64_t papers = d.manifest.NodeTypeOffset(2);
  ASSERT_EQ(d.splits["train"].size(), 3u);
  EXPECT_TRUE(d.splits["valid"].empty());
  ASSERT_EQ(d.splits["test"].size(), 1u);
  for (const auto& [name, nodes] : d.splits) {
    for (NodeId v : nodes) EXPECT_GE(v, papers) << name;
  }
  EXPECT_EQ(d.labels[d.splits["test"][0]], 1);
  EXPECT_THAT(d.manifest.source, HasSubstr("(split random:1,0 seed 6)"));
  EXPECT_THAT(s.notes, ::testing::Contains(HasSubstr("(3 classes)")));
}

TEST_F(OgbHeteroImporterTest, FailsOnAnUnknownTypeInARelationName) {
  WriteText(raw("relations/paper___cites___venue/edge.csv"), "0,0\n");
  WriteText(raw("relations/paper___cites___venue/num-edge-list.csv"), "1\n");
  ExpectFailure({"relations/paper___cites___venue", "node type venue"});
}

TEST_F(OgbHeteroImporterTest, FailsOnADirectoryNameNotATriple) {
  WriteText(raw("relations/paper_cites_paper/edge.csv"), "0,0\n");
  ExpectFailure({"relations/paper_cites_paper", "not of the form"});
}

TEST_F(OgbHeteroImporterTest, FailsOnAnEdgeBeyondItsTypesCount) {
  WriteText(raw("relations/author___writes___paper/edge.csv"),
            "0,0\n0,4\n1,1\n2,3\n");
  ExpectFailure({"author___writes___paper/edge.csv:2", "destination ID 4",
                 "[0, 4) of node type paper"});
}

TEST_F(OgbHeteroImporterTest, FailsOnAFeatureWidthMismatch) {
  WriteGzip(raw("node-feat/paper/node-feat.csv.gz"),
            "1,2,3\n4,5,6\n7,8\n10,11,12\n");
  ExpectFailure({"node-feat.csv.gz:3", "expected 3 feature columns"});
}

TEST_F(OgbHeteroImporterTest, FailsOnAnEdgeFeatureWidthMismatch) {
  WriteText(raw("relations/paper___cites___paper/edge-feat.csv"),
            "0.5,1\n1.5,2\n2.5\n3.5,-4\n");
  ExpectFailure({"edge-feat.csv:3", "expected 2 feature columns"});
}

TEST_F(OgbHeteroImporterTest, FailsOnAListedRelationWithoutDirectory) {
  WriteGzip(raw("triplet-type-list.csv.gz"),
            "author,writes,paper\nauthor,affiliated_with,field\n");
  ExpectFailure({"triplet-type-list.csv.gz:2",
                 "relation author___affiliated_with___field listed in "
                 "triplet-type-list.csv has no edge file"});
}

TEST_F(OgbHeteroImporterTest, FailsOnASplitOfATypeWithoutLabels) {
  WriteText(in_ + "/split/time/author/train.csv", "0\n");
  WriteText(in_ + "/split/time/author/valid.csv", "1\n");
  WriteText(in_ + "/split/time/author/test.csv", "2\n");
  ExpectFailure({"split/time/author",
                 "a split of nodes that are not of the target type"});
}

TEST_F(OgbHeteroImporterTest, FailsWhenNumEdgeListDisagrees) {
  WriteGzip(raw("relations/paper___has_topic___field/num-edge-list.csv.gz"),
            "5\n");
  ExpectFailure({"paper___has_topic___field/edge.csv.gz: has 4 edges",
                 "num-edge-list.csv.gz says 5"});
}

TEST_F(OgbHeteroImporterTest, FailsOnALabelCountMismatch) {
  WriteText(raw("node-label/paper/node-label.csv"), "0\n2\n1\n");
  ExpectFailure({"node-label/paper/node-label.csv", "node type paper"});
}

TEST_F(OgbHeteroImporterTest, FailsWhenTheOutputExists) {
  WriteText(tmp_.Sub("out/keep"), "x");
  absl::StatusOr<BuildSummary> s = ImportOgbHetero(Options(), tmp_.Sub("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("already exists"));
}

}  // namespace
}  // namespace shardgnn
