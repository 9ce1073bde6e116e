// Lingering close after a 413 (daemon/net/http_session.cpp): a client that writes its whole
// request before reading, as Python's http.client does, gets the complete 413 and its
// writes never fail; the rest of the request is drained within bounds (the declared
// length, 64 MiB, the time limit).
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "daemon/metrics/net_stats.h"
#include "net_test_util.h"

namespace missy::net_test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
const char kBody413[] =
    R"({"error":{"code":"payload_too_large","message":"request body exceeds 1024 bytes","field":""}})";

// A blocking client socket; every send and recv gives up after 10 s instead of hanging.
class BlockingClient {
 public:
  explicit BlockingClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~BlockingClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Writes all of `bytes`; returns 0 or the errno of the failing send.
  int SendAll(const std::string& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno;
      at += static_cast<size_t>(n);
    }
    return 0;
  }
  // Writes `total` body bytes in 64 KiB sends, like a library writing a request body.
  // Returns 0 or the errno of the failing send; *written counts the bytes sent.
  int SendBody(size_t total, size_t* written) {
    const std::string chunk(64 * 1024, 'x');
    *written = 0;
    while (*written < total) {
      const size_t n = std::min(chunk.size(), total - *written);
      if (int err = SendAll(chunk.substr(0, n)); err != 0) return err;
      *written += n;
    }
    return 0;
  }
  // Reads until `want` bytes of response arrived past the header, or EOF / error.
  // Returns what was read; *end_errno is 0 for a clean EOF, else recv's errno (-1: stopped
  // because the body was complete).
  std::string ReadResponse(int* end_errno) {
    std::string got;
    char buf[4096];
    for (;;) {
      const size_t head = got.find("\r\n\r\n");
      if (head != std::string::npos) {
        const size_t cl = got.find("Content-Length: ");
        if (cl != std::string::npos && cl < head) {
          const size_t len = std::stoul(got.substr(cl + 16));
          if (got.size() >= head + 4 + len) {
            *end_errno = -1;
            return got;
          }
        }
      }
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *end_errno = n == 0 ? 0 : errno;
        return got;
      }
      got.append(buf, static_cast<size_t>(n));
    }
  }
  // After the response: 0 for a clean EOF, else recv's errno (or EEXIST if data came).
  int ReadEnd() {
    char buf[256];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) return 0;
    return n > 0 ? EEXIST : errno;
  }

 private:
  int fd_ = -1;
};

std::string BodyOf(const std::string& response) {
  const size_t head = response.find("\r\n\r\n");
  return head == std::string::npos ? "<no header end>" : response.substr(head + 4);
}

class LingeringCloseTest : public ::testing::Test {
 protected:
  LingeringCloseTest() {
    NetOptions opts = Options(dir_);
    opts.body_limit = 1024;
    opts.read_timeout = read_timeout_;
    options_ = opts;
  }
  void Start() {
    server_ = std::make_unique<RunningServer>(options_, SyncHandler(Echo));
    ASSERT_TRUE(server_->status().ok()) << server_->status().ToString();
  }
  std::string sock() const { return dir_.Join("run/missyd.sock"); }
  static std::string Head(size_t content_length) {
    return "POST /big HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(content_length) + "\r\n\r\n";
  }

  metrics::NetStats& stats_ = metrics::ProcessNetStats();
  std::chrono::milliseconds read_timeout_{30000};
  TempDir dir_;
  NetOptions options_;
  std::unique_ptr<RunningServer> server_;
};

// The Python http.client pattern: the whole 64 MiB body is written before reading.
TEST_F(LingeringCloseTest, ClientWritingAWholeLargeBodyBeforeReadingGetsThe413) {
  Start();
  const uint64_t lingered = stats_.http_lingering_closes.load();
  BlockingClient client(sock());
  ASSERT_TRUE(client.ok());
  const size_t body = 64 * kMiB;
  ASSERT_EQ(client.SendAll(Head(body)), 0);
  size_t written = 0;
  const int err = client.SendBody(body, &written);
  EXPECT_EQ(err, 0) << "the body write failed after " << written << " bytes: " << strerror(err);
  EXPECT_EQ(written, body);

  int end = 0;
  const std::string response = client.ReadResponse(&end);
  EXPECT_EQ(response.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos) << response;
  EXPECT_NE(response.find("Content-Type: application/json\r\n"), std::string::npos) << response;
  EXPECT_EQ(BodyOf(response), kBody413);
  // Then a clean end: EOF, not a reset.
  EXPECT_EQ(client.ReadEnd(), 0);
  EXPECT_EQ(stats_.http_lingering_closes.load(), lingered + 1);
}

// A declared length over the limit is answered at once, before any body byte is sent;
// the body sent afterwards is drained to the last byte, then the connection closes.
TEST_F(LingeringCloseTest, DeclaredLengthOverTheLimitIsAnsweredAtOnceAndStillDrained) {
  Start();
  const uint64_t rejected = stats_.http_body_too_large.load();
  const uint64_t drained = stats_.http_lingering_bytes.load();
  const int64_t open = stats_.http_connections_open.load();
  BlockingClient client(sock());
  ASSERT_TRUE(client.ok());
  const size_t body = 8 * kMiB;
  ASSERT_EQ(client.SendAll(Head(body)), 0);
  int end = 0;
  const std::string response = client.ReadResponse(&end);  // no body byte sent yet
  EXPECT_EQ(end, -1) << "the answer did not arrive complete: " << strerror(end);
  EXPECT_EQ(response.rfind("HTTP/1.1 413 ", 0), 0u) << response;
  EXPECT_EQ(BodyOf(response), kBody413);
  EXPECT_EQ(client.ReadEnd(), 0);  // the server's side is shut after the answer
  EXPECT_EQ(stats_.http_body_too_large.load(), rejected + 1);

  size_t written = 0;
  const int err = client.SendBody(body, &written);
  EXPECT_EQ(err, 0) << "the body write failed after " << written << " bytes: " << strerror(err);
  // Exactly the declared body was discarded, then the connection closed.
  EXPECT_TRUE(WaitUntil([&] { return stats_.http_connections_open.load() == open; }))
      << stats_.http_connections_open.load() << " connections open, want " << open;
  EXPECT_EQ(stats_.http_lingering_bytes.load() - drained, body);
}

// A client that stops sending is not waited for longer than the bound (here the read
// timeout, shorter than 5 s).
TEST_F(LingeringCloseTest, DrainingStopsAfterTheTimeBound) {
  read_timeout_ = std::chrono::milliseconds(300);
  options_.read_timeout = read_timeout_;
  Start();
  const int64_t open = stats_.http_connections_open.load();
  const uint64_t drained = stats_.http_lingering_bytes.load();
  BlockingClient client(sock());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client.SendAll(Head(size_t{1} << 30)), 0);
  size_t written = 0;
  ASSERT_EQ(client.SendBody(kMiB, &written), 0);
  const auto start = Clock::now();
  ASSERT_TRUE(WaitUntil([&] { return stats_.http_connections_open.load() == open; }, 3s))
      << "the lingering connection was not closed";
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(stats_.http_lingering_bytes.load() - drained, kMiB);
  int end = 0;
  EXPECT_EQ(BodyOf(client.ReadResponse(&end)), kBody413);
}

// At most 64 MiB are drained: a client that goes on writing then sees its writes fail.
TEST_F(LingeringCloseTest, DrainingStopsAfter64MiB) {
  Start();
  const uint64_t drained = stats_.http_lingering_bytes.load();
  BlockingClient client(sock());
  ASSERT_TRUE(client.ok());
  const size_t declared = 256 * kMiB;
  ASSERT_EQ(client.SendAll(Head(declared)), 0);
  size_t written = 0;
  const int err = client.SendBody(declared, &written);
  EXPECT_TRUE(err == EPIPE || err == ECONNRESET) << strerror(err) << " after " << written;
  EXPECT_GE(written, 64 * kMiB);
  EXPECT_LT(written, 80 * kMiB);
  EXPECT_TRUE(WaitUntil([&] { return stats_.http_lingering_bytes.load() - drained == 64 * kMiB; }))
      << stats_.http_lingering_bytes.load() - drained;
}

// A chunked body has no declared end: it is drained until the client closes.
TEST_F(LingeringCloseTest, ChunkedBodyIsDrainedUntilTheClientCloses) {
  Start();
  const int64_t open = stats_.http_connections_open.load();
  auto client = std::make_unique<BlockingClient>(sock());
  ASSERT_TRUE(client->ok());
  ASSERT_EQ(client->SendAll("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
            0);
  const std::string chunk(32 * 1024, 'z');
  for (int i = 0; i < 64; ++i) {  // 2 MiB in 32 KiB chunks, over the limit from the first
    ASSERT_EQ(client->SendAll("8000\r\n" + chunk + "\r\n"), 0) << "chunk " << i;
  }
  ASSERT_EQ(client->SendAll("0\r\n\r\n"), 0);
  int end = 0;
  EXPECT_EQ(BodyOf(client->ReadResponse(&end)), kBody413);
  EXPECT_EQ(stats_.http_connections_open.load(), open + 1);  // still draining
  client.reset();
  EXPECT_TRUE(WaitUntil([&] { return stats_.http_connections_open.load() == open; }));
}

// Stopping the server ends a lingering connection at once.
TEST_F(LingeringCloseTest, StopDoesNotWaitForALingeringConnection) {
  Start();
  BlockingClient client(sock());
  ASSERT_TRUE(client.ok());
  ASSERT_EQ(client.SendAll(Head(size_t{1} << 30)), 0);
  int end = 0;
  ASSERT_EQ(BodyOf(client.ReadResponse(&end)), kBody413);
  EXPECT_LT(server_->StopAndJoin(5000ms), 1s);
}

}  // namespace
}  // namespace missy::net_test
