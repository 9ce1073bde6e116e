// Tests of daemon/net/server.cpp: shutdown (with answers pending asynchronously and
// streams open), periodic tasks, signals.
#include <gtest/gtest.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

TEST(NetServerTest, StopLetsInFlightRequestFinish) {
  TempDir dir;
  std::atomic<bool> entered{false};
  RunningServer server(Options(dir), SyncHandler([&](const HttpRequest& r) {
                         if (r.target == "/slow") {
                           entered = true;
                           std::this_thread::sleep_for(200ms);
                         }
                         return Echo(r);
                       }));
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
  RunningServer server(Options(dir), SyncHandler([&](const HttpRequest& r) {
                         ++handled;
                         return Echo(r);
                       }));
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
  RunningServer server(opts, SyncHandler(Echo));
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
  auto r = NetServer::Create(Options(dir), SyncHandler(Echo));
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
  RunningServer server(Options(dir), SyncHandler(Echo));
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
  auto r = NetServer::Create(Options(dir), SyncHandler(Echo));
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

// Answers each exchange from a thread of its own after `delay`.
class LateAnswers {
 public:
  explicit LateAnswers(std::chrono::milliseconds delay) : delay_(delay) {}
  ~LateAnswers() { Join(); }
  HttpHandler Handler() {
    return [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      ++started_;
      std::lock_guard<std::mutex> lock(mu_);
      threads_.emplace_back([this, request = std::move(request), exchange]() mutable {
        std::this_thread::sleep_for(delay_);
        exchange->Send(Echo(request));
        exchange.reset();
        ++answered_;
      });
    };
  }
  void Join() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int started() const { return started_; }
  int answered() const { return answered_; }

 private:
  std::chrono::milliseconds delay_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  std::atomic<int> started_{0};
  std::atomic<int> answered_{0};
};

TEST(NetServerTest, StopWaitsForAnAnswerPendingAsynchronously) {
  TempDir dir;
  LateAnswers late(300ms);
  RunningServer server(Options(dir), late.Handler());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::string sock = dir.Join("run/missyd.sock");
  Result<ClientResponse> slow = Status::Internal("not run");
  std::thread client([&] { slow = UnixHttpCall(sock, "POST", "/late", "payload"); });
  ASSERT_TRUE(WaitUntil([&] { return late.started() == 1; }));
  auto took = server.StopAndJoin(5s);
  client.join();
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(slow->status, 200);
  EXPECT_EQ(Str(ParseObject(slow->body), "body"), "payload");
  EXPECT_EQ(slow->headers["connection"], "close");
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2s);
}

TEST(NetServerTest, StopCancelsAnAnswerThatMissesTheGrace) {
  TempDir dir;
  LateAnswers late(1500ms);
  auto server = std::make_unique<RunningServer>(Options(dir), late.Handler());
  ASSERT_TRUE(server->status().ok()) << server->status().ToString();
  const std::string sock = dir.Join("run/missyd.sock");
  Result<ClientResponse> slow = Status::Internal("not run");
  std::thread client([&] { slow = UnixHttpCall(sock, "GET", "/late", {}, 5s); });
  ASSERT_TRUE(WaitUntil([&] { return late.started() == 1; }));
  auto took = server->StopAndJoin(300ms);
  client.join();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 1200ms);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().message(), "connection closed before a response arrived");
  EXPECT_EQ(late.answered(), 0);
  // The answer comes after the server is gone: it is dropped, nothing crashes.
  server.reset();
  late.Join();
  EXPECT_EQ(late.answered(), 1);
}

TEST(NetServerTest, StopCutsAStreamAtTheGraceUnlessOnStoppingEndsIt) {
  for (bool end_on_stopping : {false, true}) {
    SCOPED_TRACE(end_on_stopping ? "on_stopping ends the stream" : "no on_stopping");
    TempDir dir;
    std::mutex mu;
    std::shared_ptr<BodyStream> open;
    NetOptions opts = Options(dir);
    if (end_on_stopping) {
      opts.on_stopping = [&] {
        std::lock_guard<std::mutex> lock(mu);
        if (open) open->End();
      };
    }
    RunningServer server(opts, [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      auto stream = exchange->Stream(200, "text/event-stream");
      {
        std::lock_guard<std::mutex> lock(mu);
        open = stream;
      }
      stream->Write("data: hello\n\n");
    });
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    UnixHttpConnection conn(dir.Join("run/missyd.sock"));
    auto head = conn.Start("GET", "/events");
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    auto first = conn.ReadBodyLine(5s);
    ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
    EXPECT_EQ(**first, "data: hello");
    auto took = server.StopAndJoin(400ms);
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_NE(open, nullptr);
    EXPECT_TRUE(open->closed());
    if (end_on_stopping) {
      EXPECT_LT(took, 300ms);
      EXPECT_TRUE(conn.ReadBodyLine(2s).ok());  // the blank line after the event
      auto end = conn.ReadBodyLine(2s);
      ASSERT_TRUE(end.ok()) << end.status().ToString();
      EXPECT_FALSE(end->has_value()) << "the body ended cleanly";
    } else {
      EXPECT_GE(took, 350ms);
      EXPECT_LT(took, 2s);
      open->Write("data: too late\n\n");  // dropped, no crash
      EXPECT_TRUE(conn.ReadBodyLine(2s).ok());
      auto cut = conn.ReadBodyLine(2s);
      EXPECT_FALSE(cut.ok()) << "the body was cut: not a clean end";
    }
  }
}

TEST(NetServerTest, SyncHandlerAnswersWithTheFunctionsResult) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler([](const HttpRequest& r) {
                         return HttpResponse{201, "text/plain", "made " + r.body};
                       }));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto r = UnixHttpCall(dir.Join("run/missyd.sock"), "POST", "/x", "it");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->headers["content-type"], "text/plain");
  EXPECT_EQ(r->body, "made it");
}

}  // namespace
}  // namespace missy::net_test
