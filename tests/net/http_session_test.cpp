// Tests of daemon/net/http_session.cpp: reading requests and writing answers (keep-alive,
// limits, malformed input, timeouts).
#include <gtest/gtest.h>

#include <stdexcept>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

TEST(HttpSessionTest, RoundTrip) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
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

TEST(HttpSessionTest, HeadersAreLowerCasedAndStatusAndTypeAreKept) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler([](const HttpRequest& r) {
                         if (r.target == "/text") return HttpResponse{404, "text/plain", "nope"};
                         return Echo(r);
                       }));
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

TEST(HttpSessionTest, KeepAliveServesManyRequestsOnOneConnection) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
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

TEST(HttpSessionTest, OversizedBodyGets413AndServerKeepsServing) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.body_limit = 1024;
  RunningServer server(opts, SyncHandler(Echo));
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

TEST(HttpSessionTest, ALargeBodyArrivesWholeAndTheRequestBehindItStaysForItsTurn) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  // Over 64 KB with a declared length: read straight into the body, in as few reads as
  // the socket allows. The bytes of the next request, sent in the same write, are not
  // part of it.
  std::string body(3 << 20, ' ');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 26);
  auto r = conn.SendRaw("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body +
                        "GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(Str(ParseObject(r->body), "body") == body);
  auto next = conn.SendRaw("");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(Str(ParseObject(next->body), "target"), "/next");
  EXPECT_EQ(Str(ParseObject(next->body), "body"), "");
}

TEST(HttpSessionTest, ChunkedAndExpectContinueBodiesReachTheHandler) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
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

TEST(HttpSessionTest, HugeHeaderGets431) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.header_limit = 1024;
  RunningServer server(opts, SyncHandler(Echo));
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

TEST(HttpSessionTest, MalformedRequestsGet400) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
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

TEST(HttpSessionTest, HandlerExceptionGets500) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler([](const HttpRequest& r) -> HttpResponse {
                         if (r.target == "/throw") throw std::runtime_error("boom");
                         return Echo(r);
                       }));
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

TEST(HttpSessionTest, ReadTimeoutClosesIdleAndPartialConnections) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.read_timeout = 200ms;
  RunningServer server(opts, SyncHandler(Echo));
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

}  // namespace
}  // namespace missy::net_test
