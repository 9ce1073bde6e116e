// Socket activation: missyd serves the listening sockets a service manager passed
// (LISTEN_FDS/LISTEN_FDNAMES for its own LISTEN_PID) instead of binding the configured
// paths, and leaves their files to the manager; logs carry journal priorities.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "cli/http_client.h"
#include "daemon/ops/listen_fds.h"
#include "daemon/ops/spawn_util.h"
#include "test_util.h"

namespace missy::testing {
namespace {

using namespace std::chrono_literals;

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Sockets as systemd's missyd.socket / missyd-audit.socket would bind them (in a
// directory other than MISSY_HOME, like %t/missy), passed as `names`.
struct Activation {
  TempDir home;
  TempDir runtime;
  std::string api_path = runtime.Join("missyd.sock");
  std::string audit_path = runtime.Join("audit.sock");
  int api_fd = BindListeningSocket(api_path);
  int audit_fd = BindListeningSocket(audit_path);
  ~Activation() {
    if (api_fd >= 0) close(api_fd);
    if (audit_fd >= 0) close(audit_fd);
  }
};

TEST(SocketActivationTest, ServesThePassedSocketsByName) {
  Activation a;
  ASSERT_GE(a.api_fd, 0);
  ASSERT_GE(a.audit_fd, 0);
  WriteFileOrDie(a.home.Join("config.yaml"), "context:\n  tokenizer: heuristic\n");
  SpawnOptions o;
  o.home = a.home.path();
  // Passed audit first: the names, not the order, decide.
  o.listen_fds = {a.audit_fd, a.api_fd};
  o.listen_fdnames = "audit:api";
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(a.api_path).ok()) << d.log();

  Result<ClientResponse> health = UnixHttpCall(a.api_path, "GET", "/v1/health");
  ASSERT_TRUE(health.ok());
  ASSERT_EQ(health->status, 200) << health->body;
  boost::json::value h = boost::json::parse(health->body);
  EXPECT_EQ(h.at("socket").as_string(), a.api_path);
  EXPECT_EQ(h.at("audit_socket").as_string(), a.audit_path);
  // The configured paths (MISSY_HOME/missyd.sock, audit.sock) were not bound.
  EXPECT_FALSE(Exists(a.home.Join("missyd.sock")));
  EXPECT_FALSE(Exists(a.home.Join("audit.sock")));

  // The audit descriptor delivers events: the backlog holds daemon.started naming the
  // adopted sockets, and a live event follows.
  LineSubscriber sub;
  ASSERT_TRUE(
      sub.Connect(a.audit_path, R"({"since":0,"types":["daemon.started","session.created"]})")
          .ok());
  Result<std::string> started = sub.ReadLine(10s);
  ASSERT_TRUE(started.ok()) << d.log();
  boost::json::value ev = boost::json::parse(*started);
  EXPECT_EQ(ev.at("event_type").as_string(), "daemon.started");
  EXPECT_EQ(ev.at("detail").at("socket").as_string(), a.api_path);
  EXPECT_EQ(ev.at("detail").at("audit_socket").as_string(), a.audit_path);
  Result<ClientResponse> created =
      UnixHttpCall(a.api_path, "POST", "/v1/sessions", R"({"id":"s-activated"})");
  ASSERT_TRUE(created.ok());
  ASSERT_EQ(created->status, 201) << created->body;
  Result<std::string> live = sub.ReadLine(10s);
  ASSERT_TRUE(live.ok()) << d.log();
  boost::json::value lv = boost::json::parse(*live);
  EXPECT_EQ(lv.at("event_type").as_string(), "session.created");
  EXPECT_EQ(lv.at("session_id").as_string(), "s-activated");
  sub.Close();

  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  // The manager owns the socket files: they stay after the daemon stops.
  EXPECT_TRUE(Exists(a.api_path));
  EXPECT_TRUE(Exists(a.audit_path));
  // Socket-activated: journal lines with sd-daemon priorities, no timestamps.
  const std::string log = d.log();
  EXPECT_NE(log.find("<6>socket activation: api " + a.api_path + ", audit " + a.audit_path + "\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("<6>missyd stopped\n"), std::string::npos) << log;
}

TEST(SocketActivationTest, UnnamedSocketsAreTakenInOrderApiThenAudit) {
  Activation a;
  WriteFileOrDie(a.home.Join("config.yaml"), "context:\n  tokenizer: heuristic\n");
  SpawnOptions o;
  o.home = a.home.path();
  o.listen_fds = {a.api_fd, a.audit_fd};  // no LISTEN_FDNAMES
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(a.api_path).ok()) << d.log();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(a.audit_path, R"({"since":0,"types":["daemon.started"]})").ok());
  Result<std::string> started = sub.ReadLine(10s);
  ASSERT_TRUE(started.ok()) << d.log();
  EXPECT_NE(started->find("daemon.started"), std::string::npos);
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
}

TEST(SocketActivationTest, OnlyTheApiSocketPassedBindsTheConfiguredAuditPath) {
  Activation a;
  WriteFileOrDie(a.home.Join("config.yaml"), "context:\n  tokenizer: heuristic\n");
  SpawnOptions o;
  o.home = a.home.path();
  o.listen_fds = {a.api_fd};
  o.listen_fdnames = "api";
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  ASSERT_TRUE(d.WaitHealthy(a.api_path).ok()) << d.log();
  EXPECT_FALSE(Exists(a.home.Join("missyd.sock")));
  EXPECT_TRUE(Exists(a.home.Join("audit.sock")));
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  EXPECT_FALSE(Exists(a.home.Join("audit.sock")));  // its own: removed on shutdown
  EXPECT_TRUE(Exists(a.api_path));
}

TEST(SocketActivationTest, ADescriptorThatIsNotListeningIsAStartupError) {
  Activation a;
  WriteFileOrDie(a.home.Join("config.yaml"), "context:\n  tokenizer: heuristic\n");
  int not_listening = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(not_listening, 0);
  SpawnOptions o;
  o.home = a.home.path();
  o.listen_fds = {not_listening};
  o.listen_fdnames = "api";
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  close(not_listening);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!d.Exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(d.Exited());
  EXPECT_EQ(d.exit_code(), 1);
  EXPECT_NE(d.log().find("socket activation: descriptor 3 ('api') is not listening"),
            std::string::npos)
      << d.log();
}

TEST(SocketActivationTest, DescriptorsForAnotherPidAreIgnoredAndTheEnvironmentCleared) {
  // In process: LISTEN_PID names another process, so fds 3.. are not ours to take.
  setenv("LISTEN_PID", std::to_string(getpid() + 1).c_str(), 1);
  setenv("LISTEN_FDS", "2", 1);
  setenv("LISTEN_FDNAMES", "api:audit", 1);
  Result<ops::ActivatedSockets> taken = ops::TakeActivatedSockets();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_FALSE(taken->any());
  EXPECT_EQ(getenv("LISTEN_PID"), nullptr);
  EXPECT_EQ(getenv("LISTEN_FDS"), nullptr);
  EXPECT_EQ(getenv("LISTEN_FDNAMES"), nullptr);
}

}  // namespace
}  // namespace missy::testing
