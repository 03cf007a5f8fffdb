#include "graphstore/internal/wire.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardgnn::wire {
namespace {

TEST(WireTest, ViewOrCopyViewsAlignedBytesInPlace) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f};
  std::string bytes;
  Pack<float>(values, &bytes);
  std::vector<float> scratch;
  absl::Span<const float> view;
  ASSERT_TRUE(ViewOrCopy(View(bytes), "gradients", &scratch, &view).ok());
  EXPECT_EQ(std::vector<float>(view.begin(), view.end()), values);
  EXPECT_EQ(static_cast<const void*>(view.data()),
            static_cast<const void*>(bytes.data()));
  EXPECT_TRUE(scratch.empty());
}

TEST(WireTest, ViewOrCopyCopiesMisalignedBytes) {
  const std::vector<int64_t> values = {7, -1, int64_t{1} << 40};
  std::string packed;
  Pack<int64_t>(values, &packed);
  std::string shifted = "x" + packed;  // One byte off any 8-byte boundary.
  const absl::string_view bytes(shifted.data() + 1, packed.size());
  ASSERT_NE(reinterpret_cast<uintptr_t>(bytes.data()) % alignof(int64_t), 0u);
  std::vector<int64_t> scratch;
  absl::Span<const int64_t> view;
  ASSERT_TRUE(ViewOrCopy(bytes, "node_ids", &scratch, &view).ok());
  EXPECT_EQ(std::vector<int64_t>(view.begin(), view.end()), values);
  EXPECT_EQ(view.data(), scratch.data());
}

TEST(WireTest, ViewOrCopyRefusesPartialValues) {
  std::vector<float> scratch;
  absl::Span<const float> view;
  absl::Status s =
      ViewOrCopy(absl::string_view("abcde"), "gradients", &scratch, &view);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gradients has 5 bytes"), absl::string_view::npos)
      << s;
}

}  // namespace
}  // namespace shardgnn::wire
