#include "common/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

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

TEST(NpyTest, ReadsFloat64AndBoolAsNumpyWritesThem) {
  testing::TempDir dir;
  // The bytes numpy 1.x writes for np.save(f, np.array([[0.5, -2.0]])) and
  // np.save(f, np.array([True, False, True])), header and all.
  auto write = [&](const std::string& name, const std::string& dict,
                   const std::string& data) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    std::ofstream(dir.Sub(name), std::ios::binary) << bytes << header << data;
  };
  const double values[2] = {0.5, -2.0};
  write("f.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }",
        std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  write("b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
        std::string("\x01\x00\x01", 3));
  ASSERT_OK_AND_ASSIGN(auto f, ReadNpy<double>(dir.Sub("f.npy"), 2));
  EXPECT_EQ(f.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.data, (std::vector<double>{0.5, -2.0}));
  ASSERT_OK_AND_ASSIGN(auto header, ReadNpyHeader(dir.Sub("b.npy")));
  EXPECT_EQ(header.dtype, NpyDtype::kBool);
  ASSERT_OK_AND_ASSIGN(auto b, ReadNpy<uint8_t>(dir.Sub("b.npy"), 1));
  EXPECT_EQ(b.data, (std::vector<uint8_t>{1, 0, 1}));
  // A bool array is not an integer one.
  EXPECT_FALSE(ReadNpy<int64_t>(dir.Sub("b.npy")).ok());
  EXPECT_FALSE(ReadNpy<float>(dir.Sub("f.npy")).ok());
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

// A hand-made .npy file: version `major`, the header text `dict` (its length
// field says `claimed_len` when given), then `data_bytes` zero bytes.
std::string WriteRawNpy(const std::string& path, int major,
                        const std::string& dict, int64_t claimed_len = -1,
                        size_t data_bytes = 64) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const uint64_t len =
      claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : dict.size();
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  out += dict;
  out.append(data_bytes, '\0');
  std::ofstream(path, std::ios::binary) << out;
  return path;
}

std::string Dict(const std::string& descr, const std::string& shape) {
  return "{'descr': '" + descr +
         "', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

// Runs `read` in a child process whose address space is limited to 1 GiB
// (without ASan, which needs more): an attempt to allocate what a header
// claims dies there (std::bad_alloc or std::length_error abort the child)
// instead of taking the machine's memory. True if the child returned
// normally and `read` said true.
bool ReadsCleanlyWithBoundedMemory(const std::function<bool()>& read) {
  pid_t pid = fork();
  if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__)
    rlimit limit{rlim_t{1} << 30, rlim_t{1} << 30};
    setrlimit(RLIMIT_AS, &limit);
#endif
    _exit(read() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// An error naming the file and saying `what`, returned (not thrown).
bool IsCleanError(const absl::Status& s, const std::string& path,
                  const std::string& what) {
  return s.code() == absl::StatusCode::kInvalidArgument &&
         s.message().find(path) != absl::string_view::npos &&
         s.message().find(what) != absl::string_view::npos;
}

TEST(NpyTest, HeaderClaimingFourGigabytesIsAnError) {
  testing::TempDir dir;
  const std::string path = WriteRawNpy(dir.Sub("huge_header.npy"), 2,
                                       Dict("<f4", "(4,)"), 0xffffffffLL);
  absl::Status s = ReadNpyHeader(path).status();
  EXPECT_TRUE(IsCleanError(s, path, "header")) << s;
  EXPECT_TRUE(ReadsCleanlyWithBoundedMemory([&] {
    return IsCleanError(ReadNpy<float>(path).status(), path, "header");
  }));
}

TEST(NpyTest, ShapeOfTwoToTheSixtyFirstIsAnError) {
  testing::TempDir dir;
  // 2^61 int64 values are 2^64 bytes: the byte count wraps to 0.
  const std::string path = WriteRawNpy(dir.Sub("huge_shape.npy"), 1,
                                       Dict("<i8", "(2305843009213693952,)"));
  absl::Status s = ReadNpyHeader(path).status();
  EXPECT_TRUE(IsCleanError(s, path, "shape")) << s;
  EXPECT_TRUE(ReadsCleanlyWithBoundedMemory([&] {
    return IsCleanError(ReadNpy<int64_t>(path).status(), path, "shape");
  }));
}

TEST(NpyTest, ShapeWhoseProductOverflowsIsAnError) {
  testing::TempDir dir;
  const std::string path = WriteRawNpy(
      dir.Sub("overflow.npy"), 1, Dict("<f4", "(4294967296, 4294967296, 16)"));
  absl::Status s = ReadNpyHeader(path).status();
  EXPECT_TRUE(IsCleanError(s, path, "shape")) << s;
  EXPECT_TRUE(ReadsCleanlyWithBoundedMemory([&] {
    return IsCleanError(ReadNpy<float>(path).status(), path, "shape");
  }));
}

TEST(NpyTest, ShapeLargerThanTheFileIsAnError) {
  testing::TempDir dir;
  // 2^30 floats (4 GiB) claimed, 64 bytes present.
  const std::string path =
      WriteRawNpy(dir.Sub("short.npy"), 1, Dict("<f4", "(1073741824,)"));
  EXPECT_TRUE(ReadsCleanlyWithBoundedMemory([&] {
    return IsCleanError(ReadNpy<float>(path).status(), path, "truncated");
  }));
}

}  // namespace
}  // namespace shardgnn
