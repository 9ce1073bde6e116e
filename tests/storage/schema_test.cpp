// Migrations by user_version (storage/schema.cpp).
#include "storage/schema.h"

#include <gtest/gtest.h>

#include <string>

#include "storage/database.h"
#include "storage/search.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::MakeSession;
using ::missy::testing::New;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawQuery;
using ::missy::testing::TempDir;

// Builds a database at every earlier schema version (with a session and a message
// once the tables exist), then opens it: it must migrate and keep the data.
TEST(SchemaTest, MigratesFromEveryEarlierVersion) {
  for (int from = 0; from < Database::LatestSchemaVersion(); ++from) {
    SCOPED_TRACE("from version " + std::to_string(from));
    TempDir dir;
    const std::string path = dir.Join("old.db");
    {
      auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
      ASSERT_TRUE(conn.ok());
      ASSERT_TRUE(schema::Migrate(**conn, from).ok());
      ASSERT_EQ(*(*conn)->QueryInt("PRAGMA user_version"), from);
      if (from >= 1) {
        ASSERT_TRUE(
            (*conn)
                ->Exec(
                    "INSERT INTO sessions (id, created_at_ms, updated_at_ms, message_count, "
                    "total_tokens, last_seq) VALUES ('old', 1, 2, 1, 3, 1);"
                    "INSERT INTO messages (session_id, seq, role, content, created_at_ms, tokens, "
                    "text) VALUES ('old', 1, 'user', '\"from the past\"', 2, 3, 'from the past');")
                .ok());
      }
    }
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db);
    EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
    if (from >= 1) {
      auto msgs = db->messages.Load("old");
      ASSERT_TRUE(msgs.ok()) << msgs.status().ToString();
      ASSERT_EQ(msgs->size(), 1u);
      EXPECT_EQ((*msgs)[0].message.text, "from the past");
      auto more = db->messages.Append("old", {New(Message::User("now"))}, 3);
      ASSERT_TRUE(more.ok());
      EXPECT_EQ((*more)[0].seq, 2);
      // Planning and summarizing read the digests: the old row has one (version 11).
      auto plan = db->messages.LoadPlan("old");
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ASSERT_EQ(plan->size(), 2u);
      EXPECT_EQ((*plan)[0].tokens, 3);
      EXPECT_EQ((*plan)[0].role, Role::kUser);
      auto extracts = db->messages.LoadExtracts("old", 1, 2);
      ASSERT_TRUE(extracts.ok()) << extracts.status().ToString();
      ASSERT_EQ(extracts->size(), 2u);
      EXPECT_EQ((*extracts)[0].message.text, "from the past");  // no extract: whole
      EXPECT_EQ((*extracts)[0].created_at_ms, 2);
      // Rows written before the search index existed are indexed by the migration.
      SearchOptions search;
      search.query = "past";
      auto hits = Search(*db.db, search);
      ASSERT_TRUE(hits.ok()) << hits.status().ToString();
      ASSERT_EQ(hits->size(), 1u);
      EXPECT_EQ((*hits)[0].id, "old:1");
    } else {
      EXPECT_TRUE(db->sessions.Create(MakeSession("new")).ok());
    }
  }
}

TEST(SchemaTest, MigratingAnExistingDatabaseTwiceIsANoOp) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  { ASSERT_TRUE(OpenDbOrDie(path)->sessions.Create(MakeSession("s")).ok()); }
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_TRUE(db->sessions.Get("s").ok());
}

// An upgrade says what it does: a line before each migration, naming one that rewrites a
// table (a long first start on a large database), and one after it with its duration.
TEST(SchemaTest, AMigrationSaysWhatItDoesBeforeAndAfter) {
  TempDir dir;
  const std::string path = dir.Join("v10.db");
  auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(schema::Migrate(**conn, 9).ok());
  std::vector<std::string> lines;
  ASSERT_TRUE(schema::Migrate(**conn, -1, [&](const std::string& l) { lines.push_back(l); }).ok());
  ASSERT_EQ(lines.size(), 2u * (schema::LatestVersion() - 9));
  EXPECT_EQ(lines[0], "migrating " + path + " from schema version 9 to 10");
  EXPECT_EQ(lines[1].rfind("migrated " + path + " to schema version 10 in ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[1].substr(lines[1].size() - 3), " ms");
  EXPECT_EQ(lines[2], "migrating " + path +
                          " from schema version 10 to 11 (this rewrites the messages table: it "
                          "takes a while on a large database)");
  // Nothing to do, or a new database created: nothing said.
  lines.clear();
  ASSERT_TRUE(schema::Migrate(**conn, -1, [&](const std::string& l) { lines.push_back(l); }).ok());
  auto fresh =
      sqlite::Connection::Open(dir.Join("new.db"), sqlite::Connection::Mode::kReadWriteCreate);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(schema::Migrate(**fresh, -1, [&](const std::string& l) { lines.push_back(l); }).ok());
  EXPECT_TRUE(lines.empty());
}

// Version 4 → 5 (the session anchor and outbox cursors), from a database built with the
// old migrations, keeps every row and the search index.
TEST(SchemaTest, MigratesAVersion4DatabaseToVersion5KeepingItsData) {
  TempDir dir;
  const std::string path = dir.Join("v4.db");
  {
    auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(schema::Migrate(**conn, 4).ok());
    ASSERT_TRUE(
        (*conn)
            ->Exec("INSERT INTO sessions (id, model, created_at_ms, updated_at_ms, "
                   "message_count, total_tokens, last_seq) VALUES ('old', 'gpt-4o', 1, 2, 2, "
                   "9, 2);"
                   "INSERT INTO messages (session_id, seq, role, content, created_at_ms, "
                   "tokens, text) VALUES ('old', 1, 'user', '\"ancient heron\"', 2, 4, "
                   "'ancient heron'), ('old', 2, 'assistant', '\"noted\"', 2, 5, 'noted');"
                   "INSERT INTO audit_events (seq, timestamp_ms, event_type, prev_chain_hash) "
                   "VALUES (1, 5, 'daemon.started', '" +
                   std::string(64, '0') +
                   "');"
                   "INSERT INTO jobs (kind, session_id, state, created_at_ms, updated_at_ms) "
                   "VALUES ('summarize', 'old', 'queued', 3, 3);")
            .ok());
    EXPECT_EQ(*(*conn)->QueryInt("PRAGMA user_version"), 4);
  }
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  auto session = db->sessions.Get("old");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_EQ(session->model, "gpt-4o");
  EXPECT_EQ(session->message_count, 2);
  EXPECT_EQ(session->total_tokens, 9);
  EXPECT_EQ(session->anchor_seq, 0);  // the new columns' defaults
  EXPECT_EQ(session->summarizer_backend, "");
  EXPECT_EQ(session->summarizer_provider, "");
  auto msgs = db->messages.Load("old");
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].message.text, "ancient heron");
  EXPECT_EQ(db->audit.Since(0, 0)->size(), 1u);
  EXPECT_TRUE(*db->jobs.HasActive("old", "summarize"));
  SearchOptions o;
  o.query = "heron";
  auto hits = Search(*db.db, o);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].id, "old:1");
  // What version 5 adds works on the migrated file.
  ASSERT_TRUE(db->sessions.SetAnchor("old", 2).ok());
  EXPECT_EQ(db->sessions.Get("old")->anchor_seq, 2);
  EXPECT_EQ(*db->audit.OutboxCursor("nats"), 0);
  ASSERT_TRUE(db->audit.AdvanceOutbox("nats", 1).ok());
  EXPECT_EQ(*db->audit.OutboxCursor("nats"), 1);
  auto appended = db->messages.Append("old", {New(Message::User("new"))}, 9);
  ASSERT_TRUE(appended.ok());
  EXPECT_EQ((*appended)[0].seq, 3);
}

// Version 7 → 8: the per-message summary_id column goes; a leaf's coverage is its range,
// which the migrated summaries keep.
TEST(SchemaTest, MigratesAVersion7DatabaseKeepingItsSummariesCoverage) {
  TempDir dir;
  const std::string path = dir.Join("v7.db");
  {
    auto conn = sqlite::Connection::Open(path, sqlite::Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(schema::Migrate(**conn, 7).ok());
    ASSERT_TRUE(
        (*conn)
            ->Exec("INSERT INTO sessions (id, created_at_ms, updated_at_ms, message_count, "
                   "total_tokens, last_seq) VALUES ('old', 1, 2, 3, 9, 3);"
                   "INSERT INTO messages (session_id, seq, role, content, created_at_ms, tokens, "
                   "text, summary_id) VALUES "
                   "('old', 1, 'user', '\"fix parser.py\"', 2, 3, 'fix parser.py', 'sum_a'),"
                   "('old', 2, 'assistant', '\"done\"', 2, 3, 'done', 'sum_a'),"
                   "('old', 3, 'user', '\"thanks\"', 2, 3, 'thanks', NULL);"
                   "INSERT INTO summaries (id, session_id, depth, content, tokens, first_seq, "
                   "last_seq, created_at_ms) VALUES ('sum_a', 'old', 0, 'the parser was fixed', "
                   "5, 1, 2, 3);")
            .ok());
  }
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM pragma_table_info('messages') WHERE name = "
                     "'summary_id'"),
            "0");
  auto covered = db->summaries.Messages("sum_a");
  ASSERT_TRUE(covered.ok()) << covered.status().ToString();
  ASSERT_EQ(covered->size(), 2u);
  EXPECT_EQ((*covered)[0].message.text, "fix parser.py");
  EXPECT_EQ(db->messages.Load("old")->size(), 3u);
  SummaryRecord overlapping;
  overlapping.session_id = "old";
  overlapping.content = "again";
  overlapping.first_seq = 2;
  overlapping.last_seq = 3;
  EXPECT_EQ(db->summaries.Insert(overlapping).status().code(), StatusCode::kConflict);
  overlapping.first_seq = 3;
  EXPECT_TRUE(db->summaries.Insert(overlapping).ok());
}

}  // namespace
}  // namespace missy
