#include "common/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/status.h"

namespace shardgnn {

absl::StatusOr<std::string> ReadAuthTokenFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "--auth-token-file ", path, ": cannot read: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": not a regular file"));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--auth-token-file ", path, ": group or others may access it (mode ",
        absl::StrFormat("%03o", st.st_mode & 0777),
        "); a secret must be readable by its owner only: chmod 600 ", path));
  }
  if (st.st_size > static_cast<off_t>(kMaxAuthTokenChars + 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": longer than ",
                     kMaxAuthTokenChars, " characters"));
  }
  ASSIGN_OR_RETURN(std::string token, ReadFileToString(path));
  if (absl::EndsWith(token, "\n")) token.pop_back();
  if (absl::EndsWith(token, "\r")) token.pop_back();
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": the token is empty"));
  }
  for (unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--auth-token-file ", path,
          ": the token holds a space, a control character or non-ASCII "
          "(one line of printable ASCII is expected)"));
    }
  }
  if (token.size() < kMinAuthTokenChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth-token-file ", path, ": the token has ", token.size(),
        " characters, fewer than ", kMinAuthTokenChars,
        " (make one with: openssl rand -hex 32)"));
  }
  if (token.size() > kMaxAuthTokenChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": longer than ",
                     kMaxAuthTokenChars, " characters"));
  }
  return token;
}

absl::StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t r = getrandom(out.data() + done, n - done, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return absl::InternalError(
          absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    done += static_cast<size_t>(r);
  }
  return out;
}

absl::StatusOr<std::string> NewAuthToken() {
  ASSIGN_OR_RETURN(std::string bytes, RandomBytes(32));
  return absl::BytesToHexString(bytes);
}

absl::Status WriteAuthTokenFile(const std::string& path,
                                absl::string_view token) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    std::string message =
        absl::StrCat(path, ": cannot create the token file: ", strerror(err));
    return err == EEXIST ? absl::AlreadyExistsError(message)
                         : absl::PermissionDeniedError(message);
  }
  const std::string text = absl::StrCat(token, "\n");
  size_t done = 0;
  while (done < text.size()) {
    ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      close(fd);
      unlink(path.c_str());
      return absl::InternalError(
          absl::StrCat(path, ": cannot write the token: ", strerror(err)));
    }
    done += static_cast<size_t>(w);
  }
  if (close(fd) != 0) {
    unlink(path.c_str());
    return absl::InternalError(
        absl::StrCat(path, ": cannot write the token: ", strerror(errno)));
  }
  return absl::OkStatus();
}

std::string HmacSha256(absl::string_view key, absl::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac,
       &len);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string Sha256(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char da[SHA256_DIGEST_LENGTH];
  unsigned char db[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db);
  return CRYPTO_memcmp(da, db, sizeof(da)) == 0;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view flag) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::NotFoundError(
        absl::StrCat(flag, " ", path, ": ", text.status().message()));
  }
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return text;
}

}  // namespace shardgnn
