// Internal to storage/: a thin RAII layer over the SQLite C API.
// A Connection owns one sqlite3 handle and a cache of prepared statements (each SQL
// text is prepared once per connection). A Statement borrows a cached sqlite3_stmt and
// resets it (and clears its bindings) when it goes out of scope. Neither is
// thread-safe: a connection is used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.h"

namespace missy::sqlite {

// Maps an SQLite result code to a Status. Disk full, read-only, I/O errors, busy and
// locked become kUnavailable; corrupt/not-a-database become kCorruption; a constraint
// violation becomes kConflict (callers that expect one map it more precisely first).
Status StatusFromCode(sqlite3* db, int rc, std::string_view what);

class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement() { Reset(); }
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based, as in SQLite. Text is copied (SQLITE_TRANSIENT).
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Statement& BindNull(int index);
  Statement& BindOptional(int index, const std::optional<std::string>& value);

  // Returns SQLITE_ROW, SQLITE_DONE or an error code.
  int Step();
  // Steps to completion (a statement returning no rows); errors as Status.
  Status Run(std::string_view what);

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  std::optional<std::string> OptionalText(int col) const;

  void Reset();
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

class Connection {
 public:
  // flags: SQLITE_OPEN_* (SQLITE_OPEN_NOMUTEX is added: one thread at a time).
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements without results.
  Status Exec(std::string_view sql, std::string_view what = {});
  // A cached prepared statement for `sql` (prepared on first use).
  Result<Statement> Prepare(const std::string& sql);
  // Runs a query returning one integer (e.g. "PRAGMA user_version").
  Result<int64_t> QueryInt(const std::string& sql);

  Status Error(int rc, std::string_view what) const { return StatusFromCode(db_, rc, what); }
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// Hex SHA-256 of `data` (64 lowercase hex digits).
std::string Sha256Hex(std::string_view data);

}  // namespace missy::sqlite
