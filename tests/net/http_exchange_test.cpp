// Tests of daemon/net/http_exchange.cpp (with the session side in http_session.cpp):
// answers given later from other threads, dropped exchanges, streamed bodies.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

// Runs work on threads of its own; joins them on destruction.
class Workers {
 public:
  ~Workers() { Join(); }
  void Run(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back(std::move(fn));
  }
  void Join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

std::string Get(const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
}

TEST(HttpExchangeTest, ASlowAnswerDoesNotBlockTheLoop) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.handler_threads = 1;  // one loop thread: a blocked loop would delay /fast
  Workers workers;
  std::atomic<bool> slow_started{false};
  RunningServer server(opts, [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.target != "/slow") return exchange->Send(Echo(request));
    slow_started = true;
    workers.Run([request = std::move(request), exchange] {
      std::this_thread::sleep_for(200ms);
      exchange->Send(Echo(request));
    });
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string sock = dir.Join("run/missyd.sock");

  Result<ClientResponse> slow = Status::Internal("not run");
  Clock::time_point slow_done;
  auto start = Clock::now();
  std::thread client([&] {
    slow = UnixHttpCall(sock, "GET", "/slow");
    slow_done = Clock::now();
  });
  ASSERT_TRUE(WaitUntil([&] { return slow_started.load(); }));
  auto fast_start = Clock::now();
  auto fast = UnixHttpCall(sock, "GET", "/fast");
  auto fast_done = Clock::now();
  client.join();

  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(Str(ParseObject(fast->body), "target"), "/fast");
  EXPECT_LT(fast_done - fast_start, 100ms);
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(Str(ParseObject(slow->body), "target"), "/slow");
  EXPECT_GE(slow_done - start, 190ms);
  EXPECT_LT(fast_done, slow_done);
}

TEST(HttpExchangeTest, AnswersKeepRequestOrderOnAKeepAliveConnection) {
  TempDir dir;
  Workers workers;
  const std::map<std::string, std::chrono::milliseconds> delay = {
      {"/a", 150ms}, {"/b", 0ms}, {"/c", 50ms}};
  std::mutex mu;
  std::vector<std::string> handled;
  RunningServer server(
      Options(dir), [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
        {
          std::lock_guard<std::mutex> lock(mu);
          handled.push_back(request.target);
        }
        auto it = delay.find(request.target);
        auto wait = it == delay.end() ? ((request.body.size() % 2) ? 15ms : 0ms) : it->second;
        workers.Run([request = std::move(request), exchange, wait] {
          std::this_thread::sleep_for(wait);
          exchange->Send(Echo(request));
        });
      });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());

  // Three pipelined requests; the first is answered last in time, yet first on the wire.
  auto a = conn.SendRaw(Get("/a") + Get("/b") + Get("/c"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = conn.SendRaw("");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto c = conn.SendRaw("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Str(ParseObject(a->body), "target"), "/a");
  EXPECT_EQ(Str(ParseObject(b->body), "target"), "/b");
  EXPECT_EQ(Str(ParseObject(c->body), "target"), "/c");

  // Twenty requests in a row, answered by twenty threads, over the same connection.
  for (int i = 0; i < 20; ++i) {
    std::string body(static_cast<size_t>(i + 1), 'x');
    ASSERT_TRUE(conn.connected()) << i;
    auto r = conn.SendRaw("POST /seq/" + std::to_string(i) +
                          " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_EQ(Str(ParseObject(r->body), "target"), "/seq/" + std::to_string(i));
    EXPECT_EQ(Str(ParseObject(r->body), "body"), body);
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(handled.size(), 23u);
  EXPECT_EQ(handled[0], "/a");
  EXPECT_EQ(handled[1], "/b");
  EXPECT_EQ(handled[2], "/c");
}

TEST(HttpExchangeTest, ADroppedExchangeAnswers500) {
  TempDir dir;
  Workers workers;
  RunningServer server(Options(dir),
                       [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
                         if (request.target == "/drop")
                           return;  // the last reference goes with the handler
                         if (request.target == "/drop-later") {
                           workers.Run([exchange]() mutable {
                             std::this_thread::sleep_for(50ms);
                             exchange.reset();
                           });
                           return;
                         }
                         exchange->Send(Echo(request));
                       });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  for (const char* target : {"/drop", "/drop-later"}) {
    auto r = conn.SendRaw(Get(target));
    ASSERT_TRUE(r.ok()) << target << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 500) << target;
    EXPECT_EQ(r->body,
              R"({"error":{"code":"internal","message":"the handler did not answer","field":""}})");
    EXPECT_TRUE(conn.connected()) << target << ": keep-alive survives";
  }
  auto ok = conn.SendRaw(Get("/ok"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Str(ParseObject(ok->body), "target"), "/ok");
}

TEST(HttpExchangeTest, OnlyTheFirstAnswerTakesEffect) {
  TempDir dir;
  std::atomic<bool> late_stream_closed{false};
  RunningServer server(Options(dir),
                       [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
                         if (request.target == "/twice") {
                           exchange->Send({200, "text/plain", "first"});
                           exchange->Send({201, "text/plain", "second"});
                           auto stream = exchange->Stream(200, "text/plain");
                           stream->Write("third");
                           late_stream_closed = stream->closed();
                           return;
                         }
                         if (request.target == "/answer-then-throw") {
                           exchange->Send({202, "text/plain", "answered"});
                           throw std::runtime_error("after the answer");
                         }
                         if (request.target == "/throw-async") {
                           throw std::logic_error("before any answer");
                         }
                         exchange->Send(Echo(request));
                       });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn;
  ASSERT_TRUE(conn.Connect(dir.Join("run/missyd.sock")).ok());
  auto r = conn.SendRaw(Get("/twice"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "first");
  EXPECT_TRUE(late_stream_closed.load());
  // No stray second answer is waiting on the connection.
  auto next = conn.SendRaw(Get("/next"));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(Str(ParseObject(next->body), "target"), "/next");

  auto thrown = conn.SendRaw(Get("/answer-then-throw"));
  ASSERT_TRUE(thrown.ok()) << thrown.status().ToString();
  EXPECT_EQ(thrown->status, 202);
  EXPECT_EQ(thrown->body, "answered");
  auto before = conn.SendRaw(Get("/throw-async"));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->status, 500);
  EXPECT_EQ(
      before->body,
      R"({"error":{"code":"internal","message":"internal error while handling the request","field":""}})");
}

std::string ChunkPayload(int i) {
  // Sizes vary from 1 byte to 1 MiB (chunk 37), so that some span many socket reads.
  size_t size = i == 37 ? size_t{1} << 20 : static_cast<size_t>(1 + (i * 131) % 700);
  std::string s = std::to_string(i) + ":";
  s.resize(std::max(size, s.size()), static_cast<char>('a' + i % 26));
  return s;
}

TEST(HttpExchangeTest, AChunkedStreamIsReadBackChunkByChunkAndKeepAliveGoesOn) {
  TempDir dir;
  Workers workers;
  constexpr int kChunks = 100;
  RunningServer server(Options(dir),
                       [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
                         if (request.target == "/empty") {
                           exchange->Stream(200, "application/x-ndjson")->End();
                           return;
                         }
                         if (request.target != "/stream") return exchange->Send(Echo(request));
                         auto stream = exchange->Stream(200, "application/x-ndjson");
                         workers.Run([stream] {
                           for (int i = 0; i < kChunks; ++i) stream->Write(ChunkPayload(i));
                           stream->Write("");  // ignored: an empty chunk would end the body
                           stream->End();
                         });
                       });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  for (int round = 0; round < 2; ++round) {
    auto head = conn.Start("GET", "/stream");
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(head->headers["transfer-encoding"], "chunked");
    EXPECT_EQ(head->headers["content-type"], "application/x-ndjson");
    EXPECT_EQ(head->headers["server"], "missyd");
    EXPECT_EQ(head->headers.count("content-length"), 0u);
    EXPECT_EQ(head->body, "");
    for (int i = 0; i < kChunks; ++i) {
      auto chunk = conn.ReadBodyChunk(5s);
      ASSERT_TRUE(chunk.ok()) << i << ": " << chunk.status().ToString();
      ASSERT_TRUE(chunk->has_value()) << i;
      ASSERT_EQ(**chunk, ChunkPayload(i)) << i;
    }
    auto end = conn.ReadBodyChunk(5s);
    ASSERT_TRUE(end.ok()) << end.status().ToString();
    EXPECT_FALSE(end->has_value());
    EXPECT_FALSE(conn.body_pending());
    // Keep-alive after a stream: SendRaw never reconnects.
    ASSERT_TRUE(conn.connected());
    auto after = conn.SendRaw(Get("/after/" + std::to_string(round)));
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    EXPECT_EQ(Str(ParseObject(after->body), "target"), "/after/" + std::to_string(round));
  }
  auto empty = conn.Start("GET", "/empty");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  auto none = conn.ReadBodyChunk(5s);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  // The whole-response client reads a stream too.
  auto whole = conn.Call("GET", "/stream");
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  std::string want;
  for (int i = 0; i < kChunks; ++i) want += ChunkPayload(i);
  EXPECT_EQ(whole->body.size(), want.size());
  EXPECT_TRUE(whole->body == want);
}

TEST(HttpExchangeTest, ServerSentEventsArriveOneAtATime) {
  TempDir dir;
  Workers workers;
  std::mutex mu;
  std::condition_variable cv;
  bool client_saw_first = false;
  std::atomic<bool> first_seen_before_last{false};
  RunningServer server(Options(dir), [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    auto stream = exchange->Stream(200, "text/event-stream");
    workers.Run([&, stream] {
      stream->Write("data: {\"n\":1}\n\n");
      {
        std::unique_lock<std::mutex> lock(mu);
        first_seen_before_last = cv.wait_for(lock, 5s, [&] { return client_saw_first; });
      }
      stream->Write("data: {\"n\":2}\n\n");
      stream->End();
    });
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  auto head = conn.Start("GET", "/v1/events");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->headers["content-type"], "text/event-stream");
  EXPECT_EQ(head->headers["cache-control"], "no-cache");
  std::vector<std::string> lines;
  for (int i = 0; i < 2; ++i) {
    auto line = conn.ReadBodyLine(5s);
    ASSERT_TRUE(line.ok() && line->has_value()) << line.status().ToString();
    lines.push_back(**line);
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"data: {\"n\":1}", ""}));
  {
    std::lock_guard<std::mutex> lock(mu);
    client_saw_first = true;
  }
  cv.notify_all();
  for (int i = 0; i < 2; ++i) {
    auto line = conn.ReadBodyLine(5s);
    ASSERT_TRUE(line.ok() && line->has_value()) << line.status().ToString();
    lines.push_back(**line);
  }
  auto end = conn.ReadBodyLine(5s);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_FALSE(end->has_value());
  EXPECT_EQ(lines[2], "data: {\"n\":2}");
  EXPECT_EQ(lines[3], "");
  workers.Join();
  EXPECT_TRUE(first_seen_before_last.load()) << "the first event was held back";
}

TEST(HttpExchangeTest, APeerClosingMidStreamMakesClosedTrue) {
  for (bool producer_idle : {false, true}) {
    SCOPED_TRACE(producer_idle ? "idle producer" : "busy producer");
    TempDir dir;
    Workers workers;
    std::atomic<bool> saw_closed{false};
    std::atomic<int> written{0};
    RunningServer server(Options(dir),
                         [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
                           if (request.target != "/stream") return exchange->Send(Echo(request));
                           auto stream = exchange->Stream(200, "application/x-ndjson");
                           workers.Run([&, stream] {
                             stream->Write("{\"first\":true}\n");
                             auto deadline = Clock::now() + 10s;
                             while (!stream->closed() && Clock::now() < deadline) {
                               if (!producer_idle) {
                                 stream->Write("{\"more\":" + std::to_string(++written) + "}\n");
                               }
                               std::this_thread::sleep_for(2ms);
                             }
                             saw_closed = stream->closed();
                             stream->Write("{\"after\":true}\n");  // dropped
                           });
                         });
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    {
      UnixHttpConnection conn(dir.Join("run/missyd.sock"));
      ASSERT_TRUE(conn.Start("GET", "/stream").ok());
      auto line = conn.ReadBodyLine(5s);
      ASSERT_TRUE(line.ok() && line->has_value()) << line.status().ToString();
      EXPECT_EQ(**line, "{\"first\":true}");
    }  // closes the connection mid-stream
    auto start = Clock::now();
    workers.Join();
    EXPECT_TRUE(saw_closed.load());
    EXPECT_LT(Clock::now() - start, 3s);
    auto ok = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/still-serving");
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(ok->status, 200);
  }
}

// A stream's writer can wait until the socket took all it wrote (the proxy does before it
// stores a relayed answer): not while the peer has not read, at once when it has. The
// megabytes go in large writes (one call a batch, as much as the socket takes) and
// arrive whole and in order.
TEST(HttpExchangeTest, WaitSentWaitsForThePeerToTakeTheBytes) {
  TempDir dir;
  Workers workers;
  constexpr size_t kPiece = 512 * 1024;
  constexpr int kPieces = 6;  // 3 MB: far more than a Unix socket's buffers hold
  std::mutex mu;
  std::condition_variable cv;
  bool may_read = false;
  std::atomic<int> early{-1};
  std::atomic<int> late{-1};
  std::atomic<size_t> buffered_early{0};
  const auto piece = [](int i) { return std::string(kPiece, static_cast<char>('a' + i)); };
  RunningServer server(Options(dir), [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    auto stream = exchange->Stream(200, "application/octet-stream");
    workers.Run([&, stream] {
      for (int i = 0; i < kPieces; ++i) stream->Write(piece(i));
      stream->End();
      early = stream->WaitSent(50ms) ? 1 : 0;
      buffered_early = stream->buffered();
      {
        std::lock_guard<std::mutex> lock(mu);
        may_read = true;
      }
      cv.notify_all();
      late = stream->WaitSent(10s) ? 1 : 0;
    });
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  auto head = conn.Start("GET", "/big");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return may_read; }));
  }
  std::string body;
  for (;;) {
    auto chunk = conn.ReadBodyChunk(10s);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    if (!chunk->has_value()) break;
    body += **chunk;
  }
  workers.Join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_GT(buffered_early.load(), kPiece);  // most of it was still waiting for the socket
  EXPECT_EQ(late.load(), 1);
  ASSERT_EQ(body.size(), kPiece * kPieces);
  for (int i = 0; i < kPieces; ++i) {
    EXPECT_TRUE(body.compare(kPiece * i, kPiece, piece(i)) == 0) << "piece " << i;
  }
}

TEST(HttpExchangeTest, AStreamWhosePeerDoesNotReadIsCut) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.stream_buffer_bytes = 64 * 1024;
  Workers workers;
  std::atomic<bool> saw_closed{false};
  std::atomic<size_t> bytes{0};
  RunningServer server(opts, [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.target != "/flood") return exchange->Send(Echo(request));
    auto stream = exchange->Stream(200, "application/octet-stream");
    workers.Run([&, stream] {
      stream->Write("start");  // goes out with the headers
      WaitUntil([&] { return stream->buffered() == 0; });
      const std::string chunk(4096, 'f');
      while (!stream->closed() && bytes.load() < (size_t{64} << 20)) {
        stream->Write(chunk);
        bytes += chunk.size();
      }
      saw_closed = stream->closed();
    });
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  auto head = conn.Start("GET", "/flood");  // and never reads the body
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  workers.Join();
  EXPECT_TRUE(saw_closed.load());
  EXPECT_LT(bytes.load(), size_t{16} << 20) << "the producer was stopped early";
  auto ok = UnixHttpCall(dir.Join("run/missyd.sock"), "GET", "/still-serving");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpExchangeTest, AProducerPacedByBufferedIsNeverCut) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.stream_buffer_bytes = 64 * 1024;
  Workers workers;
  constexpr size_t kTotal = size_t{8} << 20;  // 128 times the buffer
  std::atomic<bool> cut{false};
  std::atomic<size_t> max_buffered{0};
  RunningServer server(opts, [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    auto stream = exchange->Stream(200, "application/octet-stream");
    workers.Run([&, stream] {
      const std::string chunk(8192, 'p');
      for (size_t sent = 0; sent < kTotal && !stream->closed(); sent += chunk.size()) {
        WaitUntil([&] { return stream->buffered() <= 32 * 1024; });
        max_buffered = std::max(max_buffered.load(), stream->buffered());
        stream->Write(chunk);
      }
      cut = stream->closed();
      stream->End();
    });
  });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  UnixHttpConnection conn(dir.Join("run/missyd.sock"));
  ASSERT_TRUE(conn.Start("GET", "/export").ok());
  size_t got = 0;
  for (;;) {
    auto chunk = conn.ReadBodyChunk(10s);
    ASSERT_TRUE(chunk.ok()) << got << ": " << chunk.status().ToString();
    if (!chunk->has_value()) break;
    got += (*chunk)->size();
  }
  workers.Join();
  EXPECT_EQ(got, kTotal);
  EXPECT_FALSE(cut.load());
  EXPECT_LE(max_buffered.load(), 32u * 1024);
}

TEST(HttpExchangeTest, AnHttp10StreamIsNotChunkedAndEndsWithTheConnection) {
  TempDir dir;
  RunningServer server(Options(dir), [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    auto stream = exchange->Stream(200, "text/plain");
    stream->Write("abc");
    stream->Write("def");
  });  // the stream's last reference ends it
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  RawSocket raw(dir.Join("run/missyd.sock"));
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.Send("GET /s HTTP/1.0\r\n\r\n"));
  std::string all = raw.ReadUntil("never sent", 5s);
  EXPECT_TRUE(raw.eof());
  EXPECT_EQ(all.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << all;
  EXPECT_EQ(all.find("chunked"), std::string::npos) << all;
  EXPECT_NE(all.find("Connection: close\r\n"), std::string::npos) << all;
  EXPECT_EQ(all.substr(all.find("\r\n\r\n") + 4), "abcdef");
}

}  // namespace
}  // namespace missy::net_test
