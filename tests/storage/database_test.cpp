// The engine (storage/database.cpp): open, WAL, group commit, Txn hooks, WriteAsync,
// read-only and full-disk behaviour.
#include "storage/database.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/search.h"
#include "storage/sqlite.h"
#include "storage/stores.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::MakeSession;
using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::RawQuery;
using ::missy::testing::ReadFileOrDie;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

TEST(DatabaseTest, FreshDatabaseIsAtLatestVersionInWalMode) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_GE(Database::LatestSchemaVersion(), 1);
  db.reset();
  auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadOnly);
  ASSERT_TRUE(conn.ok());
  auto mode = (*conn)->Prepare("PRAGMA journal_mode");
  auto row = mode->Next();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(mode->Text(0), "wal");
}

TEST(DatabaseTest, RefusesNewerSchemaAndLeavesTheFileAlone) {
  TempDir dir;
  const std::string path = dir.Join("future.db");
  RawExec(path,
          "CREATE TABLE future_stuff (x); INSERT INTO future_stuff VALUES (42); PRAGMA "
          "user_version = 99;");
  const std::string before = ReadFileOrDie(path);
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kCorruption);
  const std::string& msg = db.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("schema version 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("knows up to " + std::to_string(Database::LatestSchemaVersion())),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("upgrade missyd"), std::string::npos) << msg;
  EXPECT_EQ(ReadFileOrDie(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(DatabaseTest, NotADatabaseIsCorruption) {
  TempDir dir;
  const std::string path = dir.Join("junk.db");
  testing::WriteFileOrDie(path, std::string(4096, 'x'));
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kCorruption) << db.status().ToString();
  EXPECT_EQ(ReadFileOrDie(path), std::string(4096, 'x'));
}

TEST(DatabaseTest, ConcurrentAppendsProduceGapFreeSeqs) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("shared")).ok());
  constexpr int kThreads = 8;
  constexpr int kCalls = 40;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        std::vector<NewMessage> batch;
        for (int k = 0; k <= i % 3; ++k) {
          batch.push_back(New(Message::User("t" + std::to_string(t) + "-" + std::to_string(i)), 2));
        }
        auto r = db->messages.Append("shared", std::move(batch), i);
        if (!r.ok()) {
          ++failures;
          continue;
        }
        for (size_t k = 1; k < r->size(); ++k) {
          if ((*r)[k].seq != (*r)[k - 1].seq + 1) ++failures;  // a batch is contiguous
        }
        for (const auto& m : *r) seen[t].push_back(m.seq);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<int64_t> all;
  for (auto& v : seen) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  const int64_t expected = kThreads * (14 * 1 + 13 * 2 + 13 * 3);  // i%3 = 0,1,2 over 40 calls
  ASSERT_EQ(static_cast<int64_t>(all.size()), expected);
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i + 1));
  auto session = db->sessions.Get("shared");
  EXPECT_EQ(session->last_seq, expected);
  EXPECT_EQ(session->message_count, expected);
  EXPECT_EQ(session->total_tokens, expected * 2);
  auto loaded = db->messages.Load("shared");
  ASSERT_EQ(static_cast<int64_t>(loaded->size()), expected);
}

TEST(DatabaseTest, AFailingWriteDoesNotAffectConcurrentOnes) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("ok")).ok());
  std::atomic<int> good{0}, not_found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto r = db->messages.Append(t % 2 ? "ok" : "missing", {New(Message::User("x"))}, 1);
        if (r.ok())
          ++good;
        else if (r.status().code() == StatusCode::kNotFound)
          ++not_found;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 100);
  EXPECT_EQ(not_found.load(), 100);
  EXPECT_EQ(db->sessions.Get("ok")->last_seq, 100);
}

TEST(DatabaseTest, ReadOnlyDatabaseRefusesWritesButServesReads) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
    ASSERT_TRUE(db->messages.Append("s", {New(Message::User("kept"))}, 1).ok());
  }
  DatabaseOptions ro;
  ro.read_only = true;
  auto db = OpenDbOrDie(path, ro);
  ASSERT_TRUE(db);
  auto w = db->messages.Append("s", {New(Message::User("lost"))}, 2);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(w.status().message().find("read-only"), std::string::npos) << w.status().message();
  EXPECT_EQ(db->sessions.Create(MakeSession("t")).code(), StatusCode::kUnavailable);
  EXPECT_EQ(db->audit.Append(AuditEvent{}).status().code(), StatusCode::kUnavailable);
  auto msgs = db->messages.Load("s");
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ((*msgs)[0].message.text, "kept");
  EXPECT_EQ(db->sessions.Get("s")->last_seq, 1);
}

TEST(DatabaseTest, DiskFullFailsUnavailableAndWritesNothingHalfway) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  { ASSERT_TRUE(OpenDbOrDie(path)->sessions.Create(MakeSession("s")).ok()); }
  DatabaseOptions small;
  small.max_page_count = 40;  // ~160 KB with 4 KB pages
  auto db = OpenDbOrDie(path, small);
  ASSERT_TRUE(db->messages.Append("s", {New(Message::User("small"))}, 1).ok());
  std::vector<NewMessage> big;
  for (int i = 0; i < 50; ++i) big.push_back(New(Message::User(std::string(8000, 'a' + i % 26))));
  auto r = db->messages.Append("s", std::move(big), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("disk full"), std::string::npos) << r.status().message();
  // Nothing of the failed batch is visible; reads and small writes keep working.
  auto msgs = db->messages.Load("s");
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ(db->sessions.Get("s")->last_seq, 1);
  EXPECT_EQ(db->sessions.Get("s")->message_count, 1);
  auto again = db->messages.Append("s", {New(Message::User("after"))}, 3);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)[0].seq, 2);
}

class ReadOnlyStoresTest : public testing::TwelveMessagesTest {};

TEST_F(ReadOnlyStoresTest, ReadOnlyDatabaseServesEveryReadAndRefusesEveryWrite) {
  MemoryItem m;
  m.text = "readable memory";
  ASSERT_TRUE(db_->memory.Add(m).ok());
  db_.reset();
  DatabaseOptions ro;
  ro.read_only = true;
  db_ = OpenDbOrDie(path_, ro);
  ASSERT_TRUE(db_);
  EXPECT_EQ(db_->messages.Load("s")->size(), 12u);
  SearchOptions o;
  o.query = "readable";
  EXPECT_EQ(Search(*db_.db, o)->size(), 1u);
  EXPECT_EQ(db_->memory.List({})->size(), 1u);
  EXPECT_TRUE(db_->audit.Verify()->ok);
  EXPECT_EQ(db_->memory.Add(m).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->jobs.Enqueue("k", "s", "{}", 1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->summaries.Insert(Leaf(1, 2, "x")).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(db_->calibration.Put(Calibration{"m", 1, 1, 1}).code(), StatusCode::kUnavailable);
}

// --- Composed writes, hooks, WriteAsync (the Txn contract) -------------------------------

class ComposedWriteTest : public testing::TwelveMessagesTest {
 protected:
  int64_t AuditCount() { return std::stoll(RawQuery(path_, "SELECT count(*) FROM audit_events")); }
  AuditEvent Event(std::string type) {
    AuditEvent e;
    e.timestamp_ms = 7;
    e.session_id = "s";
    e.event_type = std::move(type);
    e.category = "context";
    e.result = "allow";
    return e;
  }
};

TEST_F(ComposedWriteTest, SeveralStoresWriteInOneTransaction) {
  const WriterStats before = db_.db->GetWriterStats();
  int64_t job_id = 0, audit_seq = 0;
  Status st = db_.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db_->messages.AddFlags(txn, "s", {1, 2}, kFlagPruned));
    auto job = db_->jobs.Enqueue(txn, "summarize", "s", R"({"why":"composed"})", 50);
    if (!job.ok()) return job.status();
    job_id = job->job.id;
    auto event = db_->audit.Append(txn, Event("context.pruned"));
    if (!event.ok()) return event.status();
    audit_seq = event->seq;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  const WriterStats after = db_.db->GetWriterStats();
  EXPECT_EQ(after.transactions, before.transactions + 1);
  EXPECT_EQ(after.writes, before.writes + 1);
  auto msgs = db_->messages.Load("s", 0, 3);
  ASSERT_TRUE(msgs.ok());
  EXPECT_EQ((*msgs)[0].flags, kFlagPruned);
  EXPECT_EQ((*msgs)[1].flags, kFlagPruned);
  EXPECT_EQ((*msgs)[2].flags, kFlagNone);
  auto job = db_->jobs.Get(job_id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->payload_json, R"({"why":"composed"})");
  EXPECT_EQ(audit_seq, 1);
  EXPECT_EQ(AuditCount(), 1);
}

TEST_F(ComposedWriteTest, AFailureInTheMiddleLeavesNothing) {
  ASSERT_TRUE(db_->audit.Append(Event("daemon.started")).ok());  // seq 1
  std::vector<std::string> hooks;
  Status st = db_.db->Write([&](Txn& txn) -> Status {
    txn.OnCommit([&] { hooks.push_back("commit"); });
    txn.OnRollback([&] { hooks.push_back("rollback"); });
    MISSY_RETURN_IF_ERROR(db_->messages.AddFlags(txn, "s", {3}, kFlagPruned));
    MISSY_RETURN_IF_ERROR(db_->jobs.Enqueue(txn, "summarize", "s", "{}", 60).status());
    auto event = db_->audit.Append(txn, Event("context.pruned"));
    if (!event.ok()) return event.status();
    EXPECT_EQ(event->seq, 2);
    return db_->sessions.SetAnchor(txn, "ghost", 4);  // fails: nothing above may stay
  });
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_EQ(hooks, (std::vector<std::string>{"rollback"}));
  EXPECT_EQ(db_->messages.Load("s", 2, 1)->front().flags, kFlagNone);
  auto active = db_->jobs.HasActive("s", "summarize");
  ASSERT_TRUE(active.ok());
  EXPECT_FALSE(*active);
  EXPECT_EQ(AuditCount(), 1);
  // The audit tail cached by the rolled-back append was dropped: the chain continues at 2.
  auto next = db_->audit.Append(Event("context.built"));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->seq, 2);
  auto report = db_->audit.Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok) << report->reason;
  EXPECT_EQ(report->checked, 2);
}

TEST_F(ComposedWriteTest, HooksRunInOrderOnTheWriterAfterTheCommit) {
  std::vector<std::string> order;
  std::thread::id hook_thread;
  std::string seen_by_hook;
  Status st = db_.db->Write([&](Txn& txn) -> Status {
    MISSY_RETURN_IF_ERROR(db_->sessions.SetAnchor(txn, "s", 5));
    txn.OnCommit([&] {
      order.push_back("first");
      hook_thread = std::this_thread::get_id();
      // Committed: another connection sees the write.
      seen_by_hook = RawQuery(path_, "SELECT anchor_seq FROM sessions WHERE id = 's'");
    });
    txn.OnCommit([&] { order.push_back("second"); });
    txn.OnRollback([&] { order.push_back("rollback"); });
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Both ran before Write returned, in registration order, and no rollback hook ran.
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(seen_by_hook, "5");
  EXPECT_NE(hook_thread, std::this_thread::get_id());
}

TEST_F(ComposedWriteTest, AFailedWriteRunsOnlyItsRollbackHooksAndTheOtherOnlyItsCommitHooks) {
  // Two writes in flight: one fails (its hooks: rollback only), one commits (commit only).
  std::mutex mu;
  std::vector<std::string> events;
  auto record = [&](std::string e) {
    std::lock_guard lock(mu);
    events.push_back(std::move(e));
  };
  std::thread failing([&] {
    Status st = db_.db->Write([&](Txn& txn) -> Status {
      txn.OnCommit([&] { record("bad-commit"); });
      txn.OnRollback([&] { record("bad-rollback"); });
      return Status::Conflict("refused");
    });
    EXPECT_EQ(st.code(), StatusCode::kConflict);
  });
  Status st = db_.db->Write([&](Txn& txn) -> Status {
    txn.OnCommit([&] { record("good-commit"); });
    txn.OnRollback([&] { record("good-rollback"); });
    return db_->sessions.SetAnchor(txn, "s", 3);
  });
  failing.join();
  ASSERT_TRUE(st.ok());
  std::sort(events.begin(), events.end());
  EXPECT_EQ(events, (std::vector<std::string>{"bad-rollback", "good-commit"}));
  EXPECT_EQ(db_->sessions.Get("s")->anchor_seq, 3);
}

TEST_F(ComposedWriteTest, WriteAsyncCallsDoneOnTheWriterAfterTheCommit) {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  Status result = Status::Internal("not called");
  std::thread::id done_thread;
  std::vector<std::string> order;
  std::string seen_by_done;
  db_.db->WriteAsync(
      [&](Txn& txn) -> Status {
        txn.OnCommit([&] { order.push_back("hook"); });
        return db_->sessions.SetAnchor(txn, "s", 9);
      },
      [&](Status st) {
        order.push_back("done");
        seen_by_done = RawQuery(path_, "SELECT anchor_seq FROM sessions WHERE id = 's'");
        // Blocking Write from the writer thread would deadlock: it is refused.
        Status nested = db_.db->Write([](Txn&) { return Status::Ok(); });
        std::lock_guard lock(mu);
        result = std::move(st);
        done_thread = std::this_thread::get_id();
        finished = nested.code() == StatusCode::kInternal;
        cv.notify_all();
      });
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return finished; }));
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_NE(done_thread, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<std::string>{"hook", "done"}));
  EXPECT_EQ(seen_by_done, "9");
}

TEST_F(ComposedWriteTest, WriteAsyncReportsAFailureAndStoresNothing) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Status> result;
  db_.db->WriteAsync(
      [&](Txn& txn) -> Status {
        MISSY_RETURN_IF_ERROR(db_->messages.AddFlags(txn, "s", {1}, kFlagPruned));
        return db_->messages.AddFlags(txn, "ghost", {1}, kFlagPruned);
      },
      [&](Status st) {
        std::lock_guard lock(mu);
        result = std::move(st);
        cv.notify_all();
      });
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return result.has_value(); }));
  EXPECT_EQ(result->code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->messages.Load("s", 0, 1)->front().flags, kFlagNone);
}

TEST(DatabaseTest, ConcurrentWriteAsyncCallsBatchIntoFewerTransactions) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  const WriterStats before = db.db->GetWriterStats();
  constexpr int kWrites = 200;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, failed = 0;
  std::set<std::thread::id> done_threads;
  for (int i = 0; i < kWrites; ++i) {
    db.db->WriteAsync(
        [&, i](Txn& txn) -> Status {
          return db->messages
              .Append(txn, "s", {New(Message::User("async " + std::to_string(i)))}, i)
              .status();
        },
        [&](Status st) {
          std::lock_guard lock(mu);
          ++done;
          failed += st.ok() ? 0 : 1;
          done_threads.insert(std::this_thread::get_id());
          cv.notify_all();
        });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kWrites; }));
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(done_threads.size(), 1u);  // the writer thread
  EXPECT_EQ(done_threads.count(std::this_thread::get_id()), 0u);
  const WriterStats after = db.db->GetWriterStats();
  EXPECT_EQ(after.writes - before.writes, kWrites);
  EXPECT_LT(after.transactions - before.transactions, kWrites / 2)
      << "queued writes should share transactions";
  EXPECT_GT(after.max_batch, 1);
  auto session = db->sessions.Get("s");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->message_count, kWrites);
  EXPECT_EQ(session->last_seq, kWrites);
}

TEST(DatabaseTest, ClosingServesEveryQueuedAsyncWrite) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  std::atomic<int> ok{0};
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
    for (int i = 0; i < 50; ++i) {
      db.db->WriteAsync(
          [&, i](Txn& txn) -> Status {
            return db->messages.Append(txn, "s", {New(Message::User("m" + std::to_string(i)))}, i)
                .status();
          },
          [&](Status st) { ok += st.ok() ? 1 : 0; });
    }
  }  // the destructor serves the queue first
  EXPECT_EQ(ok.load(), 50);
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(db->sessions.Get("s")->message_count, 50);
}

int64_t CacheSizePragma(sqlite::Connection& c) {
  auto v = c.QueryInt("PRAGMA cache_size");
  return v.ok() ? *v : 0;
}

TEST(DatabaseTest, CountsCommitsAndSplitsTheCacheBudgetOverEveryConnection) {
  TempDir dir;
  DatabaseOptions options;
  options.cache_budget_bytes = 6 << 20;  // the writer and 2 readers: 2 MiB each
  options.max_readers = 2;
  EXPECT_EQ(Database::CacheKibPerConnection(options), 2048);
  auto db = OpenDbOrDie(dir.Join("m.db"), options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  // Two readers at once (the second nested in the first): both get the share.
  std::vector<int64_t> reader_cache;
  ASSERT_TRUE(db.db
                  ->Read([&](sqlite::Connection& outer) -> Status {
                    reader_cache.push_back(CacheSizePragma(outer));
                    return db.db->Read([&](sqlite::Connection& inner) -> Status {
                      reader_cache.push_back(CacheSizePragma(inner));
                      return Status::Ok();
                    });
                  })
                  .ok());
  EXPECT_EQ(reader_cache, (std::vector<int64_t>{-2048, -2048}));
  int64_t writer_cache = 0;
  ASSERT_TRUE(db.db
                  ->Write([&](Txn& txn) -> Status {
                    writer_cache = CacheSizePragma(txn.conn());
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(writer_cache, -2048);
  const WriterStats stats = db.db->GetWriterStats();
  EXPECT_EQ(stats.transactions, 2);
  // The second write changed no row: it wrote no WAL frame, so it is no fsync.
  EXPECT_EQ(stats.commits_with_fsync, 1 + stats.index_transactions);
  // The daemon's defaults: 32 MiB over the writer and 6 readers.
  EXPECT_EQ(DatabaseOptions{}.cache_budget_bytes, int64_t{32} << 20);
  EXPECT_EQ(DatabaseOptions{}.max_readers, 6);
  EXPECT_EQ(Database::CacheKibPerConnection(DatabaseOptions{}), 32 * 1024 / 7);
}

// Appends 4 MiB of text to session "s" and reads all of it back; returns the cache use.
DatabaseMemoryStats FillAndReadBack(const std::string& path, const DatabaseOptions& options) {
  auto db = OpenDbOrDie(path, options);
  if (!db) return {};
  EXPECT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  for (int b = 0; b < 4; ++b) {
    std::vector<NewMessage> batch;
    for (int i = 0; i < 256; ++i) {
      batch.push_back(New(Message::User(std::string(4096, static_cast<char>('a' + i % 26)))));
    }
    EXPECT_TRUE(db->messages.Append("s", std::move(batch), b).ok());
  }
  auto all = db->messages.Load("s");
  EXPECT_TRUE(all.ok());
  EXPECT_EQ(all.ok() ? all->size() : 0u, 1024u);
  return db.db->MemoryStats();
}

TEST(DatabaseTest, MemoryStatsReportTheCacheWhichStaysWithinTheBudget) {
  TempDir dir;
  DatabaseOptions small;
  small.cache_budget_bytes = 768 << 10;  // 256 KiB for the writer and each of 2 readers
  small.max_readers = 2;
  const DatabaseMemoryStats bounded = FillAndReadBack(dir.Join("small.db"), small);
  EXPECT_GT(bounded.sqlite_bytes, 0);
  EXPECT_GE(bounded.sqlite_high_water_bytes, bounded.sqlite_bytes);
  EXPECT_GT(bounded.cache_bytes, 0);
  EXPECT_LE(bounded.cache_bytes, bounded.sqlite_bytes);  // the page cache is SQLite's heap
  EXPECT_EQ(bounded.cache_budget_bytes, 768 << 10);
  EXPECT_EQ(bounded.open_readers, 1);
  EXPECT_LE(bounded.cache_bytes, small.cache_budget_bytes * 5 / 4);
  // The same work with a large budget caches far more: the bound above is the budget's.
  DatabaseOptions large;
  large.cache_budget_bytes = int64_t{256} << 20;
  const DatabaseMemoryStats unbounded = FillAndReadBack(dir.Join("large.db"), large);
  EXPECT_GT(unbounded.cache_bytes, 4 * small.cache_budget_bytes);
}

TEST(DatabaseTest, AtMostMaxReadersReadAtOnceAndANestedReadDoesNotWait) {
  TempDir dir;
  DatabaseOptions options;
  options.max_readers = 2;
  auto db = OpenDbOrDie(dir.Join("m.db"), options);
  ASSERT_TRUE(db);
  std::atomic<int> inside{0}, most{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        Status st = db.db->Read([&](sqlite::Connection&) -> Status {
          const int now = ++inside;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          --inside;
          return Status::Ok();
        });
        failures += st.ok() ? 0 : 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(most.load(), 2);
  EXPECT_EQ(db.db->MemoryStats().open_readers, 2);
  // Nested three deep on one thread, past the cap: no deadlock, and the extra reader is
  // closed afterwards.
  Status nested = db.db->Read([&](sqlite::Connection&) {
    return db.db->Read([&](sqlite::Connection&) {
      return db.db->Read([](sqlite::Connection&) { return Status::Ok(); });
    });
  });
  EXPECT_TRUE(nested.ok()) << nested.ToString();
  EXPECT_EQ(db.db->MemoryStats().open_readers, 2);
}

}  // namespace
}  // namespace missy
