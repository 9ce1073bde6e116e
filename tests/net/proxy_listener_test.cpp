// Tests of the proxy listeners (server.cpp, tcp_listener.cpp, tcp_peer.cpp,
// http_session.cpp): loopback TCP and Unix listeners calling the proxy handler, the uid
// check of a TCP peer, extra response headers, streamed answers with headers.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <future>
#include <mutex>
#include <utility>
#include <vector>

#include "net_test_util.h"
#include "tcp_test_util.h"

namespace missy::net_test {
namespace {

ListenAddress Tcp4(uint16_t port = 0) {
  ListenAddress a;
  a.kind = ListenAddress::Kind::kTcp4;
  a.host = "127.0.0.1";
  a.port = port;
  return a;
}

ListenAddress Tcp6(uint16_t port = 0) {
  ListenAddress a;
  a.kind = ListenAddress::Kind::kTcp6;
  a.host = "::1";
  a.port = port;
  return a;
}

ListenAddress UnixAt(const std::string& path) {
  ListenAddress a;
  a.kind = ListenAddress::Kind::kUnix;
  a.path = path;
  return a;
}

uint16_t PortOf(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// Which handler answered, on which listener, for whom.
HttpResponse Describe(const HttpRequest& r, const char* who) {
  json::object o;
  o["who"] = who;
  o["listener"] = r.listener;
  o["peer_uid"] = r.peer_uid;
  o["target"] = r.target;
  o["body"] = r.body;
  return {200, "application/json", json::serialize(o)};
}

NetOptions ProxyOptions(const TempDir& dir, std::vector<ListenAddress> listen) {
  NetOptions o = Options(dir);
  o.proxy_listen = std::move(listen);
  o.proxy_handler = SyncHandler([](const HttpRequest& r) { return Describe(r, "proxy"); });
  return o;
}

HttpHandler ApiHandler() {
  return SyncHandler([](const HttpRequest& r) { return Describe(r, "api"); });
}

// Why [::1] cannot be bound here (EADDRNOTAVAIL: no IPv6 loopback), or "" when it can.
std::string Ipv6LoopbackMissing() {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";  // not a reason to skip: the test then fails and says why
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  const int err = errno;
  close(fd);
  if (rc != 0 && err == EADDRNOTAVAIL) {
    return "binding [::1]:0 fails with EADDRNOTAVAIL: this host has no IPv6 loopback";
  }
  return "";
}

void ExpectProxyAnswers(const std::string& address) {
  auto r = TcpCall(address, "POST", "/v1/messages", R"({"model":"m"})");
  ASSERT_TRUE(r.has_value()) << "no complete response from " << address;
  EXPECT_EQ(r->status, 200);
  json::object o = ParseObject(r->body);
  EXPECT_EQ(Str(o, "who"), "proxy");
  EXPECT_EQ(Str(o, "listener"), address);
  EXPECT_EQ(Str(o, "target"), "/v1/messages");
  EXPECT_EQ(Str(o, "body"), R"({"model":"m"})");
  auto* uid = o.if_contains("peer_uid");
  ASSERT_NE(uid, nullptr);
  EXPECT_EQ(uid->to_number<int64_t>(), static_cast<int64_t>(geteuid()));
}

TEST(ProxyListenerTest, LoopbackTcp4GoesToTheProxyHandlerAndTheApiSocketToTheApi) {
  TempDir dir;
  RunningServer server(ProxyOptions(dir, {Tcp4()}), ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<std::string> addresses = server->ProxyAddresses();
  ASSERT_EQ(addresses.size(), 1u);
  EXPECT_EQ(addresses[0].rfind("127.0.0.1:", 0), 0u) << addresses[0];
  EXPECT_NE(PortOf(addresses[0]), 0) << "the bound port is reported, not the 0 asked for";
  ExpectProxyAnswers(addresses[0]);

  auto api = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/v1/health");
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  json::object o = ParseObject(api->body);
  EXPECT_EQ(Str(o, "who"), "api");
  EXPECT_EQ(Str(o, "listener"), "api");
}

TEST(ProxyListenerTest, LoopbackTcp6GoesToTheProxyHandler) {
  if (std::string why = Ipv6LoopbackMissing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  RunningServer server(ProxyOptions(dir, {Tcp6(), Tcp4()}), ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<std::string> addresses = server->ProxyAddresses();
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_EQ(addresses[0].rfind("[::1]:", 0), 0u) << addresses[0];
  EXPECT_NE(PortOf(addresses[0]), 0);
  ExpectProxyAnswers(addresses[0]);
  ExpectProxyAnswers(addresses[1]);
}

TEST(ProxyListenerTest, UnixProxyListenerIsBoundLikeTheApiSocket) {
  TempDir dir;
  const std::string path = dir.Join("run/proxy.sock");
  RunningServer server(ProxyOptions(dir, {UnixAt(path)}), ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  EXPECT_EQ(server->ProxyAddresses(), std::vector<std::string>{"unix:" + path});
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto r = UnixHttpCall(path, "POST", "/v1/chat/completions", "{}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  json::object o = ParseObject(r->body);
  EXPECT_EQ(Str(o, "who"), "proxy");
  EXPECT_EQ(Str(o, "listener"), "unix:" + path);
  server.StopAndJoin(1s);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the proxy socket file is removed on shutdown";
}

TEST(ProxyListenerTest, ProxyListenersHaveTheirOwnBodyLimit) {
  TempDir dir;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  opts.body_limit = 64;
  opts.proxy_body_limit = 4096;
  RunningServer server(opts, ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string big(1000, 'x');
  auto proxied = TcpCall(server->ProxyAddresses()[0], "POST", "/v1/messages", big);
  ASSERT_TRUE(proxied.has_value());
  EXPECT_EQ(proxied->status, 200);
  EXPECT_EQ(Str(ParseObject(proxied->body), "body"), big);
  auto api = UnixHttpCall(dir.Join("run/missyd.sock"), "POST", "/v1/x", big);
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(api->status, 413);
  auto too_big =
      TcpCall(server->ProxyAddresses()[0], "POST", "/v1/messages", std::string(5000, 'y'));
  ASSERT_TRUE(too_big.has_value());
  EXPECT_EQ(too_big->status, 413);
}

// Records what a body watch was shown.
class RecordingWatch final : public BodyWatch {
 public:
  void Arrived(size_t offset, std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    if (offset != seen.size()) gaps = true;
    seen.append(bytes);
    ++calls;
  }
  std::mutex mu;
  std::string seen;
  int calls = 0;
  bool gaps = false;
};

// A large body is shown to the endpoint's watch as it arrives, every byte in order, and the
// request carries the watch; a small one is not watched.
TEST(ProxyListenerTest, ALargeBodyIsShownToTheWatchAsItArrives) {
  TempDir dir;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  std::mutex mu;
  std::vector<std::string> heads;  // method and target of each head the factory got
  std::shared_ptr<RecordingWatch> watch;
  opts.proxy_body_watch = [&](const HttpRequest& head) -> std::shared_ptr<BodyWatch> {
    std::lock_guard<std::mutex> lock(mu);
    heads.push_back(head.method + " " + head.target + " " + head.headers.at("content-length") +
                    " body " + std::to_string(head.body.size()));
    watch = std::make_shared<RecordingWatch>();
    return watch;
  };
  std::shared_ptr<BodyWatch> carried;
  opts.proxy_handler = SyncHandler([&](const HttpRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    carried = r.body_watch;
    return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
  });
  RunningServer server(opts, ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  auto r = TcpCall(server->ProxyAddresses()[0], "POST", "/s/a/v1/messages?beta=true", big);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, std::to_string(big.size()));
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(heads, std::vector<std::string>{"POST /s/a/v1/messages?beta=true 3145728 body 0"});
    ASSERT_NE(watch, nullptr);
    EXPECT_EQ(carried, watch);
    std::lock_guard<std::mutex> seen_lock(watch->mu);
    EXPECT_TRUE(watch->seen == big) << watch->seen.size() << " bytes seen";
    EXPECT_FALSE(watch->gaps);
    EXPECT_GT(watch->calls, 1);  // read by read, not once at the end
    carried.reset();
  }
  auto small = TcpCall(server->ProxyAddresses()[0], "POST", "/v1/messages", "{}");
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->body, "2");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(heads.size(), 1u);
  EXPECT_EQ(carried, nullptr);
}

TEST(ProxyListenerTest, ExtraResponseHeadersArriveAfterTheServersOwn) {
  TempDir dir;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  opts.proxy_handler = SyncHandler([](const HttpRequest& r) {
    HttpResponse out = Describe(r, "proxy");
    out.headers = {{"request-id", "req_1"},
                   {"retry-after", "3"},
                   {"Content-Length", "999"},              // the server's: ignored
                   {"connection", "keep-alive"},           // the server's: ignored
                   {"bad name", "v"},                      // not a token: dropped
                   {"x-split", "a\r\nset-cookie: evil"}};  // CR LF: dropped
    return out;
  });
  RunningServer server(opts, SyncHandler([](const HttpRequest& r) {
                         HttpResponse out = Describe(r, "api");
                         out.headers = {{"x-missy-extra", "yes"}};
                         return out;
                       }));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto r = TcpCall(server->ProxyAddresses()[0], "GET", "/v1/models", "");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Str(ParseObject(r->body), "who"), "proxy");
  EXPECT_EQ(r->Header("request-id"), "req_1");
  EXPECT_EQ(r->Header("retry-after"), "3");
  EXPECT_EQ(r->Header("content-length"), std::to_string(r->body.size()));
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_EQ(r->Header("set-cookie"), "<absent>");
  EXPECT_EQ(r->Header("x-split"), "<absent>");
  int content_lengths = 0;
  for (const auto& [name, value] : r->headers) content_lengths += name == "content-length";
  EXPECT_EQ(content_lengths, 1);
  EXPECT_LT(r->HeaderIndex("server"), r->HeaderIndex("request-id"));
  EXPECT_LT(r->HeaderIndex("content-length"), r->HeaderIndex("request-id"));
  EXPECT_LT(r->HeaderIndex("request-id"), r->HeaderIndex("retry-after"));

  auto api = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/v1/health");
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(api->headers["x-missy-extra"], "yes");
}

TEST(ProxyListenerTest, StreamedAnswerCarriesHeadersAndArrivesChunkByChunk) {
  TempDir dir;
  std::promise<void> go;
  std::shared_future<void> go_signal = go.get_future().share();
  std::mutex mu;
  std::thread producer;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  opts.proxy_handler = [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    auto stream = exchange->Stream(200, "text/event-stream",
                                   {{"request-id", "req_s"},
                                    {"openai-processing-ms", "12"},
                                    {"Transfer-Encoding", "identity"}});  // ignored
    stream->Write("event: one\ndata: 1\n\n");
    std::lock_guard<std::mutex> lock(mu);
    producer = std::thread([stream, go_signal] {
      go_signal.wait_for(5s);
      stream->Write("event: two\ndata: 2\n\n");
      stream->End();
    });
  };
  RunningServer server(opts, ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  TcpClient client(server->ProxyAddresses()[0]);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(
      client.Send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  "Content-Length: 2\r\n\r\n{}"));
  const std::string first = client.ReadUntil("data: 1\n\n", 5s);
  EXPECT_NE(first.find("data: 1\n\n"), std::string::npos) << first;
  EXPECT_EQ(first.find("data: 2"), std::string::npos) << "the second chunk is not written yet";
  go.set_value();
  auto r = ParseWireResponse(client.ReadAll(5s));
  {
    std::lock_guard<std::mutex> lock(mu);
    if (producer.joinable()) producer.join();
  }
  ASSERT_TRUE(r.has_value()) << "the streamed response did not end cleanly";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-type"), "text/event-stream");
  EXPECT_EQ(r->Header("cache-control"), "no-cache");
  EXPECT_EQ(r->Header("transfer-encoding"), "chunked");
  EXPECT_EQ(r->Header("request-id"), "req_s");
  EXPECT_EQ(r->Header("openai-processing-ms"), "12");
  EXPECT_EQ(r->chunks,
            (std::vector<std::string>{"event: one\ndata: 1\n\n", "event: two\ndata: 2\n\n"}));
  EXPECT_TRUE(client.eof());
}

TEST(ProxyListenerTest, APortInUseFailsWithAClearStatus) {
  // A port held by another program.
  int squatter = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(squatter, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(squatter, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(squatter, 4), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(squatter, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  {
    TempDir dir;
    auto r = NetServer::Create(ProxyOptions(dir, {Tcp4(port)}), ApiHandler());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
    EXPECT_NE(r.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << r.status().ToString();
    EXPECT_NE(access(dir.Join("run/missyd.sock").c_str(), F_OK), 0)
        << "the API socket bound before the failure is removed";
  }
  close(squatter);

  // A port held by another missyd.
  TempDir first_dir;
  RunningServer first(ProxyOptions(first_dir, {Tcp4()}), ApiHandler());
  ASSERT_TRUE(first.status().ok()) << first.status().ToString();
  const std::string taken = first->ProxyAddresses()[0];
  TempDir second_dir;
  auto second = NetServer::Create(ProxyOptions(second_dir, {Tcp4(PortOf(taken))}), ApiHandler());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find(taken), std::string::npos) << second.status().ToString();
  ExpectProxyAnswers(taken);  // the first one is unharmed
}

TEST(ProxyListenerTest, NonLoopbackAddressesAreRefused) {
  EXPECT_FALSE(ParseListenAddress("0.0.0.0:8788").ok());
  TempDir dir;
  ListenAddress open_to_all = Tcp4(0);
  open_to_all.host = "0.0.0.0";  // built by hand: the server refuses it too
  auto r = NetServer::Create(ProxyOptions(dir, {open_to_all}), ApiHandler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("0.0.0.0:0"), std::string::npos) << r.status().ToString();
}

TEST(ProxyListenerTest, ProxyListenersNeedAHandler) {
  TempDir dir;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  opts.proxy_handler = nullptr;
  auto r = NetServer::Create(opts, ApiHandler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  opts = ProxyOptions(dir, {UnixAt(dir.Join("run/missyd.sock"))});
  r = NetServer::Create(opts, ApiHandler());
  ASSERT_FALSE(r.ok()) << "a proxy socket on the API socket's path";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// The child: connect as uid 65534, send one request, copy the answer to `out`. Only
// system calls: the parent has threads.
[[noreturn]] void ConnectAsNobody(uint16_t port, int out) {
  if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) _exit(3);
  static const char kRequest[] =
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
  if (send(fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL) < 0) _exit(4);
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
    if (write(out, buf, static_cast<size_t>(n)) != n) _exit(5);
  }
  _exit(0);
}

TEST(ProxyListenerTest, AnotherUserIsAnswered403AndReported) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "connecting as another user (uid 65534) needs root; running as uid "
                 << geteuid();
  }
  TempDir dir;
  std::atomic<int> proxied{0};
  std::mutex mu;
  std::vector<std::pair<std::string, uint32_t>> events;
  NetOptions opts = ProxyOptions(dir, {Tcp4()});
  opts.proxy_handler = SyncHandler([&](const HttpRequest& r) {
    ++proxied;
    return Describe(r, "proxy");
  });
  opts.on_security_event = [&](const std::string& what, uint32_t uid, int32_t) {
    std::lock_guard<std::mutex> lock(mu);
    events.emplace_back(what, uid);
  };
  RunningServer server(opts, ApiHandler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string address = server->ProxyAddresses()[0];

  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    ConnectAsNobody(PortOf(address), pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::string raw;
  const auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int wstatus = 0;
  if (Clock::now() >= deadline) kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "the child did not finish";
  ASSERT_EQ(WEXITSTATUS(wstatus), 0) << "the child failed at step " << WEXITSTATUS(wstatus);

  auto r = ParseWireResponse(raw);
  ASSERT_TRUE(r.has_value()) << raw;
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(r->body, R"({"type":"error","error":{"type":"permission_error","message":)"
                     R"("missyd proxy: only the user running missyd may use this proxy"}})");
  EXPECT_EQ(r->Header("content-type"), "application/json");
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_EQ(proxied.load(), 0);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].first, "peer uid mismatch on " + address);
  EXPECT_EQ(events[0].second, 65534u);
}

}  // namespace
}  // namespace missy::net_test
