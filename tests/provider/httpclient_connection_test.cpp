// httpclient::Connection (httpclient/connection.cpp), the one HTTP client, against scripted
// servers over TCP and Unix sockets: endpoints, the request's bytes, pieces of a chunked
// body, a peer that stops reading after its answer, deadlines, HEAD, limits, refusal.
// (tests/cli/http_client_test.cpp covers the same code through missyctl's client.)
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "httpclient/connection.h"
#include "test_util.h"

namespace missy::httpclient {
namespace {

using namespace std::chrono_literals;
using missy::testing::SendAll;

// Reads up to the end of a request's head; "" on EOF or after 5 s.
std::string ReadHead(int fd) {
  std::string buf;
  const auto deadline = Clock::now() + 5s;
  while (buf.find("\r\n\r\n") == std::string::npos && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char c;
    if (recv(fd, &c, 1, 0) <= 0) return "";  // byte by byte: nothing past the head is read
    buf += c;
  }
  return buf;
}

// A server on a listening socket: each accepted connection goes to `serve`, one at a time,
// on the server's thread, and is closed after it.
class ScriptedServer {
 public:
  // Loopback TCP on a free port.
  explicit ScriptedServer(std::function<void(int)> serve) : serve_(std::move(serve)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    Start();
  }
  // A Unix socket at `path`.
  ScriptedServer(const std::string& path, std::function<void(int)> serve)
      : serve_(std::move(serve)) {
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    Start();
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  void Start() {
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        ++connections_;
        serve_(fd);
        close(fd);
      }
    });
  }

  std::function<void(int)> serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
};

Endpoint Loopback(uint16_t port) {
  auto endpoint = Endpoint::Parse("tcp:127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  return endpoint.ok() ? *endpoint : Endpoint();
}

std::optional<Failure> Connect(Connection& conn, const Endpoint& endpoint) {
  return conn.Connect(endpoint, 2s, 2s, Clock::now() + 2s);
}

std::string Describe(const std::optional<Failure>& f) { return f ? f->message : "ok"; }

TEST(HttpClientEndpointTest, ParsesUnixPathsAndLoopbackTcp) {
  struct Case {
    std::string spec;
    std::string error;  // "" when valid
    std::string unix_path, host;
    uint16_t port;
  };
  const Case cases[] = {
      {"/run/missyd.sock", "", "/run/missyd.sock", "", 0},
      {"tcp:127.0.0.1:8080", "", "", "127.0.0.1", 8080},
      {"tcp:[::1]:443", "", "", "::1", 443},
      {"", "socket path is empty", "", "", 0},
      {"tcp:127.0.0.1", "no port in tcp:127.0.0.1", "", "", 0},
      {"tcp:127.0.0.1:0", "bad port in tcp:127.0.0.1:0", "", "", 0},
      {"tcp:127.0.0.1:99999", "bad port in tcp:127.0.0.1:99999", "", "", 0},
      {"tcp:localhost:80", "bad address in tcp:localhost:80", "", "", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    auto endpoint = Endpoint::Parse(c.spec);
    if (!c.error.empty()) {
      ASSERT_FALSE(endpoint.ok());
      EXPECT_EQ(endpoint.status().message(), c.error);
      continue;
    }
    ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
    EXPECT_EQ(endpoint->unix_path, c.unix_path);
    EXPECT_EQ(endpoint->host, c.host);
    EXPECT_EQ(endpoint->port, c.port);
    EXPECT_EQ(endpoint->numeric_host, !c.host.empty());
  }
  EXPECT_EQ(Endpoint::Parse("tcp:[::1]:443")->Describe(), "[::1]:443");
}

TEST(HttpClientFormatTest, RequestBytesInTheGivenOrder) {
  struct Case {
    std::string method, body;
    HeaderList headers;
    std::string expected;
  };
  const Case cases[] = {
      {"GET", "", {{"Host", "h"}}, "GET /t HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"POST", "", {{"Host", "h"}}, "POST /t HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"},
      {"PUT",
       "{}",
       {{"Host", "h"}, {"X-A", "1"}},
       "PUT /t HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n{}"},
      {"POST",
       "abc",
       {{"content-length", "3"}, {"Host", "h"}},
       "POST /t HTTP/1.1\r\ncontent-length: 3\r\nHost: h\r\n\r\nabc"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    EXPECT_EQ(FormatRequest(c.method, "/t", c.headers, c.body), c.expected);
  }
}

// Over TCP: a chunked answer comes piece by piece, never two chunks in one piece, then the
// connection serves the next request.
TEST(HttpClientConnectionTest, ChunkedPiecesOverTcpThenKeepAlive) {
  ScriptedServer server([](int fd) {
    if (ReadHead(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
            "3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n");
    if (ReadHead(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext");
  });
  Connection conn;
  ASSERT_FALSE(Connect(conn, Loopback(server.port())));
  const std::string request = FormatRequest("GET", "/", {{"Host", "x"}}, "");
  ASSERT_FALSE(conn.Write(request, Clock::now() + 2s));
  ResponseHead head;
  auto failure = conn.ReadHead(Clock::now() + 2s, {}, &head);
  ASSERT_FALSE(failure) << Describe(failure);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers, (HeaderList{{"Transfer-Encoding", "chunked"}, {"X-A", "1"}}));
  std::vector<std::string> pieces;
  std::string piece;
  while (conn.body_pending()) {
    failure = conn.ReadBody(Clock::now() + 2s, BodyPiece::kArrived, &piece);
    ASSERT_FALSE(failure) << Describe(failure);
    if (!piece.empty()) pieces.push_back(piece);
  }
  EXPECT_EQ(pieces, (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(conn.open());
  EXPECT_TRUE(conn.reused());

  ASSERT_FALSE(conn.Write(request, Clock::now() + 2s));
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, {}, &head));
  ASSERT_FALSE(conn.ReadBody(Clock::now() + 2s, BodyPiece::kArrived, &piece));
  EXPECT_EQ(piece, "next");
  EXPECT_FALSE(conn.body_pending());
  EXPECT_EQ(server.connections(), 1);
}

// kAllArrived gathers what has arrived across chunks (one piece for two chunks sent
// together) and never waits for more: a chunk sent later is a piece of its own.
TEST(HttpClientConnectionTest, AllArrivedGathersChunksWithoutWaitingForMore) {
  std::atomic<bool> first_read{false};
  ScriptedServer server([&](int fd) {
    if (ReadHead(fd).empty()) return;
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "3\r\none\r\n3\r\ntwo\r\n");
    const auto deadline = Clock::now() + 5s;
    while (!first_read && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    SendAll(fd, "5\r\nthree\r\n0\r\n\r\n");
  });
  Connection conn;
  ASSERT_FALSE(Connect(conn, Loopback(server.port())));
  ASSERT_FALSE(conn.Write(FormatRequest("GET", "/", {{"Host", "x"}}, ""), Clock::now() + 2s));
  ResponseHead head;
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, {}, &head));
  std::this_thread::sleep_for(50ms);  // both chunks are in the socket
  std::vector<std::string> pieces;
  std::string piece;
  while (conn.body_pending()) {
    auto failure = conn.ReadBody(Clock::now() + 2s, BodyPiece::kAllArrived, &piece);
    ASSERT_FALSE(failure) << Describe(failure);
    if (!piece.empty()) pieces.push_back(piece);
    first_read = true;
  }
  EXPECT_EQ(pieces, (std::vector<std::string>{"onetwo", "three"}));
  EXPECT_TRUE(conn.reused());
}

// kAllArrived hands on at most about 256 KB a piece (one chunk past it at most), however
// much has arrived: a 1 MB answer sent at once comes in several pieces, every byte in order.
TEST(HttpClientConnectionTest, AllArrivedPiecesStopNear256KB) {
  std::string answer;
  for (int i = 0; answer.size() < (1u << 20); ++i) answer += "event " + std::to_string(i) + "\n";
  constexpr size_t kChunk = 16 * 1024;
  ScriptedServer server([&](int fd) {
    if (ReadHead(fd).empty()) return;
    std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < answer.size(); at += kChunk) {
      const std::string chunk = answer.substr(at, kChunk);
      char size_line[32];
      std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
      out += size_line + chunk + "\r\n";
    }
    SendAll(fd, out + "0\r\n\r\n");
  });
  Connection conn;
  ASSERT_FALSE(Connect(conn, Loopback(server.port())));
  ASSERT_FALSE(conn.Write(FormatRequest("GET", "/", {{"Host", "x"}}, ""), Clock::now() + 2s));
  ResponseHead head;
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, {}, &head));
  std::this_thread::sleep_for(100ms);  // the socket's buffers are full
  std::vector<size_t> sizes;
  std::string body, piece;
  while (conn.body_pending()) {
    auto failure = conn.ReadBody(Clock::now() + 5s, BodyPiece::kAllArrived, &piece);
    ASSERT_FALSE(failure) << Describe(failure);
    if (piece.empty()) continue;
    sizes.push_back(piece.size());
    body += piece;
  }
  EXPECT_EQ(body, answer);
  ASSERT_FALSE(sizes.empty());
  EXPECT_GE(sizes.size(), 4u);
  EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()), 256 * 1024 + kChunk);
  EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), kChunk);  // chunks were gathered
}

// A server that answers 413 and closes while the request is still being written: the
// write is no failure, the answer is read, and the connection ends after it.
TEST(HttpClientConnectionTest, AnAnswerSentBeforeThePeerStoppedReadingIsRead) {
  testing::TempDir dir;
  const std::string sock = dir.Join("s.sock");
  ScriptedServer server(sock, [](int fd) {
    if (ReadHead(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 2\r\n\r\nno");
  });
  Connection conn;
  auto endpoint = Endpoint::Parse(sock);
  ASSERT_TRUE(endpoint.ok());
  ASSERT_FALSE(Connect(conn, *endpoint));
  const std::string big(16 << 20, 'x');
  auto failure = conn.Write(FormatRequest("POST", "/", {{"Host", "x"}}, big), Clock::now() + 5s);
  ASSERT_FALSE(failure) << Describe(failure);
  ResponseHead head;
  failure = conn.ReadHead(Clock::now() + 5s, {}, &head);
  ASSERT_FALSE(failure) << Describe(failure);
  EXPECT_EQ(head.status, 413);
  std::string piece;
  ASSERT_FALSE(conn.ReadBody(Clock::now() + 5s, BodyPiece::kArrived, &piece));
  EXPECT_EQ(piece, "no");
  EXPECT_FALSE(conn.open()) << "the peer is gone: the connection is not reused";
}

TEST(HttpClientConnectionTest, ABodyThatStallsTimesOutAndClosesTheConnection) {
  std::atomic<bool> release{false};
  ScriptedServer server([&](int fd) {
    if (ReadHead(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    while (!release) std::this_thread::sleep_for(1ms);
  });
  Connection conn;
  ASSERT_FALSE(Connect(conn, Loopback(server.port())));
  ASSERT_FALSE(conn.Write(FormatRequest("GET", "/", {}, ""), Clock::now() + 2s));
  ResponseHead head;
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, {}, &head));
  std::string piece;
  ASSERT_FALSE(conn.ReadBody(Clock::now() + 2s, BodyPiece::kArrived, &piece));
  EXPECT_EQ(piece, "abc");
  const auto start = Clock::now();
  auto failure = conn.ReadBody(start + 150ms, BodyPiece::kArrived, &piece);
  const auto took = Clock::now() - start;
  release = true;
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, FailureKind::kTimeout);
  EXPECT_EQ(failure->message, "timed out reading the response body");
  EXPECT_GE(took, 140ms);
  EXPECT_LT(took, 900ms);
  EXPECT_FALSE(conn.open());
  EXPECT_FALSE(conn.body_pending());
}

TEST(HttpClientConnectionTest, TheAnswerToHeadHasNoBody) {
  ScriptedServer server([](int fd) {
    if (ReadHead(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
    if (ReadHead(fd).empty()) return;
    SendAll(fd, "HTTP/1.1 204 No Content\r\n\r\n");
  });
  Connection conn;
  ASSERT_FALSE(Connect(conn, Loopback(server.port())));
  ASSERT_FALSE(conn.Write(FormatRequest("HEAD", "/", {}, ""), Clock::now() + 2s));
  ResponseHead head;
  ReadOptions no_body;
  no_body.no_body = true;
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, no_body, &head));
  EXPECT_EQ(head.status, 200);
  EXPECT_FALSE(conn.body_pending());
  ASSERT_FALSE(conn.Write(FormatRequest("GET", "/", {}, ""), Clock::now() + 2s));
  ASSERT_FALSE(conn.ReadHead(Clock::now() + 2s, {}, &head));
  EXPECT_EQ(head.status, 204);
  EXPECT_FALSE(conn.body_pending());
  EXPECT_TRUE(conn.open());
}

TEST(HttpClientConnectionTest, LimitsOnTheBodyAndTheHead) {
  ScriptedServer server([](int fd) {
    const std::string request = ReadHead(fd);
    if (request.starts_with("GET /body")) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b'));
    } else if (!request.empty()) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nX-Big: " + std::string(2000, 'h') + "\r\n\r\n");
    }
  });
  for (const char* target : {"/body", "/head"}) {
    SCOPED_TRACE(target);
    Connection conn;
    ASSERT_FALSE(Connect(conn, Loopback(server.port())));
    ASSERT_FALSE(conn.Write(FormatRequest("GET", target, {}, ""), Clock::now() + 2s));
    ReadOptions options;
    options.body_limit = 10;
    options.header_limit = 1024;
    ResponseHead head;
    auto failure = conn.ReadHead(Clock::now() + 2s, options, &head);
    ASSERT_TRUE(failure);
    EXPECT_EQ(failure->kind, FailureKind::kTooLarge);
    EXPECT_EQ(failure->message, std::string(target) == "/body"
                                    ? "the response is larger than 10 bytes"
                                    : "the response's header is too large");
    EXPECT_FALSE(conn.open());
  }
}

TEST(HttpClientConnectionTest, NothingListeningIsARefusedConnect) {
  uint16_t port = 0;
  {
    ScriptedServer gone([](int) {});
    port = gone.port();
  }
  Connection conn;
  auto failure = Connect(conn, Loopback(port));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, FailureKind::kConnect);
  EXPECT_TRUE(failure->refused);
  EXPECT_EQ(failure->message,
            "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  EXPECT_FALSE(conn.open());
}

}  // namespace
}  // namespace missy::httpclient
