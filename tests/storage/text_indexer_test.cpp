// Deferred full-text indexing (storage/text_indexer.cpp): message text (schema version 4)
// and summary text (version 9) behind watermarks, idle and bounded indexing, and searches
// that catch up or fall back.
#include "storage/text_indexer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage/schema.h"
#include "storage/search.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::ExpectIndexConsistent;
using ::missy::testing::MaxMessageId;
using ::missy::testing::MessageIds;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::RawQuery;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;
using ::missy::testing::WaitFor;
using ::missy::testing::Watermark;

std::string SummaryWatermark(const std::string& path) {
  return RawQuery(path, "SELECT value FROM meta WHERE key = 'summaries_fts_indexed'");
}

std::string MaxSummaryN(const std::string& path) {
  return RawQuery(path, "SELECT coalesce(max(n), 0) FROM summaries");
}

TEST(DeferredIndexTest, SearchUnderConcurrentAppendsSeesEverythingAcknowledgedBeforeIt) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  DatabaseOptions options;
  options.index_batch = 7;  // many small index transactions interleaved with the writes
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 150;
  for (int w = 0; w < kWriters; ++w)
    ASSERT_TRUE(db->sessions.Create(SimpleSession("w" + std::to_string(w))).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string session = "w" + std::to_string(w);
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string word = "tok" + std::to_string(w) + "q" + std::to_string(i);
        auto r = db->messages.Append(session,
                                     {NewMessage{Message::User("common " + word), 2, 0, {}}}, i);
        if (!r.ok()) {
          ++failures;
          continue;
        }
        if (i % 10 != 0) continue;
        // Acknowledged: the next search must find it, whatever the indexer is doing.
        SearchOptions o;
        o.query = word;
        auto hits = Search(*db.db, o);
        if (!hits.ok() || MessageIds(*hits) != std::vector<std::string>{
                                                   session + ":" + std::to_string((*r)[0].seq)}) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  SearchOptions o;
  o.query = "common";
  o.max_results = 1000;
  EXPECT_EQ(Search(*db.db, o)->size(), static_cast<size_t>(kWriters * kPerWriter));
  EXPECT_EQ(Watermark(path), MaxMessageId(path));
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'common'"),
            std::to_string(kWriters * kPerWriter));
  ExpectIndexConsistent(path);
}

TEST(DeferredIndexTest, AnIdleWriterIndexesThePendingMessagesInBatches) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  DatabaseOptions options;
  options.index_batch = 100;
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  std::vector<NewMessage> batch;
  for (int i = 0; i < 1000; ++i)
    batch.push_back(NewMessage{Message::User("row " + std::to_string(i) + " koala"), 2, 0, {}});
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 1).ok());
  // No search: the writer indexes on its own once idle.
  ASSERT_TRUE(
      WaitFor([&] { return Watermark(path) == MaxMessageId(path); }, std::chrono::seconds(20)));
  ASSERT_EQ(Watermark(path), MaxMessageId(path));
  EXPECT_GE(db.db->GetWriterStats().index_transactions, 10);  // 1000 rows, 100 per transaction
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'koala'"),
            "1000");
  ExpectIndexConsistent(path);
}

// Rows above the watermark are not in the index yet: updating or deleting them must
// not touch it (deleting absent rows from an external-content index corrupts it),
// and a reused id below the watermark is indexed at once.
TEST(DeferredIndexTest, UpdatesAndDeletesOfPendingAndIndexedRowsStayInSync) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  ASSERT_TRUE(
      db->messages.Append("s", {NewMessage{Message::User("indexed walrus"), 2, 0, {}}}, 1).ok());
  SearchOptions o;
  o.query = "walrus";
  ASSERT_EQ(Search(*db.db, o)->size(), 1u);  // caught up: row 1 is indexed
  ASSERT_EQ(Watermark(path), "1");
  // Pending rows, written behind the writer's back so no indexer sees them yet.
  RawExec(path,
          "INSERT INTO messages (id, session_id, seq, role, content, created_at_ms, text) VALUES "
          "(2, 's', 2, 'user', '\"pending otter\"', 2, 'pending otter'),"
          "(3, 's', 3, 'user', '\"pending lynx\"', 2, 'pending lynx'),"
          "(4, 's', 4, 'user', '\"pending ibis\"', 2, 'pending ibis');"
          "UPDATE messages SET text = 'pending heron' WHERE id = 2;"
          "DELETE FROM messages WHERE id = 3;"
          "UPDATE messages SET text = 'indexed seal' WHERE id = 1;");
  EXPECT_EQ(Watermark(path), "1");
  ExpectIndexConsistent(path);
  o.query = "walrus";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  o.query = "seal";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:1"}));
  o.query = "heron";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:2"}));
  o.query = "otter";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  o.query = "lynx";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  o.query = "ibis";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:4"}));
  EXPECT_EQ(Watermark(path), "4");
  ExpectIndexConsistent(path);
  // Delete the newest rows: the next insert gets an id below the watermark.
  RawExec(
      path,
      "DELETE FROM messages WHERE id = 4; UPDATE sessions SET last_seq = 4, message_count = 2;");
  o.query = "ibis";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  auto r = db->messages.Append("s", {NewMessage{Message::User("reused puffin"), 2, 0, {}}}, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(RawQuery(path, "SELECT id FROM messages WHERE seq = 5"),
            "3");  // max(id) + 1, below the watermark
  o.query = "puffin";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:5"}));
  ExpectIndexConsistent(path);
}

TEST(DeferredIndexTest, MigrationFromVersion3KeepsTheIndexAndIndexesNewRows) {
  TempDir dir;
  const std::string path = dir.Join("v3.db");
  {
    auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(schema::Migrate(**conn, 3).ok());
    // Version 3 indexes by trigger.
    ASSERT_TRUE(
        (*conn)
            ->Exec(
                "INSERT INTO sessions (id, created_at_ms, updated_at_ms, message_count, last_seq) "
                "VALUES ('old', 1, 1, 3, 3);"
                "INSERT INTO messages (session_id, seq, role, content, created_at_ms, text) VALUES "
                "('old', 1, 'user', '\"old gazelle\"', 1, 'old gazelle'),"
                "('old', 2, 'user', '\"old impala\"', 1, 'old impala'),"
                "('old', 3, 'user', '\"old eland\"', 1, 'old eland');")
            .ok());
  }
  ASSERT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'old'"),
            "3");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_EQ(Watermark(path), "3");  // everything the trigger indexed
  EXPECT_EQ(
      RawQuery(
          path,
          "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'messages_ai'"),
      "0");
  SearchOptions o;
  o.query = "impala";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"old:2"}));
  ASSERT_TRUE(
      db->messages.Append("old", {NewMessage{Message::User("new oryx"), 2, 0, {}}}, 2).ok());
  o.query = "oryx";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"old:4"}));
  o.query = "old";
  o.max_results = 10;
  EXPECT_EQ(Search(*db.db, o)->size(), 3u);  // no row indexed twice
  EXPECT_EQ(Watermark(path), "4");
  ExpectIndexConsistent(path);
}

// A read-only database (or a full disk) cannot catch the index up: the search
// indexes the pending rows on its own connection instead.
TEST(DeferredIndexTest, ReadOnlySearchStillFindsPendingMessages) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
    ASSERT_TRUE(
        db->messages.Append("s", {NewMessage{Message::User("indexed bison"), 2, 0, {}}}, 1).ok());
  }
  RawExec(path,
          "INSERT INTO messages (session_id, seq, role, content, created_at_ms, text) VALUES "
          "('s', 2, 'user', '\"pending bison yak\"', 2, 'pending bison yak');");
  // Make sure the second row is pending, whether or not the idle writer indexed the first.
  const std::string max_id = MaxMessageId(path);
  ASSERT_LT(std::stoll(Watermark(path)), std::stoll(max_id));
  DatabaseOptions ro;
  ro.read_only = true;
  auto db = OpenDbOrDie(path, ro);
  ASSERT_TRUE(db);
  SearchOptions o;
  o.query = "yak";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:2"}));
  o.query = "bison";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"s:1", "s:2"}));
  o.session_id = "other";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  EXPECT_NE(Watermark(path), max_id);  // nothing was written
}

TEST(DeferredIndexTest, TheBacklogIsBoundedUnderContinuousWrites) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  DatabaseOptions options;
  options.index_idle_ms = 1000000;  // never idle: only the bound makes the writer index
  options.max_index_backlog = 50;
  options.index_batch = 4;  // fewer than one write transaction adds
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  for (int call = 0; call < 40; ++call) {
    std::vector<NewMessage> batch;
    for (int k = 0; k < 10; ++k)
      batch.push_back(NewMessage{Message::User("busy marmot"), 2, 0, {}});
    ASSERT_TRUE(db->messages.Append("s", std::move(batch), call).ok());
    const int64_t backlog = std::stoll(MaxMessageId(path)) - std::stoll(Watermark(path));
    EXPECT_LE(backlog, 50 + 10 + 10) << "after call " << call;  // bound + one write + the next one
  }
  EXPECT_GT(db.db->GetWriterStats().index_transactions, 5);
  SearchOptions o;
  o.query = "marmot";
  o.max_results = 1000;
  EXPECT_EQ(Search(*db.db, o)->size(), 400u);
  ExpectIndexConsistent(path);
}

TEST(DeferredIndexTest, AFullDiskDoesNotHideMessagesFromSearch) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  { ASSERT_TRUE(OpenDbOrDie(path)->sessions.Create(SimpleSession("s")).ok()); }
  DatabaseOptions small;
  small.max_page_count =
      std::stoll(RawQuery(path, "PRAGMA page_count")) + 12;  // a few more rows fit
  small.index_idle_ms = 1000000;  // leave the rows pending for the searches below
  auto db = OpenDbOrDie(path, small);
  ASSERT_TRUE(db);
  std::vector<NewMessage> rows;
  for (int i = 0; i < 30; ++i)
    rows.push_back(
        NewMessage{Message::User("quokka " + std::string(1500, 'a' + i % 26)), 2, 0, {}});
  int appended = 0;
  for (const NewMessage& m : rows) {  // fill the file until it refuses
    if (!db->messages.Append("s", {m}, 1).ok()) break;
    ++appended;
  }
  ASSERT_GT(appended, 0);
  ASSERT_LT(appended, 30) << "the disk never filled up";
  SearchOptions o;
  o.query = "quokka";
  o.max_results = 100;
  auto hits = Search(*db.db, o);  // the catch-up may not fit: the search falls back
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  EXPECT_EQ(hits->size(), static_cast<size_t>(appended));
}

// --- Summaries (schema version 9): the same watermark rules over summaries.n ---------

SummaryRecord LeafOf(const std::string& session, int64_t first, int64_t last,
                     const std::string& text) {
  SummaryRecord s;
  s.session_id = session;
  s.content = text;
  s.tokens = 10;
  s.first_seq = first;
  s.last_seq = last;
  s.descendant_count = last - first + 1;
  s.created_at_ms = 5;
  return s;
}

std::vector<std::string> SummaryIds(const std::vector<MemoryHit>& hits) {
  std::vector<std::string> ids;
  for (const MemoryHit& h : hits) {
    if (h.source == "summary") ids.push_back(h.id);
  }
  return ids;
}

// A stored summary is not indexed in its own commit; a search catches the index up
// first, and an idle writer indexes it on its own.
TEST(DeferredIndexTest, ASummaryIsIndexedAfterItsCommitAndFoundAtOnce) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  DatabaseOptions options;
  options.index_idle_ms = 1000000;  // no idle indexing until the search below
  auto db = OpenDbOrDie(path, options);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  const std::string before = SummaryWatermark(path);
  auto stored = db->summaries.Insert(LeafOf("s", 1, 4, "the parser tortoise was fixed"));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(SummaryWatermark(path), before);  // not in the summary's own commit
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH "
                     "'tortoise'"),
            "0");
  SearchOptions o;
  o.query = "tortoise";
  auto hits = Search(*db.db, o);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  EXPECT_EQ(SummaryIds(*hits), (std::vector<std::string>{stored->id}));
  EXPECT_EQ(SummaryWatermark(path), MaxSummaryN(path));
  ExpectIndexConsistent(path);
}

TEST(DeferredIndexTest, AnIdleWriterIndexesThePendingSummaries) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(db->summaries
                    .Insert(LeafOf("s", 2 * i + 1, 2 * i + 2, "summary heron " + std::to_string(i)))
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] { return SummaryWatermark(path) == MaxSummaryN(path); },
                      std::chrono::seconds(20)));
  ASSERT_EQ(SummaryWatermark(path), MaxSummaryN(path));
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'heron'"),
            "20");
  ExpectIndexConsistent(path);
}

// Deleting or updating a summary above the watermark must not touch the index (it is
// not in it); below it, the index follows; a reused n below the watermark is indexed at
// once.
TEST(DeferredIndexTest, UpdatesAndDeletesOfPendingAndIndexedSummariesStayInSync) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  auto first = db->summaries.Insert(LeafOf("s", 1, 2, "indexed walrus"));
  ASSERT_TRUE(first.ok());
  SearchOptions o;
  o.messages = false;
  o.memory = false;
  o.query = "walrus";
  ASSERT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{first->id}));
  ASSERT_EQ(SummaryWatermark(path), "1");
  RawExec(path,
          "INSERT INTO summaries (n, id, session_id, content, first_seq, last_seq, "
          "created_at_ms) VALUES (2, 'sum_otter', 's', 'pending otter', 3, 4, 1),"
          "(3, 'sum_lynx', 's', 'pending lynx', 5, 6, 1),"
          "(4, 'sum_ibis', 's', 'pending ibis', 7, 8, 1);"
          "UPDATE summaries SET content = 'pending heron' WHERE n = 2;"
          "DELETE FROM summaries WHERE n = 3;"
          "UPDATE summaries SET content = 'indexed seal' WHERE n = 1;");
  EXPECT_EQ(SummaryWatermark(path), "1");
  ExpectIndexConsistent(path);
  o.query = "walrus";
  EXPECT_TRUE(SummaryIds(*Search(*db.db, o)).empty());
  o.query = "seal";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{first->id}));
  o.query = "heron";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{"sum_otter"}));
  o.query = "lynx";
  EXPECT_TRUE(SummaryIds(*Search(*db.db, o)).empty());
  o.query = "ibis";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{"sum_ibis"}));
  EXPECT_EQ(SummaryWatermark(path), "4");
  ExpectIndexConsistent(path);
  RawExec(path, "DELETE FROM summaries WHERE n = 4;");
  auto reused = db->summaries.Insert(LeafOf("s", 9, 10, "reused puffin"));
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(RawQuery(path, "SELECT n FROM summaries WHERE id = '" + reused->id + "'"), "3");
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH "
                     "'puffin'"),
            "1");  // below the watermark: indexed in its own commit
  ExpectIndexConsistent(path);
}

TEST(DeferredIndexTest, ReadOnlySearchStillFindsPendingSummaries) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->sessions.Create(SimpleSession("s")).ok());
  }
  RawExec(path,
          "INSERT INTO summaries (id, session_id, content, first_seq, last_seq, created_at_ms) "
          "VALUES ('sum_yak', 's', 'pending bison yak', 1, 2, 1);");
  ASSERT_LT(std::stoll(SummaryWatermark(path)), std::stoll(MaxSummaryN(path)));
  DatabaseOptions ro;
  ro.read_only = true;
  auto db = OpenDbOrDie(path, ro);
  ASSERT_TRUE(db);
  SearchOptions o;
  o.query = "yak";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{"sum_yak"}));
  o.session_id = "other";
  EXPECT_TRUE(SummaryIds(*Search(*db.db, o)).empty());
  EXPECT_LT(std::stoll(SummaryWatermark(path)), std::stoll(MaxSummaryN(path)));  // no write
}

TEST(DeferredIndexTest, MigrationFromVersion8KeepsTheSummaryIndex) {
  TempDir dir;
  const std::string path = dir.Join("v8.db");
  {
    auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(schema::Migrate(**conn, 8).ok());
    ASSERT_TRUE((*conn)
                    ->Exec("INSERT INTO sessions (id, created_at_ms, updated_at_ms) VALUES "
                           "('old', 1, 1);"
                           "INSERT INTO summaries (id, session_id, content, first_seq, last_seq, "
                           "created_at_ms) VALUES ('sum_a', 'old', 'old gazelle', 1, 2, 1), "
                           "('sum_b', 'old', 'old impala', 3, 4, 1);")
                    .ok());
  }
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_EQ(SummaryWatermark(path), "2");  // what the version 3 trigger indexed
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'old'"),
            "2");
  SearchOptions o;
  o.query = "impala";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{"sum_b"}));
  auto added = db->summaries.Insert(LeafOf("old", 5, 6, "new oryx"));
  ASSERT_TRUE(added.ok());
  o.query = "oryx";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)), (std::vector<std::string>{added->id}));
  o.query = "old";
  EXPECT_EQ(SummaryIds(*Search(*db.db, o)).size(), 2u);  // none indexed twice
  ExpectIndexConsistent(path);
}

}  // namespace
}  // namespace missy
