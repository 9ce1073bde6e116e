// Socket activation: missyd serves the listening sockets a service manager passed
// (LISTEN_FDS/LISTEN_FDNAMES for its own LISTEN_PID) instead of binding the configured
// paths, and leaves their files to the manager; logs carry journal priorities.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
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

// A listening TCP socket on `host`:0, as missyd-proxy.socket binds one; its address as
// bound ("127.0.0.1:41234") in `address`. -1 on error.
int BindTcpSocket(const char* host, std::string* address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof(a);
  if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *address = std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
  return fd;
}

// A loopback port nothing listens on (bound, then released).
uint16_t FreePort() {
  std::string address;
  const int fd = BindTcpSocket("127.0.0.1", &address);
  close(fd);
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// The API and audit sockets plus a proxy socket on loopback TCP, as the three units pass
// them, and a proxy token file (so that the proxy answers a request without a token
// itself, 401, without calling an upstream).
struct ProxyActivation : Activation {
  std::string proxy_address;
  int proxy_fd = BindTcpSocket("127.0.0.1", &proxy_address);
  std::string token_file = home.Join("proxy.token");
  ProxyActivation() { WriteFileOrDie(token_file, "tok-activated-1\n"); }
  ~ProxyActivation() {
    if (proxy_fd >= 0) close(proxy_fd);
  }
  SpawnOptions Options() const {
    SpawnOptions o;
    o.home = home.path();
    o.listen_fds = {api_fd, audit_fd, proxy_fd};
    o.listen_fdnames = "api:audit:proxy";
    return o;
  }
};

// The proxy handler answered: 401 in the Anthropic shape, asking for the token.
void ExpectProxyAnswers(const std::string& address) {
  Result<ClientResponse> r = UnixHttpCall("tcp:" + address, "POST", "/v1/messages", "{}");
  ASSERT_TRUE(r.ok()) << address << ": " << r.status().ToString();
  EXPECT_EQ(r->status, 401) << r->body;
  EXPECT_NE(r->body.find("a proxy token is required"), std::string::npos) << r->body;
}

TEST(SocketActivationTest, APassedProxySocketIsServedEvenWithTheProxyDisabled) {
  ProxyActivation a;
  ASSERT_GE(a.proxy_fd, 0);
  // context.proxy.enabled is false (the default).
  WriteFileOrDie(a.home.Join("config.yaml"),
                 std::string("context:\n  tokenizer: heuristic\n  proxy:\n") +
                     "    token_file: " + a.token_file + "\n");
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(a.Options()).ok());
  ASSERT_TRUE(d.WaitHealthy(a.api_path).ok()) << d.log();
  ExpectProxyAnswers(a.proxy_address);
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  const std::string log = d.log();
  EXPECT_NE(log.find("<6>socket activation: api " + a.api_path + ", audit " + a.audit_path +
                     ", proxy " + a.proxy_address + "\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("<6>proxy: serving the socket(s) passed by systemd (" + a.proxy_address +
                     ") although context.proxy.enabled is false"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("proxy:        http://" + a.proxy_address + " "), std::string::npos) << log;
}

TEST(SocketActivationTest, APassedProxySocketReplacesContextProxyListen) {
  ProxyActivation a;
  ASSERT_GE(a.proxy_fd, 0);
  const std::string configured = "127.0.0.1:" + std::to_string(FreePort());
  WriteFileOrDie(a.home.Join("config.yaml"),
                 std::string("context:\n  tokenizer: heuristic\n  proxy:\n    enabled: true\n") +
                     "    listen: " + configured + "\n" + "    token_file: " + a.token_file + "\n");
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(a.Options()).ok());
  ASSERT_TRUE(d.WaitHealthy(a.api_path).ok()) << d.log();
  ExpectProxyAnswers(a.proxy_address);
  // The unit owns the address: the configured one is not bound in addition.
  EXPECT_FALSE(UnixHttpCall("tcp:" + configured, "GET", "/v1/models").ok());
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.log();
  const std::string log = d.log();
  EXPECT_NE(log.find("<6>proxy: serving the socket(s) passed by systemd (" + a.proxy_address +
                     "); context.proxy.listen is not bound\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find(configured), std::string::npos) << log;
}

TEST(SocketActivationTest, AProxySocketThatIsNotLoopbackIsAStartupError) {
  Activation a;
  std::string address;
  const int open_to_all = BindTcpSocket("0.0.0.0", &address);
  ASSERT_GE(open_to_all, 0);
  WriteFileOrDie(a.home.Join("config.yaml"), "context:\n  tokenizer: heuristic\n");
  SpawnOptions o;
  o.home = a.home.path();
  o.listen_fds = {a.api_fd, a.audit_fd, open_to_all};
  o.listen_fdnames = "api:audit:proxy";
  SpawnedDaemon d;
  ASSERT_TRUE(d.Spawn(o).ok());
  close(open_to_all);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!d.Exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(d.Exited());
  EXPECT_EQ(d.exit_code(), 1);
  EXPECT_NE(d.log().find("socket activation: descriptor 5 ('proxy') is bound to " + address +
                         ", not a loopback address"),
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
