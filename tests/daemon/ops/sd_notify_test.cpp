// missyd speaks the service manager's protocol: start-up STATUS phases then READY=1 once
// it serves, WATCHDOG=1 at half of WATCHDOG_USEC, RELOADING=1 (with MONOTONIC_USEC) then
// READY=1 around a SIGHUP reload, STOPPING=1 on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "daemon/ops/spawn_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kConfig = "context:\n  tokenizer: heuristic\n";

uint64_t NowMonotonicUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

TEST(SdNotifyTest, ReadyWatchdogReloadStopReachTheServiceManager) {
  TempDir dir;
  WriteFileOrDie(dir.Join("config.yaml"), kConfig);
  NotifyListener notify(dir.Join("notify.sock"));
  SpawnOptions o;
  o.home = dir.path();
  o.env = {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "400000"}};
  o.watchdog_pid = true;
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());

  std::optional<std::string> ready = notify.WaitFor("READY=1", 30s);
  ASSERT_TRUE(ready) << d.log();
  EXPECT_EQ(NotifyListener::Value(*ready, "STATUS"), "serving: 0 sessions cached, 0 requests");
  // The start-up phases came first, in order.
  ASSERT_GE(notify.seen().size(), 3u);
  EXPECT_EQ(notify.seen()[0], "STATUS=opening the database");
  EXPECT_EQ(notify.seen()[1], "STATUS=loading tokenizers");
  // READY=1 means serving: the API answers at once.
  Result<ClientResponse> health =
      UnixHttpCall(dir.Join("missyd.sock"), "GET", "/v1/health", "", 2s);
  ASSERT_TRUE(health.ok()) << health.status().ToString();
  EXPECT_EQ(health->status, 200);

  // WATCHDOG_USEC=400ms: a ping every 200 ms.
  const int pings = notify.CountFor("WATCHDOG=1", 1500ms);
  EXPECT_GE(pings, 4) << d.log();
  EXPECT_LE(pings, 10);

  const uint64_t before = NowMonotonicUsec();
  d.Signal(SIGHUP);
  std::optional<std::string> reloading = notify.WaitFor("RELOADING=1", 10s);
  const uint64_t after = NowMonotonicUsec();
  ASSERT_TRUE(reloading) << d.log();
  const uint64_t stamp = std::stoull(NotifyListener::Value(*reloading, "MONOTONIC_USEC"));
  EXPECT_GE(stamp, before);
  EXPECT_LE(stamp, after);
  std::optional<std::string> reloaded = notify.WaitFor("READY=1", 10s);
  ASSERT_TRUE(reloaded) << d.log();
  EXPECT_EQ(NotifyListener::Value(*reloaded, "STATUS").rfind("serving: ", 0), 0u) << *reloaded;

  // An invalid file: still RELOADING=1 then READY=1, the status says why.
  WriteFileOrDie(dir.Join("config.yaml"), "context:\n  budget:\n    total: many\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(notify.WaitFor("RELOADING=1", 10s)) << d.log();
  std::optional<std::string> kept = notify.WaitFor("READY=1", 10s);
  ASSERT_TRUE(kept);
  const std::string status = NotifyListener::Value(*kept, "STATUS");
  EXPECT_EQ(status.rfind("config rejected, kept the current one: ", 0), 0u) << status;
  EXPECT_NE(status.find("context.budget.total"), std::string::npos) << status;

  d.Signal(SIGTERM);
  std::optional<std::string> stopping = notify.WaitFor("STOPPING=1", 10s);
  ASSERT_TRUE(stopping) << d.log();
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
}

TEST(SdNotifyTest, NoWatchdogPingsWhenWatchdogPidIsAnotherProcess) {
  TempDir dir;
  WriteFileOrDie(dir.Join("config.yaml"), kConfig);
  NotifyListener notify(dir.Join("notify.sock"));
  SpawnOptions o;
  o.home = dir.path();
  // WATCHDOG_PID names this test process, not the daemon: the watchdog is not its own.
  o.env = {{"NOTIFY_SOCKET", notify.path()},
           {"WATCHDOG_USEC", "200000"},
           {"WATCHDOG_PID", std::to_string(getpid())}};
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(notify.WaitFor("READY=1", 30s)) << d.log();
  EXPECT_EQ(notify.CountFor("WATCHDOG=1", 800ms), 0);
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
}

TEST(SdNotifyTest, NothingIsSentWithoutNotifySocket) {
  // Started by hand: no NOTIFY_SOCKET, the daemon runs and stops as before.
  TempDir dir;
  WriteFileOrDie(dir.Join("config.yaml"), kConfig);
  SpawnOptions o;
  o.home = dir.path();
  o.env = {{"WATCHDOG_USEC", "200000"}};
  o.watchdog_pid = true;
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(dir.Join("missyd.sock")).ok());
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  // Coloured console lines (not journal lines) when stderr is not the journal.
  EXPECT_EQ(d.log().find("<6>"), std::string::npos) << d.log();
  EXPECT_EQ(d.log().find("watchdog"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace missy::testing
