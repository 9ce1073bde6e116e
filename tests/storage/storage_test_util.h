// Helpers shared by the storage tests.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>

#include "storage/database.h"
#include "storage/stores.h"

namespace missy::testing {

// An open Database with its stores (tests reach the engine through `db`).
struct TestDb {
  std::unique_ptr<Database> db;
  std::unique_ptr<Stores> stores;

  explicit operator bool() const { return db != nullptr; }
  Stores* operator->() { return stores.get(); }
  Database& engine() { return *db; }
  void reset() {
    stores.reset();
    db.reset();
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

}  // namespace missy::testing
