#include "storage/sqlite.h"

#include <utility>

namespace missy::sqlite {

Status StatusFromCode(sqlite3* db, int rc, std::string_view what) {
  std::string msg(what);
  if (!msg.empty()) msg += ": ";
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  msg += detail != nullptr ? detail : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return Status::Unavailable(msg + " (disk full: the write was not stored)");
    case SQLITE_READONLY:
      return Status::Unavailable(msg + " (database is read-only: the write was not stored)");
    case SQLITE_IOERR:
      return Status::Unavailable(msg + " (I/O error: the write was not stored)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg + " (database is busy)");
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOMEM:
      return Status::Unavailable(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
        return Status::AlreadyExists(msg);
      }
      return Status::Conflict(msg);
    default:
      return Status::Internal(msg);
  }
}

// --- Statement ----------------------------------------------------------------------

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    Detach();
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

void Statement::Reset() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Statement::Detach() {
  Reset();
  stmt_ = nullptr;
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  // An empty string_view may have a null data(), which SQLite would bind as NULL.
  sqlite3_bind_text64(stmt_, index, value.data() != nullptr ? value.data() : "", value.size(),
                      SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::BindStatic(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data() != nullptr ? value.data() : "", value.size(),
                      SQLITE_STATIC, SQLITE_UTF8);
  return *this;
}

Statement& Statement::BindBlobStaticOrNull(int index, std::string_view value) {
  if (value.empty()) return BindNull(index);
  sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_STATIC);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Statement& Statement::BindOrNull(int index, std::string_view value) {
  return value.empty() ? BindNull(index) : Bind(index, value);
}

Status Statement::StepError(int rc, std::string_view what) const {
  return StatusFromCode(db_, rc, what);
}

Result<bool> Statement::Next(std::string_view what) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StepError(rc, what);
}

Status Statement::Run(std::string_view what) {
  int rc;
  while ((rc = sqlite3_step(stmt_)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) return StepError(rc, what);
  return Status::Ok();
}

std::string Statement::Text(int col) const { return std::string(TextView(col)); }

std::string_view Statement::TextView(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (p == nullptr) return {};
  return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string_view Statement::BlobView(int col) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
  if (p == nullptr) return {};
  return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

// --- Connection ---------------------------------------------------------------------

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, Mode mode, bool uri) {
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::kReadOnly:
      flags |= SQLITE_OPEN_READONLY;
      break;
    case Mode::kReadWrite:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case Mode::kReadWriteCreate:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
  }
  if (uri) flags |= SQLITE_OPEN_URI;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status st = StatusFromCode(db, rc, "cannot open database " + path);
    sqlite3_close_v2(db);
    return st;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(db, path));
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Connection::Exec(std::string_view sql, std::string_view what) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Error(rc, what.empty() ? std::string_view(text) : what);
  return Status::Ok();
}

Result<Statement> Connection::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "prepare " + std::string(sql));
    it = cache_.emplace(std::string(sql), stmt).first;
  }
  return Statement(db_, it->second);
}

Result<int64_t> Connection::QueryInt(const std::string& sql) {
  MISSY_ASSIGN_STMT(stmt, *this, sql);
  MISSY_ASSIGN_NEXT(row, stmt, sql);
  if (!row) return Status::NotFound("no row: " + sql);
  return stmt.Int(0);
}

int64_t Connection::Changes() const { return sqlite3_changes64(db_); }
int64_t Connection::TotalChanges() const { return sqlite3_total_changes64(db_); }
int64_t Connection::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
void Connection::SetWalHook(std::function<void(int)> hook) {
  wal_hook_ = std::move(hook);
  if (!wal_hook_) {
    sqlite3_wal_hook(db_, nullptr, nullptr);
    return;
  }
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int frames) {
        static_cast<Connection*>(self)->wal_hook_(frames);
        return SQLITE_OK;
      },
      this);
}

Status Connection::CheckpointPassive(int* wal_frames, int* checkpointed) {
  *wal_frames = -1;
  *checkpointed = -1;
  const int rc =
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, wal_frames, checkpointed);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) return Error(rc, "checkpoint " + path_);
  return Status::Ok();
}

Status Connection::CheckpointRestart(int* wal_frames, int* checkpointed) {
  *wal_frames = -1;
  *checkpointed = -1;
  const int rc =
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_RESTART, wal_frames, checkpointed);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) return Error(rc, "checkpoint " + path_);
  return Status::Ok();
}

bool Connection::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
void Connection::SetBusyTimeout(int ms) { sqlite3_busy_timeout(db_, ms); }

int64_t Connection::CacheUsedBytes() const {
  int current = 0, high = 0;
  if (sqlite3_db_status(db_, SQLITE_DBSTATUS_CACHE_USED, &current, &high, 0) != SQLITE_OK) return 0;
  return current;
}

int64_t MemoryUsed() { return sqlite3_memory_used(); }
int64_t MemoryHighWater() { return sqlite3_memory_highwater(0); }

}  // namespace missy::sqlite
