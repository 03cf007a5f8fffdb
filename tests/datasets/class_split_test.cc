#include "datasets/class_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::StatusIs;

// Uneven classes: class 0 has 40 nodes, class 1 25, class 2 60, in an
// interleaved order, with every seventh node unlabeled.
std::vector<int64_t> UnevenLabels() {
  std::vector<int64_t> labels;
  std::map<int64_t, int> left = {{0, 40}, {1, 25}, {2, 60}};
  for (int64_t v = 0; !left.empty(); ++v) {
    if (v % 7 == 3) {
      labels.push_back(-1);
      continue;
    }
    auto it = left.begin();
    std::advance(it, v % left.size());
    labels.push_back(it->first);
    if (--it->second == 0) left.erase(it);
  }
  return labels;
}

std::map<int64_t, int64_t> PerClass(const std::vector<NodeId>& nodes,
                                    const std::vector<int64_t>& labels) {
  std::map<int64_t, int64_t> counts;
  for (NodeId v : nodes) ++counts[labels[v]];
  return counts;
}

ClassSplitOptions Options(int64_t n, int64_t m, uint64_t seed) {
  ClassSplitOptions options;
  options.train_per_class = n;
  options.valid_per_class = m;
  options.seed = seed;
  return options;
}

TEST(RandomClassSplitTest, ExactlyNTrainAndMValidPerClassTheRestTest) {
  const std::vector<int64_t> labels = UnevenLabels();
  ASSERT_OK_AND_ASSIGN(ClassSplit split,
                       RandomClassSplit(labels, Options(5, 7, 1)));
  using Counts = std::map<int64_t, int64_t>;
  EXPECT_EQ(PerClass(split.train, labels), (Counts{{0, 5}, {1, 5}, {2, 5}}));
  EXPECT_EQ(PerClass(split.valid, labels), (Counts{{0, 7}, {1, 7}, {2, 7}}));
  EXPECT_EQ(PerClass(split.test, labels), (Counts{{0, 28}, {1, 13}, {2, 48}}));
  EXPECT_EQ(split.classes, 3);
  EXPECT_THAT(split.small_classes, IsEmpty());
  EXPECT_EQ(SmallClassWarning(Options(5, 7, 1), split), "");
  // Sorted, disjoint, and together every labeled node.
  std::set<NodeId> all;
  for (const auto* list : {&split.train, &split.valid, &split.test}) {
    EXPECT_TRUE(std::is_sorted(list->begin(), list->end()));
    all.insert(list->begin(), list->end());
  }
  EXPECT_EQ(all.size(),
            split.train.size() + split.valid.size() + split.test.size());
  EXPECT_EQ(all.size(), 125u);
  for (NodeId v : all) EXPECT_GE(labels[v], 0) << v;
  EXPECT_EQ(DescribeClassSplit(Options(5, 7, 1), split),
            "split random:5,7 seed 1: 5 train and 7 valid nodes per class (3 "
            "classes), the other 89 labeled nodes test");
}

TEST(RandomClassSplitTest, SameSeedSameSplitOtherSeedOtherSplit) {
  const std::vector<int64_t> labels = UnevenLabels();
  ASSERT_OK_AND_ASSIGN(ClassSplit a,
                       RandomClassSplit(labels, Options(5, 7, 3)));
  ASSERT_OK_AND_ASSIGN(ClassSplit b,
                       RandomClassSplit(labels, Options(5, 7, 3)));
  ASSERT_OK_AND_ASSIGN(ClassSplit c,
                       RandomClassSplit(labels, Options(5, 7, 4)));
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(a.train, c.train);
  EXPECT_NE(a.valid, c.valid);
}

// A class's draw depends on the seed and its own nodes only: relabeling
// another class's nodes does not move it.
TEST(RandomClassSplitTest, ClassesAreDrawnIndependently) {
  std::vector<int64_t> labels = UnevenLabels();
  ASSERT_OK_AND_ASSIGN(ClassSplit before,
                       RandomClassSplit(labels, Options(5, 7, 2)));
  for (int64_t& label : labels) {
    if (label == 2) label = -1;
  }
  ASSERT_OK_AND_ASSIGN(ClassSplit after,
                       RandomClassSplit(labels, Options(5, 7, 2)));
  auto of_class_0 = [&](const std::vector<NodeId>& nodes) {
    std::vector<NodeId> out;
    for (NodeId v : nodes) {
      if (labels[v] == 0) out.push_back(v);
    }
    return out;
  };
  EXPECT_EQ(of_class_0(before.train), of_class_0(after.train));
  EXPECT_EQ(of_class_0(before.valid), of_class_0(after.valid));
}

// Fewer than N + M nodes: up to N train, the rest valid, none test.
TEST(RandomClassSplitTest, SmallClassesGetTrainFirstThenValidAndNoTest) {
  // Class 0: 10 nodes, class 1: 4, class 2: 1, class 3: 2 (of N=3, M=5).
  std::vector<int64_t> labels;
  for (int i = 0; i < 10; ++i) labels.push_back(0);
  for (int i = 0; i < 4; ++i) labels.push_back(1);
  labels.push_back(2);
  labels.push_back(-1);
  labels.push_back(3);
  labels.push_back(3);
  const ClassSplitOptions options = Options(3, 5, 0);
  ASSERT_OK_AND_ASSIGN(ClassSplit split, RandomClassSplit(labels, options));
  using Counts = std::map<int64_t, int64_t>;
  EXPECT_EQ(PerClass(split.train, labels),
            (Counts{{0, 3}, {1, 3}, {2, 1}, {3, 2}}));
  EXPECT_EQ(PerClass(split.valid, labels), (Counts{{0, 5}, {1, 1}}));
  EXPECT_EQ(PerClass(split.test, labels), (Counts{{0, 2}}));
  ASSERT_EQ(split.small_classes.size(), 3u);
  EXPECT_EQ(split.small_classes[0].label, 1);
  EXPECT_EQ(split.small_classes[0].nodes, 4);
  EXPECT_EQ(SmallClassWarning(options, split),
            "3 classes have fewer than 8 (3 + 5) labeled nodes: class 1 (4 "
            "nodes), class 2 (1 node), class 3 (2 nodes); each got up to 3 "
            "train, the rest valid (up to 5), none test");
}

TEST(RandomClassSplitTest, ManySmallClassesAreNamedUpToTen) {
  std::vector<int64_t> labels;
  for (int64_t c = 0; c < 13; ++c) labels.push_back(c);
  const ClassSplitOptions options = Options(1, 1, 0);
  ASSERT_OK_AND_ASSIGN(ClassSplit split, RandomClassSplit(labels, options));
  EXPECT_EQ(split.train.size(), 13u);
  EXPECT_THAT(SmallClassWarning(options, split),
              HasSubstr("class 9 (1 node) and 3 more;"));
}

TEST(RandomClassSplitTest, ZeroValidPerClassLeavesValidEmpty) {
  ASSERT_OK_AND_ASSIGN(ClassSplit split,
                       RandomClassSplit(UnevenLabels(), Options(2, 0, 0)));
  EXPECT_EQ(split.train.size(), 6u);
  EXPECT_THAT(split.valid, IsEmpty());
  EXPECT_EQ(split.test.size(), 119u);
}

TEST(RandomClassSplitTest, RefusesBadInput) {
  EXPECT_THAT(RandomClassSplit({-1, -1}, Options(1, 1, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no node is labeled")));
  EXPECT_THAT(RandomClassSplit({}, Options(1, 1, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no node is labeled")));
  EXPECT_THAT(RandomClassSplit({0, -2}, Options(1, 1, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 1 has label -2")));
  EXPECT_THAT(RandomClassSplit({0, 1}, Options(0, 1, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(RandomClassSplit({0, 1}, Options(1, -1, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(ParseClassSplitTest, ReadsRandomNM) {
  EXPECT_TRUE(IsClassSplitSpec("random:20,30"));
  EXPECT_FALSE(IsClassSplitSpec("0.1,0.1,0.8"));
  ASSERT_OK_AND_ASSIGN(ClassSplitOptions options,
                       ParseClassSplit("random:20,30"));
  EXPECT_EQ(options.train_per_class, 20);
  EXPECT_EQ(options.valid_per_class, 30);
  EXPECT_EQ(options.seed, 0u);
  ASSERT_OK_AND_ASSIGN(options, ParseClassSplit("random:1,0"));
  EXPECT_EQ(options.valid_per_class, 0);
  options.seed = 3;
  EXPECT_EQ(ClassSplitName(options), "random:1,0 seed 3");
}

TEST(ParseClassSplitTest, NamesWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"random:20", "M is missing"},
      {"random:-1,3", "N must be at least 1"},
      {"random:0,3", "N must be at least 1"},
      {"random:3,-1", "M must not be negative"},
      {"random:a,b", "'a' is not an integer"},
      {"random:2,x", "'x' is not an integer"},
      {"random:1,2,3", "too many numbers"},
      {"random:", "M is missing"},
      {"0.1,0.1,0.8", "does not start with random:"},
  };
  for (const auto& [spec, why] : cases) {
    absl::StatusOr<ClassSplitOptions> parsed = ParseClassSplit(spec);
    ASSERT_FALSE(parsed.ok()) << spec;
    const std::string message(parsed.status().message());
    EXPECT_THAT(message, HasSubstr("split '" + spec + "': " + why)) << spec;
    EXPECT_THAT(message, HasSubstr("expected random:N,M")) << spec;
  }
}

}  // namespace
}  // namespace shardgnn
