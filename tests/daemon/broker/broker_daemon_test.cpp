// The real missyd with context.broker set, against a real nats-server: its audit events
// reach the MISSY_AUDIT stream in order; the broker's password never shows in
// /v1/config or the log; an unreachable broker leaves the daemon serving.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon_process.h"
#include "nats_test_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

std::string BrokerConfig(const std::string& url) {
  return "context:\n  broker:\n    url: " + url +
         "\n    daemon_id: ws9-test\n    user: agent\n    password: hunter2-secret\n";
}

TEST(BrokerDaemonTest, AuditEventsReachTheStreamAndThePasswordIsNeverShown) {
  TempDir dir;
  std::filesystem::create_directories(dir.Join("nats"));
  NatsServer server(FreeLoopbackPort(), dir.Join("nats"));
  ASSERT_TRUE(server.Start());
  std::filesystem::create_directories(dir.Join("home"));
  DaemonProcess d(dir.Join("home"), BrokerConfig(server.url()));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"b1"})")->status, 201);
  const boost::json::value config = Body(d.Call("GET", "/v1/config"));
  EXPECT_EQ(config.at("context").at("broker").at("password").as_string(), "***");
  EXPECT_EQ(config.at("context").at("broker").at("user").as_string(), "agent");

  std::vector<StreamMessage> got;
  for (int i = 0; i < 200 && got.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    got = ReadStream(server.url(), "MISSY_AUDIT");
  }
  ASSERT_GE(got.size(), 2u) << d.log();
  EXPECT_EQ(got[0].subject, "missy.audit.ws9-test.daemon.daemon.started");
  EXPECT_EQ(got[0].msg_id, "ws9-test:1");
  EXPECT_EQ(got[1].subject, "missy.audit.ws9-test.context.session.created");
  EXPECT_EQ(got[1].msg_id, "ws9-test:2");
  EXPECT_EQ(boost::json::parse(got[1].data).at("session_id").as_string(), "b1");
  // The bridge's state in /v1/health and /metrics.
  boost::json::value broker;
  for (int i = 0; i < 100; ++i) {
    broker = Body(d.Call("GET", "/v1/health")).at("broker");
    if (Int(broker, {"backlog"}) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(broker.at("connected").as_bool());
  EXPECT_GE(Int(broker, {"cursor"}), 2);
  EXPECT_EQ(Int(broker, {"backlog"}), 0);
  EXPECT_EQ(Int(broker, {"duplicates"}), 0);
  Result<ClientResponse> scrape = d.Call("GET", "/metrics");
  ASSERT_TRUE(scrape.ok());
  EXPECT_NE(scrape->body.find("\nmissyd_broker_connected{stream=\"MISSY_AUDIT\"} 1\n"),
            std::string::npos);
  EXPECT_NE(scrape->body.find("\nmissyd_broker_backlog_events{stream=\"MISSY_AUDIT\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(d.Stop(), 0);
  EXPECT_EQ(d.log().find("hunter2-secret"), std::string::npos) << d.log();
}

TEST(BrokerDaemonTest, AnUnreachableBrokerIsLoggedAndTheDaemonKeepsServing) {
  TempDir dir;
  const int port = FreeLoopbackPort();  // nothing listens there
  DaemonProcess d(dir.path(), BrokerConfig("nats://127.0.0.1:" + std::to_string(port)));
  ASSERT_TRUE(d.Start().ok()) << d.log();
  ASSERT_EQ(d.Call("POST", "/v1/sessions", R"({"id":"b2"})")->status, 201);
  ASSERT_EQ(d.Call("GET", "/v1/health")->status, 200);
  std::string log;
  for (int i = 0; i < 100 && log.find("cannot connect") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log = d.log();
  }
  EXPECT_NE(log.find("broker nats://127.0.0.1:" + std::to_string(port)), std::string::npos)
      << log;
  EXPECT_NE(log.find("cannot connect"), std::string::npos) << log;
  EXPECT_EQ(log.find("hunter2-secret"), std::string::npos) << log;
  // Nothing acknowledged: the events wait, and the lag says how many.
  const boost::json::value broker = Body(d.Call("GET", "/v1/health")).at("broker");
  EXPECT_FALSE(broker.at("connected").as_bool());
  EXPECT_GE(Int(broker, {"failures"}), 1);
  EXPECT_EQ(Int(broker, {"cursor"}), 0);
  EXPECT_GE(Int(broker, {"backlog"}), 2);  // daemon.started, session.created, ...
  EXPECT_NE(std::string(broker.at("last_error").as_string()).find("cannot connect"),
            std::string::npos);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace missy::testing
