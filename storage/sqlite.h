// Internal to storage/: a thin RAII layer over the SQLite C API, and the only header
// that includes <sqlite3.h>. A Connection owns one sqlite3 handle and a cache of
// prepared statements (each SQL text is prepared once per connection). A Statement
// borrows a cached statement and resets it (clearing its bindings) when it goes out of
// scope; Reset() does the same but keeps it attached, so a loop can rebind and step
// again. Errors come back as Status (see StatusFromCode). Neither class is thread-safe:
// a connection is used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.h"

namespace missy::sqlite {

// Maps an SQLite result code to a Status. Disk full, read-only, I/O errors, busy and
// locked become kUnavailable; corrupt/not-a-database become kCorruption; a UNIQUE or
// PRIMARY KEY violation becomes kAlreadyExists and any other constraint violation
// kConflict (callers reword them with the name of what collided).
Status StatusFromCode(sqlite3* db, int rc, std::string_view what);

// All heap memory SQLite holds in this process now, and the most it ever held.
int64_t MemoryUsed();
int64_t MemoryHighWater();

class Statement {
 public:
  Statement() = default;
  ~Statement() { Detach(); }
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based, as in SQLite. Text is copied (SQLITE_TRANSIENT).
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Statement& Bind(int index, const std::string& value) {
    return Bind(index, std::string_view(value));
  }
  // Binds without copying: `value` must stay alive until the statement is reset,
  // rebound or destroyed (for large message text bound from a batch the caller owns).
  Statement& BindStatic(int index, std::string_view value);
  Statement& BindNull(int index);
  // A BLOB bound without copying (as BindStatic); NULL when `value` is empty.
  Statement& BindBlobStaticOrNull(int index, std::string_view value);
  // NULL when `value` is empty (optional TEXT columns such as a memory item's session).
  Statement& BindOrNull(int index, std::string_view value);

  // Steps once: true with a row to read, false when done; an error as Status whose
  // message starts with `what` (when not empty).
  Result<bool> Next(std::string_view what = {});
  // Steps to completion (a statement whose rows, if any, are not wanted).
  Status Run(std::string_view what = {});
  // Rewinds the statement and clears its bindings; it stays attached for another run.
  void Reset();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  // The column's bytes, valid until the next step or reset (no copy).
  std::string_view TextView(int col) const;
  // A BLOB column's bytes, valid until the next step or reset (no copy); empty for NULL.
  std::string_view BlobView(int col) const;

 private:
  friend class Connection;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Status StepError(int rc, std::string_view what) const;
  void Detach();

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

class Connection {
 public:
  enum class Mode {
    kReadOnly,
    kReadWrite,
    kReadWriteCreate,
  };
  // `uri`: `path` is a "file:" URI (e.g. "file:x.db?mode=ro&immutable=1").
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, Mode mode,
                                                  bool uri = false);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements (no results), e.g. a migration or a pragma.
  Status Exec(std::string_view sql, std::string_view what = {});
  // A cached prepared statement for `sql` (prepared on first use).
  Result<Statement> Prepare(std::string_view sql);
  // Runs a query returning one integer (e.g. "PRAGMA user_version"); kNotFound if no row.
  Result<int64_t> QueryInt(const std::string& sql);

  // Rows changed by the last INSERT/UPDATE/DELETE, and the rowid of the last INSERT.
  int64_t Changes() const;
  // Rows changed by every statement since the connection opened (sqlite3_total_changes64).
  int64_t TotalChanges() const;
  int64_t LastInsertRowId() const;
  bool InTransaction() const;
  void SetBusyTimeout(int ms);
  // Bytes of page cache this connection holds now (SQLITE_DBSTATUS_CACHE_USED).
  int64_t CacheUsedBytes() const;
  // Calls `hook(frames)` on the committing thread after each commit, with the frames now
  // in the WAL. Replaces SQLite's automatic checkpoint (which would run in the commit).
  void SetWalHook(std::function<void(int frames)> hook);
  // A passive checkpoint: copies the WAL frames no reader still needs into the database
  // file without waiting for any lock. `*wal_frames` / `*checkpointed`: frames in the
  // WAL and frames copied (both -1 if unknown).
  Status CheckpointPassive(int* wal_frames, int* checkpointed);
  // Waits (busy timeout) for another checkpoint and for readers of old frames, copies the
  // whole WAL and makes the next writer start it over. Only between transactions.
  Status CheckpointRestart(int* wal_frames, int* checkpointed);
  Status Error(int rc, std::string_view what) const { return StatusFromCode(db_, rc, what); }
  const std::string& path() const { return path_; }

 private:
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::function<void(int)> wal_hook_;
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>()(sql); }
  };
  // Keyed by SQL text; looked up by string_view (no copy of the text per lookup).
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

}  // namespace missy::sqlite

// Inside a function returning Status or Result<T>: declares `Statement& var`, a cached
// statement for `sql` on `conn`, or returns the error.
#define MISSY_ASSIGN_STMT(var, conn, sql)       \
  auto var##_or = (conn).Prepare(sql);          \
  if (!var##_or.ok()) return var##_or.status(); \
  ::missy::sqlite::Statement& var = *var##_or

// Inside a function returning Status or Result<T>: declares `bool var` = (the statement
// has a row), or returns the step error.
#define MISSY_ASSIGN_NEXT(var, stmt, what)      \
  auto var##_or = (stmt).Next(what);            \
  if (!var##_or.ok()) return var##_or.status(); \
  const bool var = *var##_or
