// FTS5 indexes and search (storage/database.cpp) and query quoting (storage/fts_query.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "storage/database.h"
#include "storage/search.h"
#include "storage/fts_query.h"
#include "storage/schema.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::RawQuery;
using ::missy::testing::SimpleSession;
using ::missy::testing::TempDir;

TEST(FtsQueryTest, QuotesEveryWordAndDropsSyntax) {
  struct Case {
    std::string raw;
    std::string all;  // AND form
  };
  const Case cases[] = {
      {"hello world", R"("hello" AND "world")"},
      {"NEAR(a b", R"("NEAR" AND "a" AND "b")"},
      {"foo* -bar ^baz col:qux", R"("foo" AND "bar" AND "baz" AND "col" AND "qux")"},
      {"say \"hi\" there", R"("say" AND "hi" AND "there")"},
      {"Hello hello HELLO", R"("Hello")"},
      {"'; DROP TABLE messages; --", R"("DROP" AND "TABLE" AND "messages")"},
      {"caf\xC3\xA9 na\xC3\xAFve", "\"caf\xC3\xA9\" AND \"na\xC3\xAFve\""},
      {"bad\xFF\xFEutf8 \xC0\xAF over", R"("bad" AND "utf8" AND "over")"},
      {"tab\tnew\nline\x01\x7f", R"("tab" AND "new" AND "line")"},
      {"((( ))) ** -- \"\"", ""},
      {"", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.raw);
    EXPECT_EQ(fts::BuildMatchExpression(fts::QueryTerms(c.raw), true), c.all);
  }
  EXPECT_EQ(fts::BuildMatchExpression(fts::QueryTerms("a b"), false), R"("a" OR "b")");
}

TEST(FtsQueryTest, BoundsTermsAndTermLength) {
  std::string many;
  for (int i = 0; i < 100; ++i) many += "w" + std::to_string(i) + " ";
  auto terms = fts::QueryTerms(many);
  ASSERT_EQ(terms.size(), 32u);
  EXPECT_EQ(terms.front(), "w0");
  EXPECT_EQ(terms.back(), "w31");
  auto long_word = fts::QueryTerms(std::string(10000, 'x') + " tail");
  ASSERT_EQ(long_word.size(), 2u);
  EXPECT_EQ(long_word[0].size(), 128u);
  EXPECT_EQ(long_word[1], "tail");
  // A cut never splits a UTF-8 sequence.
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xE2\x82\xAC";
  auto cut = fts::QueryTerms(euros);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].size(), 126u);
}

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("alpha")).ok());
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("beta")).ok());
    ASSERT_TRUE(db_->messages.Append("alpha",
                                    {NewMessage{Message::User("the deploy script failed on staging"), 8, 0},
                                     NewMessage{Message::Assistant("I will check the nginx config"), 8, 0}},
                                    10)
                    .ok());
    ASSERT_TRUE(db_->messages.Append("beta",
                                    {NewMessage{Message::User("rotate the postgres password"), 6, 0},
                                     NewMessage{Message::ToolResult("c1", "nginx: configuration file test is successful"), 9, 0}},
                                    11)
                    .ok());
    MemoryItem global;
    global.text = "The production database is postgres 15 on db1";
    global.tags = {"infra", "database"};
    global.created_at_ms = 5;
    auto added = db_->memory.Add(global);
    ASSERT_TRUE(added.ok()) << added.status().ToString();
    global_id_ = added->id;
    MemoryItem scoped;
    scoped.text = "alpha prefers nginx over apache";
    scoped.session_id = "alpha";
    ASSERT_TRUE(db_->memory.Add(scoped).ok());
    SummaryRecord sum;
    sum.session_id = "beta";
    sum.content = "Rotated credentials; postgres password changed; nginx reloaded";
    sum.first_seq = 1;
    sum.last_seq = 2;
    auto s = db_->summaries.Insert(sum);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    summary_id_ = s->id;
  }

  std::vector<MemoryHit> SearchOk(SearchOptions o) {
    auto r = Search(*db_.db, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << " for query: " << o.query;
    return r.ok() ? *r : std::vector<MemoryHit>{};
  }

  static std::vector<std::string> Ids(const std::vector<MemoryHit>& hits) {
    std::vector<std::string> ids;
    for (const auto& h : hits) ids.push_back(h.source + "/" + h.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  TempDir dir_;
  std::string path_;
  testing::TestDb db_;
  std::string global_id_;
  std::string summary_id_;
};

TEST_F(SearchTest, FindsAcrossMemorySummariesAndMessages) {
  SearchOptions o;
  o.query = "nginx";
  auto hits = SearchOk(o);
  ASSERT_EQ(hits.size(), 4u) << ::testing::PrintToString(Ids(hits));
  auto ids = Ids(hits);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "message/alpha:2"), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "message/beta:2"), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "summary/" + summary_id_), 1);
  EXPECT_EQ(std::count_if(hits.begin(), hits.end(), [](const MemoryHit& h) { return h.source == "memory"; }), 1);
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
  o.max_results = 2;
  EXPECT_EQ(SearchOk(o).size(), 2u);
}

TEST_F(SearchTest, FiltersBySessionAndExcludesASession) {
  SearchOptions o;
  o.query = "nginx";
  o.session_id = "alpha";
  auto scoped = SearchOk(o);
  ASSERT_EQ(scoped.size(), 2u) << ::testing::PrintToString(Ids(scoped));
  EXPECT_EQ(Ids(scoped)[1], "message/alpha:2");
  EXPECT_EQ(Ids(scoped)[0].substr(0, 7), "memory/");
  o.session_id = "gamma";  // no such rows
  EXPECT_TRUE(SearchOk(o).empty());
  SearchOptions ex;
  ex.query = "postgres";
  ex.exclude_session_id = "beta";
  auto hits = SearchOk(ex);
  ASSERT_EQ(hits.size(), 1u);  // only the global memory item: beta's message and summary are excluded
  EXPECT_EQ(hits[0].id, global_id_);
  EXPECT_EQ(hits[0].text, "The production database is postgres 15 on db1");
}

TEST_F(SearchTest, AllWordsFirstThenAnyWord) {
  SearchOptions o;
  o.query = "postgres password";
  o.memory = false;
  auto hits = SearchOk(o);
  // Both words: beta's message and the summary, not the memory item (disabled) nor alpha.
  EXPECT_EQ(Ids(hits), (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
  o.query = "postgres zebra";  // no row has both: falls back to any word
  hits = SearchOk(o);
  EXPECT_EQ(Ids(hits), (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
  o.query = "zebra";
  EXPECT_TRUE(SearchOk(o).empty());
  // A long message: the any-word fallback keeps its rarest words, "postgres" among them.
  o.query = "b c d e f g h j k l m n postgres";
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/beta:1", "summary/" + summary_id_}));
}

TEST_F(SearchTest, SnippetsAreBounded) {
  ASSERT_TRUE(db_->messages.Append("alpha", {NewMessage{Message::User(
                                                           std::string("lorem ipsum ") + std::string(200, ' ') +
                                                           "one two three four five six seven eight nine ten "
                                                           "eleven twelve thirteen kubernetes fourteen fifteen "
                                                           "sixteen seventeen eighteen nineteen twenty"),
                                                       30, 0}},
                                  20)
                  .ok());
  SearchOptions o;
  o.query = "kubernetes";
  o.snippet_tokens = 5;
  auto hits = SearchOk(o);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_NE(hits[0].text.find("kubernetes"), std::string::npos);
  EXPECT_LT(hits[0].text.size(), 60u) << hits[0].text;
}

TEST_F(SearchTest, HostileInputNeverFails) {
  const std::string hostile[] = {
      "\"",
      "\"\"\"",
      "NEAR(",
      "NEAR(nginx postgres, 2)",
      "nginx*",
      "*",
      "-nginx",
      "- -- ---",
      "((nginx",
      "nginx))",
      ")(",
      "nginx AND OR NOT",
      "AND",
      "OR NOT NEAR",
      "'; DROP TABLE messages; --",
      "1=1 OR 'a'='a'",
      "text:nginx",
      "{text}: nginx",
      "^nginx",
      "nginx + postgres",
      std::string(10 * 1024, 'a'),
      std::string(10 * 1024, '"'),
      [] {
        std::string s;
        for (int i = 0; i < 2000; ++i) s += "w" + std::to_string(i) + " (";
        return s;
      }(),
      "bad\xFF\xFE utf8 \xC0\xAF nginx \xED\xA0\x80",
      std::string("nul\0byte nginx", 14),
      "\x01\x02\x03\x1b[31m",
      "\xE2\x80\xBD \xE3\x80\x80 \xF0\x9F\x98\x80",  // interrobang, ideographic space, emoji
      "",
      "   ",
  };
  for (const std::string& q : hostile) {
    SCOPED_TRACE(::testing::PrintToString(q.substr(0, 40)));
    SearchOptions o;
    o.query = q;
    auto r = Search(*db_.db, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(r->size(), 10u);
  }
  SearchOptions o;
  o.query = "NEAR(nginx";
  EXPECT_FALSE(SearchOk(o).empty());  // the words still search
  o.query = "bad\xFF nginx";
  EXPECT_FALSE(SearchOk(o).empty());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM messages"), "4");  // and nothing was dropped
}

TEST_F(SearchTest, IndexFollowsInsertUpdateDelete) {
  SearchOptions o;
  o.query = "kangaroo";
  EXPECT_TRUE(SearchOk(o).empty());
  MemoryItem item;
  item.text = "the kangaroo lives in the garden";
  item.tags = {"animals"};
  auto added = db_->memory.Add(item);
  ASSERT_TRUE(added.ok());
  ASSERT_EQ(SearchOk(o).size(), 1u);
  o.query = "animals";  // tags are indexed too
  ASSERT_EQ(SearchOk(o).size(), 1u);

  MemoryItem updated = *added;
  updated.text = "the wombat lives in the garden";
  updated.tags = {};
  ASSERT_TRUE(db_->memory.Update(updated).ok());
  o.query = "kangaroo";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "animals";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "wombat";
  ASSERT_EQ(SearchOk(o).size(), 1u);

  ASSERT_TRUE(db_->memory.Delete(added->id).ok());
  EXPECT_TRUE(SearchOk(o).empty());
  EXPECT_EQ(db_->memory.Delete(added->id).code(), StatusCode::kNotFound);

  // Messages and summaries are kept in sync by triggers as well (edited here directly).
  testing::RawExec(path_,
                   "UPDATE messages SET text = 'platypus sighting' WHERE session_id = 'alpha' AND seq = 1;"
                   "UPDATE summaries SET content = 'echidna summary' WHERE id = '" + summary_id_ + "';");
  o.query = "platypus";
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/alpha:1"}));
  o.query = "deploy";
  EXPECT_TRUE(SearchOk(o).empty());
  o.query = "echidna";
  EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"summary/" + summary_id_}));
  o.query = "rotated";
  EXPECT_TRUE(SearchOk(o).empty());
  testing::RawExec(path_, "DELETE FROM messages WHERE session_id = 'alpha' AND seq = 1;");
  o.query = "platypus";
  EXPECT_TRUE(SearchOk(o).empty());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'platypus'"), "0");
  // The index passes FTS5's own consistency check.
  testing::RawExec(path_,
                   "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check');"
                   "INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check');"
                   "INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check');");
}

// --- Deferred message indexing (schema version 4) ---------------------------------

std::string Watermark(const std::string& path) {
  return RawQuery(path, "SELECT value FROM meta WHERE key = 'messages_fts_indexed'");
}

std::string MaxMessageId(const std::string& path) {
  return RawQuery(path, "SELECT coalesce(max(id), 0) FROM messages");
}

// FTS5's own check that the index matches the content table; fails the test if not.
void ExpectIndexConsistent(const std::string& path) {
  testing::RawExec(path,
                   "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check');"
                   "INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check');"
                   "INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check');");
}

std::vector<std::string> MessageIds(const std::vector<MemoryHit>& hits) {
  std::vector<std::string> ids;
  for (const auto& h : hits) {
    if (h.source == "message") ids.push_back(h.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST_F(SearchTest, AnAppendedMessageIsFoundByTheVeryNextSearch) {
  for (int i = 0; i < 40; ++i) {
    const std::string word = "zebra" + std::to_string(i) + "x";
    auto r = db_->messages.Append("alpha", {NewMessage{Message::User("a " + word + " was seen"), 3, 0}}, 20 + i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    SearchOptions o;
    o.query = word;
    EXPECT_EQ(Ids(SearchOk(o)), (std::vector<std::string>{"message/alpha:" + std::to_string((*r)[0].seq)})) << word;
  }
  EXPECT_EQ(Watermark(path_), MaxMessageId(path_));
  ExpectIndexConsistent(path_);
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
  for (int w = 0; w < kWriters; ++w) ASSERT_TRUE(db->sessions.Create(SimpleSession("w" + std::to_string(w))).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string session = "w" + std::to_string(w);
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string word = "tok" + std::to_string(w) + "q" + std::to_string(i);
        auto r = db->messages.Append(session, {NewMessage{Message::User("common " + word), 2, 0}}, i);
        if (!r.ok()) {
          ++failures;
          continue;
        }
        if (i % 10 != 0) continue;
        // Acknowledged: the next search must find it, whatever the indexer is doing.
        SearchOptions o;
        o.query = word;
        auto hits = Search(*db.db, o);
        if (!hits.ok() || MessageIds(*hits) != std::vector<std::string>{session + ":" + std::to_string((*r)[0].seq)}) {
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
  for (int i = 0; i < 1000; ++i) batch.push_back(NewMessage{Message::User("row " + std::to_string(i) + " koala"), 2, 0});
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 1).ok());
  // No search: the writer indexes on its own once idle.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Watermark(path) != MaxMessageId(path) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(Watermark(path), MaxMessageId(path));
  EXPECT_GE(db.db->GetWriterStats().index_transactions, 10);  // 1000 rows, 100 per transaction
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'koala'"), "1000");
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
  ASSERT_TRUE(db->messages.Append("s", {NewMessage{Message::User("indexed walrus"), 2, 0}}, 1).ok());
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
  RawExec(path, "DELETE FROM messages WHERE id = 4; UPDATE sessions SET last_seq = 4, message_count = 2;");
  o.query = "ibis";
  EXPECT_TRUE(Search(*db.db, o)->empty());
  auto r = db->messages.Append("s", {NewMessage{Message::User("reused puffin"), 2, 0}}, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(RawQuery(path, "SELECT id FROM messages WHERE seq = 5"), "3");  // max(id) + 1, below the watermark
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
    ASSERT_TRUE((*conn)
                    ->Exec("INSERT INTO sessions (id, created_at_ms, updated_at_ms, message_count, last_seq) "
                           "VALUES ('old', 1, 1, 3, 3);"
                           "INSERT INTO messages (session_id, seq, role, content, created_at_ms, text) VALUES "
                           "('old', 1, 'user', '\"old gazelle\"', 1, 'old gazelle'),"
                           "('old', 2, 'user', '\"old impala\"', 1, 'old impala'),"
                           "('old', 3, 'user', '\"old eland\"', 1, 'old eland');")
                    .ok());
  }
  ASSERT_EQ(RawQuery(path, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'old'"), "3");
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.db->SchemaVersion(), 5);
  EXPECT_EQ(Watermark(path), "3");  // everything the trigger indexed
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'messages_ai'"), "0");
  SearchOptions o;
  o.query = "impala";
  EXPECT_EQ(MessageIds(*Search(*db.db, o)), (std::vector<std::string>{"old:2"}));
  ASSERT_TRUE(db->messages.Append("old", {NewMessage{Message::User("new oryx"), 2, 0}}, 2).ok());
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
    ASSERT_TRUE(db->messages.Append("s", {NewMessage{Message::User("indexed bison"), 2, 0}}, 1).ok());
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
    for (int k = 0; k < 10; ++k) batch.push_back(NewMessage{Message::User("busy marmot"), 2, 0});
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
  small.max_page_count = std::stoll(RawQuery(path, "PRAGMA page_count")) + 12;  // a few more rows fit
  small.index_idle_ms = 1000000;  // leave the rows pending for the searches below
  auto db = OpenDbOrDie(path, small);
  ASSERT_TRUE(db);
  std::vector<NewMessage> rows;
  for (int i = 0; i < 30; ++i) rows.push_back(NewMessage{Message::User("quokka " + std::string(1500, 'a' + i % 26)), 2, 0});
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

}  // namespace
}  // namespace missy
