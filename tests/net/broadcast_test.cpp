// Tests of daemon/net/broadcast.cpp: the audit socket's subscribers (first line, paged
// backlog, live lines, gap notice).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

// An audit log as the daemon's database would page it, with the BacklogProvider
// contract: at most max_lines events examined per call, *last_seen = the last examined.
class FakeAuditLog {
 public:
  void Append(int64_t seq, const std::string& type, size_t pad = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.emplace_back(seq, type, EventLine(seq, type, pad));
  }

  std::vector<std::string> Page(const SubscribeRequest& req, int64_t after, size_t max_lines,
                                int64_t* last_seen) {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    max_lines_asked_ = std::max(max_lines_asked_, max_lines);
    std::vector<std::string> lines;
    auto it = std::upper_bound(events_.begin(), events_.end(), after,
                               [](int64_t s, const Event& e) { return s < std::get<0>(e); });
    for (size_t examined = 0; it != events_.end() && examined < max_lines; ++it, ++examined) {
      const auto& [seq, type, line] = *it;
      *last_seen = seq;
      if (req.types.empty() ||
          std::find(req.types.begin(), req.types.end(), type) != req.types.end()) {
        lines.push_back(line);
      }
    }
    max_returned_ = std::max(max_returned_, lines.size());
    afters_.push_back(after);
    return lines;
  }

  BacklogProvider Provider() {
    return [this](const SubscribeRequest& req, int64_t after, size_t max_lines,
                  int64_t* last_seen) { return Page(req, after, max_lines, last_seen); };
  }

  int calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  size_t max_lines_asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_lines_asked_;
  }
  size_t max_returned() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_returned_;
  }
  std::vector<int64_t> afters() const {
    std::lock_guard<std::mutex> lock(mu_);
    return afters_;
  }

 private:
  using Event = std::tuple<int64_t, std::string, std::string>;
  mutable std::mutex mu_;
  std::vector<Event> events_;  // in seq order
  int calls_ = 0;
  size_t max_lines_asked_ = 0;
  size_t max_returned_ = 0;
  std::vector<int64_t> afters_;
};

TEST(NetBroadcastTest, TwoSubscribersReceiveLinesInOrder) {
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
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
  std::vector<std::pair<SubscribeRequest, int64_t>> calls;  // request, after_seq
  FakeAuditLog log;
  for (int64_t i = 1; i <= 12; ++i) log.Append(i, "t");
  // The "database" holds events 1..12 when the backlog is read; 11..15 are published
  // while the first page is being fetched (11 and 12 were persisted just before).
  auto backlog = [&](const SubscribeRequest& req, int64_t after, size_t max_lines,
                     int64_t* last_seen) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.emplace_back(req, after);
      first = calls.size() == 1;
    }
    if (first) {
      for (int64_t i = 11; i <= 15; ++i) srv.load()->Publish(i, "t", EventLine(i, "t"));
    }
    return log.Page(req, after, max_lines, last_seen);
  };
  RunningServer server(Options(dir), SyncHandler(Echo), backlog);
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
  // One page (4..12), then an empty call from 12 ends the backlog.
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].first.since, 3);
  EXPECT_TRUE(calls[0].first.types.empty());
  EXPECT_EQ(calls[0].second, 3);
  EXPECT_EQ(calls[1].second, 12);
}

TEST(NetBroadcastTest, LargeBacklogIsNotCutOff) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.subscriber_buffer_bytes = 4096;  // the backlog is far larger
  FakeAuditLog log;
  for (int64_t i = 1; i <= 2000; ++i) log.Append(i, "t", 100);
  RunningServer server(opts, SyncHandler(Echo), log.Provider());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0})").ok());
  for (int64_t want = 1; want <= 2000; ++want) {
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << want << ": " << line.status().ToString();
    ASSERT_EQ(SeqOf(*line), want);
  }
  EXPECT_FALSE(sub.ReadLine(50ms).ok());
  EXPECT_TRUE(sub.timed_out());
}

TEST(NetBroadcastTest, TypeFilterAppliesToLiveLines) {
  TempDir dir;
  std::mutex mu;
  std::vector<std::string> seen_types;
  FakeAuditLog log;
  log.Append(1, "a");
  auto provider = log.Provider();
  RunningServer server(
      Options(dir), SyncHandler(Echo),
      [&](const SubscribeRequest& req, int64_t after, size_t max_lines, int64_t* last_seen) {
        {
          std::lock_guard<std::mutex> lock(mu);
          seen_types = req.types;
        }
        return provider(req, after, max_lines, last_seen);
      });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0,"types":["a","c"]})").ok());
  auto first = sub.ReadLine(5s);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, EventLine(1, "a"));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen_types, (std::vector<std::string>{"a", "c"}));
  }
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
  RunningServer server(Options(dir), SyncHandler(Echo));
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
  RunningServer server(opts, SyncHandler(Echo));
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

TEST(NetBroadcastTest, BacklogIsPagedAndLiveLinesJoinWithoutGapOrDuplicate) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.backlog_page_lines = 64;
  opts.subscriber_buffer_bytes = 16 * 1024;  // a few hundred held lines at most
  FakeAuditLog log;
  constexpr int64_t kRetained = 5000;
  constexpr int64_t kBurstEnd = 8000;
  constexpr int64_t kTotal = 15000;
  for (int64_t i = 1; i <= kRetained; ++i) log.Append(i, "t");
  std::atomic<bool> provider_waiting{false};
  std::atomic<bool> burst_done{false};
  // Halfway through the retained events the provider waits for a burst of 3000 events
  // (~110 KB) to be persisted and published: the subscriber is paging while they come.
  RunningServer server(
      opts, SyncHandler(Echo),
      [&](const SubscribeRequest& req, int64_t after, size_t max_lines, int64_t* last_seen) {
        if (after >= kRetained / 2 && !burst_done) {
          provider_waiting = true;
          WaitUntil([&] { return burst_done.load(); }, 10s);
        }
        return log.Page(req, after, max_lines, last_seen);
      });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();

  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0})").ok());
  std::atomic<int64_t> read{0};
  std::atomic<bool> in_order{true};
  std::thread reader([&] {
    for (int64_t want = 1; want <= kTotal; ++want) {
      auto line = sub.ReadLine(10s);
      if (!line.ok() || SeqOf(*line) != want) {
        ADD_FAILURE() << "want seq " << want << ", got "
                      << (line.ok() ? *line : line.status().ToString());
        in_order = false;
        return;
      }
      read = want;
    }
  });
  // Persist, then publish (the daemon's order).
  ASSERT_TRUE(WaitUntil([&] { return provider_waiting.load(); }));
  for (int64_t i = kRetained + 1; i <= kBurstEnd; ++i) {
    log.Append(i, "t");
    server->Publish(i, "t", EventLine(i, "t"));
  }
  burst_done = true;
  // Then live, while the subscriber pages through the rest, at most ~250 lines ahead of
  // the reader (below the subscriber's buffer).
  for (int64_t i = kBurstEnd + 1; i <= kTotal; ++i) {
    log.Append(i, "t");
    server->Publish(i, "t", EventLine(i, "t"));
    if (i % 50 == 0) {
      ASSERT_TRUE(WaitUntil([&] { return read.load() >= i - 200 || !in_order; }, 20s)) << i;
    }
  }
  reader.join();
  ASSERT_TRUE(in_order.load());
  EXPECT_EQ(read.load(), kTotal);
  EXPECT_FALSE(sub.ReadLine(100ms).ok());
  EXPECT_TRUE(sub.timed_out()) << "no duplicate after the last line";
  EXPECT_EQ(server->SubscriberCount(), 1u) << "never cut off";
  // Memory stays bounded by pages: every call was asked for 64 lines and returned <= 64.
  EXPECT_EQ(log.max_lines_asked(), 64u);
  EXPECT_LE(log.max_returned(), 64u);
  EXPECT_GE(log.calls(), static_cast<int>(kBurstEnd / 64));
  std::vector<int64_t> afters = log.afters();
  EXPECT_EQ(afters.front(), 0);
  EXPECT_TRUE(std::is_sorted(afters.begin(), afters.end()));
}

// Lines published before the subscriber's first line arrives, more than its buffer holds.
std::vector<int64_t> SeqsOfLines(const std::string& all) {
  std::vector<int64_t> seqs;
  size_t start = 0;
  for (size_t nl; (nl = all.find('\n', start)) != std::string::npos; start = nl + 1) {
    seqs.push_back(SeqOf(all.substr(start, nl - start)));
  }
  return seqs;
}

TEST(NetBroadcastTest, LinesDroppedBeforeTheFirstLineArePagedBackOrReportedAsAGap) {
  for (bool with_backlog : {true, false}) {
    SCOPED_TRACE(with_backlog ? "since 0" : "live only");
    TempDir dir;
    NetOptions opts = Options(dir);
    opts.subscriber_buffer_bytes = 4096;
    FakeAuditLog log;
    RunningServer server(opts, SyncHandler(Echo), log.Provider());
    ASSERT_TRUE(server.status().ok()) << server.status().ToString();
    RawSocket raw(dir.Join("run/audit.sock"));
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 1; }));
    for (int64_t i = 1; i <= 300; ++i) {  // ~40 KB
      log.Append(i, "t", 100);
      server->Publish(i, "t", EventLine(i, "t", 100));
    }
    if (with_backlog) {
      ASSERT_TRUE(raw.Send("{\"since\":0}\n"));
      std::string all = raw.ReadUntil(EventLine(300, "t", 100) + "\n", 5s);
      std::vector<int64_t> want(300);
      for (int64_t i = 0; i < 300; ++i) want[static_cast<size_t>(i)] = i + 1;
      EXPECT_EQ(SeqsOfLines(all), want);
    } else {
      ASSERT_TRUE(raw.Send("{}\n"));
      std::string all = raw.ReadUntil("never sent", 5s);
      EXPECT_TRUE(raw.eof());
      ASSERT_FALSE(all.empty());
      auto o = ParseObject(all.substr(0, all.find('\n')));
      EXPECT_EQ(Str(o, "event_type"), "audit.gap");
      EXPECT_EQ(o["detail"].as_object()["dropped_from_seq"].to_number<int64_t>(), 1);
    }
  }
}

TEST(NetBroadcastTest, LiveLinesOverflowingDuringTheBacklogArePagedBack) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.backlog_page_lines = 50;
  opts.subscriber_buffer_bytes = 4096;
  FakeAuditLog log;
  for (int64_t i = 1; i <= 100; ++i) log.Append(i, "t", 100);
  std::atomic<NetServer*> srv{nullptr};
  std::atomic<int> calls{0};
  // During the first call, 300 more events (~40 KB, ten times the buffer) are persisted
  // and published: the subscriber cannot hold them and must page them back.
  RunningServer server(
      opts, SyncHandler(Echo),
      [&](const SubscribeRequest& req, int64_t after, size_t max_lines, int64_t* last_seen) {
        if (calls++ == 0) {
          for (int64_t i = 101; i <= 400; ++i) {
            log.Append(i, "t", 100);
            srv.load()->Publish(i, "t", EventLine(i, "t", 100));
          }
        }
        return log.Page(req, after, max_lines, last_seen);
      });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  srv = &server.server();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0})").ok());
  for (int64_t want = 1; want <= 400; ++want) {
    auto line = sub.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << want << ": " << line.status().ToString();
    ASSERT_EQ(SeqOf(*line), want) << *line;
  }
  server->Publish(401, "t", EventLine(401, "t"));
  auto live = sub.ReadLine(5s);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  EXPECT_EQ(SeqOf(*live), 401);
  EXPECT_FALSE(sub.ReadLine(50ms).ok());
  EXPECT_TRUE(sub.timed_out());
  // 400 events in pages of 50, then the empty call that ends the backlog.
  EXPECT_EQ(calls.load(), 9);
}

TEST(NetBroadcastTest, PagesWhereNothingMatchesStillAdvance) {
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.backlog_page_lines = 100;
  FakeAuditLog log;
  for (int64_t i = 1; i <= 999; ++i) log.Append(i, "b");
  log.Append(1000, "a");
  RunningServer server(opts, SyncHandler(Echo), log.Provider());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0,"types":["a"]})").ok());
  auto line = sub.ReadLine(5s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(*line, EventLine(1000, "a"));
  ASSERT_TRUE(WaitUntil([&] { return log.calls() == 11; }));
  std::vector<int64_t> want_afters;
  for (int64_t a = 0; a <= 1000; a += 100) want_afters.push_back(a);
  EXPECT_EQ(log.afters(), want_afters);
  server->Publish(1001, "b", EventLine(1001, "b"));
  server->Publish(1002, "a", EventLine(1002, "a"));
  auto live = sub.ReadLine(5s);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  EXPECT_EQ(SeqOf(*live), 1002);
}

TEST(NetBroadcastTest, ProviderExceptionEndsTheSubscriptionWithAnErrorLine) {
  TempDir dir;
  RunningServer server(
      Options(dir), SyncHandler(Echo),
      [](const SubscribeRequest&, int64_t, size_t, int64_t*) -> std::vector<std::string> {
        throw std::runtime_error("database is locked");
      });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":0})").ok());
  auto line = sub.ReadLine(5s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  auto o = ParseObject(*line);
  EXPECT_EQ(Str(o, "event_type"), "audit.error");
  EXPECT_EQ(Str(o["detail"].as_object(), "reason"), "backlog failed: database is locked");
  EXPECT_FALSE(sub.ReadLine(5s).ok());
  EXPECT_TRUE(sub.eof());
  EXPECT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 0; }));
}

TEST(NetBroadcastTest, ProviderThatDoesNotAdvanceEndsTheBacklog) {
  TempDir dir;
  std::atomic<int> calls{0};
  // Lines without "seq" and *last_seen left alone: the server cannot page on.
  RunningServer server(Options(dir), SyncHandler(Echo),
                       [&](const SubscribeRequest&, int64_t, size_t, int64_t*) {
                         ++calls;
                         return std::vector<std::string>{R"({"event_type":"x"})"};
                       });
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  LineSubscriber sub;
  ASSERT_TRUE(sub.Connect(dir.Join("run/audit.sock"), R"({"since":5})").ok());
  ASSERT_TRUE(WaitUntil([&] { return calls.load() == 1 && server->SubscriberCount() == 1; }));
  server->Publish(5, "t", EventLine(5, "t"));  // not after since: skipped
  server->Publish(6, "t", EventLine(6, "t"));
  auto line = sub.ReadLine(5s);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(SeqOf(*line), 6);
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace missy::net_test
