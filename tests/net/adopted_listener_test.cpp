// NetServer serves listening sockets bound by someone else (socket activation): it
// neither binds the configured paths nor removes the adopted sockets' files, and owns
// (closes) the descriptors. Adopted proxy sockets (loopback TCP) are served like the
// proxy listeners it binds; others are refused.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "net_test_util.h"
#include "tcp_test_util.h"

namespace missy::net_test {
namespace {

int Listening(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// A listening TCP socket on `host`:0 (what missyd-proxy.socket's ListenStream= makes);
// its address as bound ("127.0.0.1:41234") in `address`. -1 on error.
int ListeningTcp(const char* host, std::string* address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof(a);
  if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *address = std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
  return fd;
}

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

// Which handler answered, on which listener, for whom.
HttpHandler Describing(const char* who) {
  return SyncHandler([who](const HttpRequest& r) {
    json::object o;
    o["who"] = who;
    o["listener"] = r.listener;
    o["peer_uid"] = r.peer_uid;
    o["target"] = r.target;
    return HttpResponse{200, "application/json", json::serialize(o)};
  });
}

TEST(AdoptedListenerTest, ServesAdoptedSocketsAndLeavesTheirFiles) {
  TempDir dir;
  const std::string api = dir.Join("adopted-api.sock");
  const std::string audit = dir.Join("adopted-audit.sock");
  const int api_fd = Listening(api);
  const int audit_fd = Listening(audit);
  ASSERT_GE(api_fd, 0);
  ASSERT_GE(audit_fd, 0);
  NetOptions o = Options(dir);  // configured paths under run/: must stay unbound
  o.api_socket_path = api;
  o.audit_socket_path = audit;
  o.api_listen_fd = api_fd;
  o.audit_listen_fd = audit_fd;
  {
    RunningServer server(o, SyncHandler(Echo));
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    Result<ClientResponse> r = UnixHttpCall(api, "GET", "/via-adopted");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(Str(ParseObject(r->body), "target"), "/via-adopted");

    LineSubscriber sub;
    ASSERT_TRUE(sub.Connect(audit, "{}").ok());
    ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));
    server->Publish(1, "x.y", EventLine(1, "x.y"));
    Result<std::string> line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    EXPECT_EQ(SeqOf(*line), 1);
    server.StopAndJoin(1s);
  }
  EXPECT_FALSE(Exists(dir.Join("run/missyd.sock")));
  EXPECT_TRUE(Exists(api));  // the manager's files, not ours to remove
  EXPECT_TRUE(Exists(audit));
  // The server closed the descriptors it adopted.
  EXPECT_EQ(fcntl(api_fd, F_GETFD), -1);
  EXPECT_EQ(fcntl(audit_fd, F_GETFD), -1);
}

TEST(AdoptedListenerTest, AnAdoptedApiSocketWithABoundAuditPath) {
  TempDir dir;
  const std::string api = dir.Join("adopted-api.sock");
  const int api_fd = Listening(api);
  ASSERT_GE(api_fd, 0);
  NetOptions o = Options(dir);
  o.api_listen_fd = api_fd;
  {
    RunningServer server(o, SyncHandler(Echo));
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    EXPECT_TRUE(Exists(dir.Join("run/audit.sock")));
    EXPECT_FALSE(Exists(dir.Join("run/missyd.sock")));
    ASSERT_TRUE(UnixHttpCall(api, "GET", "/x").ok());
    server.StopAndJoin(1s);
  }
  EXPECT_FALSE(Exists(dir.Join("run/audit.sock")));  // bound here: removed
  EXPECT_TRUE(Exists(api));
}

TEST(AdoptedListenerTest, AnAdoptedLoopbackTcpSocketIsServedAsAProxyListener) {
  TempDir dir;
  std::string adopted;
  const int fd = ListeningTcp("127.0.0.1", &adopted);
  ASSERT_GE(fd, 0);
  NetOptions o = Options(dir);
  o.proxy_listen_fds = {fd};
  o.proxy_handler = Describing("proxy");
  {
    RunningServer server(o, Describing("api"));
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    // Its actual address (getsockname), as for a listener bound here.
    EXPECT_EQ(server->ProxyAddresses(), std::vector<std::string>{adopted});
    auto r = TcpCall(adopted, "POST", "/v1/messages", "{}");
    ASSERT_TRUE(r.has_value()) << "no complete response from " << adopted;
    EXPECT_EQ(r->status, 200);
    json::object body = ParseObject(r->body);
    EXPECT_EQ(Str(body, "who"), "proxy");
    EXPECT_EQ(Str(body, "listener"), adopted);
    EXPECT_EQ(Str(body, "target"), "/v1/messages");
    ASSERT_NE(body.if_contains("peer_uid"), nullptr);
    EXPECT_EQ(body.at("peer_uid").to_number<int64_t>(), static_cast<int64_t>(geteuid()));
    // The API socket still goes to the API handler.
    auto api = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/v1/health");
    ASSERT_TRUE(api.ok()) << api.status().ToString();
    EXPECT_EQ(Str(ParseObject(api->body), "who"), "api");
    server.StopAndJoin(1s);
  }
  EXPECT_FALSE(IsOpen(fd)) << "the server closes the descriptors it adopted";
}

TEST(AdoptedListenerTest, AdoptedProxySocketsComeAfterTheBoundOnes) {
  TempDir dir;
  std::string first, second;
  const int fd1 = ListeningTcp("127.0.0.1", &first);
  const int fd2 = ListeningTcp("127.0.0.2", &second);  // all of 127.0.0.0/8 is loopback
  ASSERT_GE(fd1, 0);
  ASSERT_GE(fd2, 0);
  NetOptions o = Options(dir);
  ListenAddress bound_here;
  bound_here.kind = ListenAddress::Kind::kTcp4;
  bound_here.host = "127.0.0.1";
  o.proxy_listen = {bound_here};
  o.proxy_listen_fds = {fd1, fd2};
  o.proxy_handler = Describing("proxy");
  RunningServer server(o, Describing("api"));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<std::string> addresses = server->ProxyAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  EXPECT_EQ(addresses[0].rfind("127.0.0.1:", 0), 0u) << addresses[0];
  EXPECT_EQ(addresses[1], first);
  EXPECT_EQ(addresses[2], second);
  for (const std::string& address : addresses) {
    auto r = TcpCall(address, "GET", "/v1/models", "");
    ASSERT_TRUE(r.has_value()) << address;
    EXPECT_EQ(Str(ParseObject(r->body), "listener"), address);
  }
}

TEST(AdoptedListenerTest, AnAdoptedProxySocketThatIsNotLoopbackIsRefusedAndClosed) {
  TempDir dir;
  std::string address;
  const int open_to_all = ListeningTcp("0.0.0.0", &address);
  ASSERT_GE(open_to_all, 0);
  NetOptions o = Options(dir);
  o.proxy_listen_fds = {open_to_all};
  o.proxy_handler = Describing("proxy");
  auto r = NetServer::Create(o, Describing("api"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("descriptor " + std::to_string(open_to_all)),
            std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find(address + ", not a loopback address"), std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(IsOpen(open_to_all));
  EXPECT_FALSE(Exists(dir.Join("run/missyd.sock"))) << "the API socket bound first is removed";
}

TEST(AdoptedListenerTest, AnAdoptedProxySocketMustBeListeningTcp) {
  TempDir dir;
  // A Unix socket given as a proxy socket.
  const int unix_fd = Listening(dir.Join("not-tcp.sock"));
  ASSERT_GE(unix_fd, 0);
  NetOptions o = Options(dir);
  o.proxy_listen_fds = {unix_fd};
  o.proxy_handler = Describing("proxy");
  auto r = NetServer::Create(o, Describing("api"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("is not a TCP socket"), std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(IsOpen(unix_fd));

  // A loopback TCP socket that is not listening.
  const int idle = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(idle, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(idle, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  o.proxy_listen_fds = {idle};
  r = NetServer::Create(o, Describing("api"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not listening"), std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(IsOpen(idle));
}

TEST(AdoptedListenerTest, AdoptedProxySocketsNeedAHandlerAndAreClosedWithout) {
  TempDir dir;
  std::string address;
  const int fd = ListeningTcp("127.0.0.1", &address);
  const int api_fd = Listening(dir.Join("adopted-api.sock"));
  ASSERT_GE(fd, 0);
  ASSERT_GE(api_fd, 0);
  NetOptions o = Options(dir);
  o.api_listen_fd = api_fd;
  o.proxy_listen_fds = {fd};
  auto r = NetServer::Create(o, Describing("api"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsOpen(fd));
  EXPECT_FALSE(IsOpen(api_fd));
}

}  // namespace
}  // namespace missy::net_test
