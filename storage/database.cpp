#include "storage/database.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "storage/schema.h"
#include "storage/sqlite_util.h"

namespace missy {
namespace {

using sqlite::Connection;
using sqlite::Statement;

constexpr char kZeroHash[] = "0000000000000000000000000000000000000000000000000000000000000000";

#define MISSY_ASSIGN_STMT(var, conn, sql)      \
  auto var##_or = (conn).Prepare(sql);         \
  if (!var##_or.ok()) return var##_or.status(); \
  Statement& var = *var##_or

// A message row, serialised by the caller's thread so the writer only binds.
struct MessageRow {
  std::string role;
  std::string content;
  std::string tool_calls;
  std::string text;
  const NewMessage* source = nullptr;
};

const char kSessionColumns[] =
    "id, model, system_prompt, tools_json, metadata_json, context_window, strict, created_at_ms, "
    "updated_at_ms, message_count, total_tokens, last_seq";

Session SessionFromRow(const Statement& s) {
  Session out;
  out.id = s.Text(0);
  out.model = s.Text(1);
  out.system_prompt = s.Text(2);
  out.tools_json = s.Text(3);
  out.metadata_json = s.Text(4);
  out.context_window = s.Int(5);
  out.strict = s.Int(6) != 0;
  out.created_at_ms = s.Int(7);
  out.updated_at_ms = s.Int(8);
  out.message_count = s.Int(9);
  out.total_tokens = s.Int(10);
  out.last_seq = s.Int(11);
  return out;
}

const char kMessageColumns[] =
    "seq, created_at_ms, tokens, flags, role, content, tool_calls, tool_call_id, name";

Result<StoredMessage> MessageFromRow(const Statement& s, std::string_view session_id) {
  StoredMessage out;
  out.seq = s.Int(0);
  out.created_at_ms = s.Int(1);
  out.tokens = s.Int(2);
  out.flags = static_cast<uint32_t>(s.Int(3));
  auto where = [&] { return "session '" + std::string(session_id) + "' message " + std::to_string(out.seq); };
  std::string role = s.Text(4);
  auto parsed_role = ParseRole(role);
  if (!parsed_role) return Status::Corruption(where() + ": unknown stored role '" + role + "'");
  out.message.role = *parsed_role;
  Status st = ContentFromJsonText(s.Text(5), out.message);
  if (!st.ok()) return Status::Corruption(where() + ": stored content: " + st.message());
  auto calls = ToolCallsFromJsonText(s.Text(6));
  if (!calls.ok()) return Status::Corruption(where() + ": stored tool_calls: " + calls.status().message());
  out.message.tool_calls = std::move(*calls);
  out.message.tool_call_id = s.Text(7);
  out.message.name = s.Text(8);
  return out;
}

const char kAuditColumns[] =
    "seq, timestamp_ms, session_id, task_id, event_type, category, result, detail_json, prev_chain_hash";

AuditEvent AuditFromRow(const Statement& s) {
  AuditEvent e;
  e.seq = s.Int(0);
  e.timestamp_ms = s.Int(1);
  e.session_id = s.Text(2);
  e.task_id = s.Text(3);
  e.event_type = s.Text(4);
  e.category = s.Text(5);
  e.result = s.Text(6);
  e.detail_json = s.Text(7);
  e.prev_chain_hash = s.Text(8);
  return e;
}

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, DatabaseOptions options, std::unique_ptr<Connection> writer)
      : path_(std::move(path)), options_(options), writer_(std::move(writer)) {
    writer_thread_ = std::thread([this] { WriterLoop(); });
  }

  ~SqliteDatabase() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    writer_thread_.join();
  }

  int SchemaVersion() override {
    auto reader = AcquireReader();
    if (!reader.ok()) return -1;
    auto v = reader->conn->QueryInt("PRAGMA user_version");
    return v.ok() ? static_cast<int>(*v) : -1;
  }

  Status CreateSession(const Session& session) override {
    if (session.id.empty()) return Status::InvalidArgument("session id must not be empty", "id");
    return Write([&](Connection& c) -> Status {
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO sessions (id, model, system_prompt, tools_json, metadata_json, "
                        "context_window, strict, created_at_ms, updated_at_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO NOTHING");
      insert.Bind(1, session.id)
          .Bind(2, session.model)
          .Bind(3, session.system_prompt)
          .Bind(4, session.tools_json)
          .Bind(5, session.metadata_json)
          .Bind(6, session.context_window)
          .Bind(7, session.strict ? 1 : 0)
          .Bind(8, session.created_at_ms)
          .Bind(9, session.updated_at_ms != 0 ? session.updated_at_ms : session.created_at_ms);
      MISSY_RETURN_IF_ERROR(insert.Run("create session '" + session.id + "'"));
      if (sqlite3_changes(c.db()) == 0) {
        return Status::AlreadyExists("session '" + session.id + "' already exists", "id");
      }
      return Status::Ok();
    });
  }

  Result<Session> GetSession(std::string_view id) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    MISSY_ASSIGN_STMT(q, *reader->conn,
                      std::string("SELECT ") + kSessionColumns + " FROM sessions WHERE id = ?1");
    q.Bind(1, id);
    int rc = q.Step();
    if (rc == SQLITE_ROW) return SessionFromRow(q);
    if (rc == SQLITE_DONE) return Status::NotFound("session '" + std::string(id) + "' not found", "id");
    return reader->conn->Error(rc, "read session");
  }

  Result<std::vector<Session>> ListSessions(const ListOptions& options) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    MISSY_ASSIGN_STMT(q, *reader->conn,
                      std::string("SELECT ") + kSessionColumns +
                          " FROM sessions ORDER BY created_at_ms, id LIMIT ?1 OFFSET ?2");
    q.Bind(1, static_cast<int64_t>(options.limit < 0 ? -1 : options.limit))
        .Bind(2, static_cast<int64_t>(options.offset < 0 ? 0 : options.offset));
    std::vector<Session> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) out.push_back(SessionFromRow(q));
    if (rc != SQLITE_DONE) return reader->conn->Error(rc, "list sessions");
    return out;
  }

  Result<std::vector<StoredMessage>> AppendMessages(std::string_view session_id,
                                                    const std::vector<NewMessage>& batch,
                                                    int64_t now_ms) override {
    // Serialise in the caller's thread: the writer only binds and steps.
    std::vector<MessageRow> rows;
    rows.reserve(batch.size());
    int64_t batch_tokens = 0;
    for (const NewMessage& m : batch) {
      rows.push_back(MessageRow{std::string(RoleName(m.message.role)), ContentToJsonText(m.message),
                                ToolCallsToJsonText(m.message.tool_calls), m.message.PlainText(), &m});
      batch_tokens += m.tokens;
    }
    std::vector<StoredMessage> stored;
    Status st = Write([&](Connection& c) -> Status {
      stored.clear();
      MISSY_ASSIGN_STMT(last, c, "SELECT last_seq FROM sessions WHERE id = ?1");
      last.Bind(1, session_id);
      int rc = last.Step();
      if (rc == SQLITE_DONE) {
        return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
      }
      if (rc != SQLITE_ROW) return c.Error(rc, "read session '" + std::string(session_id) + "'");
      int64_t seq = last.Int(0);
      last.Reset();
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, "
                        "name, created_at_ms, tokens, flags, text) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
      for (const MessageRow& row : rows) {
        ++seq;
        insert.Bind(1, session_id)
            .Bind(2, seq)
            .Bind(3, row.role)
            .Bind(4, row.content)
            .Bind(5, row.tool_calls)
            .Bind(6, row.source->message.tool_call_id)
            .Bind(7, row.source->message.name)
            .Bind(8, now_ms)
            .Bind(9, row.source->tokens)
            .Bind(10, static_cast<int64_t>(row.source->flags))
            .Bind(11, row.text);
        int irc = insert.Step();
        if (irc != SQLITE_DONE) return c.Error(irc, "append to session '" + std::string(session_id) + "'");
        sqlite3_reset(insert.get());
        stored.push_back(StoredMessage{seq, now_ms, row.source->tokens, row.source->flags, row.source->message});
      }
      MISSY_ASSIGN_STMT(update, c,
                        "UPDATE sessions SET message_count = message_count + ?2, "
                        "total_tokens = total_tokens + ?3, last_seq = ?4, updated_at_ms = ?5 WHERE id = ?1");
      update.Bind(1, session_id)
          .Bind(2, static_cast<int64_t>(rows.size()))
          .Bind(3, batch_tokens)
          .Bind(4, seq)
          .Bind(5, now_ms);
      return update.Run("update session '" + std::string(session_id) + "'");
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<std::vector<StoredMessage>> LoadMessages(std::string_view session_id, int64_t after_seq,
                                                  int64_t limit) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kMessageColumns +
                          " FROM messages WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
    q.Bind(1, session_id).Bind(2, after_seq).Bind(3, limit > 0 ? limit : int64_t{-1});
    std::vector<StoredMessage> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      auto m = MessageFromRow(q, session_id);
      if (!m.ok()) return m.status();
      out.push_back(std::move(*m));
    }
    if (rc != SQLITE_DONE) return c.Error(rc, "load messages of session '" + std::string(session_id) + "'");
    if (out.empty()) {
      q.Reset();
      MISSY_ASSIGN_STMT(exists, c, "SELECT 1 FROM sessions WHERE id = ?1");
      exists.Bind(1, session_id);
      rc = exists.Step();
      if (rc == SQLITE_DONE) {
        return Status::NotFound("session '" + std::string(session_id) + "' not found", "session_id");
      }
      if (rc != SQLITE_ROW) return c.Error(rc, "read session");
    }
    return out;
  }

  Result<AuditEvent> AppendAuditEvent(const AuditEvent& event) override {
    AuditEvent stored = event;
    Status st = Write([&](Connection& c) -> Status {
      auto tail = AuditTail(c);
      if (!tail.ok()) return tail.status();
      stored.seq = tail->first + 1;
      stored.prev_chain_hash = tail->second;
      MISSY_ASSIGN_STMT(insert, c,
                        "INSERT INTO audit_events (seq, timestamp_ms, session_id, task_id, event_type, "
                        "category, result, detail_json, prev_chain_hash) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      insert.Bind(1, stored.seq)
          .Bind(2, stored.timestamp_ms)
          .Bind(3, stored.session_id)
          .Bind(4, stored.task_id)
          .Bind(5, stored.event_type)
          .Bind(6, stored.category)
          .Bind(7, stored.result)
          .Bind(8, stored.detail_json)
          .Bind(9, stored.prev_chain_hash);
      MISSY_RETURN_IF_ERROR(insert.Run("append audit event"));
      audit_tail_ = {stored.seq, sqlite::Sha256Hex(AuditEventToJsonLine(stored))};
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return stored;
  }

  Result<std::vector<AuditEvent>> AuditSince(int64_t since_seq, int limit,
                                             std::string_view event_type) override {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    std::string sql = std::string("SELECT ") + kAuditColumns + " FROM audit_events WHERE seq > ?1 " +
                      (event_type.empty() ? "" : "AND event_type = ?3 ") + "ORDER BY seq LIMIT ?2";
    MISSY_ASSIGN_STMT(q, c, sql);
    q.Bind(1, since_seq).Bind(2, static_cast<int64_t>(limit > 0 ? limit : -1));
    if (!event_type.empty()) q.Bind(3, event_type);
    std::vector<AuditEvent> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) out.push_back(AuditFromRow(q));
    if (rc != SQLITE_DONE) return c.Error(rc, "read audit events");
    return out;
  }

 private:
  // --- Group commit -------------------------------------------------------------
  struct WriteRequest {
    std::function<Status(Connection&)> fn;
    Status status;
    bool done = false;
  };

  // Runs `fn` on the writer thread inside a transaction shared with other
  // concurrent writes (each in its own savepoint, so one failing write does not
  // undo the others). Returns once that transaction committed (or failed).
  Status Write(std::function<Status(Connection&)> fn) {
    WriteRequest request{std::move(fn), Status(), false};
    std::unique_lock lock(mu_);
    if (stopping_) return Status::Unavailable("database " + path_ + " is closing");
    queue_.push_back(&request);
    queue_cv_.notify_one();
    done_cv_.wait(lock, [&] { return request.done; });
    return std::move(request.status);
  }

  void WriterLoop() {
    std::vector<WriteRequest*> batch;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued was served
        size_t n = std::min(queue_.size(), static_cast<size_t>(std::max(1, options_.max_batch)));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      RunBatch(batch);
      {
        std::lock_guard lock(mu_);
        for (WriteRequest* r : batch) r->done = true;
      }
      done_cv_.notify_all();
      batch.clear();
    }
  }

  Status RunStatement(const char* sql) {
    auto stmt = writer_->Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    return stmt->Run(std::string("database ") + path_ + ": " + sql);
  }

  void RunBatch(const std::vector<WriteRequest*>& batch) {
    auto fail_all = [&](const Status& st) {
      for (WriteRequest* r : batch) r->status = st;
      audit_tail_.reset();
    };
    Status begin = RunStatement("BEGIN IMMEDIATE");
    if (!begin.ok()) return fail_all(begin);
    for (WriteRequest* r : batch) {
      Status st = RunStatement("SAVEPOINT w");
      if (st.ok()) st = r->fn(*writer_);
      if (!writer_->InTransaction()) {
        // SQLite rolled the whole transaction back (disk full, I/O error): every
        // write of the batch is lost, so none may be acknowledged.
        return fail_all(st.ok() ? Status::Unavailable("database " + path_ + ": transaction aborted") : st);
      }
      if (st.ok()) st = RunStatement("RELEASE w");
      if (!st.ok()) {
        audit_tail_.reset();
        (void)RunStatement("ROLLBACK TO w");
        (void)RunStatement("RELEASE w");
      }
      r->status = std::move(st);
    }
    Status commit = RunStatement("COMMIT");
    if (!commit.ok()) {
      if (writer_->InTransaction()) (void)RunStatement("ROLLBACK");
      fail_all(commit);
    }
  }

  // The last audit seq and the hash its successor must carry. Cached by the writer;
  // reset whenever a transaction that may have changed it did not commit.
  Result<std::pair<int64_t, std::string>> AuditTail(Connection& c) {
    if (audit_tail_) return *audit_tail_;
    MISSY_ASSIGN_STMT(q, c,
                      std::string("SELECT ") + kAuditColumns + " FROM audit_events ORDER BY seq DESC LIMIT 1");
    int rc = q.Step();
    if (rc == SQLITE_ROW) return std::make_pair(q.Int(0), sqlite::Sha256Hex(AuditEventToJsonLine(AuditFromRow(q))));
    if (rc != SQLITE_DONE) return c.Error(rc, "read audit tail");
    q.Reset();
    // Empty table: start from the retention anchor if events were deleted, else zeros.
    MISSY_ASSIGN_STMT(anchor, c,
                      "SELECT (SELECT value FROM meta WHERE key = 'audit_anchor_seq'), "
                      "(SELECT value FROM meta WHERE key = 'audit_anchor_hash')");
    rc = anchor.Step();
    if (rc != SQLITE_ROW) return c.Error(rc, "read audit anchor");
    if (anchor.IsNull(0) || anchor.IsNull(1)) return std::make_pair(int64_t{0}, std::string(kZeroHash));
    return std::make_pair(anchor.Int(0), anchor.Text(1));
  }

  // --- Readers ------------------------------------------------------------------
  struct ReaderLease {
    SqliteDatabase* owner = nullptr;
    std::unique_ptr<Connection> conn;
    ReaderLease(SqliteDatabase* o, std::unique_ptr<Connection> c) : owner(o), conn(std::move(c)) {}
    ReaderLease(ReaderLease&& other) noexcept : owner(other.owner), conn(std::move(other.conn)) {}
    ReaderLease& operator=(ReaderLease&&) = delete;
    ~ReaderLease() {
      if (conn) owner->ReleaseReader(std::move(conn));
    }
  };

  Result<ReaderLease> AcquireReader() {
    {
      std::lock_guard lock(readers_mu_);
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return ReaderLease(this, std::move(conn));
      }
    }
    auto conn = Connection::Open(path_, SQLITE_OPEN_READONLY);
    if (!conn.ok()) return conn.status();
    sqlite3_busy_timeout((*conn)->db(), options_.busy_timeout_ms);
    return ReaderLease(this, std::move(*conn));
  }

  void ReleaseReader(std::unique_ptr<Connection> conn) {
    std::lock_guard lock(readers_mu_);
    if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(conn));
  }

  static constexpr size_t kMaxIdleReaders = 8;

  const std::string path_;
  const DatabaseOptions options_;
  std::unique_ptr<Connection> writer_;  // used by the writer thread only

  std::mutex mu_;
  std::condition_variable queue_cv_;
  std::condition_variable done_cv_;
  std::deque<WriteRequest*> queue_;
  bool stopping_ = false;
  std::thread writer_thread_;
  std::optional<std::pair<int64_t, std::string>> audit_tail_;  // writer thread only

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;
};

}  // namespace

int Database::LatestSchemaVersion() { return schema::LatestVersion(); }

Result<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  return Open(path, DatabaseOptions{});
}

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, const DatabaseOptions& options) {
  int flags = options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto conn = Connection::Open(path, flags);
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  sqlite3_busy_timeout(c.db(), options.busy_timeout_ms);
  // Check the version before anything that could write (journal_mode changes the
  // header): a database from a newer missyd is refused and left byte-for-byte alone.
  auto version = schema::CheckVersion(c);
  if (!version.ok()) {
    if (version.status().code() == StatusCode::kCorruption) return version.status();
    return Status(version.status().code(), "database " + path + ": " + version.status().message());
  }
  if (!options.read_only) {
    auto mode = c.Prepare("PRAGMA journal_mode = WAL");
    if (!mode.ok()) return mode.status();
    int rc = mode->Step();
    if (rc != SQLITE_ROW) return c.Error(rc, "database " + path + ": set WAL mode");
    if (mode->Text(0) != "wal") {
      return Status::Unavailable("database " + path + ": cannot use WAL mode (journal_mode is " +
                                 mode->Text(0) + ")");
    }
  }
  // FULL: a commit is on disk (WAL fsynced) before it is acknowledged. NORMAL would
  // lose the last commits on power loss, and group commit makes FULL cheap.
  MISSY_RETURN_IF_ERROR(c.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
                               "database " + path + ": set pragmas"));
  if (options.max_page_count > 0) {
    MISSY_RETURN_IF_ERROR(c.Exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count)));
  }
  MISSY_RETURN_IF_ERROR(schema::Migrate(c));
  return std::unique_ptr<Database>(new SqliteDatabase(path, options, std::move(*conn)));
}

}  // namespace missy
