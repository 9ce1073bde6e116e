// What daemon/net counts in metrics::NetStats for /metrics: audit subscribers (connected,
// cut off as too slow, the lines they lost and the lines sent) and HTTP connections and
// the answers given before any handler. The stats are process-wide: differences only.
#include "daemon/metrics/net_stats.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "net_test_util.h"

namespace missy::net_test {
namespace {

TEST(NetStatsTest, AuditSubscribersAreCountedWhileConnected) {
  metrics::NetStats& stats = metrics::ProcessNetStats();
  TempDir dir;
  RunningServer server(Options(dir), SyncHandler(Echo));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const int64_t before = stats.audit_subscribers.load();
  const uint64_t accepted = stats.audit_subscribers_total.load();
  const uint64_t sent = stats.audit_lines_sent.load();

  LineSubscriber a, b;
  ASSERT_TRUE(a.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(b.Connect(dir.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(WaitUntil([&] { return server->SubscriberCount() == 2; }));
  EXPECT_EQ(stats.audit_subscribers.load(), before + 2);
  EXPECT_EQ(stats.audit_subscribers_total.load(), accepted + 2);

  for (int64_t i = 1; i <= 10; ++i) server->Publish(i, "t", EventLine(i, "t"));
  for (LineSubscriber* s : {&a, &b}) {
    for (int i = 1; i <= 10; ++i) ASSERT_TRUE(s->ReadLine(5s).ok()) << i;
  }
  EXPECT_TRUE(WaitUntil([&] { return stats.audit_lines_sent.load() == sent + 20; }))
      << stats.audit_lines_sent.load() - sent;

  a.Close();
  EXPECT_TRUE(WaitUntil([&] { return stats.audit_subscribers.load() == before + 1; }));
  b.Close();
  EXPECT_TRUE(WaitUntil([&] { return stats.audit_subscribers.load() == before; }));
  EXPECT_EQ(stats.audit_subscribers_total.load(), accepted + 2);
}

// A server that cuts a subscriber once more than kBuffer bytes wait for it, and the
// cut counters as they were before the test.
class SubscriberCutStatsTest : public ::testing::Test {
 protected:
  static constexpr size_t kBuffer = 16 * 1024;
  static NetOptions SmallBuffer(const TempDir& dir) {
    NetOptions opts = Options(dir);
    opts.subscriber_buffer_bytes = kBuffer;
    return opts;
  }
  void SetUp() override { ASSERT_TRUE(server_.status().ok()) << server_.status().ToString(); }

  metrics::NetStats& stats_ = metrics::ProcessNetStats();
  TempDir dir_;
  RunningServer server_{SmallBuffer(dir_), SyncHandler(Echo)};
  const uint64_t cut_ = stats_.audit_subscribers_cut.load();
  const uint64_t dropped_ = stats_.audit_lines_dropped.load();
};

TEST_F(SubscriberCutStatsTest, ASlowSubscriberCutOffIsCountedWithTheLinesItLost) {
  LineSubscriber slow;  // reads its first line, then never again
  ASSERT_TRUE(slow.Connect(dir_.Join("run/audit.sock"), "{}").ok());
  ASSERT_TRUE(WaitUntil([&] { return server_->SubscriberCount() == 1; }));
  // Live first: lines offered while the server has not read the subscriber's request yet
  // are held, and past the buffer dropped without a cut (a busy machine is that slow).
  server_->Publish(1, "t", EventLine(1, "t"));
  for (;;) {
    Result<std::string> line = slow.ReadLine(5s);
    ASSERT_TRUE(line.ok()) << line.status().ToString();
    if (SeqOf(*line) == 1) break;
  }
  for (int64_t i = 2; i <= 5001; ++i) server_->Publish(i, "t", EventLine(i, "t", 200));
  ASSERT_TRUE(WaitUntil([&] { return server_->SubscriberCount() == 0; }));
  EXPECT_EQ(stats_.audit_subscribers_cut.load(), cut_ + 1);
  // What was queued when it was cut: at least one line, at most the buffer's worth.
  const uint64_t lost = stats_.audit_lines_dropped.load() - dropped_;
  EXPECT_GE(lost, 1u);
  EXPECT_LE(lost, kBuffer / 200);
}

// A subscriber whose request comes after its buffer overflowed (a busy machine reads it
// late) is cut when the request arrives: every line offered meanwhile counts as lost,
// those dropped while it waited and those held since.
TEST_F(SubscriberCutStatsTest, LinesDroppedBeforeTheRequestAreCountedWhenTheSubscriberIsCut) {
  RawSocket late(dir_.Join("run/audit.sock"));
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE(WaitUntil([&] { return server_->SubscriberCount() == 1; }));
  for (int64_t i = 1; i <= 500; ++i) server_->Publish(i, "t", EventLine(i, "t", 200));
  ASSERT_TRUE(late.Send("{}\n"));
  const std::string got = late.ReadUntil("audit.gap", 5s);
  EXPECT_NE(got.find("\"dropped_from_seq\":1"), std::string::npos) << got;
  ASSERT_TRUE(WaitUntil([&] { return server_->SubscriberCount() == 0; }));
  EXPECT_EQ(stats_.audit_subscribers_cut.load(), cut_ + 1);
  EXPECT_EQ(stats_.audit_lines_dropped.load() - dropped_, 500u);
}

TEST(NetStatsTest, HttpConnectionsAndEdgeAnswersAreCounted) {
  metrics::NetStats& stats = metrics::ProcessNetStats();
  TempDir dir;
  NetOptions opts = Options(dir);
  opts.header_limit = 1024;
  RunningServer server(opts, SyncHandler(Echo));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const int64_t open = stats.http_connections_open.load();
  const uint64_t total = stats.http_connections_total.load();
  const uint64_t headers = stats.http_headers_too_large.load();
  const uint64_t malformed = stats.http_malformed.load();

  {
    RawSocket big(dir.Join("run/missyd.sock"));
    ASSERT_TRUE(big.ok());
    ASSERT_TRUE(big.Send("GET / HTTP/1.1\r\nX-Big: " + std::string(2048, 'h') + "\r\n\r\n"));
    EXPECT_NE(big.ReadUntil("\r\n\r\n", 5s).find(" 431 "), std::string::npos);
    RawSocket bad(dir.Join("run/missyd.sock"));
    ASSERT_TRUE(bad.ok());
    ASSERT_TRUE(bad.Send("NOT HTTP AT ALL\r\n\r\n"));
    EXPECT_NE(bad.ReadUntil("\r\n\r\n", 5s).find(" 400 "), std::string::npos);
    RawSocket idle(dir.Join("run/missyd.sock"));
    ASSERT_TRUE(idle.ok());
    EXPECT_TRUE(WaitUntil([&] { return stats.http_connections_total.load() == total + 3; }));
    EXPECT_TRUE(WaitUntil([&] { return stats.http_connections_open.load() >= open + 1; }));
  }
  EXPECT_TRUE(WaitUntil([&] { return stats.http_connections_open.load() == open; }));
  EXPECT_EQ(stats.http_headers_too_large.load(), headers + 1);
  EXPECT_EQ(stats.http_malformed.load(), malformed + 1);
}

}  // namespace
}  // namespace missy::net_test
