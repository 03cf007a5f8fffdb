// gRPC over TLS (issue 12): certificates made at test time with the openssl
// command-line tool (a CA, a server certificate for 127.0.0.1, client
// certificates), real servers on loopback ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "graphstore/internal/tls_check.h"
#include "graphstore/server.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn {
namespace {

using ::testing::HasSubstr;
using testing::MakeTestGraph;
using testing::TempDir;
using testing::TestGraph;
using testing::WriteTestShards;

constexpr int64_t kNodes = 100;
constexpr int64_t kDim = 4;

// Runs a shell command quietly; true on exit status 0.
bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A certificate authority and certificates it signs, as PEM files in `dir`.
class TestPki {
 public:
  TestPki(std::string dir, std::string name)
      : dir_(std::move(dir)), name_(std::move(name)) {}

  // Makes the CA (NAME-ca.pem, NAME-ca.key).
  bool MakeCa() {
    return Sh(absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
        "-nodes -days 2 -subj '/CN=shardgnn test CA ",
        name_, "' -keyout ", Path("ca.key"), " -out ", Path("ca.pem")));
  }
  // Makes NAME-LEAF.pem and NAME-LEAF.key signed by the CA, with `san`
  // ("IP:127.0.0.1") as its subjectAltName if not empty.
  bool MakeLeaf(const std::string& leaf, const std::string& san) {
    const std::string ext = Path(leaf + ".ext");
    std::ofstream(ext) << (san.empty() ? "" : "subjectAltName=" + san) << "\n";
    return Sh(absl::StrCat("openssl req -newkey ec -pkeyopt "
                           "ec_paramgen_curve:prime256v1 -nodes -subj '/CN=",
                           leaf, "' -keyout ", Path(leaf + ".key"), " -out ",
                           Path(leaf + ".csr"))) &&
           Sh(absl::StrCat("openssl x509 -req -days 2 -in ",
                           Path(leaf + ".csr"), " -CA ", Path("ca.pem"),
                           " -CAkey ", Path("ca.key"),
                           " -CAcreateserial -extfile ", ext, " -out ",
                           Path(leaf + ".pem")));
  }
  std::string Pem(const std::string& file) const {
    auto text = ReadFileToString(Path(file));
    return text.ok() ? *text : "";
  }

 private:
  std::string Path(const std::string& file) const {
    return JoinPath(dir_, absl::StrCat(name_, "-", file));
  }
  std::string dir_;
  std::string name_;
};

class ServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Sh("openssl version")) GTEST_SKIP() << "no openssl command";
    ASSERT_TRUE(pki_.MakeCa());
    ASSERT_TRUE(pki_.MakeLeaf("server", "IP:127.0.0.1"));
    ASSERT_TRUE(pki_.MakeLeaf("trainer", ""));
    ASSERT_TRUE(other_.MakeCa());
    ASSERT_TRUE(other_.MakeLeaf("trainer", ""));
    graph_ = MakeTestGraph(kNodes, kDim);
    ASSERT_OK(WriteTestShards(graph_, 1, dir_.Sub("shards")).status());
    ShardStoreOptions options;
    options.path = dir_.Sub("shards/part-0");
    options.in_memory = true;
    ASSERT_OK_AND_ASSIGN(store_, ShardStore::Open(options));
  }
  // A TLS server; with `mutual`, clients need a certificate from pki_'s CA.
  void StartServer(bool mutual, const std::string& token = "") {
    GraphStoreServerOptions options;
    options.tls_cert_pem = pki_.Pem("server.pem");
    options.tls_key_pem = pki_.Pem("server.key");
    if (mutual) options.tls_client_ca_pem = pki_.Pem("ca.pem");
    options.auth_token = token;
    ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
    EXPECT_TRUE(server_->tls());
  }
  // Info() from a client trusting `ca` (empty: plaintext) and presenting
  // `pki`'s "trainer" certificate if `pki` is given.
  absl::Status InfoFrom(const TestPki* ca, const TestPki* pki,
                        const std::string& token = "") {
    GraphStoreClientOptions options;
    options.max_attempts = 1;
    options.call_timeout = absl::Seconds(3);
    options.auth_token = token;
    if (ca != nullptr) options.tls_ca_pem = ca->Pem("ca.pem");
    if (pki != nullptr) {
      options.tls_cert_pem = pki->Pem("trainer.pem");
      options.tls_key_pem = pki->Pem("trainer.key");
    }
    ASSIGN_OR_RETURN(auto client,
                     GraphStoreClient::Connect(server_->address(), options));
    ASSIGN_OR_RETURN(ServerInfo info, client->Info());
    EXPECT_EQ(info.feature_port, 0);  // Off under TLS.
    EXPECT_FALSE(client->UsesFeaturePort());
    std::vector<NodeId> ids(20);
    std::iota(ids.begin(), ids.end(), 0);
    std::vector<float> rows(ids.size() * kDim);
    RETURN_IF_ERROR(client->GetFeatures(ids, kDim, rows.data()));
    EXPECT_EQ(std::memcmp(rows.data(), graph_.features.data(),
                          rows.size() * sizeof(float)),
              0);
    return absl::OkStatus();
  }

  TempDir dir_;
  TestPki pki_{dir_.path(), "main"};
  TestPki other_{dir_.path(), "other"};
  TestGraph graph_;
  std::shared_ptr<const ShardStore> store_;
  std::unique_ptr<GraphStoreServer> server_;
};

TEST_F(ServerTlsTest, ClientTrustingTheCaIsServedAndTheFeaturePortIsOff) {
  StartServer(/*mutual=*/false);
  EXPECT_EQ(server_->feature_port(), 0);
  ASSERT_OK(InfoFrom(&pki_, nullptr));
  // A client certificate is not asked for, and not in the way.
  ASSERT_OK(InfoFrom(&pki_, &pki_));
}

TEST_F(ServerTlsTest, ClientTrustingAnotherCaFailsClearly) {
  StartServer(/*mutual=*/false);
  absl::Status s = InfoFrom(&other_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr(server_->address()));
  EXPECT_THAT(s.message(), HasSubstr("--tls-ca")) << s;
  // Nor does a plaintext client get anything.
  s = InfoFrom(nullptr, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(server_->address()));
}

TEST_F(ServerTlsTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  StartServer(/*mutual=*/true);
  ASSERT_OK(InfoFrom(&pki_, &pki_));
  absl::Status s = InfoFrom(&pki_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("--tls-cert")) << s;
  // A certificate another CA signed is refused too.
  s = InfoFrom(&pki_, &other_);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST_F(ServerTlsTest, TokenIsCheckedUnderTlsToo) {
  const std::string token = "0123456789abcdef0123456789abcdef";
  StartServer(/*mutual=*/false, token);
  ASSERT_OK(InfoFrom(&pki_, nullptr, token));
  absl::Status s = InfoFrom(&pki_, nullptr, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
}

// What a trainer's connect does (WaitForHealthy) with a CA that did not
// sign the server's certificate, a certificate that names another address,
// or no client certificate for a server that wants one: UNAUTHENTICATED
// saying which, at the first attempt, not a wait to the deadline.
TEST_F(ServerTlsTest, HandshakeFailuresAreSaidAtOnceAndInWords) {
  ASSERT_TRUE(pki_.MakeLeaf("elsewhere", "IP:127.0.0.2"));
  auto wait_from = [&](const TestPki& ca, const TestPki* client_pki) {
    GraphStoreClientOptions options;
    options.tls_ca_pem = ca.Pem("ca.pem");
    if (client_pki != nullptr) {
      options.tls_cert_pem = client_pki->Pem("trainer.pem");
      options.tls_key_pem = client_pki->Pem("trainer.key");
    }
    auto client = GraphStoreClient::Connect(server_->address(), options);
    EXPECT_OK(client.status());
    if (!client.ok()) return client.status();
    const absl::Time start = absl::Now();
    absl::Status s = (*client)->WaitForHealthy(start + absl::Seconds(30));
    EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << s;
    return s;
  };
  StartServer(/*mutual=*/false);
  absl::Status s = wait_from(other_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr(server_->address()));
  EXPECT_THAT(s.message(), HasSubstr("not signed by a CA in --tls-ca")) << s;
  ASSERT_OK(wait_from(pki_, nullptr));

  // A certificate for another address.
  GraphStoreServerOptions options;
  options.tls_cert_pem = pki_.Pem("elsewhere.pem");
  options.tls_key_pem = pki_.Pem("elsewhere.key");
  ASSERT_OK_AND_ASSIGN(server_, GraphStoreServer::Start(store_, options));
  s = wait_from(pki_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not name 127.0.0.1")) << s;

  // Mutual TLS without a client certificate, or with another CA's.
  StartServer(/*mutual=*/true);
  s = wait_from(pki_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("--tls-cert")) << s;
  s = wait_from(pki_, &other_);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  ASSERT_OK(wait_from(pki_, &pki_));
}

// A server does not start on a certificate out of its dates (every client
// would refuse it), and warns of one about to expire.
TEST_F(ServerTlsTest, ACertificateOutOfItsDatesIsRefusedAtStart) {
  // Valid for 2020-01-01 to 2020-01-02 only: `openssl ca` sets the dates.
  const std::string dir = dir_.Sub("old");
  ASSERT_TRUE(Sh(absl::StrCat(
      "mkdir -p ", dir, " && cd ", dir,
      " && touch index.txt && echo 01 > serial && printf "
      "'[ca]\\ndefault_ca=d\\n[d]\\ndatabase=index.txt\\nnew_certs_dir=."
      "\\nserial=serial\\ndefault_md=sha256\\npolicy=p\\n[p]\\n"
      "commonName=supplied\\n' > c.cnf && openssl req -newkey ec -pkeyopt "
      "ec_paramgen_curve:prime256v1 -nodes -subj '/CN=old' -keyout old.key "
      "-out old.csr && openssl ca -batch -config c.cnf -selfsign -keyfile "
      "old.key -in old.csr -startdate 20200101000000Z -enddate "
      "20200102000000Z -out old.pem")));
  GraphStoreServerOptions options;
  ASSERT_OK_AND_ASSIGN(options.tls_cert_pem,
                       ReadFileToString(JoinPath(dir, "old.pem")));
  ASSERT_OK_AND_ASSIGN(options.tls_key_pem,
                       ReadFileToString(JoinPath(dir, "old.key")));
  auto server = GraphStoreServer::Start(store_, options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("--tls-cert"));
  EXPECT_THAT(server.status().message(), HasSubstr("expired on 2020-01-02"));

  // The same dates seen from other moments: not valid yet; about to expire.
  std::string warning;
  const absl::Time start = absl::FromCivil(
      absl::CivilSecond(2020, 1, 1, 0, 0, 0), absl::UTCTimeZone());
  absl::Status early = internal::CheckCertificateDates(
      options.tls_cert_pem, "--tls-cert", start - absl::Hours(1),
      absl::Hours(1), &warning);
  EXPECT_EQ(early.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(early.message(), HasSubstr("not valid before 2020-01-01"));
  ASSERT_OK(internal::CheckCertificateDates(options.tls_cert_pem, "--tls-cert",
                                            start + absl::Hours(12),
                                            absl::Hours(24 * 14), &warning));
  EXPECT_THAT(warning, HasSubstr("expires on 2020-01-02"));
  ASSERT_OK(internal::CheckCertificateDates(options.tls_cert_pem, "--tls-cert",
                                            start + absl::Hours(12),
                                            absl::Hours(1), &warning));
  EXPECT_TRUE(warning.empty()) << warning;
}

TEST_F(ServerTlsTest, IncompleteSettingsAreRefused) {
  GraphStoreServerOptions options;
  options.tls_cert_pem = pki_.Pem("server.pem");
  auto server = GraphStoreServer::Start(store_, options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("--tls-key"));

  GraphStoreClientOptions client;
  client.tls_cert_pem = pki_.Pem("trainer.pem");
  client.tls_key_pem = pki_.Pem("trainer.key");
  EXPECT_EQ(GraphStoreClient::Connect("127.0.0.1:1", client).status().code(),
            absl::StatusCode::kInvalidArgument);
  client.tls_ca_pem = pki_.Pem("ca.pem");
  client.tls_key_pem.clear();
  EXPECT_EQ(GraphStoreClient::Connect("127.0.0.1:1", client).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shardgnn
