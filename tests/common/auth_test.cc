#include "common/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;

class AuthTokenFileTest : public ::testing::Test {
 protected:
  // Writes `text` to a file of `mode` and returns its path.
  std::string Write(const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_.Sub("token");
    std::ofstream(path, std::ios::trunc) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(AuthTokenFileTest, StripsOneTrailingNewline) {
  ASSERT_OK_AND_ASSIGN(std::string token,
                       ReadAuthTokenFile(Write("0123456789abcdef-XYZ\n")));
  EXPECT_EQ(token, "0123456789abcdef-XYZ");
  ASSERT_OK_AND_ASSIGN(token,
                       ReadAuthTokenFile(Write("0123456789abcdefXY\r\n")));
  EXPECT_EQ(token, "0123456789abcdefXY");
}

TEST_F(AuthTokenFileTest, RefusesAFileOthersMayRead) {
  auto token = ReadAuthTokenFile(Write("0123456789abcdef0123", 0644));
  EXPECT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(token.status().message(), HasSubstr("chmod 600"));
  EXPECT_THAT(token.status().message(), HasSubstr("644"));
  EXPECT_EQ(
      ReadAuthTokenFile(Write("0123456789abcdef0123", 0640)).status().code(),
      absl::StatusCode::kPermissionDenied);
  EXPECT_OK(ReadAuthTokenFile(Write("0123456789abcdef0123", 0400)).status());
}

TEST_F(AuthTokenFileTest, RefusesEmptyShortAndUnprintableTokens) {
  for (const char* text : {"", "\n", "short-token\n", "0123456789 abcdef0123",
                           "0123456789abcdef\n0123", "0123456789abcdef\t"}) {
    auto token = ReadAuthTokenFile(Write(text));
    EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument)
        << "'" << text << "'";
    EXPECT_THAT(token.status().message(), HasSubstr(dir_.Sub("token")));
  }
  EXPECT_THAT(ReadAuthTokenFile(Write("short\n")).status().message(),
              HasSubstr("fewer than 16"));
  EXPECT_EQ(ReadAuthTokenFile(dir_.Sub("missing")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(AuthTokenFileTest, NewTokenWrittenPrivatelyReadsBack) {
  ASSERT_OK_AND_ASSIGN(std::string a, NewAuthToken());
  ASSERT_OK_AND_ASSIGN(std::string b, NewAuthToken());
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  const std::string path = dir_.Sub("new-token");
  ASSERT_OK(WriteAuthTokenFile(path, a));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK_AND_ASSIGN(std::string read, ReadAuthTokenFile(path));
  EXPECT_EQ(read, a);
  EXPECT_EQ(WriteAuthTokenFile(path, b).code(),
            absl::StatusCode::kAlreadyExists);
}

// RFC 4231, test case 2.
TEST(HmacTest, MatchesRfc4231) {
  EXPECT_EQ(absl::BytesToHexString(
                HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abd"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(RandomBytesTest, DiffersBetweenCalls) {
  ASSERT_OK_AND_ASSIGN(std::string a, RandomBytes(32));
  ASSERT_OK_AND_ASSIGN(std::string b, RandomBytes(32));
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace shardgnn
