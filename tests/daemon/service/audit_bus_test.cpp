#include "daemon/audit/audit_bus.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <mutex>
#include <thread>

#include "service_fixture.h"

namespace missy::testing {
namespace {

namespace json = boost::json;

AuditRecord Record(std::string type, std::string session = "s") {
  return AuditRecord{std::move(type), "daemon", "allow", std::move(session),
                     AuditDetail().Add("n", 1)};
}

int64_t LineSeq(const std::string& line) {
  return json::parse(line).at("seq").to_number<int64_t>();
}

class ServiceAuditBusTest : public ServiceFixture {
 protected:
  struct Published {
    int64_t seq = 0;
    std::string type;
    std::string line;
    bool visible = false;  // a reader saw the event when it was published
  };

  void Subscribe() {
    audit_->SetPublisher([this](int64_t seq, const std::string& type, std::string line) {
      Result<std::vector<AuditEvent>> now = stores_->audit.Since(seq - 1, 1);
      const bool visible = now.ok() && now->size() == 1 && (*now)[0].seq == seq;
      std::lock_guard<std::mutex> lock(mu_);
      published_.push_back(Published{seq, type, std::move(line), visible});
    });
  }
  std::vector<Published> published() {
    std::lock_guard<std::mutex> lock(mu_);
    return published_;
  }
  std::vector<AuditEvent> All() {
    Result<std::vector<AuditEvent>> all = stores_->audit.Since(0, 0);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    return all.ok() ? *all : std::vector<AuditEvent>{};
  }
  // Queues a write that appends one event of `type` and then returns `result`.
  void AppendAsync(const std::string& type, Status result, Awaiter<Status>& w) {
    db_->WriteAsync(
        [this, type, result](Txn& txn) -> Status {
          MISSY_RETURN_IF_ERROR(audit_->Append(txn, Record(type)));
          return result;
        },
        w.Callback());
  }

  std::mutex mu_;
  std::vector<Published> published_;
};

TEST_F(ServiceAuditBusTest, AppendInsideAWritePublishesOnlyAfterTheCommitInSeqOrder) {
  Subscribe();
  size_t published_during_write = 99;
  Status st = db_->Write([&](Txn& txn) {
    MISSY_RETURN_IF_ERROR(audit_->Append(txn, Record("test.one")));
    MISSY_RETURN_IF_ERROR(audit_->Append(txn, Record("test.two")));
    published_during_write = published().size();
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(published_during_write, 0u);

  std::vector<Published> got = published();
  std::vector<AuditEvent> stored = All();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(stored.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].seq, static_cast<int64_t>(i) + 1);
    EXPECT_TRUE(got[i].visible) << "published before its commit: seq " << got[i].seq;
    EXPECT_EQ(got[i].line, AuditEventToJsonLine(stored[i]));
  }
  EXPECT_EQ(got[0].type, "test.one");
  EXPECT_EQ(got[1].type, "test.two");
  EXPECT_EQ(stored[1].prev_chain_hash.size(), 64u);
}

TEST_F(ServiceAuditBusTest, ConcurrentWritesPublishInSeqOrderAfterTheirGroupCommit) {
  Subscribe();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::vector<std::vector<Awaiter<Status>>> waits(kThreads);
  for (auto& per_thread : waits) per_thread.resize(kPerThread);
  {
    WriterBlock block(*db_);  // everything below lands in one group transaction
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          AppendAsync("test.t" + std::to_string(t), Status::Ok(), waits[t][i]);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_TRUE(published().empty()) << "nothing is published before the commit";
    EXPECT_TRUE(All().empty());
    ASSERT_TRUE(block.Release().ok());
  }
  for (auto& per_thread : waits) {
    for (auto& w : per_thread) {
      std::optional<Status> st = w.Wait();
      ASSERT_TRUE(st && st->ok());
    }
  }
  std::vector<Published> got = published();
  ASSERT_EQ(got.size(), static_cast<size_t>(kThreads * kPerThread));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(LineSeq(got[i].line), got[i].seq);
    EXPECT_TRUE(got[i].visible);
  }
  EXPECT_TRUE(stores_->audit.Verify()->ok);
}

TEST_F(ServiceAuditBusTest, RolledBackWritePublishesNothingAndTheChainStaysValid) {
  Subscribe();
  ASSERT_TRUE(db_->Write([&](Txn& txn) { return audit_->Append(txn, Record("test.kept")); }).ok());

  // Alone: the write fails after appending.
  Status st = db_->Write([&](Txn& txn) {
    MISSY_RETURN_IF_ERROR(audit_->Append(txn, Record("test.doomed")));
    return Status::Internal("boom");
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "boom");
  EXPECT_EQ(published().size(), 1u);
  EXPECT_EQ(All().size(), 1u);

  // In the middle of a group transaction: only that write rolls back.
  Awaiter<Status> before, doomed, after;
  {
    WriterBlock block(*db_);
    AppendAsync("test.before", Status::Ok(), before);
    AppendAsync("test.doomed", Status::Conflict("refused"), doomed);
    AppendAsync("test.after", Status::Ok(), after);
    ASSERT_TRUE(block.Release().ok());
  }
  EXPECT_TRUE(before.Wait().value_or(Status::Internal("timeout")).ok());
  EXPECT_EQ(doomed.Wait().value_or(Status::Internal("timeout")).code(), StatusCode::kConflict);
  EXPECT_TRUE(after.Wait().value_or(Status::Internal("timeout")).ok());

  std::vector<Published> got = published();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].type, "test.before");
  EXPECT_EQ(got[2].type, "test.after");
  EXPECT_EQ(got[2].seq, 3);  // the rolled-back events used no seq
  std::vector<AuditEvent> stored = All();
  ASSERT_EQ(stored.size(), 3u);
  for (const AuditEvent& e : stored) EXPECT_NE(e.event_type, "test.doomed");

  ASSERT_TRUE(db_->Write([&](Txn& txn) { return audit_->Append(txn, Record("test.last")); }).ok());
  Result<AuditVerifyReport> report = stores_->audit.Verify();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok) << report->reason << " at " << report->broken_seq;
  EXPECT_EQ(report->checked, 4);
  EXPECT_EQ(report->last_seq, 4);
}

TEST_F(ServiceAuditBusTest, BacklogPagesAdvanceAndFilterByType) {
  ASSERT_TRUE(db_->Write([&](Txn& txn) {
                   for (int seq = 1; seq <= 10; ++seq) {
                     MISSY_RETURN_IF_ERROR(
                         audit_->Append(txn, Record(seq % 2 == 0 ? "test.even" : "test.odd")));
                   }
                   return Status::Ok();
                 })
                  .ok());
  const std::vector<AuditEvent> stored = All();
  ASSERT_EQ(stored.size(), 10u);

  struct Page {
    std::vector<std::string> types;
    int64_t after;
    size_t max_lines;
    std::vector<int64_t> want_seqs;
    int64_t want_last_seen;
  };
  const Page pages[] = {
      {{}, 0, 4, {1, 2, 3, 4}, 4},
      {{}, 4, 4, {5, 6, 7, 8}, 8},
      {{}, 8, 4, {9, 10}, 10},
      {{}, 10, 4, {}, 10},  // at the end: the cursor stays
      {{"test.even"}, 0, 4, {2, 4}, 4},
      {{"test.even"}, 4, 4, {6, 8}, 8},
      {{"test.even"}, 8, 4, {10}, 10},
      {{"test.none"}, 0, 4, {}, 4},  // nothing matches, yet the cursor advances
      {{"test.odd", "test.even"}, 2, 3, {3, 4, 5}, 5},
      {{}, 0, 0, {1}, 1},  // at least one examined
      {{}, 50, 4, {}, 50},
  };
  for (const Page& p : pages) {
    int64_t last_seen = -1;
    std::vector<std::string> lines = audit_->BacklogPage(p.types, p.after, p.max_lines, &last_seen);
    std::vector<int64_t> seqs;
    for (const std::string& line : lines) {
      seqs.push_back(LineSeq(line));
      EXPECT_EQ(line, AuditEventToJsonLine(stored[seqs.back() - 1]));
    }
    const std::string what = "after " + std::to_string(p.after) + " max " +
                             std::to_string(p.max_lines) + " types " +
                             std::to_string(p.types.size());
    EXPECT_EQ(seqs, p.want_seqs) << what;
    EXPECT_EQ(last_seen, p.want_last_seen) << what;
  }
}

TEST_F(ServiceAuditBusTest, EmitReturnsAtOnceAndAfterPendingSeesEveryEarlierEmit) {
  Subscribe();
  Awaiter<Status> pending;
  size_t seen_in_callback = 0;
  {
    WriterBlock block(*db_);
    for (int i = 0; i < 5; ++i) audit_->Emit(Record("test.emitted"));  // the writer is held
    EXPECT_TRUE(All().empty());
    auto cb = pending.Callback();
    audit_->AfterPending([this, cb, &seen_in_callback](Status st) {
      seen_in_callback = All().size();
      cb(std::move(st));
    });
    EXPECT_FALSE(pending.ready()) << "AfterPending ran before the earlier events committed";
    ASSERT_TRUE(block.Release().ok());
  }
  std::optional<Status> st = pending.Wait();
  ASSERT_TRUE(st && st->ok());
  EXPECT_EQ(seen_in_callback, 5u);
  std::vector<Published> got = published();
  ASSERT_EQ(got.size(), 5u) << "published before AfterPending's callback";
  EXPECT_EQ(got[4].seq, 5);
}

TEST_F(ServiceAuditBusTest, EmitAndWaitIsReadableOnReturn) {
  ASSERT_TRUE(audit_->EmitAndWait(Record("daemon.started", "")).ok());
  std::vector<AuditEvent> stored = All();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].event_type, "daemon.started");
  EXPECT_EQ(stored[0].timestamp_ms, kStartMs);
  EXPECT_EQ(stored[0].detail_json, R"({"n":1})");
}

TEST_F(ServiceAuditBusTest, OutboxCursorsOnlyMoveForward) {
  EXPECT_EQ(*audit_->OutboxCursor("nats"), 0);
  ASSERT_TRUE(audit_->AdvanceOutbox("nats", 7).ok());
  EXPECT_EQ(*audit_->OutboxCursor("nats"), 7);
  ASSERT_TRUE(audit_->AdvanceOutbox("nats", 3).ok());
  EXPECT_EQ(*audit_->OutboxCursor("nats"), 7);
  EXPECT_EQ(*audit_->OutboxCursor("other"), 0);
  EXPECT_EQ(audit_->AdvanceOutbox("", 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace missy::testing
