// AuditPublisher against a real `nats-server -js` on loopback (started and stopped by
// each test, store in a temporary directory): events arrive in the stream in seq order,
// with no gap and no duplicate, across a broker outage, a broker restart and a
// republish from an older cursor.
#include "daemon/broker/audit_publisher.h"
#include "daemon/broker/nats_conn.h"

#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/audit_event.h"
#include "storage/audit_log.h"
#include "storage/database.h"
#include "storage/stores.h"
#include "nats_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::FreeLoopbackPort;
using ::missy::testing::NatsServer;
using ::missy::testing::ReadStream;
using ::missy::testing::StreamMessage;
using ::missy::testing::TempDir;

class AuditPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open(dir_.Join("missyd.db"));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    stores_ = std::make_unique<Stores>(*db_);
    port_ = FreeLoopbackPort();
    ASSERT_GT(port_, 0);
    std::filesystem::create_directories(dir_.Join("nats"));
    server_ = std::make_unique<NatsServer>(port_, dir_.Join("nats"));
  }
  void TearDown() override {
    server_.reset();
    stores_.reset();
    db_.reset();
  }

  // Appends events seq first..last to the audit log (types alternate).
  void AppendEvents(int count) {
    for (int i = 0; i < count; ++i) {
      AuditEvent e;
      e.timestamp_ms = 1700000000000 + i;
      e.session_id = "s1";
      e.event_type = i % 2 == 0 ? "context.built" : "messages.appended";
      e.category = "context";
      e.result = "allow";
      e.detail_json = "{\"i\":" + std::to_string(i) + "}";
      ASSERT_TRUE(stores_->audit.Append(e).ok());
    }
  }

  AuditPublisherOptions Options(const std::string& cursor = "broker.audit") {
    AuditPublisherOptions o;
    o.endpoint.url = server_->url();
    o.daemon_id = "ws1-alice";
    o.cursor_name = cursor;
    o.min_backoff = std::chrono::milliseconds(50);
    o.max_backoff = std::chrono::milliseconds(200);
    o.poll = std::chrono::milliseconds(50);
    o.endpoint.connect_timeout = std::chrono::milliseconds(500);
    return o;
  }

  // The stream holds exactly the log's events 1..n, in order, once each.
  void ExpectStreamIsTheLog(int64_t n) {
    const std::vector<StreamMessage> got = ReadStream(server_->url(), "MISSY_AUDIT");
    Result<std::vector<AuditEvent>> log = stores_->audit.Since(0, 0);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(static_cast<int64_t>(log->size()), n);
    ASSERT_EQ(got.size(), log->size());
    for (size_t i = 0; i < got.size(); ++i) {
      const AuditEvent& e = (*log)[i];
      EXPECT_EQ(got[i].data, AuditEventToJsonLine(e)) << i;
      EXPECT_EQ(got[i].msg_id, "ws1-alice:" + std::to_string(e.seq)) << i;
      EXPECT_EQ(got[i].subject, "missy.audit.ws1-alice.context." + e.event_type) << i;
    }
  }

  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Stores> stores_;
  int port_ = 0;
  std::unique_ptr<NatsServer> server_;
};

TEST_F(AuditPublisherTest, EventsArriveInOrderWithNoGapAndTheCursorFollowsTheAcks) {
  ASSERT_TRUE(server_->Start());
  AppendEvents(30);
  AuditPublisher pub(stores_->audit, Options());
  pub.Start();
  ASSERT_TRUE(pub.WaitPublished(30, std::chrono::seconds(15))) << pub.Stats().last_error;
  AppendEvents(5);  // live events after the backlog
  pub.Notify();
  ASSERT_TRUE(pub.WaitPublished(35, std::chrono::seconds(15))) << pub.Stats().last_error;
  const AuditPublisherStats st = pub.Stats();
  EXPECT_TRUE(st.connected);
  EXPECT_EQ(st.published, 35);
  EXPECT_EQ(st.duplicates, 0);
  EXPECT_EQ(st.rate, 0);  // no 5 s window has ended yet
  pub.Stop();
  EXPECT_EQ(*stores_->audit.OutboxCursor("broker.audit"), 35);
  ExpectStreamIsTheLog(35);
}

// The rate over the last 5 s window: 40 events published in it.
TEST_F(AuditPublisherTest, ThePublishRateIsMeasuredOverWindowsOfFiveSeconds) {
  ASSERT_TRUE(server_->Start());
  AuditPublisher pub(stores_->audit, Options());
  const auto started = std::chrono::steady_clock::now();
  pub.Start();
  AppendEvents(40);
  pub.Notify();
  ASSERT_TRUE(pub.WaitPublished(40, std::chrono::seconds(4))) << pub.Stats().last_error;
  double rate = 0;
  for (int i = 0; i < 100 && rate == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rate = pub.Stats().rate;
  }
  const std::chrono::duration<double> window = std::chrono::steady_clock::now() - started;
  EXPECT_GE(rate, 40.0 / (window.count() + 0.5)) << window.count();  // one window of 5 s+
  EXPECT_LE(rate, 40.0 / 5.0);
  pub.Stop();
  EXPECT_EQ(pub.Stats().rate, 0);  // not connected: nothing is being published
}

// The broker is down at first: events wait in SQLite; once it is up they go out in order.
// Then it crashes (SIGKILL) and comes back with its store: nothing lost, nothing twice.
TEST_F(AuditPublisherTest, AnOutageAndABrokerRestartLoseNothing) {
  AuditPublisher pub(stores_->audit, Options());
  pub.Start();
  AppendEvents(10);
  pub.Notify();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  AuditPublisherStats st = pub.Stats();
  EXPECT_FALSE(st.connected);
  EXPECT_GT(st.failures, 0);
  EXPECT_EQ(st.cursor, 0);
  EXPECT_NE(st.last_error.find("cannot connect"), std::string::npos) << st.last_error;

  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(pub.WaitPublished(10, std::chrono::seconds(20))) << pub.Stats().last_error;
  server_->Stop();
  AppendEvents(10);
  pub.Notify();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(pub.Stats().cursor, 10);  // not acknowledged: not advanced
  ASSERT_TRUE(server_->Start());
  ASSERT_TRUE(pub.WaitPublished(20, std::chrono::seconds(20))) << pub.Stats().last_error;
  pub.Stop();
  ExpectStreamIsTheLog(20);
}

// A publisher whose cursor is behind what the broker has (a crash between the ack and
// the cursor's commit) republishes: the broker drops the duplicates by message id.
TEST_F(AuditPublisherTest, RepublishedEventsAreDroppedAsDuplicates) {
  ASSERT_TRUE(server_->Start());
  AppendEvents(12);
  {
    AuditPublisher first(stores_->audit, Options());
    first.Start();
    ASSERT_TRUE(first.WaitPublished(12, std::chrono::seconds(15))) << first.Stats().last_error;
  }
  AuditPublisher again(stores_->audit, Options("replay"));  // a cursor still at 0
  again.Start();
  ASSERT_TRUE(again.WaitPublished(12, std::chrono::seconds(15))) << again.Stats().last_error;
  EXPECT_EQ(again.Stats().duplicates, 12);
  EXPECT_EQ(again.Stats().published, 0);
  again.Stop();
  ExpectStreamIsTheLog(12);
}

TEST(AuditPublisherNamesTest, CredentialsNeverReachLogsAndIdsAreOneToken) {
  EXPECT_EQ(broker::RedactUrl("nats://bob:s3cret@h:4222,nats://h2:4222"),
            "nats://***@h:4222,nats://h2:4222");
  EXPECT_EQ(broker::RedactUrl("nats://tok3n@h:4222"), "nats://***@h:4222");
  EXPECT_EQ(broker::RedactUrl("nats://h:4222"), "nats://h:4222");
  const std::string id = broker::DefaultDaemonId();
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(id.find_first_of(". *>"), std::string::npos) << id;
}

}  // namespace
}  // namespace missy
