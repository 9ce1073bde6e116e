// End to end: SIGHUP and POST /v1/config/reload re-read config.yaml in the running
// daemon; a valid file applies (config.reloaded with the changed keys on the audit
// socket), an invalid one keeps the config (config.rejected naming the key).
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "cli/http_client.h"
#include "daemon/ops/spawn_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

std::string Config(int total) {
  return "context:\n  tokenizer: heuristic\n  budget:\n    total: " + std::to_string(total) + "\n";
}

int64_t BudgetTotal(const std::string& socket) {
  Result<ClientResponse> r = UnixHttpCall(socket, "GET", "/v1/config");
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return -1;
  return boost::json::parse(r->body).at("context").at("budget").at("total").as_int64();
}

TEST(ReloadTest, SighupAndTheRouteApplyAValidFileAndRejectAnInvalidOne) {
  TempDir home;
  const std::string config = home.Join("config.yaml");
  const std::string socket = home.Join("missyd.sock");
  WriteFileOrDie(config, Config(90000));
  SpawnOptions o;
  o.home = home.path();
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(socket).ok()) << d.log();
  ASSERT_EQ(BudgetTotal(socket), 90000);

  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(home.Join("audit.sock"),
                          R"({"since":0,"types":["config.reloaded","config.rejected"]})")
                  .ok());

  WriteFileOrDie(config, Config(120000));
  d.Signal(SIGHUP);
  Result<std::string> reloaded = sub.ReadLine(10s);
  ASSERT_TRUE(reloaded.ok()) << d.log();
  boost::json::value ev = boost::json::parse(*reloaded);
  EXPECT_EQ(ev.at("event_type").as_string(), "config.reloaded");
  EXPECT_EQ(boost::json::serialize(ev.at("detail").at("changed")), R"(["context.budget.total"])");
  EXPECT_EQ(BudgetTotal(socket), 120000);

  WriteFileOrDie(config, "context:\n  budget:\n    total: -5\n");
  d.Signal(SIGHUP);
  Result<std::string> rejected = sub.ReadLine(10s);
  ASSERT_TRUE(rejected.ok()) << d.log();
  ev = boost::json::parse(*rejected);
  EXPECT_EQ(ev.at("event_type").as_string(), "config.rejected");
  EXPECT_EQ(ev.at("detail").at("key").as_string(), "context.budget.total");
  EXPECT_EQ(BudgetTotal(socket), 120000);  // kept

  // The route takes the same path.
  WriteFileOrDie(config, Config(64000));
  Result<ClientResponse> r = UnixHttpCall(socket, "POST", "/v1/config/reload");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.substr(0, r->body.find_last_not_of('\n') + 1),
            R"({"reloaded":true,"changed":["context.budget.total"],"restart_required":[]})");
  Result<std::string> via_route = sub.ReadLine(10s);
  ASSERT_TRUE(via_route.ok());
  EXPECT_NE(via_route->find("\"config.reloaded\""), std::string::npos);
  EXPECT_EQ(BudgetTotal(socket), 64000);

  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  const std::string log = d.log();
  EXPECT_NE(log.find("config reload rejected, keeping the current config"), std::string::npos);
  EXPECT_EQ(log.find("reload_failed"), std::string::npos);
}

}  // namespace
}  // namespace missy::testing
