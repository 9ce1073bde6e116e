#include "daemon/net.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "daemon/http_client.h"
#include "test_util.h"

namespace missy {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::TempDir;

HttpResponse Echo(const HttpRequest& r) {
  json::object o;
  o["method"] = r.method;
  o["target"] = r.target;
  o["body"] = r.body;
  o["peer_uid"] = r.peer_uid;
  o["peer_pid"] = r.peer_pid;
  auto it = r.headers.find("x-custom");
  o["x_custom"] = it == r.headers.end() ? "" : it->second;
  return {200, "application/json", json::serialize(o)};
}

json::object ParseObject(const std::string& s) {
  boost::system::error_code ec;
  json::value v = json::parse(s, ec);
  EXPECT_FALSE(ec) << "not JSON: " << s;
  if (ec || !v.is_object()) return {};
  return v.get_object();
}

std::string Str(const json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string("<missing>");
}

// A NetServer running on its own thread; stopped and joined on destruction.
class RunningServer {
 public:
  RunningServer(NetOptions options, HttpHandler handler, BacklogProvider backlog = {}) {
    auto r = NetServer::Create(options, std::move(handler), std::move(backlog));
    status_ = r.status();
    if (!r.ok()) return;
    server_ = std::move(r).value();
    thread_ = std::thread([this] {
      server_->Run();
      returned_ = true;
    });
  }
  ~RunningServer() { StopAndJoin(1s); }

  const Status& status() const { return status_; }
  NetServer* operator->() { return server_.get(); }
  NetServer& server() { return *server_; }
  bool returned() const { return returned_; }

  // Stops and waits for Run() to return; returns how long it took.
  Clock::duration StopAndJoin(std::chrono::milliseconds grace) {
    auto start = Clock::now();
    if (server_ && thread_.joinable()) {
      server_->Stop(grace);
      thread_.join();
    }
    return Clock::now() - start;
  }

 private:
  Status status_;
  std::unique_ptr<NetServer> server_;
  std::thread thread_;
  std::atomic<bool> returned_{false};
};

NetOptions Options(const TempDir& dir) {
  NetOptions o;
  o.api_socket_path = dir.Join("run/missyd.sock");
  o.audit_socket_path = dir.Join("run/audit.sock");
  return o;
}

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds timeout = 5s) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

// A Unix socket file with nobody listening on it (what a crashed daemon leaves).
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  close(fd);
}

// A plain client socket for byte-level tests.
class RawSocket {
 public:
  explicit RawSocket(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Reads until `needle` was received, EOF or the timeout; returns everything read.
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (received_.find(needle) == std::string::npos && !eof_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
      } else {
        received_.append(buf, static_cast<size_t>(n));
      }
    }
    return received_;
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  std::string received_;
  bool eof_ = false;
};

std::string ErrorCode(const ClientResponse& r) {
  auto o = ParseObject(r.body);
  auto* err = o.if_contains("error");
  if (!err || !err->is_object()) return "<no error object>";
  return Str(err->get_object(), "code");
}

// ---------------------------------------------------------------------------------------
// HTTP.

TEST(NetServerTest, RoundTrip) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();

  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "POST", "/v1/echo?x=1", R"({"a":1})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "application/json");
  EXPECT_EQ(r->headers["server"], "missyd");
  EXPECT_EQ(r->headers["content-length"], std::to_string(r->body.size()));
  auto o = ParseObject(r->body);
  EXPECT_EQ(Str(o, "method"), "POST");
  EXPECT_EQ(Str(o, "target"), "/v1/echo?x=1");
  EXPECT_EQ(Str(o, "body"), R"({"a":1})");
  EXPECT_EQ(o["peer_uid"].to_number<int64_t>(), static_cast<int64_t>(geteuid()));
  EXPECT_EQ(o["peer_pid"].to_number<int64_t>(), static_cast<int64_t>(getpid()));
}

TEST(NetServerTest, HeadersAreLowerCasedAndStatusAndTypeAreKept) {
  TempDir dir;
  RunningServer server(Options(dir), [](const HttpRequest& r) {
    if (r.target == "/text") return HttpResponse{404, "text/plain", "nope"};
    return Echo(r);
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  auto r = conn.SendRaw("GET /h HTTP/1.1\r\nHost: x\r\nX-CUSTOM: Value 1\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Str(ParseObject(r->body), "x_custom"), "Value 1");
  auto t = conn.Call("GET", "/text");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->status, 404);
  EXPECT_EQ(t->headers["content-type"], "text/plain");
  EXPECT_EQ(t->body, "nope");
}

TEST(NetServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  // SendRaw never reconnects: every answer below came over the same connection.
  for (int i = 0; i < 5; ++i) {
    std::string target = "/req/" + std::to_string(i);
    auto r = conn.SendRaw("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(Str(ParseObject(r->body), "target"), target);
    EXPECT_TRUE(conn.connected()) << i;
  }
  // Two pipelined requests in one write get two answers in order.
  auto first =
      conn.SendRaw("GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Str(ParseObject(first->body), "target"), "/p1");
  auto second = conn.SendRaw("");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Str(ParseObject(second->body), "target"), "/p2");

  // Many calls through the persistent client.
  for (int i = 0; i < 1000; ++i) {
    auto r = conn.Call("POST", "/many", std::to_string(i));
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    ASSERT_EQ(Str(ParseObject(r->body), "body"), std::to_string(i));
  }
}

TEST(NetServerTest, OversizedBodyGets413AndServerKeepsServing) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.body_limit = 1024;
  RunningServer server(opts, Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string sock = dir.Join("run/missyd.sock");

  for (size_t size : {size_t{1025}, size_t{4} << 20}) {  // small, and larger than socket buffers
    auto r = UnixHttpCall(sock, "POST", "/big", std::string(size, 'x'));
    ASSERT_TRUE(r.ok()) << size << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(
        r->body,
        R"({"error":{"code":"payload_too_large","message":"request body exceeds 1024 bytes","field":""}})");
    EXPECT_EQ(r->headers["connection"], "close");
  }
  auto ok = UnixHttpCall(sock, "POST", "/small", std::string(1024, 'y'));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Str(ParseObject(ok->body), "body"), std::string(1024, 'y'));

  // A chunked body over the limit is caught while reading it.
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(sock).ok());
  std::string chunk(800, 'z');
  auto c = conn.SendRaw("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" +
                        chunk + "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->status, 413);
  EXPECT_EQ(ErrorCode(*c), "payload_too_large");
}

TEST(NetServerTest, ChunkedAndExpectContinueBodiesReachTheHandler) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  auto c = conn.SendRaw(
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Str(ParseObject(c->body), "body"), "abcde");

  // curl sends Expect: 100-continue for large bodies and waits for the interim answer.
  RawSocket raw(dir.Join("run/missyd.sock"));
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(
      raw.Send("POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_EQ(raw.ReadUntil("\r\n\r\n", 5s), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(raw.Send("hello"));
  std::string all = raw.ReadUntil(R"("body":"hello")", 5s);
  EXPECT_NE(all.find("HTTP/1.1 200 OK\r\n"), std::string::npos) << all;
  EXPECT_NE(all.find(R"("body":"hello")"), std::string::npos) << all;
}

TEST(NetServerTest, HugeHeaderGets431) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.header_limit = 1024;
  RunningServer server(opts, Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  auto r =
      conn.SendRaw("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'h') + "\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(
      r->body,
      R"({"error":{"code":"headers_too_large","message":"request headers exceed 1024 bytes","field":""}})");
  EXPECT_FALSE(conn.connected());
  auto ok = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/after");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST(NetServerTest, MalformedRequestsGet400) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<std::string> bad = {
      "GARBAGE\r\n\r\n",
      "GET / HTTP/9.9\r\n\r\n",
      "GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
      "GET / HTTP/1.1\r\nBad Header Line\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
  };
  for (const auto& raw : bad) {
    UnixHttpConnection conn;
    ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
    auto r = conn.SendRaw(raw, 5s);
    ASSERT_TRUE(r.ok()) << raw << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 400) << raw;
    EXPECT_EQ(ErrorCode(*r), "invalid_argument") << raw;
    EXPECT_NE(r->body.find("malformed HTTP request"), std::string::npos) << r->body;
    EXPECT_FALSE(conn.connected()) << raw;
  }
  auto ok = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/after");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST(NetServerTest, HandlerExceptionGets500) {
  TempDir dir;
  RunningServer server(Options(dir), [](const HttpRequest& r) -> HttpResponse {
    if (r.target == "/throw") throw std::runtime_error("boom");
    return Echo(r);
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  auto r = conn.Call("GET", "/throw");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(ErrorCode(*r), "internal");
  auto ok = conn.Call("GET", "/fine");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST(NetServerTest, ReadTimeoutClosesIdleAndPartialConnections) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.read_timeout = 200ms;
  RunningServer server(opts, Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();

  for (const std::string partial : {"", "GET / HTTP/1.1\r\nHost: x\r\n"}) {
    auto start = Clock::now();
    RawSocket raw(dir.Join("run/missyd.sock"));
    ASSERT_TRUE(raw.ok());
    if (!partial.empty()) {
      ASSERT_TRUE(raw.Send(partial));
    }
    std::string got = raw.ReadUntil("never sent", 3s);
    auto elapsed = Clock::now() - start;
    EXPECT_TRUE(raw.eof()) << "partial=" << partial;
    EXPECT_EQ(got, "") << "partial=" << partial;
    EXPECT_GE(elapsed, 150ms);
    EXPECT_LT(elapsed, 2s);
  }

  // A keep-alive connection left idle is closed too; the client reconnects transparently.
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  ASSERT_TRUE(conn.Call("GET", "/one").ok());
  std::this_thread::sleep_for(400ms);
  auto again = conn.Call("GET", "/two");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Str(ParseObject(again->body), "target"), "/two");
}

// ---------------------------------------------------------------------------------------
// Socket files.

TEST(NetServerTest, CreatesDirectory0700AndSocket0600AndRemovesThemOnStop) {
  TempDir dir;
  NetOptions opts;
  opts.api_socket_path = dir.Join("a/b/missyd.sock");
  opts.audit_socket_path = dir.Join("a/b/audit.sock");
  auto server = std::make_unique<RunningServer>(opts, Echo);
  ASSERT_TRUE(server->status().ok()) << server->status().ToString();
  struct stat st;
  for (const char* d : {"a", "a/b"}) {
    ASSERT_EQ(stat(dir.Join(d).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
  }
  for (const char* s : {"a/b/missyd.sock", "a/b/audit.sock"}) {
    ASSERT_EQ(lstat(dir.Join(s).c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode)) << s;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << s;
  }
  server->StopAndJoin(1s);
  EXPECT_NE(lstat(dir.Join("a/b/missyd.sock").c_str(), &st), 0);
  EXPECT_NE(lstat(dir.Join("a/b/audit.sock").c_str(), &st), 0);
}

TEST(NetServerTest, StaleSocketFileIsReplaced) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.Join("run").c_str(), 0700), 0);
  MakeStaleSocket(dir.Join("run/missyd.sock"));
  MakeStaleSocket(dir.Join("run/audit.sock"));
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(NetServerTest, LiveSocketIsRefused) {
  TempDir dir;
  RunningServer first(Options(dir), Echo);
  ASSERT_TRUE(first.status().ok()) << first.status().ToString();

  auto second = NetServer::Create(Options(dir), Echo);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(second.status().message(),
            "another missyd is listening on " + dir.Join("run/missyd.sock"));

  // Only the audit socket is live: refused as well, and the first server is untouched.
  NetOptions other = Options(dir);
  other.api_socket_path = dir.Join("run/other.sock");
  auto third = NetServer::Create(other, Echo);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().message(),
            "another missyd is listening on " + dir.Join("run/audit.sock"));
  struct stat st;
  EXPECT_NE(lstat(dir.Join("run/other.sock").c_str(), &st), 0) << "failed Create must clean up";

  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/still-there");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(NetServerTest, NonSocketFileIsNotReplaced) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.Join("run").c_str(), 0700), 0);
  testing::WriteFileOrDie(dir.Join("run/missyd.sock"), "precious");
  auto r = NetServer::Create(Options(dir), Echo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(testing::ReadFileOrDie(dir.Join("run/missyd.sock")), "precious");
}

TEST(NetServerTest, PeerRuleIsSameUidOnly) {
  EXPECT_TRUE(PeerAllowed(1000, 1000));
  EXPECT_FALSE(PeerAllowed(1001, 1000));
  EXPECT_FALSE(PeerAllowed(0, 1000));
  EXPECT_FALSE(PeerAllowed(1000, 0));
}

// ---------------------------------------------------------------------------------------
// Shutdown, timers, signals.

TEST(NetServerTest, StopLetsInFlightRequestFinish) {
  TempDir dir;
  std::atomic<bool> entered{false};
  RunningServer server(Options(dir), [&](const HttpRequest& r) {
    if (r.target == "/slow") {
      entered = true;
      std::this_thread::sleep_for(200ms);
    }
    return Echo(r);
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string sock = dir.Join("run/missyd.sock");

  // An idle keep-alive connection must not hold the shutdown back.
  UnixHttpConnection idle(sock);
  ASSERT_TRUE(idle.Call("GET", "/warm").ok());

  Result<ClientResponse> slow = Status::Internal("not run");
  std::thread client([&] { slow = UnixHttpCall(sock, "POST", "/slow", "payload"); });
  ASSERT_TRUE(WaitUntil([&] { return entered.load(); }));
  auto took = server.StopAndJoin(5s);
  client.join();

  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(slow->status, 200);
  EXPECT_EQ(Str(ParseObject(slow->body), "body"), "payload");
  EXPECT_TRUE(server.returned());
  EXPECT_LT(took, 2s);
  auto after = UnixHttpCall(sock, "GET", "/late", {}, 1s);
  EXPECT_FALSE(after.ok());
}

TEST(NetServerTest, GraceBoundsARequestThatNeverCompletes) {
  TempDir dir;
  std::atomic<int> handled{0};
  RunningServer server(Options(dir), [&](const HttpRequest& r) {
    ++handled;
    return Echo(r);
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  RawSocket raw(dir.Join("run/missyd.sock"));
  ASSERT_TRUE(raw.ok());
  // Headers and 3 of the 10 announced body bytes: the request is in flight for good.
  ASSERT_TRUE(raw.Send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  std::this_thread::sleep_for(50ms);  // let the server start reading it
  auto took = server.StopAndJoin(300ms);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(raw.ReadUntil("never sent", 2s), "");
  EXPECT_TRUE(raw.eof());
  EXPECT_EQ(handled.load(), 0);
}

TEST(NetServerTest, StopWithNothingInFlightReturnsQuickly) {
  TempDir dir;
  NetOptions opts = Options(dir);
  RunningServer server(opts, Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));
  auto took = server.StopAndJoin(5s);
  EXPECT_LT(took, 1s);
  auto line = sub.ReadLine(2s);
  EXPECT_FALSE(line.ok());
  EXPECT_TRUE(sub.eof());
}

TEST(NetServerTest, StopBeforeRunMakesRunReturn) {
  TempDir dir;
  auto r = NetServer::Create(Options(dir), Echo);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  (*r)->Stop(1s);
  (*r)->Stop(1s);  // idempotent
  auto start = Clock::now();
  (*r)->Run();
  EXPECT_LT(Clock::now() - start, 1s);
}

TEST(NetServerTest, EveryRepeatsUntilStop) {
  TempDir dir;
  std::atomic<int> ticks{0};
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  server->Every(20ms, [&] { ++ticks; });
  ASSERT_TRUE(WaitUntil([&] { return ticks.load() >= 3; }));
  server.StopAndJoin(1s);
  int at_stop = ticks.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(ticks.load(), at_stop);
}

TEST(NetServerTest, SignalsReloadAndStop) {
  TempDir dir;
  auto r = NetServer::Create(Options(dir), Echo);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  NetServer& server = **r;
  std::atomic<int> reloads{0};
  server.HandleSignals([&] { ++reloads; });
  std::thread loop([&] { server.Run(); });
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil([&] { return reloads.load() == 1; }));
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  loop.join();  // Run() returns: the test would hang (and time out) otherwise
  EXPECT_EQ(reloads.load(), 1);
}

// ---------------------------------------------------------------------------------------
// Broadcast.

std::string EventLine(int64_t seq, const std::string& type, size_t pad = 0) {
  json::object o;
  o["seq"] = seq;
  o["event_type"] = type;
  if (pad) o["pad"] = std::string(pad, 'p');
  return json::serialize(o);
}

int64_t SeqOf(const std::string& line) {
  auto o = ParseObject(line);
  auto* s = o.if_contains("seq");
  return s && s->is_int64() ? s->get_int64() : -999;
}

TEST(NetBroadcastTest, TwoSubscribersReceiveLinesInOrder) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber a, b;
  ASSERT_TRUE(a.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(b.Connect(dir.Join("run/audit.sock")).ok());  // no first line: 1 s wait, no loss
  ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 2; }));
  for (int64_t i = 1; i <= 100; ++i) server->Publish(i, "t", EventLine(i, "t"));
  for (LineSubscriber* s : {&a, &b}) {
    for (int64_t i = 1; i <= 100; ++i) {
      auto line = s->ReadLine(5s);
      ASSERT_TRUE(line.ok()) << i << ": " << line.status().ToString();
      ASSERT_EQ(*line, EventLine(i, "t"));
    }
    EXPECT_FALSE(s->ReadLine(50ms).ok());
    EXPECT_TRUE(s->timed_out());
  }
  a.Close();
  EXPECT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));
}

TEST(NetBroadcastTest, BacklogThenLiveWithoutGapOrDuplicate) {
  TempDir dir;
  std::atomic<NetServer*> srv{nullptr};
  std::mutex mu;
  std::vector<SubscribeRequest> requests;
  // The "database" holds events 1..12 when the backlog is read; 11..15 are published
  // while the backlog is being fetched (11 and 12 were persisted just before).
  auto backlog = [&](const SubscribeRequest& req) {
    {
      std::lock_guard<std::mutex> lock(mu);
      requests.push_back(req);
    }
    for (int64_t i = 11; i <= 15; ++i) srv.load()->Publish(i, "t", EventLine(i, "t"));
    std::vector<std::string> lines;
    for (int64_t i = req.since + 1; i <= 12; ++i) lines.push_back(EventLine(i, "t"));
    return lines;
  };
  RunningServer server(Options(dir), Echo, backlog);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  srv = &server.server();

  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":3})").ok());
  for (int64_t want = 4; want <= 15; ++want) {
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << want << ": " << line.status().ToString();
    ASSERT_EQ(SeqOf(*line), want);
  }
  server->Publish(16, "t", EventLine(16, "t"));
  auto line = sub.ReadLine(5s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(SeqOf(*line), 16);
  EXPECT_FALSE(sub.ReadLine(50ms).ok());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].since, 3);
  EXPECT_TRUE(requests[0].types.empty());
}

TEST(NetBroadcastTest, LargeBacklogIsNotCutOff) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.subscriber_buffer_bytes = 4096;  // the backlog is far larger
  RunningServer server(opts, Echo, [](const SubscribeRequest& req) {
    std::vector<std::string> lines;
    for (int64_t i = req.since + 1; i <= 2000; ++i) lines.push_back(EventLine(i, "t", 100));
    return lines;
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0})").ok());
  for (int64_t want = 1; want <= 2000; ++want) {
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << want << ": " << line.status().ToString();
    ASSERT_EQ(SeqOf(*line), want);
  }
}

TEST(NetBroadcastTest, TypeFilterAppliesToLiveLines) {
  TempDir dir;
  std::vector<std::string> seen_types;
  RunningServer server(Options(dir), Echo, [&](const SubscribeRequest& req) {
    seen_types = req.types;
    return std::vector<std::string>{EventLine(1, "a")};
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0,"types":["a","c"]})").ok());
  auto first = sub.ReadLine(5s);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, EventLine(1, "a"));
  EXPECT_EQ(seen_types, (std::vector<std::string>{"a", "c"}));
  const char* types[] = {"a", "b", "c", "b", "a"};
  for (int64_t i = 2; i <= 6; ++i) server->Publish(i, types[i - 2], EventLine(i, types[i - 2]));
  std::vector<int64_t> got;
  for (int k = 0; k < 3; ++k) {
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    got.push_back(SeqOf(*line));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_FALSE(sub.ReadLine(50ms).ok());
}

TEST(NetBroadcastTest, MalformedFirstLineGetsErrorLineAndClose) {
  TempDir dir;
  RunningServer server(Options(dir), Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  for (const char* bad : {"not json", R"({"since":"x"})", R"({"types":[1]})", R"({"sinse":1})"}) {
    LineSubscriber sub;
    ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), bad).ok());
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << bad << ": " << line.status().ToString();
    auto o = ParseObject(*line);
    EXPECT_EQ(Str(o, "event_type"), "audit.error") << *line;
    EXPECT_FALSE(sub.ReadLine(5s).ok());
    EXPECT_TRUE(sub.eof()) << bad;
  }
}

TEST(NetBroadcastTest, SlowSubscriberIsCutOffWithoutSlowingOthers) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.subscriber_buffer_bytes = 64 * 1024;
  RunningServer server(opts, Echo);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();

  LineSubscriber slow, fast;
  ASSERT_TRUE(slow.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(fast.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 2; }));

  constexpr int64_t kLines = 5000;  // ~1.1 MB in total, far beyond the slow one's buffers
  std::atomic<int64_t> fast_got{0};
  std::atomic<bool> fast_in_order{true};
  std::thread reader([&] {
    for (int64_t i = 1; i <= kLines; ++i) {
      auto line = fast.ReadLine(10s);
      if (!line.ok() || SeqOf(*line) != i) {
        fast_in_order = false;
        return;
      }
      fast_got = i;
    }
  });
  Clock::duration worst{0};
  for (int64_t i = 1; i <= kLines; ++i) {
    auto start = Clock::now();
    server->Publish(i, "t", EventLine(i, "t", 200));
    worst = std::max(worst, Clock::now() - start);
    if (i % 100 == 0) {  // let the fast reader keep up so its own buffer never fills
      ASSERT_TRUE(WaitUntil([&] { return fast_got.load() >= i || !fast_in_order; }, 10s)) << i;
    }
  }
  reader.join();
  EXPECT_TRUE(fast_in_order.load());
  EXPECT_EQ(fast_got.load(), kLines);
  EXPECT_LT(worst, 500ms) << "Publish blocked";
  ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));

  // The slow one got an in-order prefix, then (best effort) the gap notice, then EOF.
  int64_t last = 0;
  for (;;) {
    auto line = slow.ReadLine(5s);
    if (!line.ok()) {
      EXPECT_TRUE(slow.eof()) << line.status().ToString();
      break;
    }
    auto o = ParseObject(*line);
    if (Str(o, "event_type") == "audit.gap") {
      auto& d = o["detail"].as_object();
      EXPECT_EQ(Str(d, "reason"), "subscriber too slow");
      EXPECT_EQ(d["dropped_from_seq"].to_number<int64_t>(), last + 1);
      continue;
    }
    ASSERT_EQ(SeqOf(*line), last + 1);
    last = SeqOf(*line);
  }
  EXPECT_GT(last, 0);
  EXPECT_LT(last, kLines);
}

}  // namespace
}  // namespace missy
