// The audit log (storage/audit_log.cpp): hash chain, verification, retention, tail cache,
// outbox cursors.
#include "storage/audit_log.h"

#include <gtest/gtest.h>

#include "core/digest.h"

#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::TempDir;

class AuditChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
    for (int i = 1; i <= 10; ++i) Append(i * 1000);
  }

  AuditEvent Append(int64_t ts) {
    AuditEvent e;
    e.timestamp_ms = ts;
    e.session_id = "s";
    e.event_type = "context.built";
    e.category = "context";
    e.result = "allow";
    e.detail_json = R"({"ts":)" + std::to_string(ts) + "}";
    auto r = db_->audit.Append(e);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : AuditEvent{};
  }

  AuditVerifyReport Verify() {
    auto r = db_->audit.Verify();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : AuditVerifyReport{};
  }

  TempDir dir_;
  std::string path_;
  testing::TestDb db_;
};

TEST_F(AuditChainTest, IntactChainVerifies) {
  auto report = Verify();
  EXPECT_TRUE(report.ok) << report.reason;
  EXPECT_EQ(report.checked, 10);
  EXPECT_EQ(report.first_seq, 1);
  EXPECT_EQ(report.last_seq, 10);
  EXPECT_EQ(report.broken_seq, 0);
}

TEST_F(AuditChainTest, DetectsAnEditedEvent) {
  RawExec(path_, "UPDATE audit_events SET result = 'deny' WHERE seq = 4");
  auto report = Verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.broken_seq, 5);  // event 5 no longer chains to the edited event 4
  EXPECT_NE(report.reason.find("event 4"), std::string::npos) << report.reason;
}

TEST_F(AuditChainTest, DetectsAnEditedDetail) {
  RawExec(path_, R"(UPDATE audit_events SET detail_json = '{"ts":1}' WHERE seq = 2)");
  EXPECT_EQ(Verify().broken_seq, 3);
}

TEST_F(AuditChainTest, DetectsAnEditedLastEvent) {
  RawExec(path_, "UPDATE audit_events SET event_type = 'x' WHERE seq = 10");
  auto report = Verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.broken_seq, 10);
}

TEST_F(AuditChainTest, DetectsADeletedEvent) {
  RawExec(path_, "DELETE FROM audit_events WHERE seq = 6");
  auto report = Verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.broken_seq, 6);
  EXPECT_NE(report.reason.find("missing"), std::string::npos) << report.reason;
}

TEST_F(AuditChainTest, DetectsADeletedLastEvent) {
  RawExec(path_, "DELETE FROM audit_events WHERE seq = 10");
  EXPECT_EQ(Verify().broken_seq, 10);
}

TEST_F(AuditChainTest, DetectsAnInsertedEvent) {
  // Make room after event 3 and insert a forged event 4 that even carries the right
  // prev hash; the old event 4 (now 5) no longer chains to it.
  auto events = db_->audit.Since(0, 100);
  ASSERT_TRUE(events.ok());
  AuditEvent forged = (*events)[2];
  forged.seq = 4;
  forged.event_type = "forged";
  forged.prev_chain_hash = Sha256Hex(AuditEventToJsonLine((*events)[2]));
  RawExec(path_,
          "UPDATE audit_events SET seq = seq + 100 WHERE seq >= 4;"
          "UPDATE audit_events SET seq = seq - 99 WHERE seq >= 104;"
          "INSERT INTO audit_events (seq, timestamp_ms, session_id, task_id, event_type, category, "
          "result, "
          "detail_json, prev_chain_hash) VALUES (4, 1, 's', '', 'forged', 'context', 'allow', "
          "'{\"ts\":3000}', '" +
              forged.prev_chain_hash + "')");
  auto report = Verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.checked, 11);
  EXPECT_EQ(report.broken_seq, 5);
}

TEST_F(AuditChainTest, DetectsAnAppendedForgery) {
  auto events = db_->audit.Since(0, 100);
  const std::string prev = Sha256Hex(AuditEventToJsonLine(events->back()));
  RawExec(path_,
          "INSERT INTO audit_events (seq, timestamp_ms, event_type, prev_chain_hash) VALUES (11, "
          "1, 'forged', '" +
              prev + "')");
  auto report = Verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.broken_seq, 11);
}

TEST_F(AuditChainTest, RetentionByCountKeepsTheChainVerifiable) {
  auto deleted = db_->audit.Prune(AuditRetention{4, 0});
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(*deleted, 6);
  auto report = Verify();
  EXPECT_TRUE(report.ok) << report.reason;
  EXPECT_EQ(report.first_seq, 7);
  EXPECT_EQ(report.checked, 4);
  auto next = Append(11000);
  EXPECT_EQ(next.seq, 11);
  EXPECT_TRUE(Verify().ok);
  // And tampering after retention is still caught.
  RawExec(path_, "UPDATE audit_events SET result = 'deny' WHERE seq = 7");
  EXPECT_EQ(Verify().broken_seq, 8);
}

TEST_F(AuditChainTest, RetentionByAgeDeletesOnlyAPrefix) {
  auto deleted = db_->audit.Prune(AuditRetention{0, 5500});  // events at 1000..5000 are old
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 5);
  auto rest = db_->audit.Since(0, 100);
  ASSERT_EQ(rest->size(), 5u);
  EXPECT_EQ(rest->front().seq, 6);
  EXPECT_TRUE(Verify().ok);
  EXPECT_EQ(*db_->audit.Prune(AuditRetention{0, 5500}), 0);  // idempotent
}

TEST_F(AuditChainTest, DeletingEverythingKeepsSeqAndChainAcrossReopen) {
  ASSERT_EQ(*db_->audit.Prune(AuditRetention{0, 999999}), 10);
  EXPECT_TRUE(Verify().ok);
  db_.reset();
  db_ = OpenDbOrDie(path_);
  auto next = Append(20000);
  EXPECT_EQ(next.seq, 11);
  EXPECT_NE(next.prev_chain_hash, std::string(64, '0'));
  auto report = Verify();
  EXPECT_TRUE(report.ok) << report.reason;
  EXPECT_EQ(report.first_seq, 11);
}

TEST_F(AuditChainTest, ConcurrentAppendsFormOneChain) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) Append(50000 + i);
    });
  }
  for (auto& th : threads) th.join();
  auto report = Verify();
  EXPECT_TRUE(report.ok) << report.reason;
  EXPECT_EQ(report.checked, 210);
  EXPECT_EQ(report.last_seq, 210);
}

TEST(AuditLogTest, AuditEventsAreChainedAndFiltered) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  std::vector<AuditEvent> stored;
  {
    auto db = OpenDbOrDie(path);
    for (int i = 0; i < 3; ++i) {
      AuditEvent e;
      e.timestamp_ms = 1700000000000 + i;
      e.session_id = "s";
      e.event_type = i == 1 ? "context.built" : "messages.appended";
      e.category = "context";
      e.result = "allow";
      e.detail_json = R"({"n":)" + std::to_string(i) + "}";
      auto r = db->audit.Append(e);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      stored.push_back(*r);
    }
  }
  EXPECT_EQ(stored[0].seq, 1);
  EXPECT_EQ(stored[2].seq, 3);
  EXPECT_EQ(stored[0].prev_chain_hash, std::string(64, '0'));
  EXPECT_EQ(stored[1].prev_chain_hash, Sha256Hex(AuditEventToJsonLine(stored[0])));
  EXPECT_EQ(stored[2].prev_chain_hash, Sha256Hex(AuditEventToJsonLine(stored[1])));

  auto db = OpenDbOrDie(path);  // the chain continues after a reopen
  AuditEvent e;
  e.event_type = "daemon.started";
  auto fourth = db->audit.Append(e);
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(fourth->seq, 4);
  EXPECT_EQ(fourth->prev_chain_hash, Sha256Hex(AuditEventToJsonLine(stored[2])));

  auto all = db->audit.Since(0, 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[1].detail_json, R"({"n":1})");
  EXPECT_EQ(AuditEventToJsonLine((*all)[2]), AuditEventToJsonLine(stored[2]));
  auto since = db->audit.Since(2, 100);
  ASSERT_EQ(since->size(), 2u);
  EXPECT_EQ((*since)[0].seq, 3);
  auto typed = db->audit.Since(0, 100, "messages.appended");
  ASSERT_EQ(typed->size(), 2u);
  EXPECT_EQ((*typed)[1].seq, 3);
  EXPECT_EQ(db->audit.Since(0, 1)->size(), 1u);
}

TEST(AuditLogTest, OutboxCursorsNeverMoveBackAndSurviveReopen) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    auto fresh = db->audit.OutboxCursor("nats");
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    EXPECT_EQ(*fresh, 0);
    ASSERT_TRUE(db->audit.AdvanceOutbox("nats", 10).ok());
    ASSERT_TRUE(db->audit.AdvanceOutbox("nats", 4).ok());  // late ack: ignored
    EXPECT_EQ(*db->audit.OutboxCursor("nats"), 10);
    ASSERT_TRUE(db->audit.AdvanceOutbox("nats", 12).ok());
    ASSERT_TRUE(db->audit.AdvanceOutbox("mirror", 3).ok());
    EXPECT_EQ(db->audit.AdvanceOutbox("", 1).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(db->audit.AdvanceOutbox("nats", -1).code(), StatusCode::kInvalidArgument);
  }
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(*db->audit.OutboxCursor("nats"), 12);
  EXPECT_EQ(*db->audit.OutboxCursor("mirror"), 3);
  EXPECT_EQ(*db->audit.OutboxCursor("other"), 0);
  // A composed write: an append and the cursor move commit together, or neither does.
  Status st = db.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db->audit.AdvanceOutbox(txn, "nats", 20));
    return Status::Conflict("broker did not ack");
  });
  EXPECT_EQ(st.code(), StatusCode::kConflict);
  EXPECT_EQ(*db->audit.OutboxCursor("nats"), 12);
}

TEST(AuditLogTest, TwoAuditLogsOverOneDatabaseShareTheTail) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  AuditLog other(*db.db);
  for (int i = 0; i < 6; ++i) {
    AuditEvent e;
    e.event_type = "context.built";
    e.timestamp_ms = i;
    auto r = (i % 2 ? other : db->audit).Append(e);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->seq, i + 1);
  }
  auto report = other.Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok) << report->reason;
  EXPECT_EQ(report->checked, 6);
}

}  // namespace
}  // namespace missy

namespace missy {
namespace {

// The details of a query plan, one per line.
std::string PlanOf(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr) ==
        SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char* t = sqlite3_column_text(st, 3);
        out += std::string(t ? reinterpret_cast<const char*>(t) : "") + "\n";
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// Past contexts (schema v14): a context.built event found by its context_id, and a
// session's contexts newest first, both through their partial indexes.
TEST(AuditLogTest, ContextsAreFoundByIdAndListedPerSessionNewestFirst) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  for (int i = 1; i <= 7; ++i) {
    AuditEvent e;
    e.session_id = i % 2 == 0 ? "a" : "b";
    e.event_type = i == 3 ? "messages.appended" : "context.built";
    e.detail_json = R"({"context_id":"ctx_)" + std::to_string(i) + R"(","used_tokens":1})";
    if (i == 7) e.detail_json = "not json";  // neither refused nor found
    ASSERT_TRUE(db->audit.Append(e).ok());
  }
  Result<AuditEvent> found = db->audit.FindContextBuilt("ctx_4");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->seq, 4);
  EXPECT_EQ(found->session_id, "a");
  EXPECT_EQ(db->audit.FindContextBuilt("ctx_3").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db->audit.FindContextBuilt("ctx_9").status().code(), StatusCode::kNotFound);

  Result<std::vector<AuditEvent>> a = db->audit.ContextsBuilt("a", 0, 10);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ((*a)[0].seq, 6);
  EXPECT_EQ((*a)[2].seq, 2);
  Result<std::vector<AuditEvent>> page = db->audit.ContextsBuilt("a", 6, 1);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].seq, 4);
  EXPECT_EQ(db->audit.ContextsBuilt("b", 0, 10)->size(), 3u);  // seq 3 is another type

  const std::string plan_by_id = PlanOf(
      path,
      "SELECT seq FROM audit_events WHERE event_type = 'context.built' AND CASE WHEN "
      "json_valid(detail_json) THEN json_extract(detail_json, '$.context_id') END = 'ctx_4'");
  EXPECT_NE(plan_by_id.find("audit_events_by_context"), std::string::npos) << plan_by_id;
  const std::string plan_by_session =
      PlanOf(path,
             "SELECT seq FROM audit_events WHERE event_type = 'context.built' AND "
             "session_id = 'a' AND seq < 100 ORDER BY seq DESC LIMIT 5");
  EXPECT_NE(plan_by_session.find("audit_events_contexts_by_session"), std::string::npos)
      << plan_by_session;
}

}  // namespace
}  // namespace missy
