// ProviderClient over TLS against the fake provider with a throwaway CA made at test time
// (openssl CLI): verification on, the right CA accepted, a wrong CA, the system store and a
// certificate for another name refused, SNI sent, handshake timeout.
#include <gtest/gtest.h>

#include <cstdlib>

#include "daemon/provider/provider_client.h"
#include "provider/fake_provider_server.h"
#include "test_util.h"

namespace missy::provider {
namespace {

using missy::provider_test::FakeProviderServer;
using missy::provider_test::FakeServerOptions;
using missy::provider_test::Json;
using missy::provider_test::OpenAiAnswer;
using missy::provider_test::Reply;
using missy::testing::TempDir;
using namespace std::chrono_literals;

void Shell(const std::string& command) {
  ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

// Two CAs and three server certificates, made once for the suite.
class ProviderTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string d = dir_->path() + "/";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    for (const std::string ca : {"ca", "other_ca"}) {
      Shell("openssl req -x509 " + ec + "-keyout " + d + ca + ".key -out " + d + ca +
            ".pem -days 1 -subj /CN=" + ca +
            " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign");
    }
    // name: the certificate's file stem; san: its subjectAltName; signed by ca.
    const auto server_cert = [&](const std::string& name, const std::string& san) {
      missy::testing::WriteFileOrDie(
          d + name + ".ext",
          "subjectAltName=" + san + "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
      Shell("openssl req " + ec + "-keyout " + d + name + ".key -out " + d + name +
            ".csr -subj /CN=" + name);
      Shell("openssl x509 -req -in " + d + name + ".csr -CA " + d + "ca.pem -CAkey " + d +
            "ca.key -CAcreateserial -out " + d + name + ".pem -days 1 -extfile " + d + name +
            ".ext");
    };
    server_cert("server", "DNS:localhost,IP:127.0.0.1");
    server_cert("elsewhere", "DNS:other.example");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string Path(const std::string& name) { return dir_->Join(name); }

  static FakeServerOptions ServerTls(const std::string& cert = "server") {
    FakeServerOptions options;
    options.cert_file = Path(cert + ".pem");
    options.key_file = Path(cert + ".key");
    return options;
  }

  static ProviderOptions ClientOptions(const std::string& ca_file) {
    ProviderOptions options;
    options.ca_file = ca_file;
    options.connect_timeout = 1000ms;
    options.handshake_timeout = 1000ms;
    options.first_byte_timeout = 1000ms;
    options.total_timeout = 3000ms;
    options.backoff_base = 10ms;
    options.backoff_max = 20ms;
    return options;
  }

  static CompletionOutcome Call(const std::string& url, const ProviderOptions& options) {
    auto client = MakeProviderClient("openai", {"gpt-test", url, "sk-tls-key", 60}, options);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return ProviderFailure{};
    CompletionRequest request;
    request.messages = {{"user", "hi"}};
    return (*client)->Complete(request);
  }

  static TempDir* dir_;
};

TempDir* ProviderTlsTest::dir_ = nullptr;

TEST_F(ProviderTlsTest, TrustedCaOverAnAddress) {
  FakeProviderServer server({Json(200, OpenAiAnswer("secure"))}, ServerTls());
  const auto outcome = Call(server.Url("/v1"), ClientOptions(Path("ca.pem")));
  ASSERT_TRUE(std::holds_alternative<CompletionResult>(outcome))
      << std::get<ProviderFailure>(outcome).message;
  EXPECT_EQ(std::get<CompletionResult>(outcome).text, "secure");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer sk-tls-key");
  EXPECT_EQ(requests[0].sni, "");  // no SNI for an IP address (RFC 6066)
}

TEST_F(ProviderTlsTest, TrustedCaOverAHostNameSendsSni) {
  FakeProviderServer server({Json(200, OpenAiAnswer("secure"))}, ServerTls());
  const auto outcome = Call(server.Url("/v1", "localhost"), ClientOptions(Path("ca.pem")));
  ASSERT_TRUE(std::holds_alternative<CompletionResult>(outcome))
      << std::get<ProviderFailure>(outcome).message;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].sni, "localhost");
  EXPECT_EQ(requests[0].headers.at("host"), "localhost:" + std::to_string(server.port()));
}

// One TLS handshake for several requests: the verified connection is kept alive.
TEST_F(ProviderTlsTest, RequestsShareOneVerifiedConnection) {
  FakeProviderServer server(std::vector<Reply>(3, Json(200, OpenAiAnswer("secure"))), ServerTls());
  auto client =
      MakeProviderClient("openai", {"gpt-test", server.Url("/v1", "localhost"), "sk-tls-key", 60},
                         ClientOptions(Path("ca.pem")));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  CompletionRequest request;
  request.messages = {{"user", "hi"}};
  for (int i = 0; i < 3; ++i) {
    const auto outcome = (*client)->Complete(request);
    ASSERT_TRUE(std::holds_alternative<CompletionResult>(outcome))
        << std::get<ProviderFailure>(outcome).message;
    EXPECT_EQ(std::get<CompletionResult>(outcome).attempts, 1);
  }
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(ProviderTlsTest, WrongCaIsRefusedWithoutRetry) {
  FakeProviderServer server({Json(200, OpenAiAnswer("never"))}, ServerTls());
  const auto outcome = Call(server.Url("/v1"), ClientOptions(Path("other_ca.pem")));
  ASSERT_TRUE(std::holds_alternative<ProviderFailure>(outcome));
  const auto& failure = std::get<ProviderFailure>(outcome);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kTls) << failure.message;
  EXPECT_EQ(failure.attempts, 1);
  EXPECT_NE(failure.message.find("certificate"), std::string::npos) << failure.message;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(ProviderTlsTest, SystemTrustStoreRefusesTheTestCa) {
  FakeProviderServer server({Json(200, OpenAiAnswer("never"))}, ServerTls());
  const auto outcome = Call(server.Url("/v1", "localhost"), ClientOptions(""));
  ASSERT_TRUE(std::holds_alternative<ProviderFailure>(outcome));
  EXPECT_EQ(std::get<ProviderFailure>(outcome).kind, ProviderErrorKind::kTls);
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(ProviderTlsTest, CertificateForAnotherNameIsRefused) {
  FakeProviderServer server({Json(200, OpenAiAnswer("never"))}, ServerTls("elsewhere"));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    const auto outcome = Call(server.Url("/v1", host), ClientOptions(Path("ca.pem")));
    ASSERT_TRUE(std::holds_alternative<ProviderFailure>(outcome));
    const auto& failure = std::get<ProviderFailure>(outcome);
    EXPECT_EQ(failure.kind, ProviderErrorKind::kTls) << failure.message;
    EXPECT_NE(failure.message.find("mismatch"), std::string::npos) << failure.message;
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(ProviderTlsTest, StalledHandshakeTimesOut) {
  FakeServerOptions stall = ServerTls();
  stall.stall_handshake = true;
  FakeProviderServer server({}, stall);
  ProviderOptions options = ClientOptions(Path("ca.pem"));
  options.handshake_timeout = 200ms;
  options.max_attempts = 1;
  const auto start = std::chrono::steady_clock::now();
  const auto outcome = Call(server.Url("/v1"), options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(std::holds_alternative<ProviderFailure>(outcome));
  const auto& failure = std::get<ProviderFailure>(outcome);
  EXPECT_EQ(failure.kind, ProviderErrorKind::kTimeout) << failure.message;
  EXPECT_NE(failure.message.find("handshake"), std::string::npos) << failure.message;
  EXPECT_GE(elapsed, 190ms);
  EXPECT_LT(elapsed, 800ms);
}

}  // namespace
}  // namespace missy::provider
