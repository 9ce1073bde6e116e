// The writer's group commit (storage/database.cpp): several writes in one transaction
// (appends of one session get consecutive seqs, a failing write rolls back alone) and
// the wait that gathers concurrent writers into one transaction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage/stores.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

// Holds the writer inside a first write until Release(), so that the writes queued
// meanwhile run together in the next transaction.
class BlockedWriter {
 public:
  // Returns once the writer is inside the blocking write.
  explicit BlockedWriter(Database& db) : state_(std::make_shared<State>()) {
    db.WriteAsync(
        [state = state_](Txn&) -> Status {  // shared: the write outlives this object
          std::unique_lock lock(state->mu);
          state->started = true;
          state->cv.notify_all();
          state->cv.wait(lock, [&] { return state->released; });
          return Status::Ok();
        },
        nullptr);
    std::unique_lock lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->started; });
  }
  ~BlockedWriter() { Release(); }
  void Release() {
    std::lock_guard lock(state_->mu);
    state_->released = true;
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool started = false;
    bool released = false;
  };
  std::shared_ptr<State> state_;
};

TEST(DatabaseTest, OneTransactionWithSeveralAppendsOfASessionGivesConsecutiveSeqs) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  const WriterStats before = db.db->GetWriterStats();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int64_t>> seqs(30);
  int done = 0;
  {
    BlockedWriter blocked(*db.db);
    for (int i = 0; i < 30; ++i) {
      db.db->WriteAsync(
          [&, i](Txn& txn) -> Status {
            std::vector<NewMessage> batch;
            for (int k = 0; k <= i % 3; ++k) batch.push_back(New(Message::User("m"), 5));
            auto r = db->messages.Append(txn, "s", std::move(batch), 100 + i);
            if (!r.ok()) return r.status();
            for (const auto& m : *r) seqs[i].push_back(m.seq);
            return Status::Ok();
          },
          [&](Status st) {
            EXPECT_TRUE(st.ok()) << st.ToString();
            std::lock_guard lock(mu);
            ++done;
            cv.notify_all();
          });
    }
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return done == 30; }));
  const WriterStats after = db.db->GetWriterStats();
  EXPECT_EQ(after.transactions - before.transactions, 2);  // the blocker, then the 30
  EXPECT_EQ(after.max_batch, 30);
  // In queue order, each batch right after the previous one.
  int64_t next = 1;
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(seqs[i].size(), static_cast<size_t>(i % 3 + 1)) << "append " << i;
    for (int64_t seq : seqs[i]) EXPECT_EQ(seq, next++) << "append " << i;
  }
  auto session = db->sessions.Get("s");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->last_seq, 60);
  EXPECT_EQ(session->message_count, 60);
  EXPECT_EQ(session->total_tokens, 300);
  EXPECT_EQ(session->updated_at_ms, 129);
  EXPECT_EQ(db->messages.Load("s")->size(), 60u);
}

TEST(DatabaseTest, AFailingAppendInATransactionRollsBackAlone) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> results(4);
  int done = 0;
  auto append = [&](int i, std::string session, bool fail_after) {
    db.db->WriteAsync(
        [&, i, session, fail_after](Txn& txn) -> Status {
          auto r = db->messages.Append(txn, session,
                                       {New(Message::User("m" + std::to_string(i)), 5)}, i);
          if (!r.ok()) return r.status();
          return fail_after ? Status::Conflict("refused after the append") : Status::Ok();
        },
        [&, i](Status st) {
          std::lock_guard lock(mu);
          results[i] = std::move(st);
          ++done;
          cv.notify_all();
        });
  };
  {
    BlockedWriter blocked(*db.db);
    append(0, "s", false);
    append(1, "s", true);         // appended, then the write fails: rolled back
    append(2, "missing", false);  // kNotFound
    append(3, "s", false);
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return done == 4; }));
  EXPECT_EQ(db.db->GetWriterStats().max_batch, 4);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[1].code(), StatusCode::kConflict);
  EXPECT_EQ(results[2].code(), StatusCode::kNotFound);
  EXPECT_TRUE(results[3].ok());
  auto msgs = db->messages.Load("s");
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].message.text, "m0");
  EXPECT_EQ((*msgs)[0].seq, 1);
  EXPECT_EQ((*msgs)[1].message.text, "m3");
  EXPECT_EQ((*msgs)[1].seq, 2);
  auto session = db->sessions.Get("s");
  EXPECT_EQ(session->last_seq, 2);
  EXPECT_EQ(session->message_count, 2);
  EXPECT_EQ(session->total_tokens, 10);
  EXPECT_EQ(session->updated_at_ms, 3);
}

TEST(DatabaseTest, GroupCommitGathersConcurrentWritersButNeverDelaysALoneOne) {
  TempDir dir;
  DatabaseOptions options;
  options.group_commit_wait_us = 1000000;  // bounded by half the last COMMIT anyway
  auto db = OpenDbOrDie(dir.Join("m.db"), options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  // One writer: nothing is queued after its commit, so the writer never waits to gather.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(db->messages.Append("s", {New(Message::User("lone"))}, i).ok());
  }
  EXPECT_EQ(db.db->GetWriterStats().gather_waits, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // Eight writers: right after a commit most of them are still waking up.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        failures += db->messages.Append("s", {New(Message::User("many"))}, i).ok() ? 0 : 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(db.db->GetWriterStats().gather_waits, 0);
  EXPECT_EQ(db->sessions.Get("s")->message_count, 20 + 8 * 30);
}

TEST(DatabaseTest, WithoutAGroupCommitWaitTheWriterNeverWaitsToGather) {
  TempDir dir;
  DatabaseOptions options;
  options.group_commit_wait_us = 0;
  auto db = OpenDbOrDie(dir.Join("m.db"), options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) (void)db->messages.Append("s", {New(Message::User("x"))}, i);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(db.db->GetWriterStats().gather_waits, 0);
  EXPECT_EQ(db->sessions.Get("s")->message_count, 8 * 30);
}

}  // namespace
}  // namespace missy
