#include "common/line_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

std::vector<std::string> ReadAll(LineReader& reader) {
  std::vector<std::string> lines;
  absl::string_view line;
  while (reader.Next(&line)) lines.emplace_back(line);
  return lines;
}

TEST(LineReaderTest, ReadsPlainAndGzipAlike) {
  testing::TempDir dir;
  std::string text = "a,b\r\nc\n\nlast-without-newline";
  std::ofstream(dir.Sub("plain.txt")) << text;
  WriteGzip(dir.Sub("packed.gz"), text);
  for (const char* name : {"plain.txt", "packed.gz"}) {
    ASSERT_OK_AND_ASSIGN(auto reader, LineReader::Open(dir.Sub(name)));
    EXPECT_EQ(ReadAll(*reader), (std::vector<std::string>{
                                    "a,b", "c", "", "last-without-newline"}))
        << name;
    EXPECT_OK(reader->status());
    EXPECT_EQ(reader->line_number(), 4);
  }
}

TEST(LineReaderTest, LongInputAcrossBuffers) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 300000; ++i) text += std::to_string(i) + "\n";
  WriteGzip(dir.Sub("long.gz"), text);
  ASSERT_OK_AND_ASSIGN(auto reader, LineReader::Open(dir.Sub("long.gz")));
  auto lines = ReadAll(*reader);
  ASSERT_OK(reader->status());
  ASSERT_EQ(lines.size(), 300000u);
  EXPECT_EQ(lines[123456], "123456");
}

TEST(LineReaderTest, TruncatedGzipIsAnError) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 100000; ++i)
    text += std::to_string(i * 7919) + "," + std::to_string(i) + "\n";
  WriteGzip(dir.Sub("t.gz"), text);
  auto size = std::filesystem::file_size(dir.Sub("t.gz"));
  std::filesystem::resize_file(dir.Sub("t.gz"), size / 2);
  ASSERT_OK_AND_ASSIGN(auto reader, LineReader::Open(dir.Sub("t.gz")));
  ReadAll(*reader);
  EXPECT_FALSE(reader->status().ok());
  EXPECT_NE(reader->status().message().find("t.gz"), absl::string_view::npos);
}

TEST(LineReaderTest, MissingFile) {
  EXPECT_EQ(LineReader::Open("/nonexistent/x.csv").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(LineReaderTest, ParsesNumbersStrictly) {
  int64_t i;
  float f;
  EXPECT_TRUE(ParseInt64(" 42 ", &i));
  EXPECT_EQ(i, 42);
  EXPECT_TRUE(ParseInt64("-7", &i));
  EXPECT_FALSE(ParseInt64("4x", &i));
  EXPECT_FALSE(ParseInt64("", &i));
  EXPECT_TRUE(ParseFloat("1.5e-3", &f));
  EXPECT_FLOAT_EQ(f, 1.5e-3f);
  EXPECT_FALSE(ParseFloat("nan?", &f));
}

}  // namespace
}  // namespace shardgnn
