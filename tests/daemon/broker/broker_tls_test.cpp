// The broker connection over TLS (context.broker.ca_file, tls:// urls), against a real
// nats-server with a certificate made here by the openssl CLI: the server is verified
// against the configured CA; the system store or another CA refuses it, and the error
// says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "daemon/broker/job_dispatcher.h"
#include "nats_test_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

void Shell(const std::string& command) {
  ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

class BrokerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string d = dir_.path() + "/";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    for (const std::string ca : {"ca", "other_ca"}) {
      Shell("openssl req -x509 " + ec + "-keyout " + d + ca + ".key -out " + d + ca +
            ".pem -days 1 -subj /CN=" + ca +
            " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign");
    }
    WriteFileOrDie(d + "server.ext",
                   "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                   "extendedKeyUsage=serverAuth\n");
    Shell("openssl req " + ec + "-keyout " + d + "server.key -out " + d +
          "server.csr -subj /CN=server");
    Shell("openssl x509 -req -in " + d + "server.csr -CA " + d + "ca.pem -CAkey " + d +
          "ca.key -CAcreateserial -out " + d + "server.pem -days 1 -extfile " + d + "server.ext");
    std::filesystem::create_directories(dir_.Join("nats"));
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<NatsServer>(
        port_, dir_.Join("nats"),
        std::vector<std::string>{"--tls", "--tlscert", d + "server.pem", "--tlskey",
                                 d + "server.key"});
    ASSERT_TRUE(server_->Start());
  }

  // A dispatcher's state once its first connection attempt ended.
  DispatchStats Attempt(const std::string& ca_file) {
    JobDispatcherOptions o;
    o.endpoint.url = "tls://127.0.0.1:" + std::to_string(port_);
    o.endpoint.ca_file = ca_file;
    o.daemon_id = "tls1";
    JobDispatcher d(o);
    d.Start();
    for (int i = 0; i < 200; ++i) {
      const DispatchStats s = d.Stats();
      if (s.connected || !s.last_error.empty()) return s;
      std::this_thread::sleep_for(25ms);
    }
    return d.Stats();
  }

  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<NatsServer> server_;
};

TEST_F(BrokerTlsTest, TheConfiguredCaVerifiesTheServer) {
  const DispatchStats s = Attempt(dir_.Join("ca.pem"));
  EXPECT_TRUE(s.connected) << s.last_error;
  EXPECT_EQ(s.last_error, "");
}

TEST_F(BrokerTlsTest, AnotherCaOrTheSystemStoreRefusesTheServer) {
  for (const std::string& ca : {dir_.Join("other_ca.pem"), std::string()}) {
    const DispatchStats s = Attempt(ca);
    EXPECT_FALSE(s.connected) << ca;
    EXPECT_NE(s.last_error.find("cannot connect"), std::string::npos) << s.last_error;
    EXPECT_NE(s.last_error.find("SSL"), std::string::npos) << s.last_error;
  }
}

TEST_F(BrokerTlsTest, AMissingCaFileIsNamed) {
  const DispatchStats s = Attempt(dir_.Join("nowhere.pem"));
  EXPECT_FALSE(s.connected);
  EXPECT_NE(s.last_error.find("ca_file " + dir_.Join("nowhere.pem")), std::string::npos)
      << s.last_error;
}

}  // namespace
}  // namespace missy::testing
