// Helpers shared by the storage tests.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/context_types.h"
#include "storage/database.h"
#include "storage/stores.h"
#include "test_util.h"

namespace missy::testing {

// An open Database with its stores (tests reach the engine through `db`). The Database
// closes first: its queued writes may still use the stores.
struct TestDb {
  std::unique_ptr<Database> db;
  std::unique_ptr<Stores> stores;

  TestDb() = default;
  TestDb(TestDb&&) = default;
  TestDb& operator=(TestDb&& other) {
    reset();
    db = std::move(other.db);
    stores = std::move(other.stores);
    return *this;
  }
  ~TestDb() { reset(); }

  explicit operator bool() const { return db != nullptr; }
  Stores* operator->() { return stores.get(); }
  Database& engine() { return *db; }
  void reset() {
    db.reset();
    stores.reset();
  }
};

inline TestDb OpenDbOrDie(const std::string& path, const DatabaseOptions& options = {}) {
  auto db = Database::Open(path, options);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return TestDb{};
  TestDb out;
  out.db = std::move(*db);
  out.stores = std::make_unique<Stores>(*out.db);
  return out;
}

inline Session SimpleSession(std::string id, int64_t now_ms = 1000) {
  Session s;
  s.id = std::move(id);
  s.created_at_ms = now_ms;
  s.updated_at_ms = now_ms;
  return s;
}

// A session with every field set.
inline Session MakeSession(std::string id, int64_t now_ms = 1000) {
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

inline NewMessage New(Message m, int64_t tokens = 7, uint32_t flags = kFlagNone) {
  return NewMessage{std::move(m), tokens, flags, {}};
}

// Runs SQL directly on the file, outside the storage API (to tamper, or to build fixtures).
inline void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in: " << sql;
  sqlite3_free(err);
  sqlite3_close(db);
}

// A single-value query run directly on the file.
inline std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// The message index watermark (meta 'messages_fts_indexed') and the newest message id.
inline std::string Watermark(const std::string& path) {
  return RawQuery(path, "SELECT value FROM meta WHERE key = 'messages_fts_indexed'");
}

inline std::string MaxMessageId(const std::string& path) {
  return RawQuery(path, "SELECT coalesce(max(id), 0) FROM messages");
}

// FTS5's own check that the index matches the content table; fails the test if not.
inline void ExpectIndexConsistent(const std::string& path) {
  RawExec(path,
          "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check');"
          "INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check');"
          "INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check');");
}

// The ids of the message hits, sorted.
inline std::vector<std::string> MessageIds(const std::vector<MemoryHit>& hits) {
  std::vector<std::string> ids;
  for (const auto& h : hits) {
    if (h.source == "message") ids.push_back(h.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A database with session "s" holding 12 messages ("message 1".."message 12", 10 tokens
// each, appended at 100), and a leaf summary builder over them.
class TwelveMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("m.db");
    db_ = OpenDbOrDie(path_);
    ASSERT_TRUE(db_);
    ASSERT_TRUE(db_->sessions.Create(SimpleSession("s")).ok());
    std::vector<NewMessage> batch;
    for (int i = 1; i <= 12; ++i) {
      batch.push_back(NewMessage{Message::User("message " + std::to_string(i)), 10, 0, {}});
    }
    ASSERT_TRUE(db_->messages.Append("s", std::move(batch), 100).ok());
  }

  SummaryRecord Leaf(int64_t first, int64_t last, std::string text) {
    SummaryRecord s;
    s.session_id = "s";
    s.depth = 0;
    s.content = std::move(text);
    s.tokens = 20;
    s.first_seq = first;
    s.last_seq = last;
    s.start_ms = first * 10;
    s.end_ms = last * 10;
    s.descendant_count = last - first + 1;
    s.artifacts_json = R"({"files":["src/a.cpp"],"commands":["make"],"errors":[]})";
    s.created_at_ms = 500;
    return s;
  }

  TempDir dir_;
  std::string path_;
  TestDb db_;
};

}  // namespace missy::testing
