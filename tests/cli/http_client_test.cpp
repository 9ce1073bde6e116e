#include "cli/http_client.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace missy {
namespace {

using namespace std::chrono_literals;
using missy::testing::SendAll;
using Clock = std::chrono::steady_clock;

// Reads one request (headers plus Content-Length body) from `fd`; "" on EOF or after 5 s.
std::string ReadRequest(int fd, std::string* leftover) {
  std::string& buf = *leftover;
  auto deadline = Clock::now() + 5s;
  auto fill = [&]() {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) return Clock::now() < deadline;
    char tmp[4096];
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  };
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return "";
  }
  size_t body = 0;
  size_t cl = buf.find("Content-Length: ");
  if (cl != std::string::npos && cl < end) body = std::stoul(buf.substr(cl + 16));
  while (buf.size() < end + 4 + body) {
    if (!fill()) return "";
  }
  std::string req = buf.substr(0, end + 4 + body);
  buf.erase(0, req.size());
  return req;
}

// A scripted server: each accepted connection is handed to `on_connection` on the
// server's thread, one connection at a time.
class FakeServer {
 public:
  FakeServer(std::string path, std::function<void(int fd)> on_connection)
      : path_(std::move(path)), on_connection_(std::move(on_connection)) {
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  int connections() const { return connections_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // For connection handlers: reads and records one request.
  std::string Read(int fd) {
    std::string req = ReadRequest(fd, &leftover_);
    std::lock_guard<std::mutex> lock(mu_);
    if (!req.empty()) requests_.push_back(req);
    return req;
  }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      leftover_.clear();
      on_connection_(fd);
      close(fd);
    }
  }

  std::string path_;
  std::function<void(int fd)> on_connection_;
  int listen_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::string leftover_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

TEST(HttpClientTest, ContentLengthResponseAndRequestShape) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-Thing: b\r\nX-Thing: c\r\n\r\nhello");
  });
  self = &server;
  auto r = UnixHttpCall(sock, "POST", "/v1/x?y=1", R"({"a":1})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->headers["x-thing"], "b, c");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0],
            "POST /v1/x?y=1 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: missyctl\r\n"
            "Content-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n"
            R"({"a":1})");
}

TEST(HttpClientTest, ChunkedResponseSentByteByByte) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    std::string res =
        "HTTP/1.1 100 Continue\r\n\r\n"
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
    for (char c : res) SendAll(fd, std::string(1, c));
  });
  self = &server;
  auto r = UnixHttpCall(sock, "GET", "/");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello world");
}

TEST(HttpClientTest, BodyUntilEof) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.0 200 OK\r\n\r\nall of it");
  });
  self = &server;
  auto r = UnixHttpCall(sock, "GET", "/");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "all of it");
}

TEST(HttpClientTest, KeepAliveReusesOneConnection) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    for (int i = 0; i < 3; ++i) {
      if (self->Read(fd).empty()) return;
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(i));
    }
  });
  self = &server;
  UnixHttpConnection conn(sock);
  for (int i = 0; i < 3; ++i) {
    auto r = conn.Call("GET", "/" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, std::to_string(i));
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(server.requests()[2].rfind("GET /2 HTTP/1.1\r\n", 0), 0u);
  EXPECT_EQ(server.requests()[2].find("Connection: close"), std::string::npos);
}

TEST(HttpClientTest, ReconnectsWhenServerClosedIdleConnection) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  // Answers one request per connection, then closes (like an idle timeout would).
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  ASSERT_TRUE(conn.Call("GET", "/a").ok());
  auto r = conn.Call("POST", "/b", "{}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(server.connections(), 2);
  ASSERT_EQ(server.requests().size(), 2u);
}

TEST(HttpClientTest, FreshConnectionClosedWithoutAnswerIsAnErrorNotARetry) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) { self->Read(fd); });
  self = &server;
  auto r = UnixHttpCall(sock, "POST", "/x", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "connection closed before a response arrived");
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpClientTest, TimesOutWhenNoAnswer) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    self->Read(fd);
    std::this_thread::sleep_for(400ms);  // longer than the client's timeout
  });
  self = &server;
  auto start = Clock::now();
  auto r = UnixHttpCall(sock, "GET", "/", {}, 200ms);
  auto elapsed = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "timed out waiting for the response");
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 900ms);
}

TEST(HttpClientTest, MissingSocketAndGarbageAnswer) {
  testing::TempDir dir;
  auto missing = UnixHttpCall(dir.Join("nope.sock"), "GET", "/");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(missing.status().message(), "cannot connect to " + dir.Join("nope.sock") +
                                            ": No such file or directory (is missyd running?)");

  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd, "SSH-2.0-OpenSSH\r\n\r\n");
  });
  self = &server;
  auto garbage = UnixHttpCall(sock, "GET", "/");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kCorruption);
}

TEST(HttpClientTest, ChunkExtensionsAndTrailersAreConsumedExactly) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "4;name=value\r\nWiki\r\n5\r\npedia\r\nE;x=\"q\";y\r\n in\r\n\r\nchunks.\r\n"
            "0\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n");
    // A second response on the same connection: the trailers must not leak into it.
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  auto r = conn.Call("GET", "/a");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "Wikipedia in\r\n\r\nchunks.");
  EXPECT_TRUE(conn.connected());
  auto next = conn.Call("GET", "/b");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->body, "next");
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpClientTest, StreamedChunksArriveOneAtATimeThenKeepAliveGoesOn) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  std::atomic<bool> client_has_first{false};
  std::atomic<bool> first_before_second{false};
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
            "d\r\ndata: first\n\n\r\n");
    auto deadline = Clock::now() + 5s;
    while (!client_has_first && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    first_before_second = client_has_first.load();
    SendAll(fd, "e\r\ndata: second\n\n\r\n0\r\n\r\n");
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 204 No Content\r\n\r\n");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  auto head = conn.Start("GET", "/events");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers["content-type"], "text/event-stream");
  EXPECT_TRUE(conn.body_pending());
  auto first = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ(**first, "data: first\n\n");
  client_has_first = true;
  auto second = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ(**second, "data: second\n\n");
  auto end = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_FALSE(end->has_value());
  EXPECT_FALSE(conn.body_pending());
  EXPECT_TRUE(first_before_second.load());
  auto after = conn.Call("DELETE", "/x");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->status, 204);
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpClientTest, BodyLinesSpanChunksAndBodies) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "3\r\na\nb\r\n3\r\nc\r\n\r\n2\r\n\nd\r\n0\r\n\r\n");
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"n\":1}\n{\"n\":2}\n");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  ASSERT_TRUE(conn.Start("GET", "/chunked").ok());
  std::vector<std::string> lines;
  for (;;) {
    auto line = conn.ReadBodyLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    if (!line->has_value()) break;
    lines.push_back(**line);
  }
  // "c\r\n" loses its "\r"; the last line has no "\n" and comes at the end of the body.
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "bc", "", "d"}));

  ASSERT_TRUE(conn.Start("GET", "/until-eof").ok());
  lines.clear();
  for (;;) {
    auto line = conn.ReadBodyLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    if (!line->has_value()) break;
    lines.push_back(**line);
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"n\":1}", "{\"n\":2}"}));
  EXPECT_FALSE(conn.connected()) << "a body delimited by EOF ends the connection";
}

TEST(HttpClientTest, TruncatedOrMalformedChunkedBodiesAreErrors) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {"5\r\nhel", "connection closed inside a chunk"},
      {"5\r\nhello\r\n", "connection closed inside a chunk size line"},
      {"5\r\nhello\r\n0\r\nTrailer: x\r\n", "connection closed inside chunk trailers"},
      {"zz\r\nhello\r\n0\r\n\r\n", "bad chunk size"},
      {"5\r\nhelloXX0\r\n\r\n", "chunk data not followed by CRLF"},
      {"ffffffffffffffffffff\r\n", "bad chunk size"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    testing::TempDir dir;
    const std::string sock = dir.Join("s.sock");
    FakeServer* self = nullptr;
    FakeServer server(sock, [&](int fd) {
      if (self->Read(fd).empty()) return;
      SendAll(fd, std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + c.body);
    });
    self = &server;
    UnixHttpConnection conn(sock);
    auto r = conn.Call("GET", "/");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_EQ(r.status().message(), c.error);
    EXPECT_FALSE(conn.connected());
  }

  // Streamed: the chunks before the cut are delivered, then the error.
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    if (self->Read(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n5\r\ntw");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  ASSERT_TRUE(conn.Start("GET", "/").ok());
  auto one = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(one.ok() && one->has_value()) << one.status().ToString();
  EXPECT_EQ(**one, "one");
  auto cut = conn.ReadBodyChunk(5s);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(conn.connected());
  EXPECT_FALSE(conn.body_pending());
}

TEST(HttpClientTest, AStreamedBodyLeftUnreadClosesTheConnectionBeforeTheNextCall) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  FakeServer* self = nullptr;
  FakeServer server(sock, [&](int fd) {
    std::string req = self->Read(fd);
    if (req.empty()) return;
    if (req.rfind("GET /stream", 0) == 0) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234");
      char byte;
      recv(fd, &byte, 1, 0);  // until the client closes
      return;
    }
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  self = &server;
  UnixHttpConnection conn(sock);
  ASSERT_TRUE(conn.Start("GET", "/stream").ok());
  auto part = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(part.ok() && part->has_value()) << part.status().ToString();
  EXPECT_EQ(**part, "01234");
  EXPECT_TRUE(conn.body_pending());
  auto r = conn.Call("GET", "/other");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(server.connections(), 2);
}

TEST(LineSubscriberTest, SendsFirstLineAndReadsLines) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  std::atomic<bool> release{false};
  std::mutex mu;
  std::string first;
  FakeServer server(sock, [&](int fd) {
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      std::lock_guard<std::mutex> lock(mu);
      first.assign(buf, static_cast<size_t>(n));
    }
    SendAll(fd, "one\ntwo\npart");
    while (!release) std::this_thread::sleep_for(1ms);
  });
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(sock, R"({"since":3})").ok());
  auto a = sub.ReadLine(5s);
  auto b = sub.ReadLine(5s);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, "one");
  EXPECT_EQ(*b, "two");
  auto start = Clock::now();
  auto c = sub.ReadLine(100ms);
  EXPECT_FALSE(c.ok());
  EXPECT_TRUE(sub.timed_out());
  EXPECT_FALSE(sub.eof());
  EXPECT_LT(Clock::now() - start, 900ms);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(first, "{\"since\":3}\n");
  }
  release = true;
  auto d = sub.ReadLine(5s);  // "part" never got its newline
  EXPECT_FALSE(d.ok());
  EXPECT_TRUE(sub.eof());
  EXPECT_FALSE(sub.timed_out());
}

}  // namespace
}  // namespace missy
