#include "storage/database.h"
#include "storage/search.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "storage/schema.h"
#include "storage/sqlite.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

using ::missy::testing::ReadFileOrDie;
using ::missy::testing::OpenDbOrDie;
using ::missy::testing::RawExec;
using ::missy::testing::TempDir;

Session MakeSession(std::string id, int64_t now_ms = 1000) {
  Session s;
  s.id = std::move(id);
  s.model = "gpt-4o";
  s.system_prompt = "You are terse.";
  s.tools_json = R"([{"type":"function","function":{"name":"ls"}}])";
  s.metadata_json = R"({"agent":"test"})";
  s.context_window = 128000;
  s.strict = true;
  s.created_at_ms = now_ms;
  s.updated_at_ms = now_ms;
  return s;
}

NewMessage New(Message m, int64_t tokens = 7, uint32_t flags = kFlagNone) {
  return NewMessage{std::move(m), tokens, flags};
}

// The four shapes a message can take: string, parts with an image, null content with
// tool calls, and a tool result.
std::vector<NewMessage> FourShapes() {
  Message parts;
  parts.role = Role::kUser;
  parts.content_form = ContentForm::kParts;
  parts.parts = {ContentPart{ContentPart::Kind::kText, "what is in this picture?", "", ""},
                 ContentPart{ContentPart::Kind::kImage, "", "data:image/png;base64,iVBORw0KGgo=", "low"}};
  Message calls = Message::AssistantCalls(
      {ToolCall{"call_1", "function", "read_file", R"({"path":"/etc/hosts"})"},
       ToolCall{"call_2", "function", "ls", R"({"dir":"/tmp"})"}});
  return {New(Message::User("héllo \"world\"\n"), 5), New(parts, 90),
          New(calls, 30, kFlagUnansweredCall), New(Message::ToolResult("call_1", "127.0.0.1 localhost", "read_file"), 12)};
}

TEST(DatabaseTest, RoundTripsEveryMessageShape) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->sessions.Create(MakeSession("s1")).ok());
  std::vector<NewMessage> batch = FourShapes();
  auto stored = db->messages.Append("s1", std::vector<NewMessage>(batch), 5000);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*stored)[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ((*stored)[i].created_at_ms, 5000);
  }

  auto loaded = db->messages.Load("s1");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const StoredMessage& m = (*loaded)[i];
    EXPECT_EQ(m.seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(m.created_at_ms, 5000);
    EXPECT_EQ(m.tokens, batch[i].tokens);
    EXPECT_EQ(m.flags, batch[i].flags);
    EXPECT_EQ(m.message, batch[i].message);
  }
  EXPECT_EQ((*loaded)[1].message.content_form, ContentForm::kParts);
  EXPECT_EQ((*loaded)[1].message.parts[1].image_url, "data:image/png;base64,iVBORw0KGgo=");
  EXPECT_EQ((*loaded)[2].message.content_form, ContentForm::kNull);
  EXPECT_EQ((*loaded)[2].message.tool_calls.size(), 2u);
  EXPECT_EQ((*loaded)[3].message.tool_call_id, "call_1");

  auto session = db->sessions.Get("s1");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->model, "gpt-4o");
  EXPECT_EQ(session->system_prompt, "You are terse.");
  EXPECT_EQ(session->tools_json, R"([{"type":"function","function":{"name":"ls"}}])");
  EXPECT_EQ(session->metadata_json, R"({"agent":"test"})");
  EXPECT_EQ(session->context_window, 128000);
  EXPECT_TRUE(session->strict);
  EXPECT_EQ(session->created_at_ms, 1000);
  EXPECT_EQ(session->updated_at_ms, 5000);
  EXPECT_EQ(session->message_count, 4);
  EXPECT_EQ(session->total_tokens, 5 + 90 + 30 + 12);
  EXPECT_EQ(session->last_seq, 4);
}

TEST(DatabaseTest, LoadMessagesHonoursAfterSeqAndLimit) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("s")).ok());
  std::vector<NewMessage> batch;
  for (int i = 1; i <= 10; ++i) batch.push_back(New(Message::User("m" + std::to_string(i))));
  ASSERT_TRUE(db->messages.Append("s", std::move(batch), 1).ok());
  auto some = db->messages.Load("s", 4, 3);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 3u);
  EXPECT_EQ((*some)[0].seq, 5);
  EXPECT_EQ((*some)[0].message.text, "m5");
  EXPECT_EQ((*some)[2].seq, 7);
  auto none = db->messages.Load("s", 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(db->messages.Load("nope").status().code(), StatusCode::kNotFound);
}

TEST(DatabaseTest, ReopenKeepsSessionsMessagesAndSeq) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  {
    auto db = OpenDbOrDie(path);
    ASSERT_TRUE(db->sessions.Create(MakeSession("s1")).ok());
    ASSERT_TRUE(db->messages.Append("s1", FourShapes(), 10).ok());
    ASSERT_TRUE(db->messages.Append("s1", {New(Message::User("second batch"))}, 11).ok());
  }
  auto db = OpenDbOrDie(path);
  ASSERT_TRUE(db);
  auto loaded = db->messages.Load("s1");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 5u);
  EXPECT_EQ(loaded->back().message.text, "second batch");
  EXPECT_EQ(loaded->back().seq, 5);
  auto more = db->messages.Append("s1", {New(Message::Assistant("a")), New(Message::User("b"))}, 12);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ((*more)[0].seq, 6);
  EXPECT_EQ((*more)[1].seq, 7);
  auto session = db->sessions.Get("s1");
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(session->last_seq, 7);
  EXPECT_EQ(session->message_count, 7);
}

TEST(DatabaseTest, SeqContinuesAcrossBatchesPerSession) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("a")).ok());
  ASSERT_TRUE(db->sessions.Create(MakeSession("b")).ok());
  auto a1 = db->messages.Append("a", {New(Message::User("1")), New(Message::User("2"))}, 1);
  auto b1 = db->messages.Append("b", {New(Message::User("1"))}, 1);
  auto a2 = db->messages.Append("a", {New(Message::User("3"))}, 2);
  ASSERT_TRUE(a1.ok() && b1.ok() && a2.ok());
  EXPECT_EQ((*b1)[0].seq, 1);
  EXPECT_EQ((*a2)[0].seq, 3);
  auto empty = db->messages.Append("a", {}, 3);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(db->sessions.Get("a")->last_seq, 3);
}

TEST(DatabaseTest, DuplicateSessionIsAlreadyExistsAndLeavesTheFirst) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  ASSERT_TRUE(db->sessions.Create(MakeSession("dup")).ok());
  Session other = MakeSession("dup", 99);
  other.model = "other-model";
  Status st = db->sessions.Create(other);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("dup"), std::string::npos);
  EXPECT_EQ(db->sessions.Get("dup")->model, "gpt-4o");
  EXPECT_EQ(db->sessions.Create(MakeSession("")).code(), StatusCode::kInvalidArgument);
}

TEST(DatabaseTest, UnknownSessionIsNotFoundAndWritesNothing) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  auto r = db->messages.Append("ghost", {New(Message::User("x"))}, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db->sessions.Get("ghost").status().code(), StatusCode::kNotFound);
  auto sessions = db->sessions.List({});
  ASSERT_TRUE(sessions.ok());
  EXPECT_TRUE(sessions->empty());
}

TEST(DatabaseTest, ListSessionsPagesInCreationOrder) {
  TempDir dir;
  auto db = OpenDbOrDie(dir.Join("m.db"));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(db->sessions.Create(MakeSession("s" + std::to_string(i), 100 + i)).ok());
  auto page = db->sessions.List(ListOptions{2, 1});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, "s1");
  EXPECT_EQ((*page)[1].id, "s2");
}

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

// Builds a database at every earlier schema version (with a session and a message
// once the tables exist), then opens it: it must migrate and keep the data.
TEST(DatabaseTest, MigratesFromEveryEarlierVersion) {
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
        ASSERT_TRUE((*conn)
                        ->Exec("INSERT INTO sessions (id, created_at_ms, updated_at_ms, message_count, "
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

TEST(DatabaseTest, MigratingAnExistingDatabaseTwiceIsANoOp) {
  TempDir dir;
  const std::string path = dir.Join("m.db");
  { ASSERT_TRUE(OpenDbOrDie(path)->sessions.Create(MakeSession("s")).ok()); }
  auto db = OpenDbOrDie(path);
  EXPECT_EQ(db.db->SchemaVersion(), Database::LatestSchemaVersion());
  EXPECT_TRUE(db->sessions.Get("s").ok());
}

TEST(DatabaseTest, RefusesNewerSchemaAndLeavesTheFileAlone) {
  TempDir dir;
  const std::string path = dir.Join("future.db");
  RawExec(path, "CREATE TABLE future_stuff (x); INSERT INTO future_stuff VALUES (42); PRAGMA user_version = 9;");
  const std::string before = ReadFileOrDie(path);
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kCorruption);
  const std::string& msg = db.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("schema version 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("knows up to " + std::to_string(Database::LatestSchemaVersion())), std::string::npos) << msg;
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
        if (r.ok()) ++good;
        else if (r.status().code() == StatusCode::kNotFound) ++not_found;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 100);
  EXPECT_EQ(not_found.load(), 100);
  EXPECT_EQ(db->sessions.Get("ok")->last_seq, 100);
}

TEST(DatabaseTest, AuditEventsAreChainedAndFiltered) {
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
  EXPECT_EQ(stored[1].prev_chain_hash, sqlite::Sha256Hex(AuditEventToJsonLine(stored[0])));
  EXPECT_EQ(stored[2].prev_chain_hash, sqlite::Sha256Hex(AuditEventToJsonLine(stored[1])));

  auto db = OpenDbOrDie(path);  // the chain continues after a reopen
  AuditEvent e;
  e.event_type = "daemon.started";
  auto fourth = db->audit.Append(e);
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(fourth->seq, 4);
  EXPECT_EQ(fourth->prev_chain_hash, sqlite::Sha256Hex(AuditEventToJsonLine(stored[2])));

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

TEST(DatabaseTest, Sha256HexMatchesTheStandardVector) {
  EXPECT_EQ(sqlite::Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
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

}  // namespace
}  // namespace missy
