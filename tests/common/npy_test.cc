#include "common/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

TEST(NpyTest, RoundTripsFloatMatrix) {
  testing::TempDir dir;
  std::vector<float> data = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  ASSERT_OK(WriteNpy<float>(dir.Sub("a.npy"), {2, 3}, data));
  ASSERT_OK_AND_ASSIGN(auto array, ReadNpy<float>(dir.Sub("a.npy"), 2));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.data, data);
}

TEST(NpyTest, HeaderIsNumpyCompatible) {
  testing::TempDir dir;
  ASSERT_OK(WriteNpy<int64_t>(dir.Sub("b.npy"), {3}, {7, 8, 9}));
  std::ifstream in(dir.Sub("b.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 64u + 24u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_NE(bytes.find("'descr': '<i8'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': (3,)"), std::string::npos);
  // numpy aligns the data start to 64 bytes.
  ASSERT_OK_AND_ASSIGN(auto header, ReadNpyHeader(dir.Sub("b.npy")));
  EXPECT_EQ(header.data_offset % 64, 0u);
  EXPECT_EQ(bytes.size(), header.data_offset + 24);
}

TEST(NpyTest, RejectsWrongDtype) {
  testing::TempDir dir;
  ASSERT_OK(WriteNpy<int64_t>(dir.Sub("c.npy"), {2}, {1, 2}));
  auto result = ReadNpy<float>(dir.Sub("c.npy"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("dtype"), absl::string_view::npos);
}

TEST(NpyTest, RejectsTruncatedFile) {
  testing::TempDir dir;
  ASSERT_OK(
      WriteNpy<float>(dir.Sub("d.npy"), {100}, std::vector<float>(100, 1.0f)));
  std::filesystem::resize_file(dir.Sub("d.npy"), 200);
  auto result = ReadNpy<float>(dir.Sub("d.npy"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("truncated"),
            absl::string_view::npos);
}

TEST(NpyTest, RejectsGarbage) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("e.npy")) << "this is not numpy";
  EXPECT_FALSE(ReadNpy<float>(dir.Sub("e.npy")).ok());
  EXPECT_EQ(ReadNpy<float>(dir.Sub("missing.npy")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(NpyTest, StreamingWriterChecksCount) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(
      auto writer, NpyWriter::Create(dir.Sub("f.npy"), NpyDtype::kInt32, {4}));
  int32_t values[3] = {1, 2, 3};
  ASSERT_OK(writer->Append(values, 3));
  EXPECT_FALSE(writer->Close().ok());  // One element short.
  ASSERT_OK_AND_ASSIGN(
      auto writer2, NpyWriter::Create(dir.Sub("g.npy"), NpyDtype::kInt32, {2}));
  EXPECT_FALSE(writer2->Append(values, 3).ok());  // Too many.
}

}  // namespace
}  // namespace shardgnn
